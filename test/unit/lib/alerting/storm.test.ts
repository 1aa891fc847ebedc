/** Unit tests of storm control's pure part: policies, windows and what a digest says. */
import { describe, expect, it } from "vitest";
import {
  DEFAULT_CHAT_THROTTLE,
  digestFacts,
  digestLines,
  digestWebhookJson,
  heldOf,
  makeDigest,
  stormPolicyOf,
  windowOf,
} from "../../../../lib/alerting/storm.js";
import type { AlertDefinition } from "../../../../lib/rules/model.js";
import { sampleAlert } from "../../pipeline/notify/fixtures.js";

const slack = { type: "Slack", parameters: { url: "https://hooks.slack.com/x", text: "", channel: "", username: "" } } as AlertDefinition;
const post = { type: "Webhook (POST)", parameters: { url: "https://example.com/h" } } as AlertDefinition;

describe("stormPolicyOf", () => {
  it("throttles chat and e-mail by default, webhooks only when they opt in", () => {
    expect(stormPolicyOf(slack)).toEqual({ max: DEFAULT_CHAT_THROTTLE.max, windowMs: 60_000, maxEntities: 10, source: "default" });
    for (const type of ["Discord", "Telegram", "Email"])
      expect(stormPolicyOf({ ...slack, type } as AlertDefinition)?.source).toBe("default");
    expect(stormPolicyOf(post)).toBeNull();
    expect(stormPolicyOf({ ...post, throttle: { max: 3, windowSec: 10 } } as AlertDefinition)).toEqual({
      max: 3,
      windowMs: 10_000,
      maxEntities: 10,
      source: "throttle",
    });
  });

  it("digest wins over throttle, throttle false turns the default off, GET never", () => {
    const both = { ...slack, throttle: { max: 3, windowSec: 10 }, digest: { windowSec: 300, maxEntities: 99 } } as AlertDefinition;
    expect(stormPolicyOf(both)).toEqual({ max: 0, windowMs: 300_000, maxEntities: 50, source: "digest" });
    expect(stormPolicyOf({ ...slack, throttle: false } as AlertDefinition)).toBeNull();
    const get = { type: "Webhook (GET)", parameters: { url: "https://e.com/" }, digest: { windowSec: 5 } } as AlertDefinition;
    expect(stormPolicyOf(get)).toBeNull();
  });
});

describe("windowOf and digests", () => {
  it("aligns windows to the epoch", () => {
    expect(windowOf(125_000, 60_000)).toEqual({ index: 2, startMs: 120_000, endMs: 180_000 });
    expect(windowOf(120_000, 60_000).index).toBe(2);
  });

  it("counts every held alert, names the first K, gives the block range and where to see all", () => {
    const held = Array.from({ length: 25 }, (_, i) => heldOf(sampleAlert({ sequence: 100 - i, blockNumber: 200 + (i % 7) })));
    const base = sampleAlert();
    const d = makeDigest(
      {
        ruleId: base.ruleId,
        ruleName: "big transfers",
        accountId: base.accountId,
        chain: base.chain,
        targetType: "Event",
        actionIndex: 1,
        action: slack,
        policy: { max: 10, windowMs: 60_000, maxEntities: 4, source: "throttle" },
        windowStartMs: 120_000,
        windowEndMs: 180_000,
        entity: base.entity,
      },
      held,
    );
    expect(d.alerts.map((a) => a.sequence)).toEqual([...held.map((a) => a.sequence)].sort((a, b) => a - b));
    const f = digestFacts(d);
    expect([f.count, f.firstBlock, f.lastBlock, f.entities.length]).toEqual([25, 200, 206, 4]);
    const lines = digestLines(d);
    expect(lines[0]).toBe('DIGEST: 25 alerts of rule "big transfers" held back by its throttle (10 per 60 s)');
    expect(lines[1]).toMatch(/^Window 1970-01-01T00:02:00Z – 1970-01-01T00:03:00Z · blocks 200–206 · 25 confirmed$/);
    expect(lines).toContain("… and 21 more");
    expect(lines.at(-1)).toContain(`GET /alerting/rules/${base.ruleId}/deliveries/`);
    const json = JSON.parse(digestWebhookJson(d));
    expect(json.count).toBe(25);
    expect(json.alerts).toHaveLength(25);
    expect(json.id).toBe(d.id);
  });
});
