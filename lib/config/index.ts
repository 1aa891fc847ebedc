/**
 * The one place that reads the environment. Every process calls {@link loadConfig} once and
 * passes the result (or parts of it) down as a dependency object; nothing else reads `process.env`.
 * The parsers of single variables are in lib/config/parse.ts and the served chains (chains file or
 * env shorthand) in lib/config/served-chains.ts; both read only the environment object `loadConfig` hands
 * them, and everything they export for importers is re-exported here.
 * @module
 */

import type { Partitioning } from "../partitioning.js";
import { type ChainEntry, type ChainsFileError, chainKey } from "./chains-file.js";
import { type IncidentApisConfig, incidentApisOf } from "./incidents.js";
import { type KafkaConfig, kafkaConfigOf } from "./kafka-client.js";
import { bool, ConfigError, explorers, int, list, oneOf, percent, str } from "./parse.js";
import { partitioningOf } from "./partitioning.js";
import { type ReadAheadConfig, readAheadOf } from "./read-ahead.js";
import { type ResultCacheConfig, resultCacheOf } from "./result-cache.js";
import { type ChainId, type ChainIdSource, type ChainSettings, servedChains } from "./served-chains.js";
import { type StateReadsConfig, stateReadsOf } from "./state.js";
import { CRASH_POINTS, type CrashPoint, LOG_FORMATS, type LogFormat } from "./values.js";
import { type WatchlistCopiesConfig, watchlistCopiesOf } from "./watchlists.js";

export { KAFKA_CLIENTS, type KafkaClientName, type KafkaConfig } from "./kafka-client.js";
export { ConfigError, DEFAULT_EXPLORER_URLS, parseRpcUrls } from "./parse.js";
export type { ResultCacheConfig } from "./result-cache.js";
export {
  type ChainId,
  type ChainIdSource,
  type ChainSettings,
  configOfChain,
  PER_CHAIN_VARIABLES,
  rpcEndpoints,
} from "./served-chains.js";
export { CRASH_POINTS, type CrashPoint, LOG_FORMATS, type LogFormat } from "./values.js";

/** Full configuration of a chainsift process. */
export interface Config {
  /**
   * The chain served: the chains file's served entry (docs/chains.md), else the env shorthand
   * `CHAINSIFT_TECHNOLOGY`, `CHAINSIFT_BLOCKCHAIN`, `CHAINSIFT_NETWORK`.
   */
  chain: ChainId;
  /**
   * EIP-155 chain id of the served chain (e.g. 1 Ethereum mainnet, 8453 Base; https://chainlist.org):
   * selects the bundled token list's entries for scaled amounts (decode stage, the match and index
   * stages' method decoding, backtests). The chains file's `chainId`, else env `CHAINSIFT_CHAIN_ID`
   * (an integer >= 1), default 1.
   */
  chainId: number;
  /**
   * Where {@link Config.chainId} came from: `file`, `env` (`CHAINSIFT_CHAIN_ID`) or `default`.
   * A configured id (`file`, `env`) is checked against the node's `eth_chainId` when ingest (or
   * `npm start`) starts, and a mismatch refuses to start (`CS_CHAIN_ID_MISMATCH`); with `default`
   * `npm start` takes the node's id and `npm run stage -- ingest` does not check (the behaviour before
   * chain ids were configured).
   */
  chainIdFrom: ChainIdSource;
  /**
   * The chains file (env `CHAINSIFT_CHAINS_FILE`, or `--chains <file>` of `npm start` and
   * `npm run stage`; lib/config/chains-file.ts, docs/chains.md): its path and every chain it lists, as written.
   * The served chain is its only entry, or the one `CHAINSIFT_CHAIN` (`technology/blockchain/network`)
   * names. Default none: one chain from the environment (the env shorthand).
   */
  chainsFile: { path: string; chains: ChainEntry[] } | undefined;
  /**
   * Every chain this process serves, in the file's order (the first is {@link Config.chain}): the
   * chains file's entries, narrowed by `CHAINSIFT_CHAIN` (a comma-separated list of
   * `technology/blockchain/network`; default every chain of the file), else the one chain of the env
   * shorthand. Each becomes one chain context (lib/chain-context.ts) with its own narrowed
   * configuration ({@link configOfChain}).
   */
  served: ChainSettings[];
  kafka: KafkaConfig;
  /** State-condition reads (lib/config/state.ts, docs/rules.md "State conditions"). */
  stateReads: StateReadsConfig;
  /** The match process's watchlist copies (lib/config/watchlists.ts, docs/alerting.md "Watchlists"). */
  watchlistCopies: WatchlistCopiesConfig;
  /** Confluent-compatible schema registry base URL. Env `SCHEMA_REGISTRY_URL`, default `http://127.0.0.1:8081/apis/ccompat/v7` (Apicurio's Confluent API). */
  schemaRegistryUrl: string;
  elasticsearch: {
    /** Env `ELASTICSEARCH_URL`, default `http://127.0.0.1:9200`. */
    url: string;
    /** Prepended to every index name. Env `CHAINSIFT_INDEX_PREFIX`, default empty. */
    indexPrefix: string;
    /** Per-request timeout. Env `ELASTICSEARCH_REQUEST_TIMEOUT_MS`, default 30000. */
    requestTimeoutMs: number;
    /**
     * Whether the API's Elasticsearch client makes OpenTelemetry spans (the instrumentation of
     * `@elastic/transport`; spans are only recorded when an OpenTelemetry SDK is registered in the
     * process). Env `CHAINSIFT_ES_TRACING`, default false: without an SDK the instrumentation is a
     * no-op that still cost ~7 % of the API's CPU per small search (bench search profile).
     */
    tracing: boolean;
    /**
     * Indices partitioned by block range behind one alias per kind (es/partitions.ts): blocks per
     * backing index, primaries and replicas, per record kind. Env `CHAINSIFT_INDEX_PARTITION_BLOCKS`,
     * `CHAINSIFT_INDEX_SHARDS`, `CHAINSIFT_INDEX_REPLICAS`: each an integer for every kind or a JSON
     * object by kind (`{"event":100000,"call":50000}`; kinds left out keep their default). Defaults
     * es/partitions.ts `DEFAULT_PARTITIONING` (block 2,000,000, tx 150,000, log 250,000, event
     * 150,000, call 60,000 blocks; 1 primary, 0 replicas), sized in docs/operations.md.
     */
    partitioning: Partitioning;
  };
  /** Env `REDIS_URL`, default `redis://127.0.0.1:6379`. */
  redisUrl: string;
  /** Prepended to every Redis key (tests isolate themselves with it). Env `CHAINSIFT_REDIS_PREFIX`, default `cs:`. */
  redisKeyPrefix: string;
  api: {
    /** Env `CHAINSIFT_API_HOST`, default `127.0.0.1`. */
    host: string;
    /** Env `CHAINSIFT_API_PORT`, default 8080; 0 picks a free port. */
    port: number;
    /** Accepted bearer tokens. Env `CHAINSIFT_API_TOKENS` (comma-separated), default none (every request is 401). */
    tokens: string[];
    /** Largest positive `size` of a search. Env `CHAINSIFT_MAX_SIZE`, default 10000 (ES `index.max_result_window`). */
    maxSize: number;
    /**
     * Most scrolls and points in time one account may hold open at once (the Elasticsearch-compatible
     * routes' `?scroll=` searches and `_pit`), across all API instances (counted in Redis); one more
     * is 429 `CS_CONTEXT_LIMIT`. Env `CHAINSIFT_SEARCH_CONTEXTS_MAX`, default 20.
     */
    searchContextsMax: number;
    /**
     * Longest keep-alive of a scroll or point in time, in ms (`scroll=`, `keep_alive=`,
     * `pit.keep_alive`); a longer one is 400 `CS_KEEP_ALIVE_INVALID`. Env
     * `CHAINSIFT_SEARCH_CONTEXT_MAX_KEEP_ALIVE_MS`, default 3600000 (1 h; Elasticsearch's own
     * `search.max_keep_alive` is 24 h).
     */
    searchContextMaxKeepAliveMs: number;
    /** Credential of the admin endpoints (`Authorization: Bearer <adminToken>`). Env `CHAINSIFT_ADMIN_TOKEN`, default none (admin endpoints answer 401). */
    adminToken: string | undefined;
    /** Requests allowed per token per window. Env `CHAINSIFT_RATE_LIMIT_MAX`, default 600. */
    rateLimitMax: number;
    /** Rate-limit window. Env `CHAINSIFT_RATE_LIMIT_WINDOW_MS`, default 60000. */
    rateLimitWindowMs: number;
    /**
     * Longest time, in ms, to receive a request's complete headers, counted from its first byte (or
     * from the connection for the first request); then the API answers 408 `CS_REQUEST_TIMEOUT` and
     * closes the connection (Node `server.headersTimeout`). Env `CHAINSIFT_API_HEADERS_TIMEOUT_MS`,
     * default 10000. At most {@link requestTimeoutMs} (Node refuses a larger one).
     */
    headersTimeoutMs: number;
    /**
     * Longest time, in ms, to receive a whole request (headers and body); then 408
     * `CS_REQUEST_TIMEOUT` and the connection is closed (Node `server.requestTimeout`). Only
     * receiving counts: writing a long answer (e.g. a `size: -1` stream) is not limited by it. Env
     * `CHAINSIFT_API_REQUEST_TIMEOUT_MS`, default 30000 (a 1 MiB body at ~35 KB/s fits).
     */
    requestTimeoutMs: number;
    /**
     * How long, in ms, an idle keep-alive connection is kept open after an answer (Node
     * `server.keepAliveTimeout`). Env `CHAINSIFT_API_KEEP_ALIVE_TIMEOUT_MS`, default 72000 (Fastify's
     * default: above the 60 s idle timeout of common load balancers, so the proxy closes first).
     */
    keepAliveTimeoutMs: number;
    /**
     * Longest inactivity, in ms, of a connection (no byte received or sent) before the server
     * destroys it (Node `server.setTimeout`, Fastify `connectionTimeout`). Keep it above
     * `ELASTICSEARCH_REQUEST_TIMEOUT_MS`: an answer waiting on Elasticsearch sends nothing meanwhile.
     * Env `CHAINSIFT_API_CONNECTION_TIMEOUT_MS`, default 120000.
     */
    connectionTimeoutMs: number;
    /**
     * The API's result cache of search answers without hits (api/search/result-cache.ts, docs/api.md
     * "Result cache"), with the semantics of Elasticsearch's shard request cache
     * (https://www.elastic.co/guide/en/elasticsearch/reference/8.19/shard-request-cache.html).
     */
    resultCache: ResultCacheConfig;
    /** The read-ahead of point-in-time and scroll pages (api/search/read-ahead.ts, api/search/scroll-ahead.ts, docs/api.md). */
    readAhead: ReadAheadConfig;
  };
  ingest: {
    /**
     * The first of {@link Config.ingest.rpcUrls}: the node of the readers that use one endpoint
     * (token metadata, proxy slots, `chainsift status`'s first probe).
     */
    rpcUrl: string;
    /**
     * The chain's EVM JSON-RPC endpoints (http/https), in order of preference: ingest fails over
     * between them (docs/reorgs.md "The transport and failover"). Env `CHAINSIFT_RPC_URLS`
     * (comma-separated), else `CHAINSIFT_RPC_URL` (one endpoint), default `http://127.0.0.1:8545`.
     * A URL's userinfo is sent as HTTP Basic authentication; logs and metric labels never show it.
     */
    rpcUrls: string[];
    /** The JSON-RPC transport's limits (lib/rpc/client.ts `createRpcClient`, through pipeline/ingest/rpc.ts `createRpcSource`). */
    rpc: {
      /** Timeout of one HTTP request (a call or a batch), in ms. Env `CHAINSIFT_RPC_TIMEOUT_MS`, default 10000. */
      timeoutMs: number;
      /**
       * Tries of one HTTP request on one endpoint, the first included, after a 429, 5xx, connection
       * failure, timeout or a body that is not JSON, while no other endpoint is available. Env
       * `CHAINSIFT_RPC_ATTEMPTS`, default 4 (an integer >= 1).
       */
      attempts: number;
      /** Longest time one HTTP request spends on its tries, waits included, in ms. Env `CHAINSIFT_RPC_RETRY_BUDGET_MS`, default 30000. */
      retryBudgetMs: number;
      /** Longest `Retry-After` of a 429 that is honoured, in ms (a longer one is cut to it). Env `CHAINSIFT_RPC_RETRY_AFTER_MAX_MS`, default 30000. */
      retryAfterMaxMs: number;
      /**
       * How long an endpoint is avoided after an error, in ms; doubles with each consecutive error up
       * to 60000 (or a 429's `Retry-After` when longer). Env `CHAINSIFT_RPC_COOLDOWN_MS`, default 2000.
       */
      cooldownMs: number;
      /**
       * An endpoint whose head is more than this many blocks below the highest endpoint head is
       * behind and avoided while another is not. Env `CHAINSIFT_RPC_MAX_LAG_BLOCKS`, default 3.
       */
      maxLagBlocks: number;
      /**
       * With several endpoints, a block read without an answer after this many ms is also sent to
       * the next available endpoint (the first answer wins): a hanging backend costs this, not the
       * timeout. With one endpoint, a request of block reads is re-sent to the same URL after an
       * adaptive delay of at most this many ms (lib/rpc/transport.ts `hedgeDelayMs`). 0: never.
       * Env `CHAINSIFT_RPC_HEDGE_AFTER_MS`, default 2000.
       */
      hedgeAfterMs: number;
      /**
       * The node's WebSocket endpoint (ws/wss) for head discovery: the follower subscribes to
       * `newHeads` (`eth_subscribe`, lib/rpc/heads.ts) and wakes at every new head instead of at its
       * next poll; polling stays, as the fallback and the liveness check. anvil offers it on its HTTP
       * port (`ws://127.0.0.1:8545`). Env `CHAINSIFT_RPC_WS_URL`, default none (polling only).
       */
      wsUrl: string | undefined;
    };
    /** Head polling interval in follow mode. Env `CHAINSIFT_POLL_INTERVAL_MS`, default 1000. */
    pollIntervalMs: number;
    /**
     * Most heights the follower fetches at once while it is more than one block behind the head (its
     * catch-up window, pipeline/ingest/window.ts): the window starts at 4, grows by one per block
     * fetched without a retry and halves after one that needed a retry, up to this; blocks are still
     * produced one by one in height order. 1: one at a time. Env `CHAINSIFT_FOLLOW_WINDOW`, default 16.
     */
    followWindow: number;
    /** Blocks fetched concurrently during a backfill. Env `CHAINSIFT_INGEST_CONCURRENCY`, default 4. */
    concurrency: number;
    /**
     * Fetch call traces for the Trace and Call alerting targets, wherever the node has them: at start
     * ingest probes `debug_traceBlockByNumber` (callTracer), then parity-style `trace_block`, and uses
     * the first the node answers (start log line and metric `chainsift_ingest_trace_source`). Env
     * `CHAINSIFT_INGEST_TRACES` (`true`/`false`), default true; false skips them (cheaper ingest).
     * A chains file's `traces`: `auto` and `on` true, `off` false.
     */
    traces: boolean;
    /**
     * Refuse to start ingest when the node has no trace method (the probe finds neither). A chains
     * file's `traces: on`; the env shorthand has no such setting (false).
     */
    tracesRequired: boolean;
    /**
     * How often, in ms, a backfill without a terminal (stdout not a TTY: a pipe, a file, a
     * container log) logs a `backfill progress` line (blocks done / total, blocks/s, records/s,
     * ETA); in a terminal a progress bar is redrawn instead. Env `CHAINSIFT_PROGRESS_INTERVAL_MS`,
     * default 5000 (ms, an integer >= 1).
     */
    progressIntervalMs: number;
    /**
     * TEST ONLY: a crash point of the ingest stage ({@link CrashPoint}) where the process SIGKILLs
     * itself (pipeline/ingest/crash.ts), to test that a crash at any step leaves nothing half done
     * (docs/reorgs.md). Env `CHAINSIFT_TEST_CRASH_POINT`: `announce-unwind`, `produce-tip` or
     * `backfill-chunk`; default unset (never). Never set it in production.
     */
    testCrashPoint: CrashPoint | undefined;
    /**
     * TEST ONLY: the probability (0..1) that each pass through {@link testCrashPoint} kills the
     * process. Env `CHAINSIFT_TEST_CRASH_PERCENT` (an integer 0..100), default 100 (the first pass).
     */
    testCrashPercent: number;
    /** TEST ONLY: seed of the crash hook's generator (logged when the hook is armed). Env `CHAINSIFT_TEST_CRASH_SEED` (an integer), default random. */
    testCrashSeed: number;
  };
  decode: {
    /**
     * Read `decimals()`, `symbol()` and `name()` by `eth_call` (once per contract, at the block it is
     * first seen, cached in Redis) for ERC-20 Transfer/Approval and WETH Deposit/Withdrawal amounts
     * of contracts the bundled token list does not know, to fill their `scaled` (docs/decoding.md).
     * The node is the ingest node (`CHAINSIFT_RPC_URL`, or `npm start`'s `--rpc-url`); while it
     * fails, the decode stage retries its batch. Env `CHAINSIFT_DECODE_TOKEN_CALLS` (`true`/`false`),
     * default true; false: only the bundled list's tokens are scaled. A chains file's
     * `tokenDecimals` containing `calls`.
     */
    tokenCalls: boolean;
    /**
     * Scale amounts of the tokens on the bundled token list (@uniswap/default-token-list, entries of
     * {@link Config.chainId}) with the list's decimals. Always true with the env shorthand; a chains
     * file's `tokenDecimals` containing `tokenList` (default true).
     */
    tokenList: boolean;
    /**
     * How long a negative entry of that cache lives (a contract whose `decimals()` reverted or
     * returned garbage), in ms: after it, the contract is asked again. Env
     * `CHAINSIFT_DECODE_TOKEN_NEGATIVE_TTL_MS`, default 86400000 (one day; an integer >= 1).
     */
    tokenNegativeTtlMs: number;
    /**
     * Decode logs whose topic0 is no standard layout (and, once user ABIs exist, whose contract has
     * none) by topic0 alone, from the bundled signature database: the event ABIs of the npm package
     * `@openzeppelin/contracts` (loaded once per process, on the first such log), into events with
     * `source: "signature"` and `standard: "openzeppelin"` (docs/decoding.md). Env
     * `CHAINSIFT_DECODE_SIGNATURES` (`true`/`false`), default true; false: such logs give no event.
     */
    signatures: boolean;
  };
  index: {
    /** Largest bulk request, in documents. Env `CHAINSIFT_BULK_MAX_DOCS`, default 2000. */
    bulkMaxDocs: number;
  };
  metrics: {
    /**
     * Interface the pipeline processes' metrics server binds (`/metrics`, `/healthz`, `/readyz`;
     * lib/metrics.ts, docs/metrics.md). Env `CHAINSIFT_METRICS_HOST`, default `127.0.0.1`; `0.0.0.0`
     * in a container that Prometheus scrapes from outside.
     */
    host: string;
    /**
     * TCP port of that server. Env `CHAINSIFT_METRICS_PORT`, default 0: a free port, logged at start
     * and printed on `npm run stage`'s ready line, so several stages run side by side on one
     * machine; set a fixed port (e.g. 9464, as docker-compose does) for Prometheus. `-1` turns the
     * server off.
     */
    port: number;
  };
  rules: {
    /**
     * Most alerting rules one account may have, counting enabled and disabled ones; creating one more
     * answers 409 `CS_RULE_LIMIT_REACHED` (lib/rules/store.ts). Env `CHAINSIFT_MAX_RULES_PER_ACCOUNT`,
     * default 1000 (rules, an integer >= 1).
     */
    maxPerAccount: number;
  };
  /** Rule backtests: `POST /alerting/rules/test/` and `chainsift rules test` (docs/alerting.md, "Test a rule on history"). */
  backtest: {
    /**
     * Most blocks one backtest may cover (`to − from + 1`, or `last`); a wider range is refused with
     * 400 `CS_BACKTEST_RANGE_TOO_LARGE`. Env `CHAINSIFT_BACKTEST_MAX_BLOCKS`, default 100000 (blocks,
     * an integer >= 1; about two weeks of Ethereum mainnet at 12 s per block).
     */
    maxBlocks: number;
    /**
     * Longest time, in ms, one backtest scans before it stops at a block boundary and ends its answer
     * with `complete: false`, `reason: "CS_BACKTEST_TIME_CAP"` and `nextFrom` (where to continue).
     * Env `CHAINSIFT_BACKTEST_TIMEOUT_MS`, default 30000 (ms, an integer >= 1).
     */
    timeoutMs: number;
  };
  abis: {
    /**
     * Most user ABIs one account may register (`PUT /abis/:address`, addresses plus `any`); one more
     * answers 409 `CS_ABI_LIMIT_REACHED` (lib/abis/store.ts). The admin's global namespace has no
     * limit. Env `CHAINSIFT_ABI_MAX_PER_ACCOUNT`, default 100 (registrations, an integer >= 1).
     */
    maxPerAccount: number;
    /**
     * How often, in ms, the decode stage reloads every registration from Redis, on top of the
     * pub/sub change feed that applies a change at once: the longest a change can go unnoticed when
     * its notification was lost. Env `CHAINSIFT_ABI_RELOAD_INTERVAL_MS`, default 30000 (an integer >= 100).
     */
    reloadIntervalMs: number;
    /**
     * How long, in ms, the decode stage trusts the implementation address it read from a proxy's
     * EIP-1967 / EIP-1822 slot (`eth_getStorageAt` on `CHAINSIFT_RPC_URL` at the latest block) before
     * reading it again; after an upgrade, logs decode with the new implementation's ABI at most this
     * late. Env `CHAINSIFT_ABI_PROXY_TTL_MS`, default 600000 (10 minutes; an integer >= 0, 0 = read every batch).
     */
    proxyTtlMs: number;
    /**
     * Most past logs one registration re-decodes from the log index, oldest first; past it the
     * re-decode stops with a warning (`abi re-decode truncated`). Env
     * `CHAINSIFT_ABI_REDECODE_MAX_LOGS`, default 100000 (logs, an integer >= 0; 0 turns re-decoding off).
     */
    redecodeMaxLogs: number;
  };
  notify: {
    /** SMTP server for e-mail alerts, e.g. `smtp://user:pass@mail.example:587`. Env `CHAINSIFT_SMTP_URL`, default none (e-mail actions fail with CS_MAILER_UNCONFIGURED and are dead-lettered). */
    smtpUrl: string | undefined;
    /** From address of alert e-mails. Env `CHAINSIFT_MAIL_FROM`, default `chainsift <alerts@chainsift.invalid>`. */
    mailFrom: string;
    /** Hosts, IPs or CIDRs webhooks may reach even though they are loopback/private/link-local. Env `CHAINSIFT_NOTIFY_ALLOWLIST` (comma-separated), default none. */
    allowlist: string[];
    /** Timeout of one delivery attempt. Env `CHAINSIFT_NOTIFY_TIMEOUT_MS`, default 10000. */
    timeoutMs: number;
    /** Attempts per action, including the first. Env `CHAINSIFT_NOTIFY_MAX_ATTEMPTS`, default 8. */
    maxAttempts: number;
    /** First retry delay (doubles, full jitter). Env `CHAINSIFT_NOTIFY_BASE_DELAY_MS`, default 500. */
    baseDelayMs: number;
    /** Longest retry delay, also the cap of a Retry-After and of the wait between probes of an unhealthy destination. Env `CHAINSIFT_NOTIFY_MAX_DELAY_MS`, default 60000. */
    maxDelayMs: number;
    /**
     * Time budget of one delivery (alert action) from enqueueing, in ms: not delivered within it, it is
     * dead-lettered (`CS_DELIVERY_EXHAUSTED`, or `CS_DESTINATION_UNHEALTHY` when its destination was
     * unhealthy all along). Env `CHAINSIFT_NOTIFY_RETRY_WINDOW_MS`, default 0 = derived from the retry
     * settings: the sum of the backoff ceilings plus one timeout per attempt (143500 with defaults).
     */
    retryWindowMs: number;
    /** Failed attempts in a row (any alert) after which a destination is unhealthy and only probed. Env `CHAINSIFT_NOTIFY_UNHEALTHY_AFTER`, default 3. */
    unhealthyAfter: number;
    /** Delivery attempts in flight against one destination (URL origin, or the SMTP server), per notify process. Env `CHAINSIFT_NOTIFY_DESTINATION_CONCURRENCY`, default 4. */
    destinationConcurrency: number;
    /** Delivery attempts in flight in all, per notify process. Env `CHAINSIFT_NOTIFY_MAX_IN_FLIGHT`, default 64. */
    maxInFlight: number;
    /**
     * Token of the operator's Telegram bot that sends every `Telegram` alert action (from
     * @BotFather, `<bot id>:<secret>`). Rules name only the chat. A secret: never logged, never in
     * API answers or the delivery log. Env `CHAINSIFT_TELEGRAM_BOT_TOKEN`, default none (Telegram
     * actions end with `CS_TELEGRAM_UNCONFIGURED` and are dead-lettered for a replay).
     */
    telegramBotToken: string | undefined;
    /**
     * Base URL of the Telegram Bot API; requests go to `<url>/bot<token>/sendMessage` (https://core.telegram.org/bots/api#making-requests).
     * Env `CHAINSIFT_TELEGRAM_API_URL`, default `https://api.telegram.org`; a self-hosted Bot API server, or a local receiver in tests (a
     * private address must be in `CHAINSIFT_NOTIFY_ALLOWLIST`).
     */
    telegramApiUrl: string;
    // --- h-storm (issue 24 §3): Slack Web API bot for editable Slack messages ---
    /**
     * Token (`xoxb-…`, scope `chat:write`) of the operator's Slack bot for `Slack` actions whose
     * `url` is `<slackApiUrl>/chat.postMessage`: their messages are posted with `chat.postMessage`
     * and a retraction edits them with `chat.update`. A secret: sent only to `slackApiUrl`, never
     * logged. Env `CHAINSIFT_SLACK_BOT_TOKEN`, default none (such actions end with
     * `CS_SLACK_UNCONFIGURED` and are dead-lettered for a replay; incoming-webhook actions are unaffected).
     */
    slackBotToken: string | undefined;
    /**
     * Base URL of the Slack Web API (https://api.slack.com/web). Env `CHAINSIFT_SLACK_API_URL`,
     * default `https://slack.com/api`; a local receiver in tests (a private address must be in
     * `CHAINSIFT_NOTIFY_ALLOWLIST`).
     */
    slackApiUrl: string;
    // --- end h-storm ---
    /**
     * Block-explorer base URL per chain, for the links in alert messages (`{explorer.tx}`, …; paths
     * `/tx/<hash>`, `/block/<n>`, `/address/<a>`, `/token/<a>` as Etherscan and Blockscout use).
     * Env `CHAINSIFT_EXPLORER_URLS`: comma-separated `technology/blockchain/network=<base URL>`
     * entries, added to (or replacing) the defaults {@link DEFAULT_EXPLORER_URLS} (Etherscan for ethereum mainnet, sepolia, holesky, hoodi); an entry
     * with an empty URL (`ethereum/ethereum/mainnet=`) turns a chain's links off.
     * @throws {ConfigError} from {@link loadConfig} for an entry without `=` or a URL that is not http(s).
     */
    explorerUrls: Record<string, string>;
  } & IncidentApisConfig;
  /** pino level. Env `LOG_LEVEL`, default `info`. */
  logLevel: string;
  /**
   * How log lines are written to stdout. Env `LOG_FORMAT`: `json` (one pino JSON object per line,
   * for log collectors), `pretty` (human-readable lines by pino-pretty: time, level, message, fields)
   * or `auto` = default: `pretty` when stdout is a terminal (TTY), `json` otherwise.
   * @throws {ConfigError} from {@link loadConfig} for any other value.
   */
  logFormat: LogFormat;
}

/**
 * Reads the configuration from an environment (default `process.env`).
 * @throws {ConfigError} when a numeric variable is not a valid integer (or below its minimum), when
 *   `LOG_FORMAT` is not `auto`, `json` or `pretty`, when `CHAINSIFT_RPC_URLS` (or `CHAINSIFT_RPC_URL`) holds no http(s) URL, when `CHAINSIFT_EXPLORER_URLS` is malformed, or when `CHAINSIFT_API_HEADERS_TIMEOUT_MS` exceeds `CHAINSIFT_API_REQUEST_TIMEOUT_MS`;
 *   with `CHAINSIFT_CHAINS_FILE`: when the file is unreadable or invalid (variable
 *   `CHAINSIFT_CHAINS_FILE`, message `CHAINSIFT_CHAINS_FILE: <file>: CS_CHAINS_FILE_INVALID: <path>: <problem>…`,
 *   `cause` the {@link ChainsFileError}), when a per-chain variable ({@link PER_CHAIN_VARIABLES}) is
 *   also set, or when `CHAINSIFT_CHAIN` names a chain the file does not list.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const headersTimeoutMs = int(env, "CHAINSIFT_API_HEADERS_TIMEOUT_MS", 10_000, 1);
  const requestTimeoutMs = int(env, "CHAINSIFT_API_REQUEST_TIMEOUT_MS", 30_000, 1);
  if (headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError(
      "CHAINSIFT_API_HEADERS_TIMEOUT_MS",
      `must not exceed CHAINSIFT_API_REQUEST_TIMEOUT_MS (${requestTimeoutMs}), got ${headersTimeoutMs}`,
    );
  }
  const all = servedChains(env);
  const served = all[0] as ChainSettings;
  const { rpcUrls } = served;
  const explorerUrls = explorers(env, "CHAINSIFT_EXPLORER_URLS");
  for (const s of all) {
    if (s.explorerUrl === "") delete explorerUrls[chainKey(s.chain)];
    else if (s.explorerUrl !== undefined) explorerUrls[chainKey(s.chain)] = s.explorerUrl;
  }
  return {
    chain: served.chain,
    chainId: served.chainId,
    chainIdFrom: served.chainIdFrom,
    chainsFile: served.chainsFile,
    served: all,
    kafka: kafkaConfigOf(env),
    stateReads: stateReadsOf(env),
    watchlistCopies: watchlistCopiesOf(env),
    schemaRegistryUrl: str(env, "SCHEMA_REGISTRY_URL", "http://127.0.0.1:8081/apis/ccompat/v7"),
    elasticsearch: {
      url: str(env, "ELASTICSEARCH_URL", "http://127.0.0.1:9200"),
      indexPrefix: str(env, "CHAINSIFT_INDEX_PREFIX", ""),
      requestTimeoutMs: int(env, "ELASTICSEARCH_REQUEST_TIMEOUT_MS", 30_000, 1),
      tracing: bool(env, "CHAINSIFT_ES_TRACING", false),
      partitioning: partitioningOf(env),
    },
    redisUrl: str(env, "REDIS_URL", "redis://127.0.0.1:6379"),
    redisKeyPrefix: str(env, "CHAINSIFT_REDIS_PREFIX", "cs:"),
    api: {
      host: str(env, "CHAINSIFT_API_HOST", "127.0.0.1"),
      port: int(env, "CHAINSIFT_API_PORT", 8080),
      tokens: list(env, "CHAINSIFT_API_TOKENS", []),
      maxSize: int(env, "CHAINSIFT_MAX_SIZE", 10_000, 1),
      searchContextsMax: int(env, "CHAINSIFT_SEARCH_CONTEXTS_MAX", 20, 1),
      searchContextMaxKeepAliveMs: int(env, "CHAINSIFT_SEARCH_CONTEXT_MAX_KEEP_ALIVE_MS", 3_600_000, 1000),
      adminToken: env.CHAINSIFT_ADMIN_TOKEN || undefined,
      rateLimitMax: int(env, "CHAINSIFT_RATE_LIMIT_MAX", 600, 1),
      rateLimitWindowMs: int(env, "CHAINSIFT_RATE_LIMIT_WINDOW_MS", 60_000, 1),
      headersTimeoutMs,
      requestTimeoutMs,
      keepAliveTimeoutMs: int(env, "CHAINSIFT_API_KEEP_ALIVE_TIMEOUT_MS", 72_000, 1),
      connectionTimeoutMs: int(env, "CHAINSIFT_API_CONNECTION_TIMEOUT_MS", 120_000, 1),
      resultCache: resultCacheOf(env),
      readAhead: readAheadOf(env),
    },
    ingest: {
      rpcUrl: rpcUrls[0] as string,
      rpcUrls,
      rpc: {
        timeoutMs: int(env, "CHAINSIFT_RPC_TIMEOUT_MS", 10_000, 1),
        attempts: int(env, "CHAINSIFT_RPC_ATTEMPTS", 4, 1),
        retryBudgetMs: int(env, "CHAINSIFT_RPC_RETRY_BUDGET_MS", 30_000, 0),
        retryAfterMaxMs: int(env, "CHAINSIFT_RPC_RETRY_AFTER_MAX_MS", 30_000, 0),
        cooldownMs: int(env, "CHAINSIFT_RPC_COOLDOWN_MS", 2000, 0),
        maxLagBlocks: int(env, "CHAINSIFT_RPC_MAX_LAG_BLOCKS", 3, 0),
        hedgeAfterMs: int(env, "CHAINSIFT_RPC_HEDGE_AFTER_MS", 2000, 0),
        wsUrl: env.CHAINSIFT_RPC_WS_URL || undefined,
      },
      pollIntervalMs: int(env, "CHAINSIFT_POLL_INTERVAL_MS", 1000, 1),
      followWindow: int(env, "CHAINSIFT_FOLLOW_WINDOW", 16, 1),
      concurrency: served.concurrency,
      traces: served.traces,
      tracesRequired: served.tracesRequired,
      progressIntervalMs: int(env, "CHAINSIFT_PROGRESS_INTERVAL_MS", 5000, 1),
      testCrashPoint: env.CHAINSIFT_TEST_CRASH_POINT ? oneOf(env, "CHAINSIFT_TEST_CRASH_POINT", CRASH_POINTS, "produce-tip") : undefined,
      testCrashPercent: percent(env, "CHAINSIFT_TEST_CRASH_PERCENT", 100),
      testCrashSeed: int(env, "CHAINSIFT_TEST_CRASH_SEED", Math.floor(Math.random() * 2 ** 31)),
    },
    decode: {
      tokenCalls: served.tokenCalls,
      tokenList: served.tokenList,
      tokenNegativeTtlMs: int(env, "CHAINSIFT_DECODE_TOKEN_NEGATIVE_TTL_MS", 86_400_000, 1),
      signatures: bool(env, "CHAINSIFT_DECODE_SIGNATURES", true),
    },
    index: {
      bulkMaxDocs: int(env, "CHAINSIFT_BULK_MAX_DOCS", 2000, 1),
    },
    metrics: {
      host: str(env, "CHAINSIFT_METRICS_HOST", "127.0.0.1"),
      port: int(env, "CHAINSIFT_METRICS_PORT", 0, -1),
    },
    rules: {
      maxPerAccount: int(env, "CHAINSIFT_MAX_RULES_PER_ACCOUNT", 1000, 1),
    },
    backtest: {
      maxBlocks: int(env, "CHAINSIFT_BACKTEST_MAX_BLOCKS", 100_000, 1),
      timeoutMs: int(env, "CHAINSIFT_BACKTEST_TIMEOUT_MS", 30_000, 1),
    },
    abis: {
      maxPerAccount: int(env, "CHAINSIFT_ABI_MAX_PER_ACCOUNT", 100, 1),
      reloadIntervalMs: int(env, "CHAINSIFT_ABI_RELOAD_INTERVAL_MS", 30_000, 100),
      proxyTtlMs: int(env, "CHAINSIFT_ABI_PROXY_TTL_MS", 600_000),
      redecodeMaxLogs: int(env, "CHAINSIFT_ABI_REDECODE_MAX_LOGS", 100_000),
    },
    notify: {
      smtpUrl: env.CHAINSIFT_SMTP_URL || undefined,
      mailFrom: str(env, "CHAINSIFT_MAIL_FROM", "chainsift <alerts@chainsift.invalid>"),
      allowlist: list(env, "CHAINSIFT_NOTIFY_ALLOWLIST", []),
      timeoutMs: int(env, "CHAINSIFT_NOTIFY_TIMEOUT_MS", 10_000, 1),
      maxAttempts: int(env, "CHAINSIFT_NOTIFY_MAX_ATTEMPTS", 8, 1),
      baseDelayMs: int(env, "CHAINSIFT_NOTIFY_BASE_DELAY_MS", 500, 1),
      maxDelayMs: int(env, "CHAINSIFT_NOTIFY_MAX_DELAY_MS", 60_000, 1),
      retryWindowMs: int(env, "CHAINSIFT_NOTIFY_RETRY_WINDOW_MS", 0, 0),
      unhealthyAfter: int(env, "CHAINSIFT_NOTIFY_UNHEALTHY_AFTER", 3, 1),
      destinationConcurrency: int(env, "CHAINSIFT_NOTIFY_DESTINATION_CONCURRENCY", 4, 1),
      maxInFlight: int(env, "CHAINSIFT_NOTIFY_MAX_IN_FLIGHT", 64, 1),
      telegramBotToken: env.CHAINSIFT_TELEGRAM_BOT_TOKEN || undefined,
      telegramApiUrl: str(env, "CHAINSIFT_TELEGRAM_API_URL", "https://api.telegram.org").replace(/\/+$/, ""),
      slackBotToken: env.CHAINSIFT_SLACK_BOT_TOKEN || undefined,
      slackApiUrl: str(env, "CHAINSIFT_SLACK_API_URL", "https://slack.com/api").replace(/\/+$/, ""),
      ...incidentApisOf(env),
      explorerUrls,
    },
    logLevel: str(env, "LOG_LEVEL", "info"),
    logFormat: oneOf(env, "LOG_FORMAT", LOG_FORMATS, "auto"),
  };
}
