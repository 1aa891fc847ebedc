/**
 * Pure decoding of logs with user-registered ABIs (lib/abis): {@link buildAbiIndex} turns the
 * registrations into per-address and any-address layout tables, {@link decodeWithAbis} decodes one
 * log with them. Rendering is the standard decoder's (pipeline/decode/decoder.ts `decodeWith`:
 * `EventArg` values, `str`), the record's `source` and `standard` are both `abi`. See docs/decoding.md, "User ABIs".
 *
 * Whose ABI applies when several namespaces register one for the same address: events are shared
 * records (one per log, searchable by every account), so exactly one registration decodes an
 * address: the global one (admin) if any, else the earliest registered (`createdAt`, then namespace
 * id). For `any` (event ABIs for every contract), every registration contributes its events, in the
 * same precedence order; for one topic0, the first layout that decodes the log wins.
 * @module
 */
import { ABI_ANY_ADDRESS, type AbiRegistration, eventFragments, GLOBAL_NAMESPACE } from "../../lib/abis/model.js";
import type { EventRecord, LogRecord } from "../../lib/records.js";
import { compileLayout, decodeWith, failedEvent, type Layout } from "./decoder.js";

/** The `standard` of events decoded with a user ABI. */
export const ABI_STANDARD = "abi";

/** topic0 → layouts, in precedence order. */
export type LayoutTable = Map<string, Layout[]>;

/** The compiled registrations (immutable; rebuilt on every change). */
export interface AbiIndex {
  /** Lower-case address → the layouts of the registration that applies to it. */
  byAddress: Map<string, LayoutTable>;
  /** Layouts of every `any` registration. */
  any: LayoutTable;
  /** Lower-case address → the registration that applies to it (namespace, name), for logs and the API of the stage. */
  owners: Map<string, AbiRegistration>;
}

/** Global first, then the earliest registration, then the namespace id. */
function precedence(a: AbiRegistration, b: AbiRegistration): number {
  const ga = a.namespace === GLOBAL_NAMESPACE ? 0 : 1;
  const gb = b.namespace === GLOBAL_NAMESPACE ? 0 : 1;
  if (ga !== gb) return ga - gb;
  if (a.createdAt !== b.createdAt) return a.createdAt < b.createdAt ? -1 : 1;
  return a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0;
}

function addLayouts(table: LayoutTable, reg: AbiRegistration): void {
  for (const fragment of eventFragments(reg.abi)) {
    const layout = compileLayout(
      { standard: ABI_STANDARD, abi: fragment.format("full"), source: `${reg.namespace} ABI of ${reg.address}` },
      fragment,
    );
    const list = table.get(layout.topic0);
    if (list) list.push(layout);
    else table.set(layout.topic0, [layout]);
  }
}

/**
 * Compiles registrations into an {@link AbiIndex}. A registration whose ABI no longer compiles
 * (never for one the API or CLI accepted) is skipped and reported through `onSkip`.
 * @param registrations - every registration of every namespace (`AbiStore.all()`).
 * @param onSkip - called with the skipped registration and the error.
 */
export function buildAbiIndex(registrations: readonly AbiRegistration[], onSkip?: (reg: AbiRegistration, err: unknown) => void): AbiIndex {
  const index: AbiIndex = { byAddress: new Map(), any: new Map(), owners: new Map() };
  for (const reg of [...registrations].sort(precedence)) {
    try {
      if (reg.address === ABI_ANY_ADDRESS) {
        addLayouts(index.any, reg);
      } else if (!index.owners.has(reg.address)) {
        const table: LayoutTable = new Map();
        addLayouts(table, reg);
        index.byAddress.set(reg.address, table);
        index.owners.set(reg.address, reg);
      }
    } catch (err) {
      onSkip?.(reg, err);
    }
  }
  return index;
}

/** The candidate layouts of a log: its contract's ABI, then its implementation's (proxies), then `any`. */
function candidatesOf(index: AbiIndex, topic0: string, address: string, implementation: string | null): Layout[] {
  const out: Layout[] = [];
  const own = index.byAddress.get(address)?.get(topic0);
  if (own) out.push(...own);
  if (implementation && implementation !== address) {
    const impl = index.byAddress.get(implementation)?.get(topic0);
    if (impl) out.push(...impl);
  }
  const any = index.any.get(topic0);
  if (any) out.push(...any);
  return out;
}

/**
 * Whether a user ABI is registered for the log's contract or for its implementation (proxies);
 * `any` registrations do not count. Such a log never gets a signature decode (docs/decoding.md).
 * @param implementation - the lower-case implementation address, or null.
 */
export function abiCovers(index: AbiIndex, address: string, implementation: string | null): boolean {
  const a = address.toLowerCase();
  return index.byAddress.has(a) || (implementation !== null && index.byAddress.has(implementation));
}

/**
 * Decodes one log with the registered ABIs.
 * @param index - the compiled registrations.
 * @param log - the log.
 * @param implementation - the lower-case implementation address when the log's contract is an
 *   EIP-1967 / EIP-1822 proxy (its ABI applies too), else null.
 * @returns the first candidate layout (own ABI, implementation's, `any`) whose topic count fits
 *   and that decodes the log; when candidates exist but none decodes, a record with `error` (the
 *   first candidate's reason); null when no registration knows the log's topic0. Never throws.
 */
export function decodeWithAbis(index: AbiIndex, log: LogRecord, implementation: string | null): EventRecord | null {
  const t0 = Array.isArray(log.topics) ? log.topics[0] : undefined;
  if (typeof t0 !== "string" || typeof log.address !== "string") return null;
  const candidates = candidatesOf(index, t0.toLowerCase(), log.address.toLowerCase(), implementation);
  if (candidates.length === 0) return null;
  let firstError: { layout: Layout | undefined; error: string } | undefined;
  for (const layout of candidates) {
    if (layout.topicCount !== log.topics.length) continue;
    try {
      const out = decodeWith(layout, log, undefined);
      if (typeof out !== "string") {
        out.source = "abi";
        return out;
      }
      firstError ??= { layout, error: out };
    } catch (err) {
      firstError ??= { layout, error: `internal decoder error: ${(err as Error).message}` };
    }
  }
  const first = candidates[0] as Layout;
  const error =
    firstError?.error ?? `${first.signature} with ${log.topics.length} topics fits no registered ABI layout (expected ${first.topicCount})`;
  const failed = failedEvent(log, candidates, firstError?.layout, error);
  failed.source = "abi";
  return failed;
}

/**
 * Whether a log could need its contract's implementation ABI: some address registration exists,
 * and neither the contract's own ABI nor `any` has a layout for the log's topic0.
 */
export function mayNeedImplementation(index: AbiIndex, log: LogRecord): boolean {
  if (index.byAddress.size === 0) return false;
  const t0 = Array.isArray(log.topics) ? log.topics[0] : undefined;
  if (typeof t0 !== "string" || typeof log.address !== "string") return false;
  const topic = t0.toLowerCase();
  return !index.byAddress.get(log.address.toLowerCase())?.has(topic) && !index.any.has(topic);
}
