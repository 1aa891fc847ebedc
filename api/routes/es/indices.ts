/**
 * The index expressions of the Elasticsearch-compatible routes (api/routes/es/index.ts,
 * api/routes/es/introspect.ts): what the official clients and tools put before `/_search`,
 * `/_count`, `/_msearch`, `/_mapping`, `/_field_caps`, `/_cat/indices/…`, mapped onto the record
 * kinds of the chain the path names.
 *
 * The indices of a chain are its kinds' aliases, named as hits' `_index`:
 * `<index prefix><technology>-<blockchain>-<network>-<kind>` (es/mappings.ts `indexName`). An
 * expression is a comma list, case-insensitive; each item is one of:
 * - a concrete name: a kind (`block`, `tx`, `log`, `event`, `call`), the index-style name the
 *   clients build (`ethereum-ethereum-mainnet-tx`), or that name with the deployment's index
 *   prefix in front (a hit's `_index`); a name matching no kind of this chain (another chain's,
 *   a backing index `…-tx-p000112`, a typo) is 404 `CS_UNKNOWN_KIND` (Elasticsearch:
 *   `index_not_found_exception`);
 * - `_all` or `*`: every kind;
 * - a wildcard pattern (`*` matches any characters: `ethereum-ethereum-mainnet-*`, `*-tx`, `eth*`,
 *   `t*`): the kinds whose name, with or without the index prefix, or kind matches; matching
 *   nothing is no error (Elasticsearch's default `allow_no_indices=true`);
 * - `-<name or pattern>` after an earlier item: removes the kinds it matches (Elasticsearch's
 *   exclusions, https://www.elastic.co/guide/en/elasticsearch/reference/8.19/api-conventions.html#api-multi-index).
 * No expression (`/_search`) means every kind, as it means all indices in Elasticsearch. A kind
 * named twice counts once (as Elasticsearch does with repeated indices). Source of the rules:
 * https://www.elastic.co/guide/en/elasticsearch/reference/8.19/api-conventions.html#api-multi-index
 * @module
 */
import { indexName } from "../../../es/mappings.js";
import type { ChainId } from "../../../lib/config/index.js";
import { RECORD_KINDS, type RecordKind } from "../../../lib/records.js";
import { apiError } from "../../errors.js";
import type { SearchTarget } from "../../search/search.js";
import { type ChainParams, checkChain } from "../search/target.js";

/** Index expressions that mean every kind of the path's chain. */
const ALL = new Set(["*", "_all"]);

/** Whether an index expression item is a wildcard pattern (contains `*`). */
export function isPattern(item: string): boolean {
  return item.includes("*");
}

/** A case-insensitive matcher of an Elasticsearch wildcard pattern (`*`: any characters, possibly none). */
export function wildcardMatcher(pattern: string): (name: string) => boolean {
  const source = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  const re = new RegExp(`^${source}$`, "i");
  return (name) => re.test(name);
}

/** The names a kind answers to: the kind, its index-style name, and that name with the index prefix. */
function namesOf(chain: ChainId, indexPrefix: string, kind: RecordKind): string[] {
  return [kind, indexName(chain, kind), indexName(chain, kind, indexPrefix)];
}

/** The kinds one item (no `-`) names; a concrete name naming none is 404. */
function kindsOfItem(chain: ChainId, indexPrefix: string, item: string): RecordKind[] {
  const name = item.toLowerCase();
  if (ALL.has(name)) return [...RECORD_KINDS];
  const matches = isPattern(name) ? wildcardMatcher(name) : (n: string) => n === name;
  const kinds = RECORD_KINDS.filter((k) => namesOf(chain, indexPrefix, k).some(matches));
  if (kinds.length === 0 && !isPattern(name))
    throw apiError(
      "CS_UNKNOWN_KIND",
      `no such index [${item}]; use a kind (${RECORD_KINDS.join(", ")}), ${indexName(chain, "tx")}, a pattern such as ${indexName(chain, "tx").replace(/tx$/, "*")}, or *`,
      "params.index",
    );
  return kinds;
}

/**
 * The kinds an index expression names (see the module notes), in first-mention order.
 * @param chain - the chain of the path.
 * @param indexPrefix - the deployment's index prefix (`config.elasticsearch.indexPrefix`).
 * @param expression - the index expression; undefined or empty means all kinds.
 * @returns the kinds; empty when only patterns were given and they match nothing.
 * @throws {ApiError} 404 CS_UNKNOWN_KIND for a concrete name naming no kind of this chain.
 */
export function kindsOfIndexExpression(chain: ChainId, indexPrefix: string, expression: string | undefined): RecordKind[] {
  if (expression === undefined || expression.trim() === "") return [...RECORD_KINDS];
  const out = new Set<RecordKind>();
  expression.split(",").forEach((raw, i) => {
    const item = raw.trim();
    if (i > 0 && item.startsWith("-")) {
      const excluded = item.slice(1);
      const matches = isPattern(excluded) ? wildcardMatcher(excluded) : (n: string) => n === excluded.toLowerCase();
      for (const k of RECORD_KINDS) if (namesOf(chain, indexPrefix, k).some(matches)) out.delete(k);
      return;
    }
    for (const k of kindsOfItem(chain, indexPrefix, item)) out.add(k);
  });
  return [...out];
}

/**
 * The chain, kinds and index names of an Elasticsearch-style request path.
 * @param chains - the served chains.
 * @param indexPrefix - the deployment's index prefix.
 * @param params - the chain segments and the optional index expression.
 * @param options - `allowNoIndices` (default false): an expression matching no kind (patterns
 *   only) gives no kinds instead of the 404. The search routes keep the default: a search of no
 *   index would be one of every index of the cluster.
 * @throws {ApiError} 404 CS_UNKNOWN_CHAIN or CS_UNKNOWN_KIND (a concrete name of no kind, or, unless
 *   `allowNoIndices`, no kind at all).
 */
export function resolveIndexTarget(
  chains: readonly ChainId[],
  indexPrefix: string,
  params: ChainParams & { index?: string | undefined },
  options: { allowNoIndices?: boolean } = {},
): SearchTarget & { chain: ChainId } {
  const chain = checkChain(chains, params);
  const kinds = kindsOfIndexExpression(chain, indexPrefix, params.index);
  if (kinds.length === 0 && !options.allowNoIndices)
    throw apiError("CS_UNKNOWN_KIND", `no such index [${params.index}]: the expression matches no kind of this chain`, "params.index");
  return { chain, kinds, indices: kinds.map((k) => indexName(chain, k, indexPrefix)) };
}
