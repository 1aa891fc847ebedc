/**
 * The notify scheduler against the real Redis (delivery queue, health, log, guard) and real local
 * HTTP receivers on 127.0.0.1 (allowlisted), with the real deliverer (undici). Dead letters are
 * collected by the injected function (the Kafka path is covered by stage.test.ts and the e2e test).
 * Skips when Redis is down.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Registry } from "prom-client";
import { createClient } from "redis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Alert as NotifyAlert } from "../../../lib/alerting/alert.js";
import { alertToAvro } from "../../../lib/alerting/avro.js";
import { loadConfig } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import { createDeliverer, type Deliverer } from "../../../pipeline/notify/deliver.js";
import { createDeliveryLog, type DeliveryLog } from "../../../pipeline/notify/log.js";
import { createDeliveryQueue, type DeadLetterItem, type DeliveryQueue } from "../../../pipeline/notify/queue.js";
import { type Scheduler, type SchedulerOptions, startScheduler } from "../../../pipeline/notify/scheduler.js";
import { createSecretStore } from "../../../pipeline/notify/sign.js";
import { jobsOfAlert } from "../../../pipeline/notify/stage.js";
import { waitFor } from "../../support/harness.js";
import { sampleAlert } from "../../unit/pipeline/notify/fixtures.js";
import { deletePrefix, redisSkipMessage, redisUp } from "../accounts/redis.js";

const url = loadConfig().redisUrl;
const up = await redisUp(url);
if (!up) console.warn(redisSkipMessage(url));

interface Receiver {
  base: string;
  /** Requests answered 2xx, in arrival order: `<ruleId>#<sequence>`. */
  delivered: string[];
  /** Every request seen (including refused/hung ones). */
  requests: number;
  /** Most requests open at the same time. */
  maxOpen: number;
  /** Answer for the next request: a status, or "hang" (never answer). */
  mode: number | "hang";
  /** When set, requests wait for it and are answered its status (overrides `mode`). */
  hold?: Promise<number>;
  close(): Promise<void>;
}

async function startReceiver(mode: number | "hang" = 200): Promise<Receiver> {
  let open = 0;
  const sockets = new Set<Socket>();
  const r: Receiver = {
    base: "",
    delivered: [],
    requests: 0,
    maxOpen: 0,
    mode,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((res) => server.close(res));
    },
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    r.requests++;
    open++;
    r.maxOpen = Math.max(r.maxOpen, open);
    res.on("close", () => open--);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (r.hold) {
        void r.hold.then((status) => res.writeHead(status).end());
        return;
      }
      if (r.mode === "hang") return;
      if (r.mode >= 200 && r.mode < 300) {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { ruleId: string; sequence: number };
        r.delivered.push(`${body.ruleId}#${body.sequence}`);
      }
      res.writeHead(r.mode).end();
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((res) => server.listen(0, "127.0.0.1", res));
  r.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return r;
}

function alertsOf(ruleId: string, actions: AlertDefinition[], count: number): NotifyAlert[] {
  return Array.from({ length: count }, (_, i) =>
    sampleAlert({ id: randomBytes(32).toString("hex"), ruleId, sequence: i + 1, status: "confirmed", actions }),
  );
}

describe.skipIf(!up)("notify scheduler (real Redis, local receivers)", () => {
  const prefix = `test-sched-${randomBytes(4).toString("hex")}:`;
  const redis = createClient({ url });
  let queue: DeliveryQueue;
  let log: DeliveryLog;
  let deliverer: Deliverer;
  const letters: DeadLetterItem[] = [];
  const receivers: Receiver[] = [];
  const schedulers: Scheduler[] = [];
  const logger = createLogger("silent");

  beforeAll(async () => {
    await redis.connect();
    queue = createDeliveryQueue(redis, prefix);
    log = createDeliveryLog({ redis, keyPrefix: prefix });
    deliverer = createDeliverer({
      fetchTimeoutMs: 800,
      allowlist: ["127.0.0.1"],
      secrets: createSecretStore({ redis, keyPrefix: prefix }),
    });
  });

  afterAll(async () => {
    await Promise.allSettled(schedulers.map((s) => s.stop()));
    await Promise.allSettled(receivers.map((r) => r.close()));
    await deliverer?.close();
    if (redis.isOpen) await redis.quit();
    await deletePrefix(url, prefix);
  });

  // The concurrency bound is per process: a scheduler left running by an earlier test (one that
  // failed before its stop) would add its own attempts, so each test starts with none running.
  beforeEach(async () => {
    await Promise.allSettled(schedulers.splice(0).map((s) => s.stop()));
  });

  const options = (over: Partial<SchedulerOptions> = {}): SchedulerOptions => ({
    retry: { maxAttempts: 4, baseDelayMs: 50, maxDelayMs: 400 },
    retryWindowMs: 4000,
    attemptTimeoutMs: 800,
    health: { unhealthyAfter: 3, probeBaseDelayMs: 400, probeMaxDelayMs: 800 },
    perDestinationConcurrency: 2,
    pollIntervalMs: 50,
    ...over,
  });

  type DeadLetterFn = (items: DeadLetterItem[]) => Promise<void>;

  function start(over: Partial<SchedulerOptions> = {}, registry?: Registry, deadLetter?: DeadLetterFn): Scheduler {
    const s = startScheduler({
      queue,
      deliverer,
      deliveryLog: log,
      logger,
      options: options(over),
      ...(registry ? { registry } : {}),
      deadLetter:
        deadLetter ??
        (async (items) => {
          letters.push(...items);
        }),
    });
    schedulers.push(s);
    return s;
  }

  async function enqueue(alerts: NotifyAlert[], windowMs = 4000, replay = false): Promise<number> {
    const now = Date.now();
    const jobs = alerts.flatMap((a, i) =>
      jobsOfAlert(
        alertToAvro(a),
        a,
        { topic: "alerts", partition: 0, offset: String(i), message: { key: Buffer.from(a.ruleId), value: Buffer.from(a.id) } as never },
        now,
        windowMs,
      ),
    );
    return queue.enqueue(jobs, now, { replay });
  }

  it("delivers, logs one entry per job, marks successes, and refuses to queue a delivered or queued action again", async () => {
    const rx = await startReceiver();
    receivers.push(rx);
    const ruleId = randomUUID();
    const actions: AlertDefinition[] = [
      { type: "Webhook (POST)", parameters: { url: `${rx.base}/post?key=secret` } },
      { type: "Webhook (GET)", parameters: { url: `${rx.base}/get/{nope}` } },
    ];
    const alerts = alertsOf(ruleId, actions, 2);
    expect(await enqueue(alerts)).toBe(4);
    expect(await enqueue(alerts)).toBe(0); // Kafka redelivery of queued alerts: nothing added
    const registry = new Registry();
    const s = start({}, registry);
    await waitFor(async () => (await log.list(ruleId)).total >= 4, 15_000);
    const page = await log.list(ruleId);
    expect(page.entries.map((e) => `${e.sequence}/${e.actionIndex}/${e.ok}`).sort()).toEqual([
      "1/0/true",
      "1/1/false",
      "2/0/true",
      "2/1/false",
    ]);
    expect(page.entries.find((e) => e.actionIndex === 1)).toMatchObject({ code: "CS_TEMPLATE_UNKNOWN_FIELD", attempts: 0, final: true });
    expect(page.entries.find((e) => e.actionIndex === 0)).toMatchObject({ attempts: 1, httpStatus: 200, destination: `${rx.base}/post?…` });
    expect(JSON.stringify(page)).not.toContain("secret");
    expect(rx.delivered).toEqual([`${ruleId}#1`, `${ruleId}#2`]);
    expect(await log.alreadyDelivered(alerts[0]!.id, 0)).toBe(true);
    // Delivered: a replay (`chainsift alerts replay`) of the same alert queues only the action that
    // was not delivered; a plain Kafka redelivery queues neither (both are finished).
    await waitFor(async () => (await queue.laneLength(`${ruleId}:1`)) === 0, 5000);
    expect(await enqueue([alerts[0]!])).toBe(0);
    expect(await enqueue([alerts[0]!], 4000, true)).toBe(1);
    await waitFor(async () => (await log.list(ruleId)).total >= 5, 10_000);
    expect(rx.delivered).toHaveLength(2);
    expect(s.stats().delivered).toBe(2);
    // The metrics count the same: 2 delivered (POST), 3 refused (GET with an unknown template field:
    // twice, and once more for the replayed alert),
    // and both deliveries observed from their block's timestamp (the fixture entity's) and from enqueueing.
    const sample = async (name: string, labels: Record<string, string>) =>
      (
        (await registry.getSingleMetric(name)!.get()).values as Array<{
          labels: Record<string, string | number>;
          value: number;
          metricName?: string;
        }>
      ).filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x));
    expect((await sample("chainsift_notify_deliveries_total", { channel: "Webhook (POST)", outcome: "delivered" }))[0]?.value).toBe(2);
    expect((await sample("chainsift_notify_deliveries_total", { channel: "Webhook (GET)", outcome: "refused" }))[0]?.value).toBe(3);
    const fromBlock = await sample("chainsift_notify_block_to_delivery_seconds", { channel: "Webhook (POST)", status: "confirmed" });
    expect(fromBlock.find((v) => v.metricName === "chainsift_notify_block_to_delivery_seconds_count")?.value).toBe(2);
    // 2026-01-02T03:04:00Z is in the past: every observation lies above the 1 s bucket's bound.
    expect(fromBlock.find((v) => v.metricName?.endsWith("_bucket") && v.labels.le === 1)?.value).toBe(0);
    await s.stop();
  });

  it("isolates a hanging and a failing destination: healthy alerts arrive, dead ones are dead-lettered once, connections stay bounded", async () => {
    const healthy = await startReceiver(200);
    const hanging = await startReceiver("hang");
    const failing = await startReceiver(503);
    receivers.push(healthy, hanging, failing);
    const [hRule, gRule, fRule] = [randomUUID(), randomUUID(), randomUUID()];
    const n = 30;
    const registry = new Registry();
    const s = start({}, registry);
    const before = letters.length;
    // Dead destinations' alerts are queued first, so a head-of-line design would stall the healthy ones.
    await enqueue(alertsOf(gRule, [{ type: "Webhook (POST)", parameters: { url: `${hanging.base}/h` } }], n));
    await enqueue(alertsOf(fRule, [{ type: "Webhook (POST)", parameters: { url: `${failing.base}/f` } }], n));
    const t0 = Date.now();
    await enqueue(alertsOf(hRule, [{ type: "Webhook (POST)", parameters: { url: `${healthy.base}/ok` } }], n));
    await waitFor(async () => healthy.delivered.length >= n, 20_000);
    const healthyMs = Date.now() - t0;
    // All healthy alerts arrived, in order, while the dead lanes still held most of their alerts.
    expect(healthy.delivered).toEqual(Array.from({ length: n }, (_, i) => `${hRule}#${i + 1}`));
    expect((await queue.laneLength(`${gRule}:0`)) + (await queue.laneLength(`${fRule}:0`))).toBeGreaterThan(n);
    console.log(`healthy lane: ${n} alerts delivered in ${healthyMs} ms next to a hanging and a failing destination`);
    // A destination that never failed still has its last success on record (the destinations status).
    const okHealth = await queue.health(new URL(healthy.base).origin);
    expect(okHealth.consecutiveFailures).toBe(0);
    expect(okHealth.lastSuccessAtMs).toBeGreaterThanOrEqual(t0);

    // The failing destination is marked unhealthy (queue, metric).
    await waitFor(async () => (await queue.health(new URL(failing.base).origin)).unhealthy, 10_000);
    const metric = await registry.getSingleMetric("chainsift_notify_destination_unhealthy")!.get();
    expect(metric.values.find((v) => v.labels.destination === new URL(failing.base).origin)?.value).toBe(1);

    // Every dead job ends in the dead letters exactly once; no healthy job does.
    await waitFor(async () => letters.length - before >= 2 * n, 30_000);
    const mine = letters.slice(before);
    const ids = mine.map((l) => l.job.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(2 * n);
    expect(new Set(mine.map((l) => l.job.ruleId))).toEqual(new Set([gRule, fRule]));
    expect(new Set(mine.map((l) => l.code))).toEqual(new Set(["CS_DELIVERY_EXHAUSTED", "CS_DESTINATION_UNHEALTHY"]));
    // Group backoff: far fewer requests than every alert retrying on its own (n × maxAttempts = 120).
    console.log(`requests: failing ${failing.requests}, hanging ${hanging.requests} (max open ${hanging.maxOpen}) for ${n} alerts each`);
    expect(failing.requests).toBeLessThan(n);
    expect(hanging.requests).toBeLessThan(n);
    // One lane per rule and action, so one connection at a time per lane here; never above the bound.
    expect(hanging.maxOpen).toBeLessThanOrEqual(2);
    // Each dead job's log entry says why.
    const logF = await log.list(fRule, { limit: 1000 });
    expect(logF.total).toBe(n);
    expect(logF.entries.every((e) => !e.ok && e.final === false)).toBe(true);
    await s.stop();
  });

  it("bounds attempts in flight per destination across lanes", async () => {
    const hanging = await startReceiver("hang");
    receivers.push(hanging);
    const s = start({ perDestinationConcurrency: 3, health: { unhealthyAfter: 1000, probeBaseDelayMs: 400, probeMaxDelayMs: 800 } });
    // 10 rules (10 lanes) to one hanging destination.
    for (let i = 0; i < 10; i++)
      await enqueue(alertsOf(randomUUID(), [{ type: "Webhook (POST)", parameters: { url: `${hanging.base}/x` } }], 2));
    await waitFor(async () => hanging.requests >= 6, 15_000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(hanging.maxOpen).toBe(3);
    await s.stop();
  });

  it("a destination that recovers receives every pending alert once, in per-rule order", async () => {
    const rx = await startReceiver(503);
    receivers.push(rx);
    const ruleA = randomUUID();
    const ruleB = randomUUID();
    const n = 15;
    const s = start({ retry: { maxAttempts: 50, baseDelayMs: 50, maxDelayMs: 300 }, retryWindowMs: 60_000 });
    await enqueue(alertsOf(ruleA, [{ type: "Webhook (POST)", parameters: { url: `${rx.base}/a` } }], n), 60_000);
    await enqueue(alertsOf(ruleB, [{ type: "Webhook (POST)", parameters: { url: `${rx.base}/b` } }], n), 60_000);
    await waitFor(async () => (await queue.health(new URL(rx.base).origin)).unhealthy, 10_000);
    const failedRequests = rx.requests;
    rx.mode = 200;
    await waitFor(async () => rx.delivered.length >= 2 * n, 30_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(rx.delivered).toHaveLength(2 * n);
    for (const rule of [ruleA, ruleB]) {
      expect(rx.delivered.filter((d) => d.startsWith(rule))).toEqual(Array.from({ length: n }, (_, i) => `${rule}#${i + 1}`));
    }
    expect((await queue.health(new URL(rx.base).origin)).unhealthy).toBe(false);
    expect(failedRequests).toBeGreaterThanOrEqual(3);
    await s.stop();
  });

  // Issue 19 §3 f: leases renewed while a job is worked, fenced by a token per claim, and a
  // finished job not queued again by a Kafka redelivery. Two notify members share one Redis.

  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const unconfiguredEmail: AlertDefinition[] = [{ type: "Email", parameters: { recipients: ["ops@example.com"] } }];

  it("a dead-lettering pass longer than the lease keeps it: a second member never works the same job", async () => {
    const ruleId = randomUUID();
    // The default lease: 4 × attemptTimeoutMs + 10 s = 10.2 s (no attempt is made: no mailer).
    const over = { attemptTimeoutMs: 50 };
    const leaseMs = 10_200;
    const mine: string[] = [];
    let entered!: () => void;
    const inside = new Promise<void>((r) => {
      entered = r;
    });
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // Member A's dead-letter pass (Kafka slow) hangs until the test lets it go.
    const a = start(over, undefined, async (items) => {
      // Jobs an earlier test of this file left queued (retries due later) may come by too: only this rule's count.
      const ours = items.filter((i) => i.job.ruleId === ruleId);
      if (ours.length === 0) return;
      mine.push(...ours.map((i) => `A:${i.job.id}`));
      entered();
      await gate;
    });
    const [alert] = alertsOf(ruleId, unconfiguredEmail, 1);
    expect(await enqueue([alert!])).toBe(1);
    await inside;
    // Member B looks at the same queue while A's pass outlives the lease.
    const b = start(over, undefined, async (items) => {
      mine.push(...items.filter((i) => i.job.ruleId === ruleId).map((i) => `B:${i.job.id}`));
    });
    await sleep(leaseMs + 1000);
    release();
    await waitFor(async () => (await queue.laneLength(`${ruleId}:0`)) === 0 && a.inFlight() === 0 && b.inFlight() === 0, 10_000);
    await sleep(200);
    // Exactly one dead letter and one log entry for the job, both by A.
    expect(mine).toEqual([`A:${alert!.id}:0`]);
    expect((await log.list(ruleId)).total).toBe(1);
    await Promise.all([a.stop(), b.stop()]);
  });

  it("a member whose lease was taken over does not log, pop or dead-letter the job; the new holder finishes it once", async () => {
    const rx = await startReceiver();
    receivers.push(rx);
    let answer!: (status: number) => void;
    rx.hold = new Promise<number>((r) => {
      answer = r;
    });
    const ruleId = randomUUID();
    const lane = `${ruleId}:0`;
    const leaseKey = `${prefix}notify:lease:${lane}`;
    const leaseMs = 300;
    const registry = new Registry();
    const a = start({ leaseMs }, registry);
    const before = letters.length;
    await enqueue(alertsOf(ruleId, [{ type: "Webhook (POST)", parameters: { url: `${rx.base}/gone` } }], 1));
    // A's attempt is at the receiver; meanwhile another claim takes the lease over (as after A
    // stopped renewing it for a whole lease: paused process, lost Redis connection).
    await waitFor(async () => rx.requests >= 1, 10_000, 20);
    await redis.set(leaseKey, "intruder", { expiration: { type: "PX", value: 1500 } });
    await sleep(leaseMs); // A's heartbeat sees the other token
    answer(410); // a final refusal: today A would log it and pop the job
    await waitFor(async () => a.inFlight() === 0, 10_000, 20);
    expect((await log.list(ruleId)).total).toBe(0);
    expect(await queue.laneLength(lane)).toBe(1);
    expect(await redis.get(leaseKey)).toBe("intruder");
    const lost = await registry.getSingleMetric("chainsift_notify_leases_lost_total")!.get();
    expect(lost.values[0]?.value).toBe(1);
    await a.stop();
    // Member B takes the lane once the other claim's lease ran out, and finishes the job: one entry.
    rx.hold = Promise.resolve(410);
    const b = start({ leaseMs });
    await waitFor(async () => (await log.list(ruleId)).total >= 1, 10_000);
    await waitFor(async () => (await queue.laneLength(lane)) === 0, 10_000);
    const page = await log.list(ruleId);
    expect(page.total).toBe(1);
    expect(page.entries[0]).toMatchObject({ ok: false, final: true, httpStatus: 410 });
    expect(rx.requests).toBe(2);
    expect(letters.length).toBe(before);
    await b.stop();
  });

  it("a finished job (refused or dead-lettered) is not queued again by a redelivery; a replay queues a dead-lettered one", async () => {
    const rx = await startReceiver(410);
    receivers.push(rx);
    const refusedRule = randomUUID();
    const deadRule = randomUUID();
    const refused = alertsOf(refusedRule, [{ type: "Webhook (POST)", parameters: { url: `${rx.base}/gone` } }], 1);
    const dead = alertsOf(deadRule, unconfiguredEmail, 1);
    const before = letters.length;
    const s = start();
    expect(await enqueue(refused)).toBe(1);
    expect(await enqueue(dead)).toBe(1);
    await waitFor(async () => (await log.list(refusedRule)).total === 1 && (await log.list(deadRule)).total === 1, 10_000);
    await waitFor(async () => (await queue.laneLength(`${refusedRule}:0`)) + (await queue.laneLength(`${deadRule}:0`)) === 0, 10_000);
    // Kafka redelivers both alerts (the process died before committing): nothing is queued again.
    expect(await enqueue(refused)).toBe(0);
    expect(await enqueue(dead)).toBe(0);
    expect(letters.length - before).toBe(1);
    // `chainsift alerts replay` puts the dead letter back: it is queued and dead-lettered again.
    expect(await enqueue(dead, 4000, true)).toBe(1);
    await waitFor(async () => letters.length - before === 2, 10_000);
    expect(rx.requests).toBe(1);
    await s.stop();
  });
});
