/**
 * `npm start`: the main job. Brings the stack up (unless `--no-stack`), starts every pipeline
 * stage and the search API, and prints the API URL and a token.
 *
 * With no `--rpc-url` (nor `--chains` / `CHAINSIFT_CHAINS_FILE`) it runs two embedded chains
 * (`ethereum/ethereum/anvil`, chain id 31337, and `ethereum/ethereum/anvil-l2`, 31338): each an anvil
 * plus a traffic generator that deploys an ERC-20 (and an ERC-721) and keeps making transfers, so a
 * newcomer sees records arrive on both (test/e2e/start-two-chains.test.ts).
 *
 * Usage:
 *   npm start                                  # two embedded anvil chains, follow their heads
 *   npm start -- --rpc-url <url>               # any EVM JSON-RPC node, follow its head (a restart
 *                                              # resumes after the last block ingested, docs/reorgs.md)
 *   npm start -- --rpc-url <url> --from N --to M   # backfill a range (an interrupted one resumes), then keep serving the API
 *   npm start -- --rpc-url <url> --from N      # backfill from N and keep following the head
 *   npm start -- --rpc-url <url> --blocks 1,5,9   # ingest exactly these blocks
 *   npm start -- --chains chainsift.chains.yaml    # the chain of a chains file (docs/chains.md); its
 *                                              # chainId must be the node's eth_chainId
 * Flags: --no-stack (services already running), --no-api, --no-resume (a backfill re-reads its whole range), --help.
 * @module
 */

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { startApi } from "../api/server.js";
import type { TokenLookup } from "../lib/chain/tokens.js";
import { type Common, createProcess, embeddedOverlay, type ProcessContext, withChains } from "../lib/common.js";
import { type ChainSettings, parseRpcUrls } from "../lib/config/index.js";
import { serveProcessMetrics } from "../lib/metrics.js";
import { createChainContext } from "../pipeline/chain-context.js";
import { STAGES } from "../pipeline/runtime.js";
import { forgetEarlierRuns, settleChainIds, startStages } from "../pipeline/wiring.js";
import { startAnvil } from "./devchain/anvil.js";
import { startTraffic, TOKEN_DECIMALS, TOKEN_SYMBOL } from "./devchain/traffic.js";
import { createBackfillDisplay } from "./progress.js";
import { repoFile } from "./repo-file.js";

/** The embedded chains of `npm start` without arguments: two anvil nodes, each with its own traffic. */
const EMBEDDED_CHAINS = [
  { network: "anvil", chainId: 31337 },
  { network: "anvil-l2", chainId: 31338 },
] as const;

const HELP = `chainsift — npm start [-- options]
  --chains <file>   chains file (docs/chains.md; as CHAINSIFT_CHAINS_FILE): the chain, its chain id and endpoints
  --rpc-url <urls>  EVM JSON-RPC node, or several endpoints of the chain comma-separated (failover:
                    docs/reorgs.md#faults) (default: two embedded anvil chains with generated traffic);
                    with a chains file of one chain it replaces that chain's endpoints, with several it
                    is refused (exit 2): each chain's rpcUrls go in the file
  --from <n>        first block (default: after the last block ingested, or the current head on a
                    first start; 0 on the embedded chains)
  --to <n>          last block of a backfill (default: keep following the head); a backfill
                    interrupted earlier resumes where it stopped; it produces only blocks the
                    node calls finalized (the rest is the follower's: docs/reorgs.md)
  --no-resume       with --from/--to: re-read the whole range even if an earlier run produced part of it
  --blocks <list>   comma-separated block numbers to ingest (then keep serving the API)
  --no-stack        do not run \`npm run stack -- up\` (services already running)
  --no-api          do not start the search API
  --help            this text
Environment: see docs/configuration.md (CHAINSIFT_API_TOKENS, KAFKA_BROKERS, ELASTICSEARCH_URL, ...).`;

function intArg(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`--${name}: expected a non-negative integer, got ${JSON.stringify(v)}`);
    process.exit(2);
  }
  return n;
}

const { values } = parseArgs({
  options: {
    "rpc-url": { type: "string" },
    chains: { type: "string" },
    from: { type: "string" },
    to: { type: "string" },
    blocks: { type: "string" },
    "no-stack": { type: "boolean", default: false },
    "no-api": { type: "boolean", default: false },
    "no-resume": { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
  strict: true,
});
if (values.help) {
  console.log(HELP);
  process.exit(0);
}
const from = intArg("from", values.from);
const to = intArg("to", values.to);
const blocks = values.blocks?.split(",").map((b) => intArg("blocks", b.trim()) as number);
if (to !== undefined && from === undefined) {
  console.error("--to needs --from");
  process.exit(2);
}
const chainsFile = values.chains ?? process.env.CHAINSIFT_CHAINS_FILE;
const embedded = !values["rpc-url"] && !process.env.CHAINSIFT_RPC_URL && !process.env.CHAINSIFT_RPC_URLS && !chainsFile;
let rpcUrlsArg: string[] | undefined;
try {
  rpcUrlsArg = values["rpc-url"] === undefined ? undefined : parseRpcUrls(values["rpc-url"], "--rpc-url");
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}

if (!values["no-stack"]) {
  const r = spawnSync("bash", [repoFile("scripts/stack.sh"), "up"], { stdio: "inherit" });
  if (r.status !== 0) {
    console.error("the stack did not come up; see `npm run stack -- logs`");
    process.exit(1);
  }
}

const proc = createProcess({
  ...(embedded ? { overlay: embeddedOverlay } : {}),
  ...(values.chains ? { env: { ...process.env, CHAINSIFT_CHAINS_FILE: values.chains } } : {}),
});
main(proc).catch((err: unknown) => {
  proc.logger.error({ err }, "npm start failed");
  void proc.shutdown.run("error", 1);
});

/** A chain's settled settings and the tokens its decoder knows beyond the bundled list. */
interface SettledChain {
  settings: ChainSettings;
  extraTokens?: TokenLookup;
}

/**
 * Starts the embedded chains (anvil plus traffic each): their settings are the first served chain's
 * with URL segments `ethereum/ethereum/<network>`, the anvil's chain id and endpoint, and the
 * traffic's ERC-20 known to the decoder. A network set by `CHAINSIFT_NETWORK` replaces the first chain's.
 */
async function startEmbeddedChains(proc: ProcessContext): Promise<SettledChain[]> {
  const { config, logger, shutdown } = proc;
  const first = config.served[0] as ChainSettings;
  return Promise.all(
    EMBEDDED_CHAINS.map(async ({ network, chainId }, i) => {
      const anvil = await startAnvil({ blockTimeSec: 1, chainId, logger });
      shutdown.add(`anvil ${network}`, () => anvil.stop());
      const traffic = await startTraffic({ rpcUrl: anvil.rpcUrl, intervalMs: 1000, logger });
      shutdown.add(`traffic ${network}`, () => traffic.stop());
      const token = traffic.token.toLowerCase();
      const settings: ChainSettings = {
        ...first,
        chain: { ...first.chain, network: i === 0 ? config.chain.network : network },
        chainId: anvil.chainId,
        chainIdFrom: "default",
        rpcUrls: [anvil.rpcUrl],
      };
      logger.info(
        { chain: settings.chain, chainId: anvil.chainId, rpcUrl: anvil.rpcUrl, token: traffic.token, nft: traffic.nft },
        "embedded chain: anvil with generated traffic",
      );
      // The embedded token is not on any token list: teach the decoder its decimals.
      const extraTokens: TokenLookup = (address) => (address === token ? { symbol: TOKEN_SYMBOL, decimals: TOKEN_DECIMALS } : undefined);
      return { settings, extraTokens };
    }),
  );
}

/**
 * The configured chains' settings with `--rpc-url` applied and every chain id the node's
 * (pipeline/wiring.ts `settleChainIds`).
 * @returns undefined when `--rpc-url` is given with several chains configured (the shutdown, exit 2, is under way).
 */
async function settleConfiguredChains(proc: ProcessContext): Promise<SettledChain[] | undefined> {
  const { config, logger, shutdown } = proc;
  if (rpcUrlsArg) {
    if (config.served.length > 1) {
      // Which chain's endpoints they are is not said: replacing the first chain's would be a guess,
      // and serving only that chain would drop the others without a word.
      logger.error(
        { chains: config.served.map((c) => `${c.chain.technology}/${c.chain.blockchain}/${c.chain.network}`) },
        `--rpc-url names the endpoints of one chain, but ${config.served.length} chains are configured: set each chain's rpcUrls in the chains file instead (docs/chains.md)`,
      );
      await shutdown.run("usage", 2);
      return undefined;
    }
    config.served = [{ ...(config.served[0] as ChainSettings), rpcUrls: rpcUrlsArg }];
  }
  // The chain id picks token decimals (token lists are per chain) before any stage starts: a
  // configured one must be the node's, else the node's is taken.
  const served = await settleChainIds(config, logger);
  return served.map((settings) => ({ settings }));
}

/** Starts everything; each part registers its stop (stopped in reverse: API, ingesters, pipelines, traffic, anvil, Redis). */
async function main(proc: ProcessContext): Promise<void> {
  const { config, logger, shutdown } = proc;
  // /metrics, /healthz, /readyz of the whole process (docs/metrics.md); the API serves /metrics too.
  const metricsServer = await serveProcessMetrics(proc);
  // The chains' settings are settled first, then each chain's context is built once.
  const settled = embedded ? await startEmbeddedChains(proc) : await settleConfiguredChains(proc);
  if (!settled) return;
  config.served = settled.map((c) => c.settings);
  const common = withChains(
    proc,
    settled.map(({ settings, extraTokens }) =>
      createChainContext(config, settings, { processMetrics: proc.metrics, logger, ...(extraTokens ? { extraTokens } : {}) }),
    ),
  );
  if (embedded) for (const chain of common.chains) await forgetEarlierRuns(common, chain);
  // The process configuration's own chain is the first served one (API defaults, banner).
  const first = common.chains[0] as Common["chains"][number];
  config.chain = first.chain;
  config.chainId = first.chainId;
  // One process for every stage of every chain: the API's /metrics serves every chain's metrics too.
  const running = await startStages(common, { stages: [...STAGES], multiChainIngest: true });
  // The embedded chains are new on every run: their follower positions from an earlier run mean nothing.
  if (embedded) for (const c of running.chains) await (await c.pipeline.chainState()).reset();
  for (const check of running.readiness) metricsServer?.addReadiness(check);

  let token = config.api.tokens[0];
  if (!values["no-api"]) {
    if (!token) {
      token = randomBytes(24).toString("base64url");
      config.api.tokens = [token];
    }
    // One API for every running chain: search paths, rules and backtests of each (backtests decode
    // Method/Call arguments with the chain's own options, as its match stage does).
    const api = await startApi(common, {
      chains: common.chains.map((c) => ({ ...c.chain, chainId: c.chainId, decode: c.decode })),
      methodDecoding: first.decode,
    });
    const tries = common.chains.map((c) => {
      const base = `${api.url}/${c.chain.technology}/${c.chain.blockchain}/${c.chain.network}/es`;
      return `  Try:    curl -s -X POST ${base}/event/search/ -H "Authorization: Bearer ${token}" -H 'Content-Type: application/json' -d '{"size":3,"sort":{"blockNumber.num":"desc"}}'   # ${c.key} (chain id ${c.chainId})`;
    });
    console.log(`
chainsift is running.
  API:    ${api.url}
  Token:  ${token}${config.api.tokens.length === 1 && !process.env.CHAINSIFT_API_TOKENS ? "   (generated for this run; set CHAINSIFT_API_TOKENS to fix it)" : ""}
${tries.join("\n")}
  Console: ${api.url}/console/   (a web console: sign in with the token; docs/console.md)
`);
  }

  const { signal } = shutdown;
  // A progress bar in a terminal, progress lines otherwise (cli/progress.ts); backfills only.
  const progress = createBackfillDisplay({ logger, logOutput: common.logOutput, intervalMs: config.ingest.progressIntervalMs });
  const ingesting = Promise.all(
    running.chains.map(async ({ ingest }) => {
      const ingester = (ingest as NonNullable<typeof ingest>).ingester;
      if (blocks) {
        const stats = await ingester.ingestBlocks(blocks, signal);
        logger.info(stats, "blocks ingested; the API keeps serving (Ctrl-C to stop)");
      } else if (from !== undefined && to !== undefined) {
        const stats = await ingester
          .backfill(from, to, { signal, resume: !values["no-resume"], onProgress: progress.update })
          .finally(() => progress.stop());
        logger.info(stats, "backfill done; the API keeps serving (Ctrl-C to stop)");
      } else {
        await ingester.follow({
          from: from ?? (embedded ? 0 : undefined),
          pollIntervalMs: config.ingest.pollIntervalMs,
          maxWindow: config.ingest.followWindow,
          wsUrl: config.ingest.rpc.wsUrl,
          signal,
        });
      }
    }),
  );
  // Stopped first, before the ingesters' producers are closed: the loops end once the signal aborts
  // them, so a Ctrl-C never cuts a block's produce request short (which failed the run with "The
  // producer is disconnected").
  shutdown.add("ingest loop", () => ingesting.catch(() => {}));
  shutdown.add("progress display", () => progress.stop());
  await ingesting;
}
