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

  it("carries a removed alert's replacing block; reads a record of the older schema (no replacedBy) as an alert without one", () => {
    const type = avro.Type.forSchema(alertSchema as avro.Schema);
    const removed = { ...sampleAlert({ status: "removed", confirmations: 0 }), ruleName: "r", replacedBy: { number: 123, hash: "0x5b1c" } };
    expect(alertFromAvro(type.fromBuffer(type.toBuffer(alertToAvro(removed))) as ReturnType<typeof alertToAvro>)).toEqual(removed);
    const none = { ...removed, replacedBy: { number: 123, hash: null } };
    expect(alertFromAvro(type.fromBuffer(type.toBuffer(alertToAvro(none))) as ReturnType<typeof alertToAvro>)).toEqual(none);
    // The schema before the field: a record written with it is read by the new schema (default null).
    const fields = (alertSchema as { fields: Array<{ name: string }> }).fields.filter((f) => f.name !== "replacedBy");
    const older = avro.Type.forSchema({ ...(alertSchema as object), fields } as avro.Schema);
    const { replacedBy: _gone, ...oldRecord } = alertToAvro(sampleAlert());
    const resolver = type.createResolver(older);
    const read = type.fromBuffer(older.toBuffer(oldRecord), resolver) as ReturnType<typeof alertToAvro>;
    expect(read.replacedBy).toBeNull();
    expect(alertFromAvro(read)).toEqual({ ...sampleAlert(), ruleName: null });
  });

  it("writes an unknown rule name as null and refuses a JSON part that does not parse", () => {
    expect(alertToAvro(sampleAlert()).ruleName).toBeNull();
    const bad = { ...alertToAvro(sampleAlert()), payloadJson: "{" };
    expect(() => alertFromAvro(bad)).toThrow(NonRetryableError);
    expect(() => alertFromAvro(bad)).toThrow(expect.objectContaining({ code: "CS_ALERT_MALFORMED" }));
    expect(() => alertFromAvro(bad)).toThrow(/^alert [0-9a-f]{64}: /);
  });
});
