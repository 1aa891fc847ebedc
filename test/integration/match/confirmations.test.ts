/**
 * Integration tests of the confirmation tracker (pipeline/match/confirmations/) against the real
 * Redis (REDIS_URL, default redis://127.0.0.1:6379), under a unique key prefix deleted afterwards
 * (never FLUSH). Covers pending/confirmed timing, maxConfirmationCount 0 and 1, reorgs, duplicate
 * processing, concurrent instances and restarts, and the transactional outbox (every emitted alert
 * stays, identical, in `unacked()` until `ack`; `claimUnacked` hands orphans to one sweeper at a time).
 */
import { createHash, randomUUID } from "node:crypto";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Alert, Alert as EmittedAlert } from "../../../lib/alerting/alert.js";
import type { ChainId } from "../../../lib/config/index.js";
import type { Rule } from "../../../lib/rules/model.js";
import type { ChainHead, MatchedEntity } from "../../../pipeline/match/confirmations/decide.js";
import {
  type ConfirmationTracker,
  type ConfirmationTrackerDeps,
  createConfirmationTracker,
} from "../../../pipeline/match/confirmations/tracker.js";
import { luaScript, runLua } from "../../../pipeline/match/lua.js";
import { deletePrefix, keysOf, redisSkipMessage, redisUp } from "../accounts/redis.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `cs-test-match-${randomUUID().slice(0, 8)}:`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const up = await redisUp(REDIS_URL);
if (!up) console.warn(redisSkipMessage(REDIS_URL));

let client: RedisClientType;
const clients: RedisClientType[] = [];

async function connect(): Promise<RedisClientType> {
  const c = createClient({ url: REDIS_URL }) as RedisClientType;
  c.on("error", () => {});
  await c.connect();
  clients.push(c);
  return c;
}

let n = 0;
/** A tracker on its own key space (one per test), optionally on a fresh connection. */
function tracker(space: string, redis: RedisClientType = client, over: Partial<ConfirmationTrackerDeps> = {}): ConfirmationTracker {
  return createConfirmationTracker({
    redis,
    keyPrefix: `${PREFIX}${space}:`,
    chain: CHAIN,
    now: () => new Date("2024-05-01T00:00:00.000Z"),
    ...over,
  });
}

function rule(over: Partial<Rule> = {}): Rule {
  n++;
  return {
    id: `rule-${n}`,
    accountId: "acct-1",
    name: `r${n}`,
    version: 3,
    state: "enabled",
    sendPendingAlerts: true,
    description: null,
    maxConfirmationCount: 3,
    ...CHAIN,
    config: {
      targetType: "Event",
      targetMap: [{ name: "event", operator: "Equals", value: "Transfer" }],
      alerts: [
        {
          type: "Webhook (POST)",
          parameters: { url: "http://hook/{transactionHash}" },
          payload: [{ fieldType: "Field", fieldName: "event" }],
        },
      ],
    },
    createdAt: "2024-01-01T00:00:00.000Z",
    updatedAt: "2024-01-01T00:00:00.000Z",
    ...over,
  };
}

const hashOf = (label: string) => `0x${createHash("sha256").update(label).digest("hex")}`;

function entity(block: number, fork = "a", idx = 0): MatchedEntity {
  return {
    entityId: `${hashOf(`tx-${block}-${idx}`)}_e_${idx}`,
    blockHash: hashOf(`${fork}-${block}`),
    blockNumber: { num: block, raw: `0x${block.toString(16)}` },
    event: "Transfer",
    transactionHash: hashOf(`tx-${block}-${idx}`),
  };
}

/** Canonical chain "a" except the listed heights, which belong to fork "b". */
function canonicalOf(forkB: number[] = []) {
  return (h: number) => hashOf(`${forkB.includes(h) ? "b" : "a"}-${h}`);
}
const head = (number: number, forkB: number[] = []): ChainHead => ({ number, hash: canonicalOf(forkB)(number) });
const statuses = (alerts: Alert[]) => alerts.map((a) => `${a.status}@${a.confirmations}#${a.sequence}`);

beforeAll(async () => {
  if (up) client = await connect();
});
afterAll(async () => {
  if (!up) return;
  await deletePrefix(REDIS_URL, PREFIX);
  for (const c of clients) await c.close();
});

describe.skipIf(!up)("confirmation tracker (real Redis)", () => {
  it("pending at first sight, confirmed exactly at the Nth head, then nothing", async () => {
    const t = tracker("nth");
    const r = rule({ maxConfirmationCount: 3 });
    const e = entity(100);
    const first = await t.onMatch(r, e, 100);
    expect(statuses(first)).toEqual(["pending@1#1"]);
    const p = first[0] as Alert;
    expect(p.id).toBe(createHash("sha256").update(`${r.id}|${e.entityId}|${e.blockHash}|pending`).digest("hex"));
    expect(p).toMatchObject({
      ruleId: r.id,
      ruleVersion: 3,
      accountId: "acct-1",
      maxConfirmationCount: 3,
      chain: CHAIN,
      targetType: "Event",
      entityId: e.entityId,
      blockHash: e.blockHash,
      blockNumber: 100,
      payload: { event: "Transfer" },
      actions: r.config.alerts,
      emittedAt: "2024-05-01T00:00:00.000Z",
    });
    expect(p.entity).toEqual(e);
    expect(await t.trackedCount()).toBe(1);
    expect(await t.onHead(head(101), canonicalOf())).toEqual([]);
    const confirmed = await t.onHead(head(102), canonicalOf());
    expect(statuses(confirmed)).toEqual(["confirmed@3#2"]);
    expect(confirmed[0]?.id).toBe(createHash("sha256").update(`${r.id}|${e.entityId}|${e.blockHash}|confirmed`).digest("hex"));
    expect(confirmed[0]?.payload).toEqual({ event: "Transfer" });
    expect(await t.onHead(head(102), canonicalOf())).toEqual([]);
    expect(await t.onHead(head(103), canonicalOf())).toEqual([]);
    expect(await t.onMatch(r, e, 104)).toEqual([]); // replay after confirmation
    expect(await t.trackedCount()).toBe(0);
  });

  it("without sendPendingAlerts only the confirmed alert goes out", async () => {
    const t = tracker("nopending");
    const r = rule({ sendPendingAlerts: false, maxConfirmationCount: 2 });
    expect(await t.onMatch(r, entity(50), 50)).toEqual([]);
    expect(await t.trackedCount()).toBe(1);
    expect(statuses(await t.onHead(head(51), canonicalOf()))).toEqual(["confirmed@2#1"]);
  });

  it("maxConfirmationCount 0 and 1 confirm at first sight (no pending), once", async () => {
    const t = tracker("zero-one");
    for (const max of [0, 1]) {
      const r = rule({ maxConfirmationCount: max });
      const e = entity(10 + max);
      expect(statuses(await t.onMatch(r, e, 10 + max))).toEqual(["confirmed@1#1"]);
      expect(await t.onMatch(r, e, 10 + max)).toEqual([]);
      expect(await t.onHead(head(20), canonicalOf())).toEqual([]);
    }
    expect(await t.trackedCount()).toBe(0);
  });

  it("a match first seen when already deep enough is confirmed at once with its confirmations", async () => {
    const t = tracker("late");
    const r = rule({ maxConfirmationCount: 5 });
    expect(statuses(await t.onMatch(r, entity(200), 210))).toEqual(["confirmed@11#1"]);
    // a head below the block counts as the block itself
    expect(statuses(await t.onMatch(rule({ maxConfirmationCount: 2 }), entity(300), 250))).toEqual(["pending@1#1"]);
  });

  it("reorg before confirmation: removed (only when pending went out), never confirmed", async () => {
    const t = tracker("reorg");
    const withPending = rule({ maxConfirmationCount: 4 });
    const silent = rule({ maxConfirmationCount: 4, sendPendingAlerts: false });
    const e = entity(500);
    expect(statuses(await t.onMatch(withPending, e, 500))).toEqual(["pending@1#1"]);
    expect(await t.onMatch(silent, e, 500)).toEqual([]);
    expect(await t.onHead(head(501), canonicalOf())).toEqual([]);
    // block 500 replaced by fork b
    const removed = await t.onHead(head(502, [500, 501, 502]), canonicalOf([500, 501, 502]));
    expect(statuses(removed)).toEqual(["removed@0#2"]);
    expect(removed[0]).toMatchObject({ ruleId: withPending.id, entityId: e.entityId, blockHash: e.blockHash });
    // it names the block that took block 500's place (fork b's)
    expect(removed[0]?.replacedBy).toEqual({ number: 500, hash: hashOf("b-500") });
    expect(removed[0]?.id).toBe(createHash("sha256").update(`${withPending.id}|${e.entityId}|${e.blockHash}|removed`).digest("hex"));
    expect(await t.trackedCount()).toBe(0);
    for (let h = 503; h < 510; h++) expect(await t.onHead(head(h, [500, 501, 502]), canonicalOf([500, 501, 502]))).toEqual([]);
    // the same entity in the replacing block is a new match (here already deep enough: confirmed at once)
    const eb = { ...e, blockHash: hashOf("b-500") };
    expect(statuses(await t.onMatch(withPending, eb, 509))).toEqual(["confirmed@10#3"]);
  });

  it("unknown canonical hashes neither drop nor block confirmation", async () => {
    const t = tracker("unknown");
    const r = rule({ maxConfirmationCount: 2 });
    expect(statuses(await t.onMatch(r, entity(700), 700))).toEqual(["pending@1#1"]);
    expect(statuses(await t.onHead({ number: 701, hash: hashOf("a-701") }, () => undefined))).toEqual(["confirmed@2#2"]);
  });

  it("duplicate processing and two concurrent instances never emit an alert twice", async () => {
    const other = await connect();
    const a = tracker("dup");
    const b = tracker("dup", other);
    const r = rule({ maxConfirmationCount: 3 });
    const e = entity(900);
    const both = await Promise.all([a.onMatch(r, e, 900), b.onMatch(r, e, 900), a.onMatch(r, e, 900)]);
    expect(both.flat().map((x) => x.status)).toEqual(["pending"]);
    expect(await t2(a, b, head(901))).toEqual([]);
    const conf = await t2(a, b, head(902));
    expect(conf.map((x) => `${x.status}#${x.sequence}`)).toEqual(["confirmed#2"]);
    expect(await t2(a, b, head(902))).toEqual([]);
  });

  it("a new tracker instance (restart) continues from Redis", async () => {
    const r = rule({ maxConfirmationCount: 3 });
    const r2 = rule({ maxConfirmationCount: 2 });
    const before = tracker("restart");
    expect(statuses(await before.onMatch(r, entity(1000), 1000))).toEqual(["pending@1#1"]);
    expect(statuses(await before.onMatch(r2, entity(1001, "a", 1), 1001))).toEqual(["pending@1#1"]);
    // "restart": new connection, new tracker object, nothing in memory
    const after = tracker("restart", await connect());
    expect(await after.trackedCount()).toBe(2);
    expect(await after.onMatch(r, entity(1000), 1001)).toEqual([]);
    const out = await after.onHead(head(1002), canonicalOf());
    expect(out.map((x) => `${x.ruleId}:${x.status}@${x.confirmations}#${x.sequence}`)).toEqual([
      `${r.id}:confirmed@3#2`,
      `${r2.id}:confirmed@2#2`,
    ]);
    expect(out[0]?.payload).toEqual({ event: "Transfer" }); // rebuilt from the stored snapshot
    expect(await before.onHead(head(1002), canonicalOf())).toEqual([]);
  });

  it("sequences are per rule and strictly increasing; onMatches keeps input order", async () => {
    const t = tracker("seq");
    const r = rule({ maxConfirmationCount: 2 });
    const other = rule({ maxConfirmationCount: 2 });
    const alerts = await t.onMatches(
      [0, 1, 2].flatMap((i) => [
        { rule: r, entity: entity(1200, "a", i) },
        { rule: other, entity: entity(1200, "a", i) },
      ]),
      1200,
    );
    expect(alerts.map((a) => `${a.ruleId === r.id ? "r" : "o"}${a.sequence}`)).toEqual(["r1", "o1", "r2", "o2", "r3", "o3"]);
    const confirmed = await t.onHead(head(1201), canonicalOf());
    expect(confirmed).toHaveLength(6);
    for (const id of [r.id, other.id]) {
      const seqs = confirmed.filter((a) => a.ruleId === id).map((a) => a.sequence);
      expect(seqs).toEqual([4, 5, 6]);
    }
  });

  it("dropRule forgets a rule's tracked matches silently; keys stay under the prefix", async () => {
    const t = tracker("drop");
    const r = rule({ maxConfirmationCount: 5 });
    await t.onMatch(r, entity(1300), 1300);
    await t.onMatch(r, entity(1301), 1301);
    expect(await t.dropRule(r.id)).toBe(2);
    expect(await t.trackedCount()).toBe(0);
    expect(await t.onHead(head(1310), canonicalOf())).toEqual([]);
    const keys = await keysOf(REDIS_URL, `${PREFIX}drop:`);
    expect(keys.every((k) => k.startsWith(`${PREFIX}drop:match:ethereum/ethereum/mainnet:`))).toBe(true);
    expect(keys.some((k) => k.includes(":m:"))).toBe(false);
  });

  it("rejects entities without id or block", async () => {
    const t = tracker("bad");
    await expect(t.onMatch(rule(), { entityId: "", blockHash: "0x1", blockNumber: 1 }, 1)).rejects.toThrow(TypeError);
    await expect(t.onMatch(rule(), { entityId: "x", blockHash: "0x1", blockNumber: -1 }, 1)).rejects.toThrow(TypeError);
  });
});

describe.skipIf(!up)("confirmation tracker outbox (real Redis)", () => {
  const ids = (alerts: Alert[]) => alerts.map((a) => a.id);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("every emitted alert (pending, confirmed, removed) is in unacked(), byte-identical and in emission order, until acked", async () => {
    const t = tracker("outbox-all");
    const tracked = rule({ maxConfirmationCount: 3, name: "tracked" });
    const instant = rule({ maxConfirmationCount: 0, name: "instant" });
    const emitted: EmittedAlert[] = [];
    emitted.push(...(await t.onMatch(tracked, entity(100), 100))); // pending
    emitted.push(...(await t.onMatch(tracked, entity(101, "a", 1), 101))); // pending, reorged below
    emitted.push(
      ...(await t.onMatches(
        [0, 1].map((i) => ({ rule: instant, entity: entity(100, "a", i) })),
        100,
      )),
    ); // 2 confirmed
    emitted.push(...(await t.onHead(head(102, [101, 102]), canonicalOf([101, 102])))); // removed (101) + confirmed (100)
    expect(emitted.map((a) => `${a.ruleId === tracked.id ? "t" : "i"}:${a.status}#${a.sequence}`)).toEqual([
      "t:pending#1",
      "t:pending#2",
      "i:confirmed#1",
      "i:confirmed#2",
      "t:removed#3",
      "t:confirmed#4",
    ]);
    expect(emitted.map((a) => a.ruleName)).toEqual(["tracked", "tracked", "instant", "instant", "tracked", "tracked"]);
    expect(emitted.map((a) => a.replacedBy ?? null)).toEqual([null, null, null, null, { number: 101, hash: hashOf("b-101") }, null]);

    const outbox = await t.unacked();
    expect(JSON.stringify(outbox)).toBe(JSON.stringify(emitted)); // same fields, same order, same bytes
    expect(JSON.stringify(await t.unacked())).toBe(JSON.stringify(emitted)); // reading claims nothing
    expect(ids(await t.unacked(2))).toEqual(ids(emitted.slice(0, 2)));
    expect(await t.unacked(0)).toEqual([]);

    await t.ack([emitted[1]!.id, emitted[4]!.id, "not-an-alert-id"]);
    expect(ids(await t.unacked())).toEqual(ids([emitted[0]!, emitted[2]!, emitted[3]!, emitted[5]!]));
    await t.ack([]);
    await t.ack(ids(emitted));
    expect(await t.unacked()).toEqual([]);
    // Acking forgets nothing else: replays still emit nothing.
    expect(await t.onMatch(instant, entity(100, "a", 0), 100)).toEqual([]);
    expect(await t.unacked()).toEqual([]);
  });

  it("a crash between emission and publish loses nothing: the replay emits nothing, a new instance finds the alert in the outbox", async () => {
    const r = rule({ maxConfirmationCount: 0 });
    const e = entity(2000);
    const before = tracker("outbox-crash");
    const [lost] = await before.onMatch(r, e, 2000); // "the process dies" before publishing it
    expect(lost?.status).toBe("confirmed");

    const after = tracker("outbox-crash", await connect(), { now: () => new Date("2030-01-01T00:00:00.000Z") });
    expect(await after.onMatch(r, e, 2000)).toEqual([]); // the redelivered record: guard already set
    expect(await after.onMatch(r, e, 2003)).toEqual([]);
    const outbox = await after.unacked();
    expect(JSON.stringify(outbox)).toBe(JSON.stringify([lost])); // same id, sequence, emittedAt, payload
    expect(outbox[0]?.emittedAt).toBe("2024-05-01T00:00:00.000Z");
    await after.ack([lost!.id]);
    expect(await before.unacked()).toEqual([]);
  });

  it("claimUnacked: nothing during the visibility window, then each orphan to one of two concurrent sweepers, again after the lease", async () => {
    const visible = { outboxVisibilityMs: 300 };
    const a = tracker("outbox-claim", client, visible);
    const b = tracker("outbox-claim", await connect(), visible);
    const r = rule({ maxConfirmationCount: 0 });
    const emitted = await a.onMatches(
      [0, 1, 2].map((i) => ({ rule: r, entity: entity(3000, "a", i) })),
      3000,
    );
    expect(emitted).toHaveLength(3);
    expect(await a.claimUnacked()).toEqual([]); // the emitter is still expected to publish them
    await sleep(400);
    const [x, y] = await Promise.all([a.claimUnacked({ leaseMs: 300 }), b.claimUnacked({ leaseMs: 300 })]);
    expect(JSON.stringify([...x, ...y].sort((p, q) => p.sequence - q.sequence))).toBe(JSON.stringify(emitted));
    expect(ids(x.length > 0 ? x : y)).toEqual(ids(emitted)); // one sweeper got them all, in emission order
    expect(await b.claimUnacked()).toEqual([]); // leased
    await a.ack([emitted[0]!.id]);
    await sleep(400);
    expect(ids(await b.claimUnacked({ limit: 1 }))).toEqual([emitted[1]!.id]); // not acked by the first claimer: claimable again
    expect(ids(await b.claimUnacked())).toEqual([emitted[2]!.id]);
    await b.ack(ids(emitted));
    await sleep(400);
    expect(await a.claimUnacked()).toEqual([]);
    expect(await a.unacked()).toEqual([]);
  });
});

/** Runs onHead on two instances concurrently and returns all alerts. */
async function t2(a: ConfirmationTracker, b: ConfirmationTracker, h: ChainHead): Promise<Alert[]> {
  const [x, y] = await Promise.all([a.onHead(h, canonicalOf()), b.onHead(h, canonicalOf())]);
  return [...x, ...y];
}

describe.skipIf(!up)("Lua layouts of the tracker's scripts (real Redis, pipeline/match/lua.ts)", () => {
  it("binds every fixed and item value to its name", async () => {
    // Reads no key: the key names are only echoed back.
    const echo = luaScript(
      { keys: ["first", "second"], args: ["ttl"], item: { keys: ["state", "guard"], args: ["member", "status", "n"] } },
      `
local out = { first, second, ttl, tostring(itemCount) }
for i = 1, itemCount do
  local it = item(i)
  out[#out + 1] = it.state .. ',' .. it.guard .. ',' .. it.member .. ',' .. it.status .. ',' .. it.n
end
return out
`,
    );
    const items = [1, 2, 3].map((i) => ({ state: `s${i}`, guard: `g${i}`, member: `m${i}`, status: `st${i}`, n: i }));
    expect(await runLua(client, echo, { first: "f", second: "g", ttl: 60 }, items)).toEqual([
      "f",
      "g",
      "60",
      "3",
      "s1,g1,m1,st1,1",
      "s2,g2,m2,st2,2",
      "s3,g3,m3,st3,3",
    ]);
  });
});
