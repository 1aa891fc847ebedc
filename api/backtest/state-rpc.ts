/**
 * The JSON-RPC clients the API reads state-rule backtests through (api/backtest/state-scan.ts): one per
 * served chain, made on first use over the chain's endpoints (its chains-file entry's `rpcUrls`, or
 * `ingest.rpcUrls` for `config.chain`) with the configured transport limits (`ingest.rpc`), and
 * destroyed with the app.
 * @module
 */
import type { ChainId, Config } from "../../lib/config/index.js";
import { createRpcClient, type RpcClient } from "../../lib/rpc/client.js";

/** The clients of {@link stateRpcClients}. */
export interface StateRpcClients {
  /** The chain's client (made on first use); undefined when no endpoint of the chain is configured. */
  of(chain: ChainId): RpcClient | undefined;
  /** Destroys every client made. */
  close(): void;
}

const keyOf = (c: ChainId) => `${c.technology}/${c.blockchain}/${c.network}`;

/**
 * Lazily made JSON-RPC clients per chain (module doc).
 * @param config - uses `chain`, `chainsFile`, `ingest.rpcUrls` and `ingest.rpc`.
 */
export function stateRpcClients(config: Pick<Config, "chain" | "chainsFile" | "ingest">): StateRpcClients {
  const made = new Map<string, RpcClient>();
  const urlsOf = (chain: ChainId): readonly string[] => {
    const entry = config.chainsFile?.chains.find((e) => keyOf(e) === keyOf(chain));
    if (entry) return entry.rpcUrls;
    return keyOf(chain) === keyOf(config.chain) ? config.ingest.rpcUrls : [];
  };
  return {
    of(chain) {
      const key = keyOf(chain);
      const known = made.get(key);
      if (known) return known;
      const urls = urlsOf(chain);
      if (urls.length === 0) return undefined;
      const { timeoutMs, attempts, retryBudgetMs, retryAfterMaxMs, cooldownMs, maxLagBlocks } = config.ingest.rpc;
      const client = createRpcClient({ urls, timeoutMs, attempts, retryBudgetMs, retryAfterMaxMs, cooldownMs, maxLagBlocks });
      made.set(key, client);
      return client;
    },
    close() {
      for (const c of made.values()) c.destroy();
      made.clear();
    },
  };
}
