/**
 * Windowed rules in the match stage (issue 33; docs/alerting.md, "Alerts over time"; design in
 * docs/design/windows.md). Two roles:
 *
 * - **Adding records (every member).** A record a windowed rule's conditions select does not go
 *   to the confirmation tracker; {@link WindowEvaluator.addMatches} writes it (`HSETNX`, idempotent
 *   by record id) to the window's record hash of its block and marks the (window, block) dirty, in
 *   one script, before the batch's offsets are committed.
 * - **Evaluating (the member that consumes the one-partition `blocks` topic).** On every block and
 *   reorg record, {@link WindowEvaluator.onHead} loads each windowed rule's state, drops the blocks
 *   that left the canonical chain (`orphanBlocks`), applies the new block with its records
 *   (`applyBlock`), adds the records written late (`addRecords`), emits the events, and saves the
 *   state with compare-and-set on its revision.
 *
 * Events become alerts through the existing machinery: a firing is a match of the rule with the
 * entity {@link firingEntity} (entity id `window:<end>[:<group>]`, the closing block's hash and
 * number), so confirmations count from the block that closed the window, a reorg of that block
 * gives `removed` (when `pending` went out), alert ids and guards are the tracker's, and the
 * outbox publishes. A retraction whose closing block is still canonical (late records changed the
 * machine) is a `removed` of that match ({@link WindowEvaluatorDeps.retract}).
 *
 * Crash safety: alerts are emitted before the state is saved. A crash in between replays the head
 * from the saved state, which gives the same events; the tracker's guards (alert id =
 * `sha256(ruleId|entityId|blockHash|status)`) emit each once. A crash before the save loses nothing.
 * @module
 */
import type { ChainId } from "../../../lib/config/index.js";
import type { Logger } from "../../../lib/logger.js";
import type { RuleIndex } from "../../../lib/match/rule-index.js";
import { firingEntity, windowRecordOfRule, windowSearch } from "../../../lib/match/window-records.js";
import {
  addRecords,
  applyBlock,
  checkWindowConfig,
  createWindowState,
  orphanBlocks,
  type WindowConfig,
  type WindowEvent,
  type WindowFiring,
  type WindowRecord,
  type WindowState,
} from "../../../lib/match/windows.js";
import type { Rule } from "../../../lib/rules/model.js";
import { absenceConfigOf, ruleAbsence, ruleWindow, windowConfigOf } from "../../../lib/rules/schema-window.js";
import type { MatchInput } from "../confirmations/decide.js";
import { runLua } from "../lua.js";
import type { MatchRedis } from "../redis.js";
import {
  ADD_RECORDS,
  BLOCK_RECORDS,
  DIRTY,
  DROP_RECORDS,
  DROP_WINDOW,
  LOAD_STATE,
  RECORD_TTL_SECONDS,
  SAVE_STATE,
  WINDOW_FOOTPRINT,
  windowId,
  windowKeys,
} from "./scripts.js";

export { firingEntity };

/** A firing or retraction the stage turns into alerts. */
export interface WindowMatch extends MatchInput {
  /** The window's firing. */
  firing: WindowFiring;
}

/** Dependencies of {@link createWindowEvaluator}. */
export interface WindowEvaluatorDeps {
  redis: MatchRedis;
  /** config `redisKeyPrefix`. */
  keyPrefix: string;
  chain: ChainId;
  logger: Logger;
  /** Blocks below the head that a reorg can change; default the arithmetic's 128 (ingest's reorgWindow). */
  reorgDepth?: number;
  /** Records firings as matches (the stage's confirmation trackers and publisher). */
  fire(matches: readonly MatchInput[]): Promise<void>;
  /** Retracts firings whose windows no longer cross (`removed` where `pending` went out). */
  retract(matches: readonly MatchInput[]): Promise<void>;
}

/** The canonical chain as the stage knows it. */
export interface HeadView {
  /** The newest canonical block. */
  head: { number: number; hash: string };
  /** The block record just consumed, when the event is a block (not a reorg). */
  block?: { number: number; hash: string; timestamp: number };
  /** The canonical hash at a height, or undefined when unknown. */
  canonical(n: number): string | undefined;
}

/** What {@link WindowEvaluator.watch} wraps: an index of rule-shaped snapshots by id. */
export type WatchedIndex = Pick<RuleIndex, "upsert" | "get"> & { remove(id: string): unknown };

/** See the module doc. */
export interface WindowEvaluator {
  /** The windowed rules held (enabled, on the chain). */
  rules(): Rule[];
  /**
   * Wraps an index so that its upserts and removals keep {@link WindowEvaluator.rules}: the stage's
   * rule index, and its saved-search index (pipeline/match/search-index.ts; a saved search's query
   * selects the records, its `window` or `absence` decides when it fires). Ids are UUIDs of either
   * store, so one evaluator holds both.
   */
  watch<T extends WatchedIndex>(index: T): T;
  /** Splits matches: those of windowed rules are written as window records (returns the others). */
  addMatches(matches: readonly MatchInput[]): Promise<MatchInput[]>;
  /** Evaluates every windowed rule at a new head (module doc). */
  onHead(view: HeadView): Promise<void>;
  /**
   * Resolves when the Redis keys of the windows dropped so far are deleted: a rule version this
   * evaluator held whose rule was removed, disabled, changed version or lost its window
   * ({@link WindowEvaluator.watch} starts the deletion; a failure is logged, never thrown).
   */
  dropped(): Promise<void>;
}

/** Whether a rule is windowed: it carries `window` or `absence`. */
const isWindowed = (rule: Rule): boolean => ruleWindow(rule) !== null || ruleAbsence(rule) !== null;

function pairs(flat: unknown): Array<[string, string]> {
  const a = Array.isArray(flat) ? flat : [];
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < a.length; i += 2) out.push([String(a[i]), String(a[i + 1])]);
  return out;
}

/** Windowed rules evaluated together at a head (their Redis calls pipelined); bounds the memory of one step. */
const EVALUATE_CHUNK = 200;

/** Creates the stage's {@link WindowEvaluator}. */
export function createWindowEvaluator(deps: WindowEvaluatorDeps): WindowEvaluator {
  const { redis } = deps;
  const keys = windowKeys(deps.keyPrefix, deps.chain);
  const held = new Map<string, Rule>();
  /**
   * The states this process saved last, by window id, with their revision: a head whose stored
   * revision is still that one reuses it instead of reading and parsing the JSON again (the
   * states are immutable values: lib/match/windows.ts returns new ones). Another owner's save
   * changes the revision, so a stale entry is never used.
   */
  const cache = new Map<string, { rev: string; state: WindowState }>();
  /** Drops the cached states of a rule's versions other than `keep` (a window id). */
  const forget = (ruleId: string, keep?: string) => {
    for (const id of cache.keys()) if (id.startsWith(`${ruleId}:`) && id !== keep) cache.delete(id);
  };
  /** The arithmetic's configuration, or null (logged) for a window that is not one (a rule stored before validation knew it). */
  const configOf = (rule: Rule): WindowConfig | null => {
    const w = ruleWindow(rule);
    const a = ruleAbsence(rule);
    try {
      if (w === null && a === null) return null;
      const config = w !== null ? windowConfigOf(w, deps.reorgDepth) : absenceConfigOf(a as NonNullable<typeof a>, deps.reorgDepth);
      checkWindowConfig(config);
      return config;
    } catch (err) {
      deps.logger.error({ err, ruleId: rule.id }, "rule window cannot be evaluated; ignored");
      return null;
    }
  };

  /** Deletions of dropped windows under way (see {@link WindowEvaluator.dropped}). */
  let dropping: Promise<void> = Promise.resolve();
  /** Deletes a window's state, dirty fields and record hashes (the state's blocks and the dirty fields name them). */
  const dropWindow = async (id: string): Promise<void> => {
    const [json, ...fields] = (await runLua(redis, WINDOW_FOOTPRINT, { state: keys.state(id), dirty: keys.dirty, prefix: `${id}|` })) as [
      string | null,
      ...string[],
    ];
    const hashes = new Set(fields.map((f) => f.slice(id.length + 1)));
    if (json) for (const b of (JSON.parse(json) as WindowState).blocks) hashes.add(b.hash);
    await runLua(
      redis,
      DROP_WINDOW,
      { state: keys.state(id), dirty: keys.dirty },
      fields.map((field) => ({ field })),
    );
    if (hashes.size > 0)
      await runLua(
        redis,
        DROP_RECORDS,
        {},
        [...hashes].map((h) => ({ records: keys.records(id, h) })),
      );
  };
  /** Starts deleting the window of a held rule version that is no longer evaluated. */
  const drop = (rule: Rule) => {
    const id = windowId(rule);
    dropping = dropping
      .then(() => dropWindow(id))
      .catch((err) => deps.logger.warn({ err, ruleId: rule.id, windowId: id }, "window keys not deleted; the record hashes expire"));
  };

  const blockRecords = async (id: string, blockHash: string): Promise<WindowRecord[]> =>
    pairs(await runLua(redis, BLOCK_RECORDS, { records: keys.records(id, blockHash) })).map(([, json]) => JSON.parse(json) as WindowRecord);

  /** What one rule's evaluation at a head decided: its events and the state to save (phase 1 of {@link WindowEvaluator.onHead}). */
  interface Step {
    rule: Rule;
    id: string;
    rev: string | null;
    state: WindowState;
    consumed: Array<[string, string]>;
    /** Record hashes of blocks the new state pruned (below its final height). */
    pruned: string[];
    retracted: WindowMatch[];
    fired: WindowMatch[];
  }

  const evaluate = async (rule: Rule, config: WindowConfig, view: HeadView, dirty: Array<[string, string]>): Promise<Step | null> => {
    const id = windowId(rule);
    const known = cache.get(id);
    const [json, rev] = (await runLua(redis, LOAD_STATE, { state: keys.state(id), known: known?.rev ?? "" })) as [
      string | null,
      string | null,
    ];
    let state: WindowState | null = json
      ? (JSON.parse(json) as WindowState)
      : known !== undefined && rev === known.rev
        ? known.state
        : null;
    const events: WindowEvent[] = [];
    const step = (r: { state: WindowState; events: WindowEvent[] }) => {
      state = r.state;
      events.push(...r.events);
    };
    const block = view.block;
    if (state === null) {
      if (block === undefined) return null;
      state = createWindowState(block.number);
    }
    const s0: WindowState = state;
    // Blocks that left the canonical chain: the lowest one whose canonical hash differs, or above the head.
    const gone = s0.blocks.find((b) => {
      const c = view.canonical(b.number);
      return b.number > view.head.number || (c !== undefined && c.toLowerCase() !== b.hash);
    });
    if (gone !== undefined) step(orphanBlocks(config, s0, gone.number));
    if (block !== undefined) {
      const s1: WindowState = state;
      const top = s1.blocks.length === 0 ? s1.base : (s1.blocks[s1.blocks.length - 1]?.number ?? s1.base);
      if (block.number > top + 1 && block.number > s1.fromBlock) {
        // A gap (blocks this window never saw): the window starts again at this block.
        deps.logger.warn({ ruleId: rule.id, from: top + 1, to: block.number - 1 }, "window saw no blocks in a range; it restarts");
        state = createWindowState(block.number);
      }
      step(applyBlock(config, state, { ...block, records: await blockRecords(id, block.hash) }));
    }
    const consumed = dirty.filter(([field]) => field.startsWith(`${id}|`));
    for (const [field] of consumed) {
      const hash = field.slice(id.length + 1);
      const s2: WindowState = state;
      if (s2.blocks.some((b) => b.hash === hash)) step(addRecords(config, s2, hash, await blockRecords(id, hash)));
    }
    const absent = ruleAbsence(rule) !== null;
    const held: WindowState = state;
    const matches = (type: WindowEvent["type"]) =>
      events
        .filter((e) => e.type === type)
        .map((e) => ({
          rule,
          entity: firingEntity(e.firing, absent, absent || type !== "fired" ? undefined : windowSearch(held.blocks, e.firing)),
          firing: e.firing,
        }));
    // A firing whose closing block left the chain is the tracker's head to remove (it names the replacing block).
    const retracted = matches("retracted").filter((m) => {
      const c = view.canonical(m.firing.end.number);
      return c === undefined || c.toLowerCase() === m.firing.end.hash;
    });
    const next: WindowState = state;
    const pruned = s0.blocks
      .filter((b) => b.number <= next.base && !next.blocks.some((k) => k.hash === b.hash))
      .map((b) => keys.records(id, b.hash));
    return { rule, id, rev, state: next, consumed, pruned, retracted, fired: matches("fired") };
  };

  const save = async (s: Step): Promise<void> => {
    const saved = await runLua(
      redis,
      SAVE_STATE,
      { state: keys.state(s.id), dirty: keys.dirty, rev: s.rev ?? "", json: JSON.stringify(s.state) },
      s.consumed.map(([field, count]) => ({ field, count })),
    );
    if (Number(saved) !== 1) {
      cache.delete(s.id);
      deps.logger.warn({ ruleId: s.rule.id }, "window state changed concurrently (another owner); not saved");
      return;
    }
    cache.set(s.id, { rev: String((Number(s.rev) || 0) + 1), state: s.state });
    // After the save: a crash in between leaves them to their TTL.
    if (s.pruned.length > 0)
      await runLua(
        redis,
        DROP_RECORDS,
        {},
        s.pruned.map((records) => ({ records })),
      );
  };

  return {
    rules: () => [...held.values()],
    dropped: () => dropping,
    watch<T extends WatchedIndex>(index: T): T {
      return {
        ...index,
        upsert(rule) {
          index.upsert(rule);
          forget(rule.id, windowId(rule));
          const before = held.get(rule.id);
          const got = index.get(rule.id);
          if (got !== undefined && isWindowed(got)) held.set(got.id, got);
          else held.delete(rule.id);
          const now = held.get(rule.id);
          if (before !== undefined && (now === undefined || windowId(now) !== windowId(before))) drop(before);
        },
        remove(id) {
          const before = held.get(id);
          held.delete(id);
          forget(id);
          if (before !== undefined) drop(before);
          return index.remove(id);
        },
      } as T;
    },
    async addMatches(matches) {
      const rest: MatchInput[] = [];
      const items: Array<{ records: string; dirtyField: string; id: string; record: string }> = [];
      for (const m of matches) {
        if (!held.has(m.rule.id) || !isWindowed(m.rule)) {
          rest.push(m);
          continue;
        }
        const id = windowId(m.rule);
        const blockHash = m.entity.blockHash.toLowerCase();
        const record = windowRecordOfRule(m.rule, m.entity);
        items.push({
          records: keys.records(id, blockHash),
          dirtyField: `${id}|${blockHash}`,
          id: record.id,
          record: JSON.stringify(record),
        });
      }
      for (let i = 0; i < items.length; i += 200)
        await runLua(redis, ADD_RECORDS, { dirty: keys.dirty, ttl: RECORD_TTL_SECONDS }, items.slice(i, i + 200));
      return rest;
    },
    async onHead(view) {
      if (held.size === 0) return;
      const dirty = pairs(await runLua(redis, DIRTY, { dirty: keys.dirty }));
      const rules = [...held.values()];
      // Rules in chunks, each chunk's Redis calls issued together (one pipelined round trip per
      // step instead of one per rule): 1) load and evaluate, 2) emit in rule order, retractions
      // before firings, 3) save. Alerts still go out before any state of theirs is saved (module doc).
      for (let i = 0; i < rules.length; i += EVALUATE_CHUNK) {
        const steps = await Promise.all(
          rules.slice(i, i + EVALUATE_CHUNK).map(async (rule) => {
            const config = configOf(rule);
            return config === null ? null : evaluate(rule, config, view, dirty);
          }),
        );
        const done = steps.filter((s): s is Step => s !== null);
        const retracted = done.flatMap((s) => s.retracted);
        if (retracted.length > 0) await deps.retract(retracted);
        const fired = done.flatMap((s) => s.fired);
        if (fired.length > 0) await deps.fire(fired);
        await Promise.all(done.map(save));
      }
    },
  };
}
