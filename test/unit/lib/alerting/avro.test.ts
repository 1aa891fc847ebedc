/**
 * Unit tests of the alert's wire formats (lib/alerting/avro.ts): the derived Avro record has
 * exactly the fields of the topic schema and round-trips through Avro encoding.
 */
import avro from "avsc";
import { describe, expect, it } from "vitest";
import { alertFromAvro, alertToAvro } from "../../../../lib/alerting/avro.js";
import { NonRetryableError } from "../../../../lib/errors.js";
import { alertSchema } from "../../../../topics/schemas.js";
import { sampleAlert } from "../../pipeline/notify/fixtures.js";

describe("alert Avro record", () => {
  it("has the fields of alertSchema and round-trips through Avro", () => {
    const alert = { ...sampleAlert(), ruleName: "Big USDT" };
    const record = alertToAvro(alert);
    const fields = (alertSchema as { fields: { name: string }[] }).fields.map((f) => f.name);
    expect(Object.keys(record).sort()).toEqual([...fields].sort());
    const type = avro.Type.forSchema(alertSchema as avro.Schema);
    const decoded = type.fromBuffer(type.toBuffer(record)) as ReturnType<typeof alertToAvro>;
    expect(alertFromAvro(decoded)).toEqual(alert);
  });

  it("writes an unknown rule name as null and refuses a JSON part that does not parse", () => {
    expect(alertToAvro(sampleAlert()).ruleName).toBeNull();
    const bad = { ...alertToAvro(sampleAlert()), payloadJson: "{" };
    expect(() => alertFromAvro(bad)).toThrow(NonRetryableError);
    expect(() => alertFromAvro(bad)).toThrow(expect.objectContaining({ code: "CS_ALERT_MALFORMED" }));
    expect(() => alertFromAvro(bad)).toThrow(/^alert [0-9a-f]{64}: /);
  });
});
