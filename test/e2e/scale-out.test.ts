/**
 * Scale-out on Kafka consumer groups, on the real stack and real mainnet data: two decode, two
 * index and two match instances run as separate processes (`cli/stage.ts <stage>`, what
 * `npm run stage -- <stage>` runs) with the same environment, so each pair shares one consumer
 * group and splits the topics' partitions (logs, transactions, events, traces: 3 partitions each,
 * topics/index.ts). This process ingests the mainnet fixture blocks one by one through the JSON-RPC
 * replay server and runs the notify stage, which posts the alerts of one rule (every USDT Transfer)
 * to a webhook receiver on 127.0.0.1. Once both members of every group hold partitions, and after a
 * seeded random number of blocks, one instance of each stage is SIGKILLed (by the pid this test
 * spawned); the survivor takes its partitions over at the group's rebalance (after the session
 * timeout) and consumes again from the last committed offsets.
 *
 * Checked at the end, once every group has consumed everything and the match outbox is empty:
 * - per kind (block, tx, log, event, call), the Elasticsearch index holds exactly the fixtures'
 *   records: document count = expected count and the `_id` set = the expected id set;
 * - the webhook receiver got each expected `confirmed` alert id exactly once, and no other.
 *
 * Reproduce a run with `SCALE_SEED=<seed>` (printed at start). docs/operations.md explains why
 * each stage scales.
 */
import { type Admin, AssignerProtocol } from "kafkajs";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prng } from "../../bench/support/prng.js";
import { indexName } from "../../es/mappings.js";
import { alertId } from "../../lib/alerting/alert.js";
import { createLogger } from "../../lib/logger.js";
import { type RecordKind, recordId } from "../../lib/records.js";
import { connectRuleStore } from "../../lib/rules/store.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { chainKeyPrefix } from "../../pipeline/match/keys.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import type { TopicKind } from "../../topics/index.js";
import { deletePrefix } from "../integration/accounts/redis.js";
import { type Receiver, startReceiver } from "../support/anvil-env.js";
import { fixtureRecords } from "../support/fixture-records.js";
import { type FixtureBlock, hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../support/fixtures.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { type RpcReplay, startRpcReplay } from "../support/rpc-replay.js";
import { configEnv, handledTotal, type KillableStage, killStage, spawnKillable } from "../support/stage-process.js";

const fixtures = hasMainnetFixtures();
const up = await probeStack();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

const USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7";
/** The scaled stages and the topics whose partitions their instances share. */
const SCALED = {
  decode: ["logs"],
  index: ["transactions", "logs", "events", "traces"],
  match: ["transactions", "logs", "events", "traces"],
} as const;
type Scaled = keyof typeof SCALED;
const KINDS: RecordKind[] = ["block", "tx", "log", "event", "call"];
/** Bound of each wait (start, rebalance + convergence); the test fails rather than wait longer. */
const CONVERGE_MS = 150_000;

describe.skipIf(!fixtures || !up.ok)("scale-out: 2 decode, 2 index, 2 match processes per consumer group, one of each SIGKILLed", () => {
  const seed = process.env.SCALE_SEED ? Number(process.env.SCALE_SEED) : Math.floor(Math.random() * 2 ** 31);
  const random = prng(seed);
  let h: Harness;
  let replay: RpcReplay;
  let receiver: Receiver;
  let pipeline: Pipeline;
  let admin: Admin | undefined;
  let closeRules: (() => Promise<void>) | undefined;
  let blocks: FixtureBlock[];
  let ruleId: string;
  const procs: KillableStage[] = [];
  const expectedIds = new Map<RecordKind, Set<string>>();
  const expectedAlerts = new Set<string>();

  beforeAll(async () => {
    console.log(`[scale-out] seed ${seed} (reproduce with SCALE_SEED=${seed})`);
    blocks = loadCompleteBlocks();
    h = createHarness();
    h.config.notify = { ...h.config.notify, maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 100, allowlist: ["127.0.0.1"] };
    replay = await startRpcReplay({ blocks, blockReceipts: true, traces: true });
    receiver = await startReceiver();
    // Topics, schemas and indices; this process runs notify only (the stages under test are processes).
    // Logs at error level: the fixtures' old blocks have no traces, which ingest warns about.
    pipeline = await startPipeline({ config: h.config, logger: createLogger("error", `test-${h.id}`), es: h.es, stages: ["notify"] });
    admin = pipeline.bus.kafka.admin();
    await admin.connect();

    const connected = await connectRuleStore(h.config);
    closeRules = () => connected.close();
    ruleId = (
      await connected.store.create("acc-e2e-scale", {
        name: "scale-out: every USDT Transfer",
        maxConfirmationCount: 1,
        sendPendingAlerts: false,
        state: "enabled",
        ...h.config.chain,
        config: {
          targetType: "Event",
          targetMap: [
            { name: "event", operator: "Equals", value: "Transfer", operatorParameters: null },
            { name: "address", operator: "Equals (ignore case)", value: USDT, operatorParameters: null },
          ],
          alerts: [{ type: "Webhook (POST)", parameters: { url: `${receiver.base}/hook/scale` }, payload: null }],
        },
      })
    ).id;

    // What must end in Elasticsearch, from the fixtures through the same transforms ingest, decode
    // and index use; and the alert of every USDT Transfer (threshold 1: `confirmed` at first sight).
    const expected = fixtureRecords(blocks, createDecoder({ chainId: 1 }));
    for (const [k, ids] of expected.ids) expectedIds.set(k, ids);
    for (const ev of expected.events)
      if (ev.event === "Transfer" && ev.address.toLowerCase() === USDT)
        expectedAlerts.add(alertId(ruleId, recordId("event", ev), ev.blockHash.toLowerCase(), "confirmed"));

    const env = configEnv(h.config, { LOG_LEVEL: "debug" });
    // Stage by stage, both instances at once: six TypeScript processes starting together on a
    // loaded 2-core machine can take longer than the ready timeout.
    for (const stage of Object.keys(SCALED) as Scaled[]) {
      const spawned = await Promise.allSettled(
        [1, 2].map((i) => spawnKillable({ stage, label: `${stage}#${i}`, env, readyTimeoutMs: 150_000 })),
      );
      for (const s of spawned) if (s.status === "fulfilled") procs.push(s.value);
      for (const s of spawned) if (s.status === "rejected") throw s.reason;
    }
  }, 600_000);

  afterAll(async () => {
    for (const p of procs) await killStage(p).catch(() => {});
    await admin?.disconnect().catch(() => {});
    await closeRules?.().catch(() => {});
    await pipeline?.stop();
    await replay?.close();
    await receiver?.close();
    await (await pipeline?.chainState())?.reset().catch(() => {});
    if (h) await deletePrefix(h.config.redisUrl, h.redisPrefix).catch(() => 0);
    await h?.cleanup();
  }, 60_000);

  /** Partitions each member of a stage's group holds, per topic kind (from the group's assignment). */
  const assignments = async (stage: Scaled): Promise<{ state: string; members: Array<Record<string, number[]>> }> => {
    const groupId = pipeline.bus.groupId(stage);
    const [group] = (await (admin as Admin).describeGroups([groupId])).groups;
    const members = (group?.members ?? []).map((m) => {
      const a = AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
      const out: Record<string, number[]> = {};
      for (const kind of SCALED[stage]) out[kind] = a?.assignment[pipeline.bus.topic(kind as TopicKind)] ?? [];
      return out;
    });
    return { state: group?.state ?? "unknown", members };
  };

  /** Messages not yet consumed by a stage's group, over the given topics. */
  const lag = async (groupId: string, kinds: readonly TopicKind[]): Promise<number> => {
    let total = 0;
    for (const kind of kinds) {
      const topic = pipeline.bus.topic(kind);
      const ends = await (admin as Admin).fetchTopicOffsets(topic);
      const [committed] = await (admin as Admin).fetchOffsets({ groupId, topics: [topic] });
      for (const e of ends) {
        const c = Number(committed?.partitions.find((p) => p.partition === e.partition)?.offset ?? -1);
        total += Number(e.high) - Math.max(0, c);
      }
    }
    return total;
  };

  /** Every `_id` of an index (the fixtures hold fewer than 10,000 records of any kind). */
  const idsOf = async (kind: RecordKind): Promise<{ count: number; ids: string[] }> => {
    const index = indexName(h.config.chain, kind, h.config.elasticsearch.indexPrefix);
    await h.es.indices.refresh({ index });
    const { count } = await h.es.count({ index });
    const res = await h.es.search({ index, size: 10_000, _source: false, query: { match_all: {} } });
    return { count, ids: res.hits.hits.map((hit) => hit._id as string) };
  };

  it("indexes every fixture record exactly once and delivers every expected alert exactly once", async () => {
    const started = Date.now();
    // Both members of every group hold partitions of the stage's topics before anything is produced.
    const before: Record<string, Array<Record<string, number[]>>> = {};
    await waitFor(
      async () => {
        for (const stage of Object.keys(SCALED) as Scaled[]) {
          const a = await assignments(stage);
          if (a.state !== "Stable" || a.members.length !== 2) return false;
          if (a.members.some((m) => Object.values(m).every((p) => p.length === 0))) return false;
          before[stage] = a.members;
        }
        return true;
      },
      CONVERGE_MS,
      500,
    );

    // Ingest block by block; after a seeded number of blocks and a short delay, kill one instance of each stage.
    // The kill comes after the block where a seeded 30-70 % of the fixture records were produced
    // (the early fixture blocks are tiny), once each victim has handled at least one batch.
    const sizes = blocks.map((fb) => 1 + (fb.block.transactions as unknown[]).length * 2);
    const target = (0.3 + 0.4 * random()) * sizes.reduce((a, b) => a + b, 0);
    let killAfter = 0;
    for (let sum = 0; killAfter < blocks.length - 1 && sum < target; killAfter++) sum += sizes[killAfter] as number;
    const killDelayMs = Math.floor(random() * 500);
    const victims = (Object.keys(SCALED) as Scaled[]).map((stage) => `${stage}#${1 + Math.floor(random() * 2)}`);
    const { ingester, close } = await pipeline.createIngester(replay.url, { traces: true });
    let kills: Promise<void> | undefined;
    let produced = 0;
    for (const [i, fb] of blocks.entries()) {
      produced += (await ingester.ingestBlocks([fb.number])).blocks;
      if (i + 1 === killAfter) {
        kills = (async () => {
          const victimProcs = victims.map((v) => procs.find((p) => p.label === v) as KillableStage);
          await new Promise((r) => setTimeout(r, killDelayMs));
          await waitFor(async () => victimProcs.every((p) => handledTotal(p) > 0), 30_000, 50).catch(() => {});
          const handledAtKill = victimProcs.map((p) => `${p.label}=${handledTotal(p)}`);
          await Promise.all(victimProcs.map((p) => killStage(p)));
          console.log(
            `[scale-out] SIGKILL ${victims.join(", ")} after block ${i + 1}/${blocks.length} (+${killDelayMs} ms); records handled by them until then: ${handledAtKill.join(", ")}`,
          );
        })();
      }
    }
    await close();
    await kills;
    expect(produced).toBe(blocks.length);

    // Converged: every group consumed everything (the survivors took the dead members' partitions
    // over), the match outbox is empty and notify consumed every alert.
    const outboxKey = `${chainKeyPrefix(h.config.redisKeyPrefix, h.config.chain)}outbox`;
    const redis = await createClient({ url: h.config.redisUrl }).connect();
    let lags: Record<string, number> = {};
    try {
      await waitFor(
        async () => {
          lags = {
            decode: await lag(pipeline.bus.groupId("decode"), ["logs"]),
            index: await lag(pipeline.bus.groupId("index"), ["blocks", "transactions", "logs", "events", "traces"]),
            match: await lag(pipeline.bus.groupId("match"), ["blocks", "transactions", "logs", "events", "traces"]),
            outbox: await redis.hLen(outboxKey),
            notify: await lag(pipeline.bus.groupId("notify"), ["alerts"]),
          };
          return Object.values(lags).every((n) => n === 0);
        },
        CONVERGE_MS,
        1000,
      ).catch((err) => console.error(`[scale-out] did not converge: ${String(err)} ${JSON.stringify(lags)}`));
    } finally {
      await redis.close();
    }
    const after: Record<string, Array<Record<string, number[]>>> = {};
    for (const stage of Object.keys(SCALED) as Scaled[]) after[stage] = (await assignments(stage)).members;

    const counts: Record<string, string> = {};
    const problems: string[] = [];
    for (const kind of KINDS) {
      const expected = expectedIds.get(kind) as Set<string>;
      const { count, ids } = await idsOf(kind);
      counts[kind] = `${count}/${expected.size}`;
      const got = new Set(ids);
      if (count !== expected.size) problems.push(`${kind}: ${count} documents, expected ${expected.size}`);
      const missing = [...expected].filter((id) => !got.has(id));
      const extra = [...got].filter((id) => !expected.has(id));
      if (missing.length > 0) problems.push(`${kind}: ${missing.length} missing, e.g. ${missing.slice(0, 3).join(" ")}`);
      if (extra.length > 0) problems.push(`${kind}: ${extra.length} unexpected, e.g. ${extra.slice(0, 3).join(" ")}`);
    }
    const delivered = receiver.deliveredAt("/hook/scale").map((r) => String(r.headers["x-chainsift-alert-id"]));
    const seen = new Map<string, number>();
    for (const id of delivered) seen.set(id, (seen.get(id) ?? 0) + 1);
    const doubled = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
    const lost = [...expectedAlerts].filter((id) => !seen.has(id));
    const unexpected = [...seen.keys()].filter((id) => !expectedAlerts.has(id));

    const byKind = (p: KillableStage) =>
      JSON.stringify(Object.fromEntries([...p.handled].map(([topic, n]) => [topic.slice(topic.lastIndexOf(".") + 1), n])));
    const handled = procs.map((p) => `${p.label}${p.killed ? "(killed)" : ""}=${byKind(p)}`);
    console.log(
      `[scale-out] summary: seed=${seed} blocks=${blocks.length} killAfterBlock=${killAfter} killed=[${victims.join(",")}]\n` +
        `  assignment before kill: ${JSON.stringify(before)}\n` +
        `  assignment at the end:  ${JSON.stringify(after)}\n` +
        `  records handled per instance (replays after the kill counted again): ${handled.join(" ")}\n` +
        `  Elasticsearch documents/expected: ${JSON.stringify(counts)}\n` +
        `  alerts: expected=${expectedAlerts.size} delivered=${delivered.length} distinct=${seen.size} doubled=${doubled.length} lost=${lost.length} unexpected=${unexpected.length}\n` +
        `  lag at the end: ${JSON.stringify(lags)} total=${((Date.now() - started) / 1000).toFixed(1)}s`,
    );
    if (problems.length > 0) for (const p of procs) console.error(`[scale-out] ${p.label} output tail:\n${p.output.join("\n")}`);

    // Every stage really ran as two members sharing the partitions, and one of each was killed.
    for (const stage of Object.keys(SCALED) as Scaled[]) expect(before[stage]).toHaveLength(2);
    expect(procs.filter((p) => p.killed).map((p) => p.label)).toEqual(victims);
    expect(procs.filter((p) => !p.killed).every((p) => p.child.exitCode === null && p.child.signalCode === null)).toBe(true);
    expect(problems).toEqual([]);
    expect(expectedAlerts.size).toBeGreaterThan(0);
    expect({ doubled, lost, unexpected }).toEqual({ doubled: [], lost: [], unexpected: [] });
    expect(delivered).toHaveLength(expectedAlerts.size);
  }, 300_000);
});
