/**
 * The match stage's saved searches (lib/searches/model.ts): the enabled searches of the served
 * chain, each compiled once by the search DSL evaluator (es/evaluate.ts) from its `esQuery` (the
 * query as the search API sends it to Elasticsearch), grouped by record kind. Kept equal to the
 * searches' store by `rule-sync.ts`, like the rule index.
 *
 * {@link SearchIndex.matchRecords} answers, for the records of one topic, the (search, entity) pairs
 * the confirmation tracker takes: the entity is the indexed document (a `call` document per frame
 * of a trace) with `entityId` (its Elasticsearch `_id`), `blockHash` and `blockNumber`. The stage
 * wraps the index with the window evaluator (`windows/evaluator.ts` `watch`), so the matches of a
 * search with `window` or `absence` become window records instead of alerts, and with the sequence
 * evaluator (`sequences/evaluator.ts` `watch`, `sequences/searches.ts`), so those of a search with
 * `sequence` (and of its second query) become sequence records.
 * @module
 */
import { compileEsQuery, type DocPredicate } from "../../es/evaluate.js";
import { callDocuments } from "../../lib/chain/call-records.js";
import type { DecodeMethodOptions } from "../../lib/chain/methods.js";
import type { ChainId } from "../../lib/config/index.js";
import type { MatchedEntity } from "../../lib/match/alert-template.js";
import { type RecordKind, recordId } from "../../lib/records.js";
import type { Rule } from "../../lib/rules/model.js";
import { type StoredSearch, searchAsRule, searchEntity } from "../../lib/searches/model.js";
import type { InputRecord } from "../kafka/consumer.js";

/** The topics whose records saved searches match. */
export type SearchTopic = "blocks" | "transactions" | "logs" | "events" | "traces";

/** The record kind of each topic the stage consumes. */
const KIND_OF_TOPIC: Readonly<Record<SearchTopic, RecordKind>> = {
  blocks: "block",
  transactions: "tx",
  logs: "log",
  events: "event",
  traces: "call",
};

interface Compiled {
  rule: Rule;
  matches: DocPredicate;
  kind: RecordKind;
}

/** The compiled saved searches of one chain. */
export interface SearchIndex {
  /** Adds or replaces a search (given as the rule-store document); a disabled one or another chain's is removed. @throws when its query cannot be compiled. */
  upsert(search: Rule): void;
  remove(id: string): void;
  /** The rule-shaped snapshot of a held search. */
  get(id: string): Rule | undefined;
  /** Searches held. */
  size(): number;
  /**
   * The matches of one consumed record (a `call` document per frame of a trace).
   * @throws {SyntaxError} for a trace whose `frameJson` is not JSON (the caller skips it).
   */
  matchRecords(input: InputRecord<SearchTopic>): Array<{ rule: Rule; entity: MatchedEntity }>;
}

/**
 * Creates an empty {@link SearchIndex} for a chain.
 * @param chain - the chain whose records it matches.
 * @param decode - the chain's Method/Call decoding (chain id and tokens) for call documents, as the index stage's.
 */
export function createSearchIndex(chain: ChainId, decode: DecodeMethodOptions): SearchIndex {
  const byId = new Map<string, Compiled>();
  const byKind = new Map<RecordKind, Compiled[]>();
  const rebuild = () => {
    byKind.clear();
    for (const c of byId.values()) byKind.set(c.kind, [...(byKind.get(c.kind) ?? []), c]);
  };
  const onChain = (s: StoredSearch) =>
    s.technology === chain.technology && s.blockchain === chain.blockchain && s.network === chain.network;
  return {
    upsert(doc) {
      const search = doc as unknown as StoredSearch;
      const held = byId.get(search.id);
      if (held && held.rule.version > search.version) return;
      if (search.state !== "enabled" || !onChain(search)) {
        if (byId.delete(search.id)) rebuild();
        return;
      }
      const compiled = compileEsQuery(search.config.esQuery ?? undefined, search.config.kind);
      if (!compiled.ok) throw new Error(`saved search ${search.id}: ${compiled.errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`);
      byId.set(search.id, { rule: searchAsRule(search), matches: compiled.value, kind: search.config.kind });
      rebuild();
    },
    remove(id) {
      if (byId.delete(id)) rebuild();
    },
    get: (id) => byId.get(id)?.rule,
    size: () => byId.size,
    matchRecords(input) {
      const kind = KIND_OF_TOPIC[input.topicKind];
      const searches = kind ? byKind.get(kind) : undefined;
      if (!kind || !searches || searches.length === 0) return [];
      const docs: object[] = input.topicKind === "traces" ? callDocuments(input.record, decode) : [input.record];
      const out: Array<{ rule: Rule; entity: MatchedEntity }> = [];
      for (const doc of docs as Array<Record<string, unknown>>) {
        const id = recordId(kind, doc as never);
        let entity: MatchedEntity | undefined;
        for (const s of searches) {
          if (!s.matches(doc, id)) continue;
          entity ??= searchEntity(kind, doc, id);
          out.push({ rule: s.rule, entity });
        }
      }
      return out;
    },
  };
}
