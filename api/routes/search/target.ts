/**
 * Resolves the `<technology>/<blockchain>/<network>/es/<kinds>` path segments of a search route
 * into the served chain, the record kinds and the index names to search. One deployment can serve
 * several chains: the path picks one of them, per request.
 * @module
 */

import { indexName } from "../../../es/mappings.js";
import type { ChainId } from "../../../lib/config/index.js";
import { RECORD_KINDS, type RecordKind } from "../../../lib/records.js";
import { apiError } from "../../errors.js";
import type { SearchTarget } from "../../search/search.js";

/** The chain path segments of a request. */
export interface ChainParams {
  technology: string;
  blockchain: string;
  network: string;
}

/** `technology/blockchain/network` of a chain. */
export function chainLabel(chain: ChainId): string {
  return `${chain.technology}/${chain.blockchain}/${chain.network}`;
}

/**
 * The served chain the path names. Segments are compared case-insensitively (index names are
 * lower-case anyway).
 * @param chains - the chains this deployment serves (one or more).
 * @throws {ApiError} 404 CS_UNKNOWN_CHAIN when the path names none of them.
 */
export function checkChain(chains: ChainId | readonly ChainId[], params: ChainParams): ChainId {
  const list: readonly ChainId[] = Array.isArray(chains) ? chains : [chains as ChainId];
  const same = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();
  const found = list.find(
    (c) => same(params.technology, c.technology) && same(params.blockchain, c.blockchain) && same(params.network, c.network),
  );
  if (found) return found;
  throw apiError(
    "CS_UNKNOWN_CHAIN",
    `unknown chain ${params.technology}/${params.blockchain}/${params.network}; this service serves ${list.map(chainLabel).join(", ")}`,
  );
}

/**
 * Parses a comma-separated kind list (`block`, `tx`, `log`, `event`, `block,tx`, …).
 * @throws {ApiError} 404 CS_UNKNOWN_KIND for an empty, unknown or repeated kind.
 */
export function parseKinds(kinds: string): RecordKind[] {
  const out: RecordKind[] = [];
  for (const k of kinds.split(",")) {
    if (!(RECORD_KINDS as readonly string[]).includes(k)) {
      throw apiError("CS_UNKNOWN_KIND", `unknown record kind ${JSON.stringify(k)}; kinds are ${RECORD_KINDS.join(", ")}`);
    }
    if (out.includes(k as RecordKind)) throw apiError("CS_UNKNOWN_KIND", `record kind ${k} is repeated`);
    out.push(k as RecordKind);
  }
  return out;
}

/**
 * The chain, kinds and index names (`indexName(chain, kind, indexPrefix)`) of a search path.
 * @param chains - the served chains (one or more).
 * @throws {ApiError} 404 CS_UNKNOWN_CHAIN or CS_UNKNOWN_KIND.
 */
export function resolveTarget(
  chains: ChainId | readonly ChainId[],
  indexPrefix: string,
  params: ChainParams & { kinds: string },
): SearchTarget & { chain: ChainId } {
  const chain = checkChain(chains, params);
  const kinds = parseKinds(params.kinds);
  return { chain, kinds, indices: kinds.map((k) => indexName(chain, k, indexPrefix)) };
}
