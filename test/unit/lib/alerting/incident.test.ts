/**
 * Unit tests of the incident-tool renderers (lib/alerting/incident.ts, issue 35) through the
 * channel descriptors (`renderAction`): the PagerDuty Events API v2 event and the Opsgenie Alert
 * API request of each alert status, and the rule validation codes of their parameters.
 */
import { describe, expect, it } from "vitest";
import { describeDestination } from "../../../../lib/alerting/channels.js";
import { incidentKey } from "../../../../lib/alerting/incident.js";
import { type RenderedIncident, renderAction } from "../../../../lib/alerting/rendered.js";
import { NonRetryableError } from "../../../../lib/errors.js";
import type { AlertDefinition } from "../../../../lib/rules/model.js";
import { validateRuleInput } from "../../../../lib/rules/validate.js";
import { BLOCK_HASH, sampleAlert, TX_HASH } from "../../pipeline/notify/fixtures.js";

const ROUTING_KEY = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey12";
const API_KEY = "eb243592-faa2-4ba2-a551-1afdf565c889";
const pd = (parameters: Record<string, unknown> = {}) =>
  ({ type: "PagerDuty", parameters: { routingKey: ROUTING_KEY, ...parameters } }) as unknown as AlertDefinition;
const og = (parameters: Record<string, unknown> = {}) =>
  ({ type: "Opsgenie", parameters: { apiKey: API_KEY, ...parameters } }) as unknown as AlertDefinition;
// biome-ignore lint/suspicious/noExplicitAny: the sent JSON, read field by field
type Json = Record<string, any>;
const rendered = (a: ReturnType<typeof sampleAlert>, action: AlertDefinition) => {
  const r = renderAction(a, action) as RenderedIncident;
  return { ...r, json: JSON.parse(r.body) as Json };
};

describe("PagerDuty rendering", () => {
  it("triggers pending and confirmed alerts of a match on one dedup key, with severity and the payload as custom details", () => {
    const pending = rendered(sampleAlert({ status: "pending", confirmations: 1 }), pd({ severity: "critical" }));
    const confirmed = rendered(sampleAlert({ status: "confirmed" }), pd());
    expect(pending.path).toBe("/v2/enqueue");
    expect(pending.json.event_action).toBe("trigger");
    expect(pending.json.routing_key).toBe(ROUTING_KEY);
    expect(pending.json.dedup_key).toBe(confirmed.json.dedup_key);
    expect(pending.json.dedup_key).toMatch(/^chainsift-[0-9a-f]{64}$/);
    expect(pending.json.payload.severity).toBe("critical");
    expect(confirmed.json.payload.severity).toBe("error");
    expect(confirmed.json.payload.class).toBe("confirmed");
    expect(confirmed.json.payload.component).toBe("Transfer");
    expect(confirmed.json.payload.timestamp).toBe("2026-01-02T03:04:05.000Z");
    expect(confirmed.json.payload.summary).toContain("confirmed: Transfer in block 123 on ethereum/mainnet");
    expect(confirmed.json.payload.custom_details.payload).toEqual(sampleAlert().payload);
    expect(confirmed.json.payload.custom_details.block).toBe(`123 (${BLOCK_HASH})`);
    expect(confirmed.json.links[0].href).toContain(TX_HASH);
  });

  it("resolves on the same key when the match is removed, and nothing else", () => {
    const trigger = rendered(sampleAlert({ status: "pending" }), pd());
    const resolve = rendered(sampleAlert({ status: "removed", confirmations: 0 }), pd());
    expect(resolve.json).toEqual({ routing_key: ROUTING_KEY, event_action: "resolve", dedup_key: trigger.json.dedup_key });
  });

  it("keys other matches apart", () => {
    const other = sampleAlert({ entityId: `${TX_HASH}_e_4` });
    expect(incidentKey(other)).not.toBe(incidentKey(sampleAlert()));
  });

  it("fills the summary template and clips it to 1024 characters", () => {
    const a = sampleAlert();
    expect(rendered(a, pd({ template: "{event} of {address} in {alert.status} block {alert.blockNumber}" })).json.payload.summary).toBe(
      `Transfer of ${a.entity.address} in confirmed block 123`,
    );
    const long = rendered(a, pd({ template: `${"x".repeat(2000)}` })).json.payload.summary as string;
    expect(long).toHaveLength(1024);
    expect(long.endsWith("…")).toBe(true);
  });

  it("refuses a routing key that is not one, and never shows the key in the log's destination", () => {
    expect(() => renderAction(sampleAlert(), pd({ routingKey: "short" }))).toThrow(NonRetryableError);
    const shown = describeDestination(pd());
    expect(shown).toMatch(/^pagerduty routing key #[0-9a-f]{8}$/);
    expect(shown).not.toContain(ROUTING_KEY);
  });
});

describe("Opsgenie rendering", () => {
  it("creates pending and confirmed alerts with one alias, priority and the payload as details", () => {
    const pending = rendered(sampleAlert({ status: "pending" }), og({ priority: "P1" }));
    const confirmed = rendered(sampleAlert(), og());
    expect(pending.path).toBe("/v2/alerts");
    expect(pending.json.alias).toBe(confirmed.json.alias);
    expect(pending.json.alias).toBe(incidentKey(sampleAlert()));
    expect(pending.json.priority).toBe("P1");
    expect(confirmed.json.priority).toBe("P3");
    expect((confirmed.json.message as string).length).toBeLessThanOrEqual(130);
    expect(confirmed.json.details["payload.args.value"]).toBe("250000000000");
    expect(confirmed.json.details.status).toBe("confirmed");
    expect(Object.values(confirmed.json.details).every((v) => typeof v === "string")).toBe(true);
    expect(JSON.stringify(confirmed.json)).not.toContain(API_KEY);
  });

  it("closes the alert by alias when the match is removed, naming the replacing block", () => {
    const alias = incidentKey(sampleAlert());
    const close = rendered(
      sampleAlert({ status: "removed", confirmations: 0, replacedBy: { number: 123, hash: `0x5b1c${"0".repeat(56)}09fa` } }),
      og(),
    );
    expect(close.path).toBe(`/v2/alerts/${alias}/close?identifierType=alias`);
    expect(close.json.source).toBe("chainsift");
    expect(close.json.note).toMatch(/^RETRACTED: block 123 \(0x88e9…6cb6\) was reorganised away and replaced by block 123 \(0x5b1c…09fa\)/);
  });

  it("refuses a missing API key, and never shows the key in the log's destination", () => {
    expect(() => renderAction(sampleAlert(), og({ apiKey: undefined }))).toThrow(NonRetryableError);
    expect(describeDestination(og())).not.toContain(API_KEY);
  });
});

describe("rule validation of the incident tools' parameters", () => {
  const rule = (alert: Record<string, unknown>) => ({
    name: "r",
    technology: "ethereum",
    blockchain: "ethereum",
    network: "mainnet",
    maxConfirmationCount: 1,
    sendPendingAlerts: true,
    state: "enabled",
    config: { targetType: "Transaction", targetMap: [{ name: "from", operator: "Equals", value: "0x1" }], alerts: [alert] },
  });
  const codes = (alert: Record<string, unknown>) => {
    const r = validateRuleInput(rule(alert), "create", [{ technology: "ethereum", blockchain: "ethereum", network: "mainnet" }] as never);
    return r.ok ? [] : r.errors.map((e) => `${e.code} ${e.path}`);
  };

  it("accepts good parameters", () => {
    expect(codes({ type: "PagerDuty", parameters: { routingKey: ROUTING_KEY, severity: "warning" } })).toEqual([]);
    expect(codes({ type: "Opsgenie", parameters: { apiKey: API_KEY, priority: "P2" } })).toEqual([]);
  });

  it("answers each parameter set's own code at the offending path", () => {
    expect(codes({ type: "PagerDuty", parameters: { routingKey: "nope" } })).toEqual([
      "CS_RULE_PAGERDUTY_PARAMETERS config.alerts[0].parameters.routingKey",
    ]);
    expect(codes({ type: "PagerDuty", parameters: { routingKey: ROUTING_KEY, severity: "high" } })).toEqual([
      "CS_RULE_PAGERDUTY_PARAMETERS config.alerts[0].parameters.severity",
    ]);
    expect(codes({ type: "PagerDuty", parameters: {} })).toEqual(["CS_RULE_PAGERDUTY_PARAMETERS config.alerts[0].parameters.routingKey"]);
    expect(codes({ type: "Opsgenie", parameters: { apiKey: "k" } })).toEqual([
      "CS_RULE_OPSGENIE_PARAMETERS config.alerts[0].parameters.apiKey",
    ]);
    expect(codes({ type: "Opsgenie", parameters: { apiKey: API_KEY, priority: "P9" } })).toEqual([
      "CS_RULE_OPSGENIE_PARAMETERS config.alerts[0].parameters.priority",
    ]);
  });
});
