/**
 * Resolves the `<technology>/<blockchain>/<network>/es/<kinds>` path segments of a search route
 * into the record kinds and index names to search.
 * @module
 */
import type { ChainId } from "../../../lib/config.js";
import { RECORD_KINDS, type RecordKind } from "../../../lib/records.js";
import { indexName } from "../../../pipeline/index/mappings.js";
import { apiError } from "../../errors.js";
import type { SearchTarget } from "../../search/search.js";

/** The chain path segments of a request. */
export interface ChainParams {
  technology: string;
  blockchain: string;
  network: string;
}

/**
 * Checks that the path names the configured chain. Segments are compared case-insensitively
 * (index names are lower-case anyway).
 * @throws {ApiError} 404 CS_UNKNOWN_CHAIN otherwise.
 */
export function checkChain(chain: ChainId, params: ChainParams): void {
  const same = (a: string, b: string): boolean => a.toLowerCase() === b.toLowerCase();
  if (same(params.technology, chain.technology) && same(params.blockchain, chain.blockchain) && same(params.network, chain.network)) return;
  throw apiError(
    "CS_UNKNOWN_CHAIN",
    `unknown chain ${params.technology}/${params.blockchain}/${params.network}; this service serves ${chain.technology}/${chain.blockchain}/${chain.network}`,
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
 * The kinds and index names (`indexName(chain, kind, indexPrefix)`) of a search path.
 * @throws {ApiError} 404 CS_UNKNOWN_CHAIN or CS_UNKNOWN_KIND.
 */
export function resolveTarget(chain: ChainId, indexPrefix: string, params: ChainParams & { kinds: string }): SearchTarget {
  checkChain(chain, params);
  const kinds = parseKinds(params.kinds);
  return { kinds, indices: kinds.map((k) => indexName(chain, k, indexPrefix)) };
}
