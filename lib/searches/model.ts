/**
 * Saved searches that alert (`/alerting/searches/`, docs/rules.md "Saved searches"): a query of the
 * search DSL over one record kind, with a rule's alert actions and confirmation settings. Every new
 * record of that kind the query matches fires the actions through the match stage's confirmations,
 * reorg retractions and delivery, exactly as a rule's match does.
 *
 * Stored in a rule store of their own (lib/rules/store.ts under {@link searchKeyPrefix}: same
 * ownership, versioning, paging, limits and change feed as rules). The match stage turns each one
 * into a {@link Rule}-shaped snapshot ({@link searchAsRule}) so that the confirmation tracker,
 * alerts and notify treat both alike — and so that a search's `window` or `absence` (beside its
 * query, as beside a rule's `config`) goes through the same window evaluator (pipeline/match/windows/).
 * @module
 */
import type { MatchedEntity } from "../match/alert-template.js";
import { type RecordKind, recordId } from "../records.js";
import type { AlertDefinition, Rule, RuleState, TargetType } from "../rules/model.js";
import type { RuleAbsence, RuleWindow } from "../rules/schema-window.js";
import type { SearchSequence } from "./sequence.js";

/** The record kinds a saved search can run over (the search API's kinds). */
export const SEARCH_KINDS = ["event", "tx", "log", "block", "call"] as const satisfies readonly RecordKind[];

/**
 * The `targetType` of a saved search's alerts, by kind. `Block` is not a rule target type (the
 * contract's list is closed); it appears only on alerts of saved searches over blocks.
 */
export const SEARCH_TARGET_TYPE: Readonly<Record<RecordKind, string>> = {
  event: "Event",
  tx: "Transaction",
  log: "Log",
  call: "Call",
  block: "Block",
};

/** What a saved search matches and does: stored as the `config` of a rule-shaped document (so the rule store's limits on additional properties do not apply to it). */
export interface SearchConfig {
  /** The record kind searched. */
  kind: RecordKind;
  /** The query as the client sent it (search DSL, the search API's allowlist). */
  query: Record<string, unknown>;
  /** The query as the search API sends it to Elasticsearch (the evaluator's input); null: every record. */
  esQuery: Record<string, unknown> | null;
  /** 1 to 10 alert definitions, as a rule's `config.alerts`. */
  alerts: AlertDefinition[];
}

/**
 * A saved search as the store holds it: a rule document whose `config` is a {@link SearchConfig}
 * (fields as a rule's: id, accountId, name, description, state, technology, blockchain, network,
 * maxConfirmationCount, sendPendingAlerts, version, createdAt, updatedAt, extra properties such as `confirmOn`).
 */
export interface StoredSearch {
  id: string;
  accountId: string;
  name: string;
  description: string | null;
  state: RuleState;
  technology: string;
  blockchain: string;
  network: string;
  maxConfirmationCount: number;
  sendPendingAlerts: boolean;
  /** As a rule's (lib/rules/model.ts `RuleInput.confirmOn`). */
  confirmOn?: "count" | "finalized" | null;
  /** As a rule's (lib/rules/schema-window.ts): the query selects the records, the window decides when an alert fires. */
  window?: RuleWindow | null;
  /** As a rule's (lib/rules/schema-window.ts): silence, no record the query selects for a span. */
  absence?: RuleAbsence | null;
  /** Its second step a second search query (lib/searches/sequence.ts): a record of `followedBy.query` after one of the query's, same correlate value. */
  sequence?: SearchSequence | null;
  version: number;
  createdAt: string;
  updatedAt: string;
  config: SearchConfig;
  [extra: string]: unknown;
}

/** A saved search as the API answers it: the stored document with its `config` fields at the top level. */
export type SavedSearch = Omit<StoredSearch, "config"> & SearchConfig;

/** The API's view of a stored saved search ({@link SavedSearch}). */
export function searchView(stored: StoredSearch): SavedSearch {
  const { config, ...rest } = stored;
  return { ...rest, kind: config.kind, query: config.query, esQuery: config.esQuery, alerts: config.alerts };
}

/** Key prefix of the saved searches' rule store under the deployment's prefix: `<prefix>searches:`. */
export function searchKeyPrefix(redisKeyPrefix: string): string {
  return `${redisKeyPrefix}searches:`;
}

/**
 * The rule-shaped snapshot of a saved search the match stage tracks and alerts with: same id,
 * account, name, version, confirmation settings and actions; `config.targetType` from
 * {@link SEARCH_TARGET_TYPE}, `config.targetMap` empty (the query decides, not a target map).
 */
export function searchAsRule(search: StoredSearch): Rule {
  return {
    ...search,
    sendPendingAlerts: search.sendPendingAlerts === true,
    config: { targetType: SEARCH_TARGET_TYPE[search.config.kind] as TargetType, targetMap: [], alerts: search.config.alerts },
  };
}

/**
 * The entity a saved search alerts with, built from one indexed document of its kind (the match
 * stage's `search-index.ts` and the saved-search backtest, api/backtest/search-tester.ts, both use it,
 * so a backtest's alert equals the live one): the document with `entityId` (its Elasticsearch `_id`,
 * lib/records.ts `recordId`), `blockHash` and `blockNumber` (a block's own `hash` and `number`).
 * @param kind - the record kind of the document.
 * @param doc - the document as the index stage stores it.
 * @param id - its `_id`; default `recordId(kind, doc)`.
 */
export function searchEntity(kind: RecordKind, doc: Record<string, unknown>, id = recordId(kind, doc as never)): MatchedEntity {
  return {
    ...doc,
    entityId: id,
    blockHash: String(kind === "block" ? doc.hash : doc.blockHash),
    blockNumber: (kind === "block" ? doc.number : doc.blockNumber) as MatchedEntity["blockNumber"],
  };
}
