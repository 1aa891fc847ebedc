/**
 * Rule backtests, the pure part: a rule evaluated against records read back from the index, block
 * by block, with the match stage's own code — records become entities with `entitiesOf`
 * (`entities.ts`), the rule is matched through a {@link RuleIndex} (`rule-index.ts`, which runs
 * `evaluate.ts`), alerts are built with `alertTemplate` (`alert-template.ts`, payload by
 * `payload.ts`) and every action is rendered by `renderAction` (lib/alerting/rendered.ts), as the
 * notify stage's channels render it. Nothing is delivered. The reading (Elasticsearch) and the
 * answer's format are the caller's (api/backtest/, docs/alerting.md "Test a rule on history").
 *
 * Records: what the index stage stored, which for transactions, logs and events is the Kafka
 * record itself; a transaction's call trace is stored as one `call` document per frame, so the
 * trace record is rebuilt from them ({@link traceRecordOfCalls}) and flattened again by
 * `entitiesOf`. Frame fields the `call` documents do not keep (`revertReason`) are null.
 *
 * Alerts model the rule as if it had been enabled while the blocks arrived one by one (the live
 * stage's confirmation rules, `pipeline/match/confirmations/decide.ts`), relative to `head`, the
 * newest indexed block:
 * - threshold ≤ 1 (maxConfirmationCount 0 or 1): one `confirmed` alert, confirmations 1;
 * - otherwise a `pending` alert (confirmations 1) when the rule has `sendPendingAlerts`, and a
 *   `confirmed` one (confirmations = threshold) when `block + threshold − 1 ≤ head`; a match not yet
 *   that deep and without `sendPendingAlerts` has no alert yet.
 * Both alerts of a match are listed with the match (live, the `confirmed` one goes out later).
 * `removed` never occurs: the index holds the canonical chain only. The Token target type needs the
 * first sight of each token over the whole history (Redis state of the match stage) and is not
 * backtested ({@link BACKTEST_SOURCES}).
 * @module
 */
import { type Alert, type AlertStatus, alertId } from "../alerting/alert.js";
import { type RenderedAction, renderAction } from "../alerting/rendered.js";
import type { ExplorerUrls } from "../alerting/template.js";
import { webhookBody } from "../alerting/webhook.js";
import type { DecodeMethodOptions } from "../chain/methods.js";
import type { ChainId } from "../config/index.js";
import { NonRetryableError } from "../errors.js";
import type { CallRecord, RecordKind, TraceRecord } from "../records.js";
import type { Rule, RuleInput, TargetType } from "../rules/model.js";
import { alertTemplate, type MatchedEntity, thresholdOf } from "./alert-template.js";
import { entitiesOf, type SourceRecord } from "./entities.js";
import type { WatchlistLookup } from "./evaluate.js";
import { createRuleIndex } from "./rule-index.js";
import { targetTable } from "./targets.js";
import type { WatchlistMembership } from "./watchlist-membership.js";

/** The rule id of a tested rule (not stored, so it has none): the nil UUID. Alert ids are derived from it. */
export const BACKTEST_RULE_ID = "00000000-0000-0000-0000-000000000000";

/**
 * The indexed record kinds a backtest of each target type reads, or null when the type cannot be
 * backtested (Token: first sight of a token needs the whole history). Derived from
 * `lib/match/targets.ts` (`TargetDescriptor.backtestSources`).
 */
export const BACKTEST_SOURCES: Readonly<Record<TargetType, readonly RecordKind[] | null>> = targetTable((t) => t.backtestSources);

/** One indexed record: its kind and its `_source`. */
export interface IndexedRecord {
  kind: RecordKind;
  record: Record<string, unknown>;
}

/** What the topic a kind's records are consumed from is called (the match stage's `topicKind`). */
const TOPIC_OF: Partial<Record<RecordKind, string>> = { tx: "transactions", log: "logs", event: "events" };

function num(q: unknown): number {
  const n = (q as { num?: unknown } | null | undefined)?.num;
  return typeof n === "number" ? n : -1;
}

/** The callTracer frame JSON shape of a `call` document (quantities back to their hex `raw`). */
function frameOf(c: CallRecord): Record<string, unknown> {
  const f: Record<string, unknown> = { type: c.type, from: c.from, input: c.input };
  if (c.to !== null) f.to = c.to;
  if (c.value) f.value = c.value.raw;
  if (c.gas) f.gas = c.gas.raw;
  if (c.gasUsed) f.gasUsed = c.gasUsed.raw;
  if (c.output !== null) f.output = c.output;
  if (c.error !== null) f.error = c.error;
  return f;
}

/**
 * Rebuilds a transaction's trace record from its `call` documents (any order): the frames nested
 * by `traceAddress`, the top-level frame's `from` as `transactionFrom`.
 * @param calls - every `call` document of one transaction.
 * @throws {Error} when there is no top-level frame (`traceAddress` `[]`) or a frame's parent is missing.
 */
export function traceRecordOfCalls(calls: readonly CallRecord[]): TraceRecord {
  const sorted = [...calls].sort((a, b) => {
    const x = a.traceAddress;
    const y = b.traceAddress;
    for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
    return x.length - y.length;
  });
  const top = sorted[0];
  if (top?.traceAddress.length !== 0) throw new Error(`transaction ${calls[0]?.transactionHash}: no top-level call frame`);
  const byAddress = new Map<string, Record<string, unknown>>();
  for (const c of sorted) {
    const frame = frameOf(c);
    byAddress.set(c.traceAddress.join("_"), frame);
    if (c.traceAddress.length === 0) continue;
    const parent = byAddress.get(c.traceAddress.slice(0, -1).join("_"));
    if (!parent) throw new Error(`transaction ${c.transactionHash}: call ${c.traceAddress.join("_")} has no parent frame`);
    parent.calls ??= [];
    (parent.calls as unknown[]).push(frame);
  }
  return {
    transactionHash: top.transactionHash,
    transactionIndex: top.transactionIndex ?? { num: -1, raw: "0x0" },
    transactionFrom: top.from,
    blockHash: top.blockHash,
    blockNumber: top.blockNumber,
    timestamp: top.timestamp ?? "",
    frameJson: JSON.stringify(byAddress.get("")),
  };
}

/**
 * The records of one block as the match stage would consume them (pure): transactions, logs and
 * events as they are; the `call` documents of each transaction as one trace record. Order: by
 * transaction index; within a transaction the transaction, its trace, then its logs and events by
 * log index.
 */
export function sourcesOfBlock(records: readonly IndexedRecord[]): SourceRecord[] {
  const order = (r: IndexedRecord): [number, number, number] => {
    const rank = { tx: 0, call: 1, log: 2, event: 3, block: 4 }[r.kind];
    return [num(r.record.transactionIndex), rank, num(r.record.logIndex)];
  };
  const callsByTx = new Map<string, CallRecord[]>();
  const out: Array<{ key: [number, number, number]; source: SourceRecord }> = [];
  for (const r of records) {
    if (r.kind === "call") {
      const tx = String(r.record.transactionHash);
      let list = callsByTx.get(tx);
      if (!list) {
        list = [];
        callsByTx.set(tx, list);
        out.push({ key: order(r), source: { topicKind: "traces", record: list } });
      }
      list.push(r.record as unknown as CallRecord);
      continue;
    }
    const topicKind = TOPIC_OF[r.kind];
    if (topicKind) out.push({ key: order(r), source: { topicKind, record: r.record } });
  }
  out.sort((a, b) => a.key[0] - b.key[0] || a.key[1] - b.key[1] || a.key[2] - b.key[2]);
  return out.map(({ source }) =>
    source.topicKind === "traces" ? { topicKind: "traces", record: traceRecordOfCalls(source.record as CallRecord[]) } : source,
  );
}

/** One action of a backtest alert: what its channel would send, or why it could not be rendered. */
export type BacktestAction = { index: number } & (RenderedAction | { type: string; error: { code: string; message: string } });

/** An alert as the rule would have sent it. */
export interface BacktestAlert {
  /** The alert: the `Webhook (POST)` body fields (lib/alerting/webhook.ts) plus `ruleName`. */
  alert: ReturnType<typeof webhookBody> & { ruleName: string | null };
  /** Per action of the rule (`config.alerts`, same order), the rendering. */
  actions: BacktestAction[];
}

/** One entity the rule matched. */
export interface BacktestMatch {
  blockNumber: number;
  blockHash: string;
  targetType: TargetType;
  entityId: string;
  /** The whole entity (its attributes are what the targetMap and URL tokens see). */
  entity: Record<string, unknown>;
  /** The alerts of the match (see the module notes); empty while it awaits its confirmations. */
  alerts: BacktestAlert[];
}

/** The result of one block. */
export interface BacktestBlock {
  blockNumber: number;
  blockHash: string;
  /** Records read of the block (a transaction's trace counts once). */
  records: number;
  /** Entities of the rule's target type evaluated. */
  entities: number;
  matches: BacktestMatch[];
  /** Alerts of the matches. */
  alerts: number;
}

/** Options of {@link createBacktester}. */
export interface BacktesterOptions {
  /** The validated rule body (lib/rules/validate.ts); its state is ignored (a disabled rule is tested too). */
  rule: RuleInput;
  /** Owner shown in the alerts (`accountId`); e.g. the caller's account. */
  accountId: string;
  /** The chain of the rule (alerts carry it). */
  chain: ChainId;
  /** The newest indexed block number: how deep each match is. */
  head: number;
  /** Chain id and token decimals for decoded Method/Call arguments (as the match stage's `decode`; the chain context's). */
  decode: DecodeMethodOptions;
  /** Block-explorer base URLs of the rendered messages, as the notify stage's (config `notify.explorerUrls`); default lib/alerting/template.ts's. */
  explorers?: ExplorerUrls;
  /** Clock of `emittedAt`; default `() => new Date()`. */
  now?: () => Date;
  /**
   * Memberships of `In watchlist` conditions (watchlist-membership.ts over the rule account's lists: today's
   * members, not those of the block's time); absent: such conditions never hold. Used by {@link Backtester.blockWithLists}.
   */
  watchlists?: WatchlistMembership;
}

/** A backtest in progress: feed it blocks in ascending order. */
export interface Backtester {
  /** The rule as evaluated (id {@link BACKTEST_RULE_ID}, state enabled). */
  readonly rule: Rule;
  /** Evaluates the rule on one block's records (any order; see {@link sourcesOfBlock}); `In watchlist` conditions never hold. */
  block(blockNumber: number, blockHash: string, records: readonly IndexedRecord[]): BacktestBlock;
  /**
   * {@link Backtester.block} with `In watchlist` conditions answered from `options.watchlists`: the block's
   * selection is run again until every membership question is read (WatchlistMembership `runEach`, the block as one item).
   * A rule's backtester ({@link createBacktester}) has it; a saved search's when its query looks a field up in a watchlist.
   * @throws what the membership store throws (Redis unreachable).
   */
  blockWithLists?(blockNumber: number, blockHash: string, records: readonly IndexedRecord[]): Promise<BacktestBlock>;
}

/** Renders every action of an alert; an action that cannot be rendered shows its error. */
function renderActions(alert: Alert, explorers: ExplorerUrls | undefined): BacktestAction[] {
  return alert.actions.map((action, index) => {
    try {
      return { index, ...renderAction(alert, action, explorers ? { explorers } : {}) };
    } catch (err) {
      if (!(err instanceof NonRetryableError)) throw err;
      return { index, type: action.type, error: { code: err.code, message: err.message } };
    }
  });
}

/**
 * The service-set fields of a tested rule or saved search, as if it had just been stored enabled:
 * id {@link BACKTEST_RULE_ID}, the caller's account, version (the body's or 1), state `enabled`
 * (a disabled body is tested too), `sendPendingAlerts` and `description` defaulted, both times now.
 */
export function backtestStoredFields(
  input: { version?: number | undefined; sendPendingAlerts?: boolean | undefined; description?: string | null | undefined },
  accountId: string,
  now: () => Date,
) {
  const stamp = now().toISOString();
  return {
    id: BACKTEST_RULE_ID,
    accountId,
    version: input.version ?? 1,
    state: "enabled" as const,
    sendPendingAlerts: input.sendPendingAlerts === true,
    description: input.description ?? null,
    createdAt: stamp,
    updatedAt: stamp,
  };
}

/** What {@link alertEmitter} needs: the rule snapshot as evaluated and the backtest's options. */
export type AlertEmitterOptions = Pick<BacktesterOptions, "chain" | "head" | "explorers"> & { rule: Rule; now: () => Date };

/**
 * Adds a match to a block's result: the entity (a record's, or a window's, sequence's or state's
 * firing) in the result's block with its alerts, counted in `result.alerts`. Shared by every backtester.
 * @param result - the block's result, changed in place.
 * @param targetType - the target type the match line names.
 * @param entity - the matched entity.
 * @param alertsOf - the rule's alert emitter ({@link alertEmitter}).
 */
export function pushMatch(
  result: BacktestBlock,
  targetType: TargetType,
  entity: MatchedEntity,
  alertsOf: (entity: MatchedEntity) => BacktestAlert[],
): void {
  const alerts = alertsOf(entity);
  result.alerts += alerts.length;
  result.matches.push({
    blockNumber: result.blockNumber,
    blockHash: result.blockHash,
    targetType,
    entityId: entity.entityId,
    entity: entity as unknown as Record<string, unknown>,
    alerts,
  });
}

/**
 * The alerts of the matches of one backtest, in match order (see the module notes: `pending` and
 * `confirmed` relative to `head`), with per-backtest sequence numbers and every action rendered.
 * Shared by rule and saved-search backtests (api/backtest/search-tester.ts).
 */
export function alertEmitter(options: AlertEmitterOptions): (entity: MatchedEntity) => BacktestAlert[] {
  const { rule, chain, head, now } = options;
  const threshold = thresholdOf(rule);
  let sequence = 0;
  return (entity) => {
    const template = alertTemplate(rule, entity, chain);
    const emitted: Array<[AlertStatus, number]> = [];
    if (threshold <= 1) emitted.push(["confirmed", 1]);
    else {
      if (rule.sendPendingAlerts) emitted.push(["pending", 1]);
      if (template.blockNumber + threshold - 1 <= head) emitted.push(["confirmed", threshold]);
    }
    return emitted.map(([status, confirmations]) => {
      const alert: Alert = {
        ...template,
        id: alertId(rule.id, template.entityId, template.blockHash, status),
        sequence: ++sequence,
        status,
        confirmations,
        emittedAt: now().toISOString(),
      };
      return { alert: { ...webhookBody(alert), ruleName: alert.ruleName ?? null }, actions: renderActions(alert, options.explorers) };
    });
  };
}

/** The entities of one block's records that a rule's per-record conditions select (see {@link ruleSelector}). */
export interface BlockSelection {
  /** Records read of the block (a transaction's trace counts once). */
  records: number;
  /** Entities of the rule's target type evaluated. */
  entities: number;
  /** The entities selected, in record order ({@link sourcesOfBlock}). */
  selected: Array<{ targetType: TargetType; entity: MatchedEntity }>;
}

/**
 * The per-record part of a backtest, shared by rule backtests and windowed-rule backtests
 * (lib/match/window-backtest.ts): one block's records become entities (`entitiesOf`) and the rule's
 * targetMap selects them (a {@link RuleIndex} holding only the rule).
 * @throws {RuleCompileError} (evaluate.ts) when the targetMap cannot be compiled; validated rules always compile.
 */
export function ruleSelector(
  rule: Rule,
  chain: ChainId,
  decode: DecodeMethodOptions,
  watchlists?: WatchlistLookup,
): (records: readonly IndexedRecord[]) => BlockSelection {
  const index = createRuleIndex(watchlists ? { chain, watchlists } : { chain });
  index.upsert(rule);
  const targetType = rule.config.targetType;
  return (records) => {
    const sources = sourcesOfBlock(records);
    const out: BlockSelection = { records: sources.length, entities: 0, selected: [] };
    for (const source of sources) {
      for (const { type, entity } of entitiesOf(source, decode)) {
        if (type !== targetType) continue;
        out.entities++;
        if (index.match(type, entity).length > 0) out.selected.push({ targetType: type, entity: entity as unknown as MatchedEntity });
      }
    }
    return out;
  };
}

/**
 * One block's selection with its `In watchlist` conditions answered: `select` (compiled with
 * `membership.lookup`) run under the membership prefetch (watchlist-membership.ts `runEach`, the block
 * as one item) until every membership question is read; without `membership`, `select` alone.
 * Shared by every rule backtester (per-record, window, sequence).
 * @throws what the membership store throws (Redis unreachable).
 */
export async function selectWithLists<R>(
  membership: WatchlistMembership | undefined,
  select: (records: readonly IndexedRecord[]) => R,
  records: readonly IndexedRecord[],
): Promise<R> {
  return membership ? ((await membership.runEach([records], select))[0] as R) : select(records);
}

/** The rule a backtest evaluates: the body with {@link backtestStoredFields}. */
export function backtestRule(options: Pick<BacktesterOptions, "rule" | "accountId">, now: () => Date): Rule {
  return { ...options.rule, ...backtestStoredFields(options.rule, options.accountId, now) };
}

/**
 * Starts a backtest of one rule (see the module notes).
 * @throws {RuleCompileError} (evaluate.ts) when the targetMap cannot be compiled; validated rules always compile.
 */
export function createBacktester(options: BacktesterOptions): Backtester {
  const now = options.now ?? (() => new Date());
  const rule = backtestRule(options, now);
  const membership = options.watchlists;
  const select = ruleSelector(rule, options.chain, options.decode, membership?.lookup);
  const alertsOf = alertEmitter({ ...options, rule, now });
  const emit = (blockNumber: number, blockHash: string, selection: BlockSelection): BacktestBlock => {
    const { records: count, entities, selected } = selection;
    const result: BacktestBlock = { blockNumber, blockHash, records: count, entities, matches: [], alerts: 0 };
    for (const { targetType, entity } of selected) pushMatch(result, targetType, entity, alertsOf);
    return result;
  };
  return {
    rule,
    block: (blockNumber, blockHash, records) => emit(blockNumber, blockHash, select(records)),
    blockWithLists: async (blockNumber, blockHash, records) =>
      emit(blockNumber, blockHash, await selectWithLists(membership, select, records)),
  };
}
