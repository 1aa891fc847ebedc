/** Unit tests of the Teams card (lib/alerting/teams.ts, issue 35) through the channel descriptor (`renderAction`). */
import { describe, expect, it } from "vitest";
import { alertId } from "../../../../lib/alerting/alert.js";
import { describeDestination } from "../../../../lib/alerting/channels.js";
import { type RenderedRequest, renderAction } from "../../../../lib/alerting/rendered.js";
import type { TeamsMessage } from "../../../../lib/alerting/teams.js";
import { NonRetryableError } from "../../../../lib/errors.js";
import type { AlertDefinition } from "../../../../lib/rules/model.js";
import { BLOCK_HASH, RULE_ID, sampleAlert, TX_HASH } from "../../pipeline/notify/fixtures.js";

const URL = "https://prod-12.westeurope.logic.azure.com/workflows/abc/triggers/manual/paths/invoke?api-version=2016-06-01&sig=SeCrEt";
const teams = (parameters: Record<string, unknown> = {}) =>
  ({ type: "Teams", parameters: { url: URL, ...parameters } }) as unknown as AlertDefinition;
const card = (a: ReturnType<typeof sampleAlert>, action = teams()) => {
  const r = renderAction(a, action) as RenderedRequest;
  expect(r).toMatchObject({ type: "Teams", method: "POST", url: URL });
  return (JSON.parse(r.body!) as TeamsMessage).attachments[0]!.content;
};
const texts = (c: ReturnType<typeof card>) => c.body.flatMap((e) => (e.type === "TextBlock" ? [e.text] : []));

describe("Teams card", () => {
  it("is one Adaptive Card: the summary, the facts and payload fields, an explorer button", () => {
    const c = card(sampleAlert());
    expect(c).toMatchObject({ type: "AdaptiveCard", version: "1.4" });
    expect(texts(c)[0]).toContain("confirmed: Transfer in block 123 on ethereum/mainnet");
    const facts = c.body.find((e) => e.type === "FactSet");
    expect(facts?.type === "FactSet" && facts.facts).toEqual(
      expect.arrayContaining([
        { title: "status", value: "confirmed" },
        { title: "block", value: `123 (${BLOCK_HASH})` },
        { title: "args.value", value: "250000000000" },
      ]),
    );
    expect(c.actions?.[0]?.url).toContain(TX_HASH);
  });

  it("uses the template as the heading", () => {
    expect(texts(card(sampleAlert(), teams({ template: "{event} at {alert.blockNumber}" })))[0]).toBe("Transfer at 123");
  });

  it("retraction: a follow-up card naming the reorganised-away block, its replacement and the pending alert", () => {
    const removed = sampleAlert({ status: "removed", confirmations: 0, replacedBy: { number: 123, hash: `0x5b1c${"0".repeat(56)}09fa` } });
    const [first, second] = texts(card(removed));
    expect(first).toBe(
      "RETRACTED: block 123 (0x88e9…6cb6) was reorganised away and replaced by block 123 (0x5b1c…09fa); the earlier pending alert for this match no longer holds.",
    );
    const pendingId = alertId(RULE_ID, removed.entityId, BLOCK_HASH, "pending");
    expect(second).toContain(pendingId.slice(0, 12));
    expect(card(removed).body[0]).toMatchObject({ color: "Attention" });
  });

  it("refuses a missing url and shows only the origin in the log", () => {
    expect(() => renderAction(sampleAlert(), teams({ url: undefined }))).toThrow(NonRetryableError);
    expect(describeDestination(teams())).toBe("https://prod-12.westeurope.logic.azure.com/…?…");
  });
});
