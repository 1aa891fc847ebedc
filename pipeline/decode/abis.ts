/**
 * The decode stage's live view of the user ABIs (lib/abis/store.ts): loads every registration at
 * start, applies each change from the Redis pub/sub feed at once, and reloads everything every
 * `reloadIntervalMs` (config `abis.reloadIntervalMs`, default 30 s) and after a reconnection, so a
 * lost notification is noticed within that interval. Logs of EIP-1967 / EIP-1822 proxies decode
 * with their implementation's ABI: the implementation is read with `eth_getStorageAt` (./proxy.ts)
 * for contracts whose log no registration knows by itself, and cached `proxyTtlMs` (default 10
 * minutes; a failed read is retried after at most 60 s).
 * @module
 */
import type { AbiChange, AbiStore, AbiSubscriber } from "../../lib/abis/store.js";
import type { Logger } from "../../lib/logger.js";
import type { EventRecord, LogRecord } from "../../lib/records.js";
import { type AbiIndex, abiCovers, buildAbiIndex, decodeWithAbis, mayNeedImplementation } from "./abi-decoder.js";
import type { ImplementationReader } from "./proxy.js";

/** Dependencies of {@link createAbiRegistry}. */
export interface AbiRegistryDeps {
  store: AbiStore;
  /** A new, unconnected Redis client for the change feed (e.g. `redis.duplicate()`); absent: no feed, periodic reloads only. */
  subscriber?: () => AbiSubscriber;
  logger: Logger;
  /** Reads proxies' implementation slots (./proxy.ts `rpcImplementationReader`); absent: proxies are not followed. */
  implementations?: ImplementationReader;
  /** Cache lifetime of an implementation read, in ms (config `abis.proxyTtlMs`). */
  proxyTtlMs: number;
  /** Full reload interval, in ms (config `abis.reloadIntervalMs`). */
  reloadIntervalMs: number;
  /** Called after a change was applied (the stage re-decodes history on `put`). */
  onChange?: (change: AbiChange) => void;
  /** Clock in ms; default `Date.now`. */
  now?: () => number;
}

/** The live registry. */
export interface AbiRegistry {
  /** Loads every registration and subscribes to changes. @throws when Redis cannot be reached. */
  start(): Promise<void>;
  /** The current compiled registrations. */
  index(): AbiIndex;
  /** Reloads every registration now. */
  reload(): Promise<void>;
  /**
   * Reads (or takes from the cache) the implementations of the contracts of `logs` that may need
   * one ({@link mayNeedImplementation}). A failed read is logged and the logs decode without it.
   */
  prepare(logs: readonly LogRecord[]): Promise<void>;
  /** Decodes a log with the registrations (and its contract's cached implementation). */
  decode(log: LogRecord): EventRecord | null;
  /** Whether a registration applies to the log's contract or its cached implementation (`any` aside). */
  covers(log: LogRecord): boolean;
  /** The cached implementation of a contract (lower-case), or null. */
  implementationOf(address: string): string | null;
  /** The contracts (lower-case) whose cached implementation is `implementation`. */
  proxiesOf(implementation: string): string[];
  /** Stops the feed and the timer. */
  stop(): Promise<void>;
}

const FAILED_READ_RETRY_MS = 60_000;

/** Creates the live registry (nothing is loaded before {@link AbiRegistry.start}). */
export function createAbiRegistry(deps: AbiRegistryDeps): AbiRegistry {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ stage: "decode", part: "abis" });
  let index = buildAbiIndex([]);
  const impls = new Map<string, { impl: string | null; until: number }>();
  let timer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => Promise<void>) | undefined;
  const reload = async () => {
    const all = await deps.store.all();
    index = buildAbiIndex(all, (reg, err) => log.warn({ err, namespace: reg.namespace, address: reg.address }, "abi registration skipped"));
  };
  const safeReload = () =>
    reload().catch((err: unknown) => {
      log.warn({ err }, "abi registry reload failed");
    });
  return {
    async start() {
      await reload();
      if (deps.subscriber) {
        unsubscribe = await deps.store.subscribe(
          deps.subscriber(),
          (change) => {
            void reload()
              .then(() => {
                log.info({ op: change.op, namespace: change.namespace, address: change.address }, "abi registration changed");
                deps.onChange?.(change);
              })
              .catch((err: unknown) => log.warn({ err }, "abi registry reload failed"));
          },
          { onReconnect: () => void safeReload(), onError: (err) => log.warn({ err }, "abi change feed error") },
        );
      }
      timer = setInterval(() => void safeReload(), deps.reloadIntervalMs);
      timer.unref();
    },
    index: () => index,
    reload,
    async prepare(logs) {
      const reader = deps.implementations;
      if (!reader || index.byAddress.size === 0) return;
      const t = now();
      const wanted = new Set<string>();
      for (const l of logs) {
        if (!mayNeedImplementation(index, l)) continue;
        const a = l.address.toLowerCase();
        const cached = impls.get(a);
        if (!cached || cached.until <= t) wanted.add(a);
      }
      if (wanted.size === 0) return;
      try {
        const read = await reader([...wanted]);
        for (const [a, impl] of read) impls.set(a, { impl, until: t + deps.proxyTtlMs });
      } catch (err) {
        log.warn({ err, contracts: wanted.size }, "cannot read proxy implementation slots; decoding without them");
        for (const a of wanted)
          impls.set(a, { impl: impls.get(a)?.impl ?? null, until: t + Math.min(deps.proxyTtlMs, FAILED_READ_RETRY_MS) });
      }
    },
    decode(l) {
      const a = typeof l.address === "string" ? l.address.toLowerCase() : "";
      return decodeWithAbis(index, l, impls.get(a)?.impl ?? null);
    },
    covers(l) {
      if (typeof l.address !== "string") return false;
      return abiCovers(index, l.address, impls.get(l.address.toLowerCase())?.impl ?? null);
    },
    implementationOf: (address) => impls.get(address.toLowerCase())?.impl ?? null,
    proxiesOf: (implementation) => [...impls].filter(([, v]) => v.impl === implementation.toLowerCase()).map(([a]) => a),
    async stop() {
      if (timer) clearInterval(timer);
      await unsubscribe?.();
    },
  };
}
