/**
 * Integration test of the PagerDuty, Opsgenie and Teams channels (issue 35): the deliverer
 * (pipeline/notify/deliver.ts, real HTTP through the SSRF guard with 127.0.0.1 allowlisted, real
 * Redis for the signing secrets) against local receivers of the Events API v2 and the Alert API
 * and a Teams webhook (test/support/incident-receivers.ts). Checks the incident each match makes (opened by pending,
 * grouped by confirmed, resolved or closed by removed), PagerDuty's 429 with `Retry-After`, a
 * storm-control digest, a refused key, and that no routing or API key reaches a log line or a
 * delivery result. Skips when Redis is down.
 */
import { randomBytes } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { alertId } from "../../../lib/alerting/alert.js";
import { incidentKey } from "../../../lib/alerting/incident.js";
import { type HeldAlert, makeDigest } from "../../../lib/alerting/storm.js";
import { loadConfig } from "../../../lib/config/index.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import { CS_DELIVERY_REJECTED, createDeliverer, type Deliverer } from "../../../pipeline/notify/deliver.js";
import { createSecretStore } from "../../../pipeline/notify/sign.js";
import { type IncidentReceivers, startIncidentReceivers } from "../../support/incident-receivers.js";
import { sampleAlert } from "../../unit/pipeline/notify/fixtures.js";
import { deletePrefix, keysOf, redisSkipMessage, redisUp } from "../accounts/redis.js";

const url = loadConfig().redisUrl;
const up = await redisUp(url);
if (!up) console.warn(redisSkipMessage(url));

const ROUTING_KEY = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey12";
const API_KEY = "eb243592-faa2-4ba2-a551-1afdf565c889";
const pagerDuty: AlertDefinition = { type: "PagerDuty", parameters: { routingKey: ROUTING_KEY, severity: "critical" } };
const opsgenie: AlertDefinition = { type: "Opsgenie", parameters: { apiKey: API_KEY, priority: "P2" } };

describe.skipIf(!up)("PagerDuty, Opsgenie and Teams delivery (local receivers, real Redis)", () => {
  const prefix = `ti${randomBytes(4).toString("hex")}:`;
  const redis = createClient({ url });
  let rx: IncidentReceivers;
  let deliverer: Deliverer;
  const sleeps: number[] = [];
  const logged: string[] = [];
  const log = {
    warn: (o: unknown, m?: string) => void logged.push(JSON.stringify(o) + (m ?? "")),
    debug: (o: unknown, m?: string) => void logged.push(JSON.stringify(o) + (m ?? "")),
  };

  beforeAll(async () => {
    redis.on("error", () => {});
    await redis.connect();
    rx = await startIncidentReceivers([API_KEY]);
    deliverer = createDeliverer({
      allowlist: ["127.0.0.1"],
      secrets: createSecretStore({ redis, keyPrefix: prefix }),
      incidents: { pagerdutyApiUrl: rx.base, opsgenieApiUrl: rx.base },
      retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 60_000 },
      fetchTimeoutMs: 3000,
      sleep: async (ms) => void sleeps.push(ms),
      log: log as never,
    });
  });

  afterAll(async () => {
    await deliverer?.close();
    await rx?.close();
    if (redis.isOpen) await redis.close();
    await deletePrefix(url, prefix);
    expect(await keysOf(url, prefix)).toEqual([]);
    // no key in any log line the deliverer wrote
    expect(logged.join("\n")).not.toContain(ROUTING_KEY);
    expect(logged.join("\n")).not.toContain(API_KEY);
  });

  beforeEach(() => {
    sleeps.length = 0;
  });

  it("PagerDuty: pending pages once, confirmed is grouped into the same alert, removed resolves it", async () => {
    const match = { entityId: `0x${"a1".repeat(32)}_e_1` };
    const key = incidentKey(sampleAlert(match));
    for (const status of ["pending", "confirmed"] as const) {
      const r = await deliverer.deliver(sampleAlert({ ...match, status }), pagerDuty, 0);
      expect(r).toMatchObject({ ok: true, status: 202, attempts: 1 });
      expect(r.destination).toMatch(/^pagerduty routing key #[0-9a-f]{8}$/);
    }
    expect(rx.find("pagerduty", key)).toMatchObject([{ status: "open", count: 2 }]);
    const [incident] = rx.find("pagerduty", key);
    expect((incident!.opened.payload as { severity: string }).severity).toBe("critical");
    expect((incident!.updates[0]!.payload as { class: string }).class).toBe("confirmed");

    const removed = await deliverer.deliver(sampleAlert({ ...match, status: "removed", confirmations: 0 }), pagerDuty, 0);
    expect(removed).toMatchObject({ ok: true, status: 202 });
    expect(rx.find("pagerduty", key)).toMatchObject([{ status: "resolved", count: 2 }]);
    expect(rx.find("pagerduty", key)[0]!.updates[1]).toEqual({ routing_key: ROUTING_KEY, event_action: "resolve", dedup_key: key });
  });

  it("PagerDuty: a 429 is retried after its Retry-After", async () => {
    const match = { entityId: `0x${"b2".repeat(32)}_e_1` };
    rx.throttle(1, 7);
    const r = await deliverer.deliver(sampleAlert(match), pagerDuty, 0);
    expect(r).toMatchObject({ ok: true, attempts: 2, status: 202 });
    expect(sleeps).toHaveLength(1);
    expect(sleeps[0]).toBeGreaterThanOrEqual(7000);
    const statuses = rx.requests.filter((q) => q.path === "/v2/enqueue").map((q) => q.status);
    expect(statuses.slice(-2)).toEqual([429, 202]);
    expect(rx.find("pagerduty", incidentKey(sampleAlert(match)))).toHaveLength(1);
  });

  it("PagerDuty: a digest is one alert per window, refused for good when its body is invalid", async () => {
    const alerts = [1, 2, 3].map((n) => sampleAlert({ entityId: `0x${"c3".repeat(32)}_e_${n}`, sequence: n }));
    const held: HeldAlert[] = alerts.map((a) => ({ ...a, alertId: a.id }));
    const ctx = {
      ruleId: alerts[0]!.ruleId,
      ruleName: "big transfers",
      accountId: alerts[0]!.accountId,
      chain: alerts[0]!.chain,
      targetType: alerts[0]!.targetType,
      actionIndex: 0,
      action: pagerDuty,
      policy: { max: 0, windowMs: 60_000, maxEntities: 10, source: "digest" as const },
      windowStartMs: 1_767_323_040_000,
      windowEndMs: 1_767_323_100_000,
      entity: alerts[0]!.entity,
    };
    const digest = makeDigest(ctx, held);
    expect(await deliverer.attemptDigest(digest)).toMatchObject({ ok: true, status: 202 });
    const opened = rx.find("pagerduty", `chainsift-digest-${digest.id}`);
    expect(opened).toHaveLength(1);
    expect((opened[0]!.opened.payload as { custom_details: { count: number } }).custom_details.count).toBe(3);
    // an action whose routing key is gone (a stored rule edited by hand): PagerDuty answers 400, final
    const bad = makeDigest({ ...ctx, action: { type: "PagerDuty", parameters: {} } as unknown as AlertDefinition }, held);
    expect(await deliverer.attemptDigest(bad)).toMatchObject({ ok: false, final: true, status: 400, code: CS_DELIVERY_REJECTED });
  });

  it("Opsgenie: pending creates the alert, confirmed raises its count, removed closes it by alias with the retraction", async () => {
    const match = { entityId: `0x${"d4".repeat(32)}_e_1` };
    const alias = incidentKey(sampleAlert(match));
    for (const status of ["pending", "confirmed"] as const) {
      const r = await deliverer.deliver(sampleAlert({ ...match, status }), opsgenie, 0);
      expect(r).toMatchObject({ ok: true, status: 202, attempts: 1 });
      expect(r.destination).not.toContain(API_KEY);
    }
    expect(rx.find("opsgenie", alias)).toMatchObject([{ status: "open", count: 2, opened: { priority: "P2", alias } }]);
    const replacedBy = { number: 123, hash: `0x${"5b".repeat(32)}` };
    const removed = await deliverer.deliver(sampleAlert({ ...match, status: "removed", confirmations: 0, replacedBy }), opsgenie, 0);
    expect(removed).toMatchObject({ ok: true, status: 202 });
    const [closed] = rx.find("opsgenie", alias);
    expect(closed).toMatchObject({ status: "resolved", count: 2 });
    expect(String(closed!.updates[1]!.note)).toContain("RETRACTED: block 123");
    const close = rx.requests.find((q) => q.path.includes("/close"));
    expect(close?.path).toBe(`/v2/alerts/${alias}/close?identifierType=alias`);
    expect(close?.headers.authorization).toBe(`GenieKey ${API_KEY}`);
  });

  it("Opsgenie: a key Opsgenie does not know is refused for good", async () => {
    const other: AlertDefinition = { type: "Opsgenie", parameters: { apiKey: "00000000-0000-4000-8000-000000000000" } };
    const r = await deliverer.deliver(sampleAlert({ entityId: `0x${"e5".repeat(32)}_e_1` }), other, 0);
    expect(r).toMatchObject({ ok: false, final: true, status: 401, code: CS_DELIVERY_REJECTED, attempts: 1 });
    expect(JSON.stringify(r)).not.toContain("00000000-0000-4000-8000-000000000000");
  });

  it("Teams: one Adaptive Card per alert, the retraction a follow-up card; the webhook secret is not in the result", async () => {
    const teams: AlertDefinition = { type: "Teams", parameters: { url: rx.teamsUrl } };
    const match = { entityId: `0x${"f6".repeat(32)}_e_1` };
    const pending = sampleAlert({ ...match, status: "pending" });
    expect(await deliverer.deliver(pending, teams, 0)).toMatchObject({ ok: true, status: 202, destination: `${rx.base}/…?…` });
    const replacedBy = { number: 123, hash: `0x${"5b".repeat(32)}` };
    const removed = sampleAlert({ ...match, status: "removed", confirmations: 0, replacedBy });
    expect(await deliverer.deliver(removed, teams, 0)).toMatchObject({ ok: true, status: 202 });
    const [first, followUp] = rx.cards.slice(-2);
    expect(first!.alertId).toBe(pending.id);
    expect(followUp!.alertId).toBe(removed.id);
    expect(followUp!.card.body[0]!.text).toMatch(
      /^RETRACTED: block 123 \(0x88e9…6cb6\) was reorganised away and replaced by block 123 \(0x5b5b…5b5b\)/,
    );
    // names the pending alert of the match (its id as the match stage derives it; the fixture's `id` is fixed)
    expect(followUp!.card.body[1]!.text).toContain(alertId(pending.ruleId, pending.entityId, pending.blockHash, "pending").slice(0, 12));
    expect(logged.join("\n")).not.toContain("tEaMs-SiG-0123");
  });

  it("Teams: a storm-control digest is one card with the count", async () => {
    const teams: AlertDefinition = { type: "Teams", parameters: { url: rx.teamsUrl } };
    const alerts = [1, 2].map((n) => sampleAlert({ entityId: `0x${"a7".repeat(32)}_e_${n}`, sequence: n }));
    const held: HeldAlert[] = alerts.map((a) => ({ ...a, alertId: a.id }));
    const a0 = alerts[0]!;
    const digest = makeDigest(
      {
        ruleId: a0.ruleId,
        ruleName: "teams digest",
        accountId: a0.accountId,
        chain: a0.chain,
        targetType: a0.targetType,
        actionIndex: 0,
        action: teams,
        policy: { max: 0, windowMs: 60_000, maxEntities: 10, source: "digest" },
        windowStartMs: 1_767_323_040_000,
        windowEndMs: 1_767_323_100_000,
        entity: a0.entity,
      },
      held,
    );
    const before = rx.cards.length;
    expect(await deliverer.attemptDigest(digest)).toMatchObject({ ok: true, status: 202 });
    expect(rx.cards).toHaveLength(before + 1);
    expect(rx.cards.at(-1)!.alertId).toBe(digest.id);
    expect(rx.cards.at(-1)!.card.body[0]!.text).toMatch(/\b2 alerts\b/);
  });
});
