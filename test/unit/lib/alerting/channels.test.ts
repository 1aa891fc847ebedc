/** Unit tests of the alert channel descriptors (lib/alerting/channels.ts): the table agrees with the lists other parts keep. */
import { describe, expect, it } from "vitest";
import { ALERT_TYPES as CONSOLE_ALERT_TYPES } from "../../../../console/src/rule-model.js";
import { CHANNELS, channelOf, destinationKey } from "../../../../lib/alerting/channels.js";
import { stormPolicyOf } from "../../../../lib/alerting/storm.js";
import { loadConfig } from "../../../../lib/config/index.js";
import { ALERT_TYPES, type AlertDefinition } from "../../../../lib/rules/model.js";
import { ACTION_PARAMETERS_SCHEMAS, AlertDefinitionSchema } from "../../../../lib/rules/schema.js";

const types = Object.keys(CHANNELS).sort();

describe("CHANNELS", () => {
  it("has one descriptor per alert type, and the console offers the same types", () => {
    expect(types).toEqual([...ALERT_TYPES].sort());
    expect([...CONSOLE_ALERT_TYPES].sort()).toEqual(types);
  });

  it("points at the parameters schema the rule schema validates", () => {
    for (const type of ALERT_TYPES) expect(CHANNELS[type].parameters).toBe(ACTION_PARAMETERS_SCHEMAS[type]);
    // every type is accepted by exactly one branch of the action union
    const accepted = AlertDefinitionSchema.anyOf.flatMap((b) => {
      const t = b.properties.type as { const?: string; enum?: string[] };
      return t.enum ?? [t.const];
    });
    expect(accepted.sort()).toEqual(types);
  });

  it("is what storm control's default throttle reads: chat channels with digests get it, the others not", () => {
    for (const type of ALERT_TYPES) {
      const policy = stormPolicyOf({ type, parameters: {} } as unknown as AlertDefinition);
      const c = CHANNELS[type];
      expect({ type, source: policy?.source ?? null }).toEqual({ type, source: c.chat && c.digests ? "default" : null });
    }
  });

  it("is what destinationKey reads; an unknown type keys by its URL's origin", () => {
    const key = (type: string, parameters: Record<string, unknown>) => destinationKey({ type, parameters } as unknown as AlertDefinition);
    for (const type of ALERT_TYPES) {
      const parameters = { url: "https://h.example:8443/a", chatId: "@chan", recipients: ["a@b.example"] };
      expect(key(type, parameters)).toBe(CHANNELS[type].destinationKey(parameters));
    }
    expect(key("Pager", { url: "https://P.example/x" })).toBe("https://p.example");
    expect(channelOf({ type: "toString" })).toBeUndefined();
  });

  it("names credentials that are settings of config.notify", () => {
    const notify = loadConfig({}).notify as unknown as Record<string, unknown>;
    for (const type of ALERT_TYPES)
      for (const key of CHANNELS[type].credentials) expect(Object.hasOwn(notify, key), `${type}: ${key}`).toBe(true);
  });
});
