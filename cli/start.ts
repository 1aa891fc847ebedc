/**
 * `npm start`: the main job. Brings the stack up (unless `--no-stack`), starts every pipeline
 * stage and the search API, and prints the API URL and a token.
 *
 * With no `--rpc-url` it runs on an embedded chain: anvil plus a traffic generator that deploys
 * an ERC-20 (and an ERC-721) and keeps making transfers, so a newcomer sees records arrive.
 *
 * Usage:
 *   npm start                                  # embedded anvil chain, follow the head
 *   npm start -- --rpc-url <url>               # any EVM JSON-RPC node, follow its head (a restart
 *                                              # resumes after the last block ingested, docs/reorgs.md)
 *   npm start -- --rpc-url <url> --from N --to M   # backfill a range (an interrupted one resumes), then keep serving the API
 *   npm start -- --rpc-url <url> --from N      # backfill from N and keep following the head
 *   npm start -- --rpc-url <url> --blocks 1,5,9   # ingest exactly these blocks
 * Flags: --no-stack (services already running), --no-api, --no-resume (a backfill re-reads its whole range), --help.
 * @module
 */

import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { Client } from "@elastic/elasticsearch";
import { startApi } from "../api/server.js";
import { indexName } from "../es/mappings.js";
import { lookupToken } from "../lib/chain/tokens.js";
import { type Common, createCommon, embeddedOverlay } from "../lib/common.js";
import { parseRpcUrls, rpcEndpoints } from "../lib/config.js";
import { serveProcessMetrics } from "../lib/metrics.js";
import { RECORD_KINDS } from "../lib/records.js";
import { createDecoder } from "../pipeline/decode/decoder.js";
import { INDEX_REORGS_STAGE } from "../pipeline/index/indexer.js";
import { createRpcSource } from "../pipeline/ingest/rpc.js";
import { createBus, skipExistingRecords } from "../pipeline/kafka/bus.js";
import { rpcTokenMetadataSource } from "../pipeline/match/token-metadata.js";
import { CONSUMING_STAGES, startPipeline } from "../pipeline/runtime.js";
import { startAnvil } from "./devchain/anvil.js";
import { startTraffic, TOKEN_DECIMALS, TOKEN_SYMBOL } from "./devchain/traffic.js";
import { createBackfillDisplay } from "./progress.js";
import { repoFile } from "./repo-file.js";

const HELP = `chainsift — npm start [-- options]
  --rpc-url <urls>  EVM JSON-RPC node, or several endpoints of the chain comma-separated (failover:
                    docs/reorgs.md#faults) (default: an embedded anvil chain with generated traffic)
  --from <n>        first block (default: after the last block ingested, or the current head on a
                    first start; 0 on the embedded chain)
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
const embedded = !values["rpc-url"] && !process.env.CHAINSIFT_RPC_URL && !process.env.CHAINSIFT_RPC_URLS;
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

const common = createCommon(embedded ? { overlay: embeddedOverlay } : {});
main(common).catch((err: unknown) => {
  common.logger.error({ err }, "npm start failed");
  void common.shutdown.run("error", 1);
});

/** Starts everything; each part registers its stop (stopped in reverse: API, ingester, pipeline, traffic, anvil, Redis). */
async function main({ config, logger, shutdown, ...common }: Common): Promise<void> {
  // /metrics, /healthz, /readyz of the whole process (docs/metrics.md); the API serves /metrics too.
  const metricsServer = await serveProcessMetrics({ config, logger, shutdown, ...common });
  // Ingest fails over between every endpoint; the one-endpoint readers (token metadata, proxies) use the first.
  let rpcUrls = rpcUrlsArg ?? rpcEndpoints(config.ingest);
  let rpcUrl = rpcUrls[0] as string;
  let tokens = lookupToken;
  let chainId = 1;
  if (embedded) {
    const anvil = await startAnvil({ blockTimeSec: 1, logger });
    shutdown.add("anvil", () => anvil.stop());
    rpcUrl = anvil.rpcUrl;
    rpcUrls = [rpcUrl];
    chainId = anvil.chainId;
    const traffic = await startTraffic({ rpcUrl, intervalMs: 1000, logger });
    shutdown.add("traffic", () => traffic.stop());
    const token = traffic.token.toLowerCase();
    // The embedded token is not on any token list: teach the decoder its decimals.
    tokens = (address, cid) => (address === token ? { symbol: TOKEN_SYMBOL, decimals: TOKEN_DECIMALS } : lookupToken(address, cid));
    logger.info({ rpcUrl, token: traffic.token, nft: traffic.nft }, "embedded chain: anvil with generated traffic");
    await forgetEarlierRuns(config, logger);
  } else {
    // The chain id picks token decimals (token lists are per chain) before any stage starts.
    const probe = createRpcSource({ rpcUrls, ...config.ingest.rpc });
    chainId = await probe.chainId();
    probe.destroy();
  }
  // One registry and one Redis client for the process: the API's /metrics serves every stage's metrics too.
  const pipeline = await startPipeline({
    config,
    logger,
    redis: common.redis,
    metricsRegistry: common.metrics,
    decoder: createDecoder({ chainId, tokens, signatures: config.decode.signatures }),
    // Decimals of tokens outside the bundled list, read on chain by the decode stage (CHAINSIFT_DECODE_TOKEN_CALLS).
    tokenRpcUrl: rpcUrl,
    chainId,
    stages: [...CONSUMING_STAGES],
    // Token entities (first sighting of a token contract) carry name/symbol/decimals read on chain.
    tokenMetadata: rpcTokenMetadataSource(rpcUrl),
    methodDecoding: { chainId, tokens },
  });
  shutdown.add("pipeline", () => pipeline.stop());
  // The embedded chain is new on every run: its follower position from an earlier run means nothing.
  if (embedded) await (await pipeline.chainState()).reset();
  const { ingester, close } = await pipeline.createIngester(rpcUrls);
  shutdown.add("ingester", close);
  for (const check of pipeline.readiness) metricsServer?.addReadiness(check);

  let token = config.api.tokens[0];
  if (!values["no-api"]) {
    if (!token) {
      token = randomBytes(24).toString("base64url");
      config.api.tokens = [token];
    }
    // Rule backtests decode Method/Call arguments as the match stage does.
    const api = await startApi({ config, logger, shutdown, ...common }, { methodDecoding: { chainId, tokens } });
    const base = `${api.url}/${config.chain.technology}/${config.chain.blockchain}/${config.chain.network}/es`;
    console.log(`
chainsift is running.
  API:    ${api.url}
  Token:  ${token}${config.api.tokens.length === 1 && !process.env.CHAINSIFT_API_TOKENS ? "   (generated for this run; set CHAINSIFT_API_TOKENS to fix it)" : ""}
  Try:    curl -s -X POST ${base}/event/search/ -H "Authorization: Bearer ${token}" -H 'Content-Type: application/json' -d '{"size":3,"sort":{"blockNumber.num":"desc"}}'
`);
  }

  const { signal } = shutdown;
  // A progress bar in a terminal, progress lines otherwise (cli/progress.ts); backfills only.
  const progress = createBackfillDisplay({ logger, logOutput: common.logOutput, intervalMs: config.ingest.progressIntervalMs });
  const ingesting = (async () => {
    if (blocks) {
      const stats = await ingester.ingestBlocks(blocks, signal);
      logger.info(stats, "blocks ingested; the API keeps serving (Ctrl-C to stop)");
    } else if (from !== undefined && to !== undefined) {
      const stats = await ingester
        .backfill(from, to, { signal, resume: !values["no-resume"], onProgress: progress.update })
        .finally(() => progress.stop());
      logger.info(stats, "backfill done; the API keeps serving (Ctrl-C to stop)");
    } else {
      await ingester.follow({ from: from ?? (embedded ? 0 : undefined), pollIntervalMs: config.ingest.pollIntervalMs, signal });
    }
  })();
  // Stopped first, before the ingester's producer is closed: the loop ends once the signal aborts
  // it, so a Ctrl-C never cuts a block's produce request short (which failed the run with "The
  // producer is disconnected").
  shutdown.add("ingest loop", () => ingesting.catch(() => {}));
  shutdown.add("progress display", () => progress.stop());
  await ingesting;
}

/**
 * The embedded chain starts again from block 0 on every run: drops the previous run's records so
 * searches show only this chain (topics keep their history), and moves every stage's consumer group
 * past the records already in the topics (a stage stopped before it committed, or a consumer group
 * that is new, would otherwise replay earlier runs).
 * @throws when Elasticsearch or Kafka cannot be reached, or another process holds the consumer groups.
 */
async function forgetEarlierRuns(config: Common["config"], logger: Common["logger"]): Promise<void> {
  const es = new Client({ node: config.elasticsearch.url });
  await es.indices.delete({
    index: RECORD_KINDS.map((k) => indexName(config.chain, k, config.elasticsearch.indexPrefix)),
    ignore_unavailable: true,
  });
  await es.close();
  const bus = await createBus({ config, logger, setup: false });
  try {
    await skipExistingRecords(bus, [...CONSUMING_STAGES, INDEX_REORGS_STAGE]);
  } catch (err) {
    throw new Error(
      `cannot move the stages' consumer groups (${bus.groupId("<stage>")}) past earlier runs: ${(err as Error).message}. ` +
        "Is another npm start (or npm run stage) still running against this stack? Stop it first.",
      { cause: err },
    );
  }
}
