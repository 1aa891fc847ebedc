/**
 * A webhook receiver that is down, then back, end to end on anvil (rules created through the real
 * API): every alert is delivered, none twice (by id, answered 2xx once).
 *
 * - Down for less than the retry budget (each alert's first two attempts get 503; budget 3
 *   attempts): every alert arrives on its third attempt, nothing is dead-lettered.
 * - Down for longer than the retry budget: the alerts emitted meanwhile exhaust their attempts and
 *   are dead-lettered (`CS_DELIVERY_EXHAUSTED` in the delivery log); alerts emitted after the
 *   receiver is back arrive directly; `replayAlertDeadLetters` then re-sends the dead letters, and a
 *   second replay sends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DeliveryLogEntry } from "../../../pipeline/notify/log.js";
import { replayAlertDeadLetters } from "../../../pipeline/notify/replay.js";
import { type AlertingEnv, alertId, probeServices, type Recorded, startAlertingEnv, transferRule } from "./support.js";

const services = await probeServices();
if (!services.ok) console.warn(`alerting-api retries: ${services.message}`);

const CST = 1_000_000n;
const MAX_ATTEMPTS = 3;

describe.skipIf(!services.ok)("alerting API end to end: receiver down, then back (anvil)", () => {
  let env: AlertingEnv;
  /** Per path: how to answer (default 200). */
  const behaviour = new Map<string, (req: Omit<Recorded, "status">) => number>();

  beforeAll(async () => {
    env = await startAlertingEnv({ notify: { maxAttempts: MAX_ATTEMPTS, baseDelayMs: 20, maxDelayMs: 100, timeoutMs: 3000 } });
    env.http.respond = (req) => behaviour.get(req.path)?.(req) ?? 200;
  }, 120_000);

  afterAll(async () => {
    await env?.stop();
  }, 60_000);

  /** A rule for Transfer events to `to`, posting to `/hook/<label>`. */
  const hookRule = async (label: string, to: string) =>
    env.createRule(env.accounts.a.token, {
      ...transferRule(`retries ${label}`, to, "Equals"),
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook(label) } }],
    });

  /** Sends `perBlock[i]` transfers to `to` in block i; returns their tx hashes. */
  const transfers = async (to: string, perBlock: number[]) => {
    const hashes: string[] = [];
    for (const n of perBlock) {
      for (let i = 0; i < n; i++) hashes.push(await env.transfer(to, BigInt(i + 1) * CST));
      await env.mine();
    }
    return hashes;
  };

  /** The ids of the confirmed alerts the rule gives for these transfers. */
  const expectedIds = async (ruleId: string, hashes: string[]) =>
    Promise.all(
      hashes.map(async (tx) => {
        const ev = await env.eventOf(tx);
        return alertId(ruleId, ev.entityId, ev.blockHash);
      }),
    );

  const deliveredIds = (label: string) => env.http.deliveredAt(`/hook/${label}`).map((r) => String(r.headers["idempotency-key"]));

  const deliveryLog = async (ruleId: string) =>
    (
      await env.request<{ total: number; entries: DeliveryLogEntry[] }>(
        "GET",
        `/alerting/rules/${ruleId}/deliveries/?limit=1000`,
        env.accounts.a.token,
      )
    ).body;

  const waitUntil = async (cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  it("down for less than the retry budget: every alert arrives on a retry, once, nothing dead-lettered", async () => {
    const to = env.newAddress();
    const rule = await hookRule("flaky", to);
    // The first two attempts of every alert get 503, the third 200.
    const attempts = new Map<string, number>();
    behaviour.set("/hook/flaky", (req) => {
      const id = String(req.headers["idempotency-key"]);
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      return n <= MAX_ATTEMPTS - 1 ? 503 : 200;
    });
    const deadBefore = env.notify.deadLettered();
    const hashes = await transfers(to, [3, 2]);
    const ids = await expectedIds(rule.id, hashes);
    await waitUntil(() => deliveredIds("flaky").length >= ids.length, `${ids.length} alerts at /hook/flaky`);
    await new Promise((r) => setTimeout(r, 500));

    const delivered = deliveredIds("flaky");
    expect(delivered.sort()).toEqual([...ids].sort()); // every alert, none twice
    for (const id of ids) expect(attempts.get(id), id).toBe(MAX_ATTEMPTS);
    // Every attempt carried the same id and the same body.
    for (const id of ids) {
      const bodies = new Set(
        env.http
          .at("/hook/flaky")
          .filter((r) => r.headers["idempotency-key"] === id)
          .map((r) => r.body),
      );
      expect(bodies.size).toBe(1);
    }
    expect(env.notify.deadLettered()).toBe(deadBefore);
    const log = await deliveryLog(rule.id);
    expect(log.total).toBe(ids.length);
    for (const e of log.entries) expect(e).toMatchObject({ ok: true, attempts: MAX_ATTEMPTS, httpStatus: 200, status: "confirmed" });
  });

  it("down for longer than the retry budget, then back: dead letters are replayed, every alert delivered exactly once", async () => {
    const to = env.newAddress();
    const rule = await hookRule("down", to);
    let down = true;
    behaviour.set("/hook/down", () => (down ? 503 : 200));
    const deadBefore = env.notify.deadLettered();

    // While the receiver is down: 5 alerts in two blocks, each exhausting its attempts.
    const whileDown = await transfers(to, [3, 2]);
    await waitUntil(() => env.notify.deadLettered() >= deadBefore + whileDown.length, "5 dead letters");
    const failed = await deliveryLog(rule.id);
    expect(failed.total).toBe(whileDown.length);
    for (const e of failed.entries) {
      expect(e).toMatchObject({ ok: false, final: false, attempts: MAX_ATTEMPTS, code: "CS_DELIVERY_EXHAUSTED" });
      expect(e.error).toContain("503");
    }
    expect(env.http.at("/hook/down")).toHaveLength(whileDown.length * MAX_ATTEMPTS);
    expect(deliveredIds("down")).toEqual([]);

    // Back up: new alerts arrive directly.
    down = false;
    const afterUp = await transfers(to, [2]);
    const upIds = await expectedIds(rule.id, afterUp);
    await waitUntil(() => deliveredIds("down").length >= upIds.length, "the alerts sent after the receiver came back");

    // Replay the dead letters: the 5 alerts arrive, once each.
    const replay = await replayAlertDeadLetters({ bus: env.pipeline.bus, ruleId: rule.id, idleMs: 1500 });
    expect(replay).toMatchObject({ replayed: whileDown.length });
    const all = [...(await expectedIds(rule.id, whileDown)), ...upIds];
    await waitUntil(() => deliveredIds("down").length >= all.length, "every alert after the replay");

    // A second replay (same consumer group) sends nothing more.
    expect((await replayAlertDeadLetters({ bus: env.pipeline.bus, ruleId: rule.id, idleMs: 1000 })).replayed).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    const delivered = deliveredIds("down");
    expect(delivered.sort()).toEqual([...all].sort());
    expect(new Set(delivered).size).toBe(delivered.length);
    for (const body of env.http.deliveredAt("/hook/down").map((r) => JSON.parse(r.body) as { ruleId: string; status: string })) {
      expect(body).toMatchObject({ ruleId: rule.id, status: "confirmed" });
    }
    const log = await deliveryLog(rule.id);
    expect(log.entries.filter((e) => e.ok)).toHaveLength(all.length);
    expect(log.entries.filter((e) => !e.ok)).toHaveLength(whileDown.length);
  });
});
