/**
 * Delivery isolation end to end on anvil, rules created through the real API: dead webhook
 * destinations must not hold up other rules' alerts, their alerts must end in the dead-letter
 * topic and be replayable, and a destination that recovers gets every pending alert once, in order.
 *
 * - **Dead destinations next to a healthy one.** Account B's rule posts to a healthy receiver;
 *   after a healthy-only phase, account A adds two rules on the same traffic (every CST transfer
 *   of one sender, maxConfirmationCount 0) whose webhooks are a server that accepts the request
 *   and never answers, and a closed port (connection refused). Over 30 blocks: every healthy alert
 *   arrives exactly once (Idempotency-Key), in `sequence` order, compared with the alert ids the
 *   match stage must give for the transfers mined; every dead alert ends in the dead-letter topic
 *   exactly once (delivery log `final: false` with `CS_DELIVERY_EXHAUSTED` /
 *   `CS_DESTINATION_UNHEALTHY`, and the topic itself), the hung destination got far fewer
 *   requests than alerts (group backoff); then the refused port comes alive and
 *   `replayAlertDeadLetters` re-sends exactly that rule's alerts, each received once. Latency from
 *   the block being mined to the healthy alert's arrival is printed for both phases (p50/p99; no
 *   threshold asserted). Last, the deliveries endpoint's `destinations` shows the hung destination
 *   unhealthy.
 * - **A destination that recovers.** Two rules post to a receiver answering 503 until it is marked
 *   unhealthy, then 200: every alert arrives once, each rule's in `sequence` order, none dead-lettered.
 *
 * Everything on 127.0.0.1; every wait is bounded; receivers are closed in `afterAll`.
 */
import { createServer } from "node:http";
import type { JsonRpcSigner } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedPort, type HangingEndpoint, startHangingEndpoint } from "../../bench/alert-latency.js";
import { percentile } from "../../bench/support/load.js";
import { CS_DELIVERY_EXHAUSTED } from "../../pipeline/notify/deliver.js";
import type { DeliveryLogEntry } from "../../pipeline/notify/log.js";
import { replayAlertDeadLetters } from "../../pipeline/notify/replay.js";
import { CS_DESTINATION_UNHEALTHY } from "../../pipeline/notify/scheduler.js";
import { type Receiver, startReceiver } from "../support/anvil-env.js";
import { waitFor } from "../support/harness.js";
import { type AlertingEnv, alertId, probeServices, startAlertingEnv, type TestAccount, type WebhookAlert } from "./alerting-api/support.js";

const services = await probeServices();
if (!services.ok) console.warn(`delivery isolation: ${services.message}`);

/** Small budgets so that dead destinations are given up on within seconds. */
const NOTIFY = {
  timeoutMs: 1000,
  maxAttempts: 20,
  baseDelayMs: 50,
  maxDelayMs: 400,
  retryWindowMs: 6000,
  unhealthyAfter: 3,
  destinationConcurrency: 2,
};
const DEAD_CODES = [CS_DELIVERY_EXHAUSTED, CS_DESTINATION_UNHEALTHY];

/** The parts of the deliveries endpoint's answer the test reads. */
interface DeliveriesAnswer {
  total: number;
  entries: DeliveryLogEntry[];
  destinations: Array<{ actionIndex: number; destination: string; unhealthy: boolean; consecutiveFailures: number; pending: number }>;
}

/** A notify dead letter read back from the dead-letter topic. */
interface DeadAlert {
  ruleId: string;
  alertId: string;
  code: string;
}

describe.skipIf(!services.ok)("delivery isolation end to end: dead destinations, replay, recovery (anvil, API)", () => {
  let env: AlertingEnv;
  const closers: Array<() => Promise<unknown>> = [];
  /** When each block was mined (ms since the epoch, right after `anvil_mine` returned). */
  const minedAt = new Map<number, number>();
  /** When each alert was first received 2xx, by Idempotency-Key. */
  const receivedAt = new Map<string, number>();
  /** Alert ids per rule in the order of the alerts topic (one partition per rule): what the notify stage consumes. */
  const topicOrder = new Map<string, string[]>();

  beforeAll(async () => {
    env = await startAlertingEnv({ notify: NOTIFY });
    const bus = env.pipeline.bus;
    const watcher = bus.kafka.consumer({ groupId: `${env.config.kafka.groupPrefix}.alerts-watch` });
    env.onStop(() => watcher.disconnect());
    await watcher.connect();
    await watcher.subscribe({ topic: bus.topic("alerts"), fromBeginning: true });
    await watcher.run({
      eachMessage: async ({ message }) => {
        const alert = (await bus.decode(message.value)) as { id: string; ruleId: string };
        const ids = topicOrder.get(alert.ruleId) ?? [];
        ids.push(alert.id);
        topicOrder.set(alert.ruleId, ids);
      },
    });
  }, 120_000);

  afterAll(async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => {});
    await env?.stop();
  }, 60_000);

  /** A receiver of this file, closed in `afterAll`, answering `status()` and noting when each alert first arrived. */
  const receiver = async (status: () => number = () => 200): Promise<Receiver> => {
    const r = await startReceiver();
    closers.push(r.close);
    r.respond = (req) => {
      const s = status();
      const key = String(req.headers["idempotency-key"]);
      if (s >= 200 && s < 300 && !receivedAt.has(key)) receivedAt.set(key, Date.now());
      return s;
    };
    return r;
  };

  /** A sender holding CST whose transfers only this file's rules watch (every rule filters on `from`). */
  const newFundedSender = async (): Promise<JsonRpcSigner> => {
    const sender = await env.newSender();
    await env.mint(sender.address, 10n ** 12n);
    await env.mine();
    return sender;
  };

  /** Account `account` creates a rule on every CST transfer sent by `from`, posting to `url`. */
  const rule = async (account: TestAccount, name: string, from: string, url: string) =>
    env.createRule(account.token, {
      name,
      targetType: "Event",
      targetMap: [
        { name: "event", operator: "Equals", value: "Transfer" },
        { name: "address", operator: "Equals (ignore case)", value: env.tokenAddress },
        {
          name: "args",
          operator: "Inspect",
          operatorParameters: [
            { name: "name", operator: "Equals", value: "from" },
            { name: "value", operator: "Equals (ignore case)", value: from },
          ],
        },
      ],
      alerts: [{ type: "Webhook (POST)", parameters: { url } }],
    });

  /**
   * Mines `blocks` blocks of `perBlock` transfers from `sender` (to fresh addresses); after each
   * block, waits until `arrived(blockNumber)` holds (at most 10 s: a miss shows in the final
   * assertions, not here). Returns the Transfer events sent (entity id and block hash of each).
   */
  const traffic = async (sender: JsonRpcSigner, blocks: number, perBlock: number, arrived?: (block: number) => boolean) => {
    const hashes: string[] = [];
    for (let b = 0; b < blocks; b++) {
      for (let i = 0; i < perBlock; i++) hashes.push(await env.transfer(env.newAddress(), BigInt(1000 + i), sender));
      await env.mine();
      const at = Date.now();
      const number = Number(await env.rpc("eth_blockNumber"));
      minedAt.set(number, at);
      if (arrived) await waitFor(async () => arrived(number), 10_000, 5).catch(() => {});
    }
    return Promise.all(hashes.map((tx) => env.eventOf(tx)));
  };

  /** The confirmed alert ids a rule on these Transfer events must give (maxConfirmationCount 0: one each). */
  const idsOf = (ruleId: string, events: Array<{ entityId: string; blockHash: string }>) =>
    events.map((ev) => alertId(ruleId, ev.entityId, ev.blockHash));

  /** Alerts received 2xx at `path` of `r`, in arrival order. */
  const delivered = (r: Receiver, path: string) => r.deliveredAt(path).map((q) => JSON.parse(q.body) as WebhookAlert);

  const deliveries = async (account: TestAccount, ruleId: string) =>
    (await env.request<DeliveriesAnswer>("GET", `/alerting/rules/${ruleId}/deliveries/?limit=1000`, account.token)).body;

  /** Milliseconds from the block being mined to the alert's arrival, ascending. */
  const latencies = (alerts: WebhookAlert[]) =>
    alerts.map((a) => (receivedAt.get(a.id) ?? Number.NaN) - (minedAt.get(a.blockNumber) ?? Number.NaN)).sort((x, y) => x - y);

  const figures = (xs: number[]) => `p50 ${percentile(xs, 0.5).toFixed(0)} ms, p99 ${percentile(xs, 0.99).toFixed(0)} ms (n ${xs.length})`;

  /**
   * Asserts that a rule's alerts arrived in the order the notify stage consumed them (the lanes are
   * FIFO) and in `sequence` order as docs/alerting-delivery.md ("Ordering") promises; the message
   * names the first inversion.
   */
  const expectOrdered = async (ruleId: string, alerts: WebhookAlert[]) => {
    await waitFor(async () => (topicOrder.get(ruleId)?.length ?? 0) >= alerts.length, 10_000);
    expect(alerts.map((x) => x.id)).toEqual(topicOrder.get(ruleId));
    const i = alerts.findIndex((x, k) => k > 0 && x.sequence <= alerts[k - 1]!.sequence);
    const inversion =
      i < 0
        ? ""
        : `sequence ${alerts[i - 1]!.sequence} (block ${alerts[i - 1]!.blockNumber}) arrived before ${alerts[i]!.sequence} (block ${alerts[i]!.blockNumber}), as in the alerts topic`;
    expect(inversion, `rule ${ruleId}: alerts out of sequence order`).toBe("");
  };

  /** The notify dead letters in the dead-letter topic (own consumer group), once `enough` of them are there. */
  const readDeadLetters = async (enough: number): Promise<DeadAlert[]> => {
    const bus = env.pipeline.bus;
    const consumer = bus.kafka.consumer({ groupId: `${env.config.kafka.groupPrefix}.dlq-reader` });
    const letters: DeadAlert[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: bus.topic("dead-letter"), fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          const letter = (await bus.decode(message.value)) as { stage: string; errorCode: string; value: Buffer | null };
          if (letter.stage !== "notify" || !letter.value) return;
          const alert = (await bus.decode(letter.value)) as { id: string; ruleId: string };
          letters.push({ ruleId: alert.ruleId, alertId: alert.id, code: letter.errorCode });
        },
      });
      await waitFor(async () => letters.length >= enough, 30_000);
      await new Promise((r) => setTimeout(r, 500)); // a duplicate would be right behind
      return [...letters];
    } finally {
      await consumer.disconnect();
    }
  };

  it("healthy alerts all arrive once and in order next to a hung and a refusing destination; the dead ones are dead-lettered and replayable", async () => {
    const { a, b } = env.accounts;
    const sender = await newFundedSender();
    const healthy = await receiver();
    const hung: HangingEndpoint = await startHangingEndpoint();
    closers.push(hung.close);
    const refusedPort = await closedPort();
    const healthyRule = await rule(b, "isolation healthy", sender.address, `${healthy.base}/b`);
    const PER_BLOCK = 4;
    const arrivedAt = (ruleId: string) => (block: number) =>
      delivered(healthy, "/b").filter((x) => x.ruleId === ruleId && x.blockNumber === block).length >= PER_BLOCK;

    // Phase 1: the healthy rule alone.
    const alone = await traffic(sender, 10, PER_BLOCK, arrivedAt(healthyRule.id));
    const aloneIds = idsOf(healthyRule.id, alone);
    await waitFor(async () => delivered(healthy, "/b").length >= aloneIds.length, 30_000);

    // Phase 2: account A's two dead destinations on the same traffic.
    const hungRule = await rule(a, "isolation hung", sender.address, `${hung.base}/hang`);
    const refusedRule = await rule(a, "isolation refused", sender.address, `http://127.0.0.1:${refusedPort}/refused`);
    const withDead = await traffic(sender, 30, PER_BLOCK, arrivedAt(healthyRule.id));
    const healthyIds = [...aloneIds, ...idsOf(healthyRule.id, withDead)];
    const hungIds = idsOf(hungRule.id, withDead);
    const refusedIds = idsOf(refusedRule.id, withDead);

    // Every healthy alert, once, in sequence order.
    await waitFor(async () => delivered(healthy, "/b").length >= healthyIds.length, 30_000);
    const got = delivered(healthy, "/b");
    const keys = healthy.deliveredAt("/b").map((q) => String(q.headers["idempotency-key"]));
    expect(new Set(keys).size).toBe(keys.length);
    expect(got.map((x) => x.id)).toEqual(keys);
    expect([...keys].sort()).toEqual([...healthyIds].sort());
    // Every dead alert is dead-lettered once, with a reason, and logged as such.
    await waitFor(
      async () =>
        (await deliveries(a, hungRule.id)).total >= hungIds.length && (await deliveries(a, refusedRule.id)).total >= refusedIds.length,
      40_000,
      200,
    );
    for (const [ruleId, ids] of [
      [hungRule.id, hungIds],
      [refusedRule.id, refusedIds],
    ] as const) {
      const log = await deliveries(a, ruleId);
      expect(log.total).toBe(ids.length);
      expect(log.entries.map((e) => e.alertId).sort()).toEqual([...ids].sort());
      for (const e of log.entries) {
        expect(e).toMatchObject({ ok: false, final: false });
        expect(DEAD_CODES).toContain(e.code);
      }
      // Group backoff: most were given up on without an attempt of their own.
      expect(log.entries.some((e) => e.code === CS_DESTINATION_UNHEALTHY)).toBe(true);
    }
    expect(hung.requests()).toBeLessThan(hungIds.length / 2);
    expect(hung.maxOpen()).toBeLessThanOrEqual(NOTIFY.destinationConcurrency);

    const letters = await readDeadLetters(hungIds.length + refusedIds.length);
    for (const [ruleId, ids] of [
      [hungRule.id, hungIds],
      [refusedRule.id, refusedIds],
    ] as const) {
      const mine = letters.filter((l) => l.ruleId === ruleId);
      expect(mine.map((l) => l.alertId).sort()).toEqual([...ids].sort());
      for (const l of mine) expect(DEAD_CODES).toContain(l.code);
    }
    expect(letters.filter((l) => l.ruleId === healthyRule.id)).toEqual([]);

    // The refused port comes alive; the replay re-sends that rule's dead letters, each arrives once.
    const revived: string[] = [];
    const server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        revived.push(String(req.headers["idempotency-key"]));
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(refusedPort, "127.0.0.1", resolve);
    });
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    const replay = await replayAlertDeadLetters({ bus: env.pipeline.bus, ruleId: refusedRule.id, idleMs: 1500 });
    expect(replay.replayed).toBe(refusedIds.length);
    await waitFor(async () => revived.length >= refusedIds.length, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(new Set(revived).size).toBe(revived.length);
    expect([...revived].sort()).toEqual([...refusedIds].sort());
    const replayedLog = await deliveries(a, refusedRule.id);
    expect(replayedLog.entries.filter((e) => e.ok)).toHaveLength(refusedIds.length);

    // Latency, block mined → healthy alert received (printed, not asserted).
    const aloneSet = new Set(aloneIds);
    console.log(`healthy alerts, healthy rule alone        : ${figures(latencies(got.filter((x) => aloneSet.has(x.id))))}`);
    console.log(`healthy alerts, next to 2 dead destinations: ${figures(latencies(got.filter((x) => !aloneSet.has(x.id))))}`);
    console.log(`requests to the hung destination: ${hung.requests()} for ${hungIds.length} alerts`);

    // The deliveries endpoint shows the hung destination unhealthy (and the revived one healthy).
    const hungDestinations = (await deliveries(a, hungRule.id)).destinations;
    expect(hungDestinations).toEqual([expect.objectContaining({ actionIndex: 0, destination: hung.base, unhealthy: true, pending: 0 })]);
    expect(hungDestinations[0]!.consecutiveFailures).toBeGreaterThanOrEqual(NOTIFY.unhealthyAfter);
    expect((await deliveries(a, refusedRule.id)).destinations).toEqual([
      expect.objectContaining({
        actionIndex: 0,
        destination: `http://127.0.0.1:${refusedPort}`,
        unhealthy: false,
        consecutiveFailures: 0,
        pending: 0,
      }),
    ]);

    await expectOrdered(healthyRule.id, got);
  }, 150_000);

  it("a destination that recovers (503, then 200) gets every pending alert once, in per-rule sequence order", async () => {
    const { a, b } = env.accounts;
    const sender = await newFundedSender();
    let up = false;
    const flaky = await receiver(() => (up ? 200 : 503));
    const origin = new URL(flaky.base).origin;
    const ruleA = await rule(a, "recovering A", sender.address, `${flaky.base}/ra`);
    const ruleB = await rule(b, "recovering B", sender.address, `${flaky.base}/rb`);

    // Down: alerts pile up while every attempt gets 503 and the destination is marked unhealthy.
    const whileDown = await traffic(sender, 4, 3);
    await waitFor(async () => (await env.notify.queue.health(origin)).unhealthy, 10_000, 20);
    await new Promise((r) => setTimeout(r, 1000)); // a few failed probes
    const down = await env.notify.queue.health(origin);
    expect(down.unhealthy).toBe(true);
    expect(down.consecutiveFailures).toBeGreaterThanOrEqual(NOTIFY.unhealthyAfter);
    expect(flaky.requests.every((q) => q.status === 503)).toBe(true);
    const failedRequests = flaky.requests.length;

    // Back: the pending alerts and new ones arrive.
    up = true;
    const afterUp = await traffic(sender, 2, 3);
    for (const [r, path] of [
      [ruleA, "/ra"],
      [ruleB, "/rb"],
    ] as const) {
      const ids = idsOf(r.id, [...whileDown, ...afterUp]);
      await waitFor(async () => delivered(flaky, path).length >= ids.length, 30_000);
    }
    await new Promise((r) => setTimeout(r, 500));

    for (const [r, path, account] of [
      [ruleA, "/ra", a],
      [ruleB, "/rb", b],
    ] as const) {
      const ids = idsOf(r.id, [...whileDown, ...afterUp]);
      const got = delivered(flaky, path);
      expect(got.map((x) => x.id).sort()).toEqual([...ids].sort()); // every alert, none twice
      // Each 503'd alert got its 200 later; none was dead-lettered.
      const log = await deliveries(account, r.id);
      expect(log.total).toBe(ids.length);
      expect(log.entries.every((e) => e.ok)).toBe(true);
    }
    expect(failedRequests).toBeGreaterThanOrEqual(NOTIFY.unhealthyAfter);
    expect((await env.notify.queue.health(origin)).unhealthy).toBe(false);
    await expectOrdered(ruleA.id, delivered(flaky, "/ra"));
    await expectOrdered(ruleB.id, delivered(flaky, "/rb"));
  }, 90_000);
});
