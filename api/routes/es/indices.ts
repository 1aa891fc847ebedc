/**
 * The index expressions of the Elasticsearch-compatible routes (api/routes/es/index.ts): what the
 * official clients put before `/_search`, `/_count` and `/_msearch`, mapped onto the record kinds
 * of the chain the path names.
 *
 * Accepted, comma-separated and case-insensitive (each item names one or all kinds of the path's chain):
 * - a kind: `block`, `tx`, `log`, `event`, `call`;
 * - the index-style name the clients build: `<technology>-<blockchain>-<network>-<kind>`
 *   (e.g. `ethereum-ethereum-mainnet-tx`), also with the deployment's index prefix in front (the
 *   `_index` of a hit, so a hit's index can be searched again);
 * - all kinds: `*`, `_all`, `<technology>-<blockchain>-<network>-*`; no index at all (`/_search`)
 *   means all kinds too, as it means all indices in Elasticsearch.
 * Repeated kinds are searched once (as Elasticsearch does with repeated indices). Anything else,
 * including another chain's names and other wildcards, is 404 `CS_UNKNOWN_KIND`: the path picks
 * the chain, the index expression only the kinds.
 * @module
 */
import { indexName } from "../../../es/mappings.js";
import type { ChainId } from "../../../lib/config.js";
import { RECORD_KINDS, type RecordKind } from "../../../lib/records.js";
import { apiError } from "../../errors.js";
import type { SearchTarget } from "../../search/search.js";
import { type ChainParams, checkChain } from "../search/target.js";

/** Index expressions that mean every kind of the path's chain. */
const ALL = new Set(["*", "_all"]);

/**
 * The kinds an index expression names (see the module notes), in first-mention order.
 * @param chain - the chain of the path.
 * @param indexPrefix - the deployment's index prefix (`config.elasticsearch.indexPrefix`).
 * @param expression - the index expression; undefined or empty means all kinds.
 * @throws {ApiError} 404 CS_UNKNOWN_KIND for an item naming no kind of this chain.
 */
export function kindsOfIndexExpression(chain: ChainId, indexPrefix: string, expression: string | undefined): RecordKind[] {
  if (expression === undefined || expression.trim() === "") return [...RECORD_KINDS];
  const chainPart = `${chain.technology}-${chain.blockchain}-${chain.network}-`.toLowerCase();
  const prefixed = `${indexPrefix.toLowerCase()}${chainPart}`;
  const out = new Set<RecordKind>();
  for (const item of expression.split(",")) {
    const name = item.trim().toLowerCase();
    const rest = name.startsWith(prefixed) ? name.slice(prefixed.length) : name.startsWith(chainPart) ? name.slice(chainPart.length) : name;
    if (ALL.has(rest)) for (const k of RECORD_KINDS) out.add(k);
    else if ((RECORD_KINDS as readonly string[]).includes(rest)) out.add(rest as RecordKind);
    else
      throw apiError(
        "CS_UNKNOWN_KIND",
        `unknown index ${JSON.stringify(item)}; use a kind (${RECORD_KINDS.join(", ")}), ${chainPart}<kind>, ${chainPart}* or *`,
      );
  }
  return [...out];
}

/**
 * The chain, kinds and index names of an Elasticsearch-style request path.
 * @param chains - the served chains.
 * @param indexPrefix - the deployment's index prefix.
 * @param params - the chain segments and the optional index expression.
 * @throws {ApiError} 404 CS_UNKNOWN_CHAIN or CS_UNKNOWN_KIND.
 */
export function resolveIndexTarget(
  chains: readonly ChainId[],
  indexPrefix: string,
  params: ChainParams & { index?: string | undefined },
): SearchTarget & { chain: ChainId } {
  const chain = checkChain(chains, params);
  const kinds = kindsOfIndexExpression(chain, indexPrefix, params.index);
  return { chain, kinds, indices: kinds.map((k) => indexName(chain, k, indexPrefix)) };
}
