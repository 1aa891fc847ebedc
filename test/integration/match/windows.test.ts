/**
 * Integration tests of the match stage's window evaluator (pipeline/match/windows/) against the
 * real Redis, under a unique key prefix deleted afterwards (never FLUSH), with the real
 * confirmation tracker behind it: records written before and after their block is evaluated,
 * replays of the same head (a restart before the offsets were committed), a second evaluator on
 * the same keys (a restarted process) and a late record that moves a crossing (a retraction whose
 * closing block is still canonical).
 */
import { createHash, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { Alert } from "../../../lib/alerting/alert.js";
import type { ChainId } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import type { Rule } from "../../../lib/rules/model.js";
import type { MatchedEntity, MatchInput } from "../../../pipeline/match/confirmations/decide.js";
import { createConfirmationTracker } from "../../../pipeline/match/confirmations/tracker.js";
import { createWindowEvaluator, type WindowEvaluator } from "../../../pipeline/match/windows/evaluator.js";
import { storedRule } from "../../support/rules.js";
import { keysOf, redisForFile, redisSkipMessage, redisUp } from "../accounts/redis.js";

const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const PREFIX = `cs-test-win-${randomUUID().slice(0, 8)}:`;
const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const up = await redisUp(REDIS_URL);
if (!up) console.warn(redisSkipMessage(REDIS_URL));
const redis = redisForFile(REDIS_URL, PREFIX, up);

const hashOf = (label: string) => `0x${createHash("sha256").update(label).digest("hex")}`;
const block = (n: number) => ({ number: n, hash: hashOf(`a-${n}`), timestamp: 1_700_000_000 + 12 * n });
const canonical = (n: number) => hashOf(`a-${n}`);

function windowRule(id: string, window: Record<string, unknown>): Rule {
  return storedRule({ id, window });
}

function transfer(n: number, i: number): MatchedEntity {
  return {
    entityId: `${hashOf(`tx-${n}-${i}`)}_e_${i}`,
    blockHash: hashOf(`a-${n}`),
    blockNumber: { num: n, raw: `0x${n.toString(16)}` },
    event: "Transfer",
  };
}

/** An evaluator and tracker on one key space; alerts collected in order. */
function stage(space: string, reorgDepth?: number) {
  const keyPrefix = `${PREFIX}${space}:`;
  const tracker = createConfirmationTracker({ redis: redis(), keyPrefix, chain: CHAIN });
  const alerts: Alert[] = [];
  let head = 0;
  const windows: WindowEvaluator = createWindowEvaluator({
    redis: redis(),
    keyPrefix,
    chain: CHAIN,
    logger: createLogger("silent", "test-windows"),
    ...(reorgDepth === undefined ? {} : { reorgDepth }),
    fire: async (m) => void alerts.push(...(await tracker.onMatches(m, head))),
    retract: async (m) => void alerts.push(...(await tracker.retract(m))),
  });
  const index = windows.watch(createRuleIndex({ chain: CHAIN }));
  return {
    alerts,
    index,
    windows,
    async at(n: number) {
      head = n;
      await windows.onHead({ head: { number: n, hash: canonical(n) }, block: block(n), canonical });
    },
  };
}

describe.skipIf(!up)("window evaluator (real Redis)", () => {
  it("windowed matches become window records, others pass through; records before and after their block both count", async () => {
    const s = stage("late");
    const rule = windowRule("r-late", { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "3" });
    s.index.upsert(rule);
    s.index.upsert(windowRule("r-plain", {}) as Rule);
    expect(s.windows.rules().map((r) => r.id)).toEqual(["r-late", "r-plain"]);
    const plain = { ...windowRule("r-other", {}), window: undefined } as Rule;
    s.index.upsert(plain);
    expect(s.windows.rules().map((r) => r.id)).not.toContain("r-other");
    s.index.remove("r-plain");

    await s.at(10);
    const other: MatchInput = { rule: plain, entity: transfer(11, 9) };
    // Two records of block 11 before its block record, one after it.
    const rest = await s.windows.addMatches([{ rule, entity: transfer(11, 0) }, other, { rule, entity: transfer(11, 1) }]);
    expect(rest).toEqual([other]);
    await s.at(11);
    expect(s.alerts).toEqual([]);
    await s.windows.addMatches([
      { rule, entity: transfer(11, 2) },
      { rule, entity: transfer(11, 2) },
    ]); // a replay adds nothing
    await s.at(12);
    expect(s.alerts.map((a) => [a.status, a.entityId, a.blockNumber])).toEqual([["pending", "window:11", 11]]);
    expect(s.alerts[0]?.entity.window).toMatchObject({ aggregate: "3", recordCount: 3 });

    // The same head again (a replay after a restart) and a second evaluator on the same keys emit nothing new.
    await s.at(12);
    const again = stage("late");
    again.index.upsert(rule);
    await again.at(12);
    await again.at(13);
    expect(s.alerts).toHaveLength(1);
    expect(again.alerts).toEqual([]);
  });

  it("a late record that makes an earlier end cross retracts the later firing whose block is still canonical", async () => {
    const s = stage("retract");
    const rule = windowRule("r-ret", { blocks: 1, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "2", reset: "0" });
    s.index.upsert(rule);
    await s.at(20);
    await s.windows.addMatches([{ rule, entity: transfer(21, 0) }]);
    await s.at(21);
    await s.windows.addMatches([
      { rule, entity: transfer(22, 0) },
      { rule, entity: transfer(22, 1) },
    ]);
    await s.at(22);
    expect(s.alerts.map((a) => [a.status, a.entityId])).toEqual([["pending", "window:22"]]);
    // Block 21's second record arrives late: 21 crosses, and 22 (count 2, not past reset 0) is no new crossing.
    await s.windows.addMatches([{ rule, entity: transfer(21, 1) }]);
    await s.at(23);
    expect(s.alerts.map((a) => [a.status, a.entityId])).toEqual([
      ["pending", "window:22"],
      ["removed", "window:22"],
      ["pending", "window:21"],
    ]);
  });
  it("an absence rule fires once at the first head of a silent window, and a late record retracts it", async () => {
    const s = stage("absence");
    const rule = { ...windowRule("r-abs", {}), window: undefined, absence: { blocks: 2 } } as Rule;
    s.index.upsert(rule);
    await s.at(30);
    await s.windows.addMatches([{ rule, entity: transfer(31, 0) }]);
    await s.at(31);
    await s.at(32);
    expect(s.alerts).toEqual([]); // block 31 holds a record
    await s.at(33); // 32–33 silent
    await s.at(34); // still silent: no second alert
    expect(s.alerts.map((a) => [a.status, a.entityId])).toEqual([["pending", "absence:33"]]);
    expect(s.alerts[0]?.entity).toMatchObject({ absence: true, window: { recordCount: 0, window: { fromBlock: 32, toBlock: 33 } } });
    // A record of block 33 that arrives late: the silence never was.
    await s.windows.addMatches([{ rule, entity: transfer(33, 0) }]);
    await s.at(35);
    expect(s.alerts.map((a) => [a.status, a.entityId])).toEqual([
      ["pending", "absence:33"],
      ["removed", "absence:33"],
      ["pending", "absence:35"],
    ]);
  });
  it("the record hashes of blocks pruned below the final height are deleted, the state's own blocks keep theirs", async () => {
    const s = stage("prune", 3);
    const rule = windowRule("r-prune", { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "100" });
    s.index.upsert(rule);
    await s.at(40);
    for (let n = 41; n <= 50; n++) {
      await s.windows.addMatches([{ rule, entity: transfer(n, 0) }]);
      await s.at(n);
    }
    const held = (await keysOf(REDIS_URL, `${PREFIX}prune:`)).filter((k) => k.includes(":r:"));
    // Final height 50 - 3 = 47; a 2-block window ending above it reaches back to 47: blocks 47..50 keep their records.
    const blocksHeld = [41, 42, 43, 44, 45, 46, 47, 48, 49, 50].filter((n) => held.some((k) => k.endsWith(`:r:${hashOf(`a-${n}`)}`)));
    expect(blocksHeld).toEqual([47, 48, 49, 50]);
    expect(held).toHaveLength(4);
  });
  it("a deleted or changed windowed rule's state, dirty fields and record hashes are deleted; other windows keep theirs", async () => {
    const s = stage("drop");
    const space = `${PREFIX}drop:`;
    const count = { blocks: 3, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "100" };
    const kept = windowRule("r-kept", count);
    const changed = windowRule("r-changed", count);
    const deleted = windowRule("r-deleted", count);
    for (const r of [kept, changed, deleted]) s.index.upsert(r);
    await s.at(60);
    for (let n = 61; n <= 63; n++) {
      await s.windows.addMatches([kept, changed, deleted].map((rule) => ({ rule, entity: transfer(n, 0) })));
      await s.at(n);
    }
    // Late records of block 63 (dirty fields not consumed yet).
    await s.windows.addMatches([kept, changed, deleted].map((rule) => ({ rule, entity: transfer(63, 1) })));
    const windowKeysOf = async (windowId: string) => (await keysOf(REDIS_URL, space)).filter((k) => k.includes(`win:${windowId}`));
    const dirtyOf = async (windowId: string) =>
      Object.keys(await redis().hGetAll(`${(await keysOf(REDIS_URL, space)).find((k) => k.endsWith("win:dirty"))}`)).filter((f) =>
        f.startsWith(`${windowId}|`),
      );
    for (const id of ["r-kept:1", "r-changed:1", "r-deleted:1"]) {
      expect(await windowKeysOf(id)).toHaveLength(4); // the state and the record hashes of blocks 61..63
      expect(await dirtyOf(id)).toHaveLength(1);
    }

    s.index.upsert(changed); // the periodic reload: same version, nothing dropped
    s.index.upsert({ ...changed, version: 2 });
    s.index.remove("r-deleted");
    await s.windows.dropped();
    expect(await windowKeysOf("r-changed:1")).toEqual([]);
    expect(await windowKeysOf("r-deleted:1")).toEqual([]);
    expect(await dirtyOf("r-changed:1")).toEqual([]);
    expect(await dirtyOf("r-deleted:1")).toEqual([]);
    expect(await windowKeysOf("r-kept:1")).toHaveLength(4);
    expect(await dirtyOf("r-kept:1")).toHaveLength(1);

    // The new version starts its own window; disabling it drops that one too.
    await s.windows.addMatches([{ rule: { ...changed, version: 2 }, entity: transfer(64, 0) }]);
    await s.at(64);
    expect(await windowKeysOf("r-changed:2")).toHaveLength(2);
    s.index.upsert({ ...changed, version: 3, state: "disabled" });
    await s.windows.dropped();
    expect(await windowKeysOf("r-changed:2")).toEqual([]);
    expect(s.windows.rules().map((r) => r.id)).toEqual(["r-kept"]);
  });
});
