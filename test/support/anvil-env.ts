/**
 * The alerting end-to-end environment on a real EVM node, shared by the e2e suites
 * (`test/e2e/alerting.test.ts`, `test/e2e/match-restart.test.ts`, `test/e2e/alerting-api/`): anvil
 * (the `@foundry-rs/anvil` npm package, automine off once set up) with the dev contracts deployed
 * (ChainsiftTestToken: ERC-20 "CST", 6 decimals, the first dev account holds 1,000,000 CST;
 * optionally ChainsiftTestNFT, ERC-721 "CSNFT"), the pipeline (ingest following the head → Kafka →
 * decode; no index stage), the real rule store, the match and notify stages, and a local webhook
 * receiver on 127.0.0.1 (allowlisted), plus helpers that make traffic on the chain.
 *
 * Everything runs under a fresh {@link createHarness} (its own topic, consumer-group, index and
 * Redis key prefixes); `stop()` stops what was started, in reverse order, removes the run's topics
 * and indices and deletes its Redis keys.
 * @module
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Contract, ContractFactory, getAddress, hexlify, JsonRpcProvider, JsonRpcSigner, randomBytes, toQuantity } from "ethers";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { compileDevContracts, type DevContracts } from "../../cli/devchain/contracts.js";
import { lookupToken, type TokenInfo } from "../../lib/chain/tokens.js";
import type { Config } from "../../lib/config/index.js";
import { createLogger, type Logger } from "../../lib/logger.js";
import { connectRuleStore, type RuleStore } from "../../lib/rules/store.js";
import { createDecoder, type Decoder } from "../../pipeline/decode/decoder.js";
import { type MatchStage, type MatchStageDeps, startMatchStage } from "../../pipeline/match/stage.js";
import { type NotifyStage, startNotifyStage } from "../../pipeline/notify/stage.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { deletePrefix } from "../integration/accounts/redis.js";
import { createHarness, type Harness, waitFor } from "./harness.js";

/** One request seen by a local HTTP receiver. */
export interface Recorded {
  method: string;
  /** Request target as sent (path + query): what a GET signature covers. */
  url: string;
  /** `url` without the query. */
  path: string;
  headers: IncomingHttpHeaders;
  /** Raw body (UTF-8). */
  body: string;
  /** Status the receiver answered. */
  status: number;
}

/** A local HTTP receiver (webhooks or Slack-shaped). */
export interface Receiver {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** Every request, in arrival order. */
  requests: Recorded[];
  /**
   * Decides the status of each request (default: 200). Called before the request is recorded,
   * with everything but `status`.
   */
  respond: (req: Omit<Recorded, "status">) => number;
  /** Requests to `path` (query ignored). */
  at(path: string): Recorded[];
  /** Requests to `path` answered with 2xx. */
  deliveredAt(path: string): Recorded[];
  close(): Promise<void>;
}

/** Starts a local HTTP receiver on 127.0.0.1 (a free port) that answers `okBody` to the requests it answers with 2xx. */
export async function startReceiver(okBody = "ok"): Promise<Receiver> {
  const requests: Recorded[] = [];
  const receiver: Receiver = {
    base: "",
    requests,
    respond: () => 200,
    at: (path) => requests.filter((r) => r.path === path),
    deliveredAt: (path) => requests.filter((r) => r.path === path && r.status >= 200 && r.status < 300),
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = req.url ?? "";
      const seen = {
        method: req.method ?? "",
        url,
        path: url.split("?")[0]!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      let status = 500;
      try {
        status = receiver.respond(seen);
      } finally {
        requests.push({ ...seen, status });
        res.writeHead(status, { "content-type": "text/plain" }).end(status >= 200 && status < 300 ? okBody : "unavailable");
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** The parts of the POST webhook body the tests read (docs/alerting-delivery.md). */
export interface WebhookAlert {
  id: string;
  ruleId: string;
  ruleVersion: number;
  sequence: number;
  status: "pending" | "confirmed" | "removed";
  confirmations: number;
  maxConfirmationCount: number;
  chain: { technology: string; blockchain: string; network: string };
  targetType: string;
  entityId: string;
  blockHash: string;
  blockNumber: number;
  payload: Record<string, unknown>;
  emittedAt: string;
  /** Only on `removed` alerts: the block that replaced `blockHash` at its height (hash null: none yet). */
  replacedBy?: { number: number; hash: string | null };
}

/** Match stage settings a suite chooses (bus, config, logger and the rule store come from the environment). */
export type MatchSettings = Partial<Omit<MatchStageDeps, "bus" | "config" | "logger" | "rules">>;

/** Options of {@link startAnvilEnv}. */
export interface AnvilEnvOptions {
  /** Whether the ingester fetches call traces (needed by Trace and Call rules); also written to `config.ingest.traces`. */
  traces: boolean;
  /** Also deploy the ERC-721 (after the ERC-20, before the mint). Default false. */
  nft?: boolean;
  /** Also run the index stage (refreshing after each bulk), so records are searchable. Default false. */
  index?: boolean;
  /** Overrides of `config.notify` over 3 attempts and a 20–100 ms back-off; `allowlist` is always `127.0.0.1`. */
  notify?: Partial<Config["notify"]>;
  /** Level of the stages' logger when `LOG_LEVEL` is unset. Default: the harness's logger. */
  logLevel?: string;
  /**
   * Runs first, once the config is set and before anvil starts: local services the config must
   * point to (written into `h.config`). Their teardown goes to `onStop` (run after the stages stop).
   */
  prepare?: (h: Harness, onStop: (close: () => Promise<unknown>) => void) => Promise<void>;
  /**
   * Runs once the contracts are deployed and the decode pipeline and the rule store are up, before
   * the match and notify stages start and before ingest follows the chain from block 0: rules that
   * must exist from the first block on, watchers on topics.
   */
  beforeStages?: (env: AnvilEnvBase) => Promise<void>;
  /** The match stage's settings, used by every start of it ({@link AnvilEnv.startMatch} too). Default: none. */
  match?: (env: AnvilEnvBase) => MatchSettings;
  /**
   * Run in this harness (its topic, index and Redis prefixes; several environments share one ES,
   * Kafka and Redis namespace that way, one per chain). Its `config` is copied, not changed; the
   * caller cleans it up. Default: a fresh harness, cleaned up by `stop()`.
   */
  harness?: Harness;
  /** The chain's path segments (`config.chain`). Default `ethereum/ethereum/anvil`. */
  chain?: Config["chain"];
  /** anvil's chain id (`eth_chainId`). Default 31337. */
  chainId?: number;
}

/** What {@link startAnvilEnv} has set up before the match and notify stages start. */
export interface AnvilEnvBase {
  h: Harness;
  /** `h.config`, with the anvil chain and the notify settings of the run. */
  config: Config;
  /** Logger of the stages. */
  logger: Logger;
  anvil: AnvilHandle;
  provider: JsonRpcProvider;
  /** anvil's dev accounts, as `eth_accounts` lists them; the first is {@link deployer}. */
  devAccounts: string[];
  /** anvil's first dev account: owner of the contracts, sender of `transfer` and `mint`. */
  deployer: JsonRpcSigner;
  contracts: DevContracts;
  /** The ERC-20 (CST, 6 decimals) deployed at start; the deployer holds 1,000,000 CST. */
  token: Contract;
  /** EIP-55 address of {@link token}. */
  tokenAddress: string;
  /** The ERC-721 (CSNFT), when deployed (option `nft`). */
  nft: Contract | undefined;
  /** EIP-55 address of {@link nft}. */
  nftAddress: string | undefined;
  /** Decimals the decoder knows per lower-case token address (for `scaled`); tests may add tokens. */
  knownTokens: Map<string, TokenInfo>;
  /** The decode stage's decoder (chain id {@link anvil}'s; e.g. for test/support/canonical.ts `compareWithChain`). */
  decoder: Decoder;
  /** The decode pipeline (its bus is the match and notify stages' bus). */
  pipeline: Pipeline;
  /** The rule store the match stage reads (same Redis and prefix as the API's). */
  rules: RuleStore;
  /** The webhook receiver; {@link hook} gives URLs on it. */
  http: Receiver;
  /** A raw JSON-RPC call to anvil. */
  rpc(method: string, params?: unknown[]): Promise<unknown>;
  /** Mines `n` blocks (default 1). */
  mine(n?: number): Promise<void>;
  /** A fresh random address (EIP-55). */
  newAddress(): string;
  /** An impersonated sender (anvil_impersonateAccount) with `eth` ETH, signing through anvil. */
  newSender(eth?: bigint): Promise<JsonRpcSigner>;
  /** Sends `token.transfer(to, amount)` from `from` (default the deployer), not mined yet; returns the tx hash. */
  transfer(to: string, amount: bigint, from?: JsonRpcSigner): Promise<string>;
  /** Sends `token.mint(to, amount)` from the deployer, not mined yet; returns the tx hash. */
  mint(to: string, amount: bigint): Promise<string>;
  /** Where the (first) log of a mined transaction landed: Event entity id, block hash and number. */
  eventOf(txHash: string): Promise<{ entityId: string; blockHash: string; blockNumber: number }>;
  /** URL of the webhook receiver for a label: `<base>/hook/<label>`. */
  hook(label: string): string;
  /** Parsed POST bodies delivered (2xx) at `/hook/<label>`, in arrival order. */
  alertsAt(label: string): WebhookAlert[];
  /** Waits until `/hook/<label>` got at least `n` delivered POST alerts, and returns them. */
  waitAlerts(label: string, n: number, timeoutMs?: number): Promise<WebhookAlert[]>;
  /** Adds a teardown step to `stop()`; steps run last registered first. */
  onStop(close: () => Promise<unknown>): void;
}

/** A running environment ({@link startAnvilEnv}). */
export interface AnvilEnv extends AnvilEnvBase {
  /** The running match stage. @throws while it is stopped ({@link stopMatch} without a new {@link startMatch}). */
  readonly match: MatchStage;
  notify: NotifyStage;
  /** Starts a new match stage instance with the same settings (same consumer group and Redis prefix). @throws when one is running. */
  startMatch(): Promise<MatchStage>;
  /**
   * Stops the running match stage. Its `stop()` is called before this returns (what the caller
   * does next happens while the stage is stopping). @throws (rejects) when none is running.
   */
  stopMatch(): Promise<void>;
  /** Waits until the match stage's index holds every rule id. */
  waitActive(ids: string[]): Promise<void>;
  /** Stops everything and removes the run's topics, indices and Redis keys. Never rejects. */
  stop(): Promise<void>;
}

/** Starts the environment (a few seconds: anvil, solc, Kafka consumer groups); on failure, what started is stopped. */
export async function startAnvilEnv(options: AnvilEnvOptions): Promise<AnvilEnv> {
  const closers: Array<() => Promise<unknown>> = [];
  const h = options.harness ? { ...options.harness, config: { ...options.harness.config } } : createHarness();
  if (!options.harness) {
    closers.push(async () => {
      await h.cleanup();
      await deletePrefix(h.config.redisUrl, h.redisPrefix).catch(() => 0);
    });
  }
  const stop = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => {});
  };
  try {
    return await start(h, closers, stop, options);
  } catch (err) {
    await stop();
    throw err;
  }
}

async function start(
  h: Harness,
  closers: Array<() => Promise<unknown>>,
  stop: () => Promise<void>,
  options: AnvilEnvOptions,
): Promise<AnvilEnv> {
  const onStop = (close: () => Promise<unknown>) => {
    closers.push(close);
  };
  const config = h.config;
  config.chain = options.chain ?? { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
  config.notify = { ...config.notify, maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 100, ...options.notify, allowlist: ["127.0.0.1"] };
  config.ingest = { ...config.ingest, traces: options.traces };
  const logger = options.logLevel === undefined ? h.logger : createLogger(process.env.LOG_LEVEL ?? options.logLevel, `test-${h.id}`);
  await options.prepare?.(h, onStop);

  const http = await startReceiver("ok");
  onStop(http.close);

  const anvil = await startAnvil({ blockTimeSec: 0, ...(options.chainId === undefined ? {} : { chainId: options.chainId }) });
  onStop(() => anvil.stop());
  // The chain context's one JSON-RPC client serves this anvil: the decode stage reads token metadata
  // and proxies' implementation slots (user ABIs) through it.
  config.ingest = { ...config.ingest, rpcUrl: anvil.rpcUrl, rpcUrls: [anvil.rpcUrl] };
  const provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1, pollingInterval: 100 });
  onStop(async () => provider.destroy());
  const rpc = (method: string, params: unknown[] = []) => provider.send(method, params) as Promise<unknown>;

  const [devAccounts, contracts] = await Promise.all([rpc("eth_accounts") as Promise<string[]>, compileDevContracts()]);
  const deployer = new JsonRpcSigner(provider, getAddress(devAccounts[0]!));
  // Deploy and mint while automine is on (one block each), then switch it off.
  const deploy = async (c: DevContracts["token"]) =>
    (await (await new ContractFactory(c.abi, c.bytecode, deployer).deploy(deployer.address)).waitForDeployment()) as unknown as Contract;
  const token = await deploy(contracts.token);
  const nft = options.nft ? await deploy(contracts.nft) : undefined;
  const tokenAddress = getAddress(await token.getAddress());
  const nftAddress = nft ? getAddress(await nft.getAddress()) : undefined;
  await (await token.getFunction("mint")(deployer.address, 10n ** 12n)).wait();
  await rpc("evm_setAutomine", [false]);

  const knownTokens = new Map<string, TokenInfo>([[tokenAddress.toLowerCase(), { symbol: "CST", decimals: 6 }]]);
  const decoder = createDecoder({ chainId: anvil.chainId, tokens: (a, c) => knownTokens.get(a) ?? lookupToken(a, c) });
  // Closed after the stages (teardown runs last registered first): the match stage reads this store.
  const connected = await connectRuleStore(config);
  onStop(() => connected.close());
  const pipeline = await startPipeline({
    config,
    logger,
    es: h.es,
    decoder,
    stages: options.index ? ["decode", "index"] : ["decode"],
    refresh: options.index === true,
  });
  const services: Array<() => Promise<unknown>> = [() => pipeline.stop()];
  // Each Kafka consumer's disconnect waits for its pending fetch (up to ~5 s): stop them together.
  onStop(() => Promise.allSettled(services.map((stopOne) => stopOne())));

  const hook = (label: string) => `${http.base}/hook/${label}`;
  const alertsAt = (label: string) =>
    http
      .deliveredAt(`/hook/${label}`)
      .filter((r) => r.method === "POST")
      .map((r) => JSON.parse(r.body) as WebhookAlert);

  const base: AnvilEnvBase = {
    h,
    config,
    logger,
    anvil,
    provider,
    devAccounts,
    deployer,
    contracts,
    token,
    tokenAddress,
    nft,
    nftAddress,
    knownTokens,
    decoder,
    pipeline,
    rules: connected.store,
    http,
    rpc,
    async mine(n = 1) {
      await rpc("anvil_mine", [toQuantity(n)]);
    },
    newAddress: () => getAddress(hexlify(randomBytes(20))),
    async newSender(eth = 10n ** 19n) {
      const address = getAddress(hexlify(randomBytes(20)));
      await rpc("anvil_impersonateAccount", [address]);
      await rpc("anvil_setBalance", [address, toQuantity(eth)]);
      return new JsonRpcSigner(provider, address);
    },
    async transfer(to, amount, from = deployer) {
      const tx = await (token.connect(from) as Contract).getFunction("transfer")(to, amount);
      return tx.hash as string;
    },
    async mint(to, amount) {
      const tx = await token.getFunction("mint")(to, amount);
      return tx.hash as string;
    },
    async eventOf(txHash) {
      const receipt = await provider.getTransactionReceipt(txHash);
      const log = receipt?.logs[0];
      if (!receipt || !log) throw new Error(`transaction ${txHash} is not mined or emitted no log`);
      return { entityId: `${txHash}_e_${log.index}`, blockHash: receipt.blockHash, blockNumber: receipt.blockNumber };
    },
    hook,
    alertsAt,
    async waitAlerts(label, n, timeoutMs = 30_000) {
      return waitFor(async () => {
        const got = alertsAt(label);
        return got.length >= n ? got : undefined;
      }, timeoutMs);
    },
    onStop,
  };
  await options.beforeStages?.(base);

  const matchDeps: MatchStageDeps = {
    bus: pipeline.bus,
    config,
    logger,
    rules: connected.store,
    decode: { chainId: anvil.chainId },
    ...options.match?.(base),
  };
  let match: MatchStage | undefined;
  const startMatch = async () => {
    if (match) throw new Error("a match stage is already running");
    match = await startMatchStage(matchDeps);
    return match;
  };
  const stopMatch = async () => {
    const running = match;
    if (!running) throw new Error("no match stage is running");
    match = undefined;
    await running.stop();
  };
  services.push(async () => match && stopMatch());
  const [matchStarted, notifyStarted] = await Promise.allSettled([startMatch(), startNotifyStage({ bus: pipeline.bus, config, logger })]);
  if (notifyStarted.status === "fulfilled") services.push(() => notifyStarted.value.stop());
  for (const s of [matchStarted, notifyStarted]) if (s.status === "rejected") throw s.reason;
  const notify = (notifyStarted as PromiseFulfilledResult<NotifyStage>).value;

  const controller = new AbortController();
  const ingest = await pipeline.createIngester(anvil.rpcUrl, { traces: options.traces });
  const following = ingest.ingester.follow({ from: 0, pollIntervalMs: 100, signal: controller.signal });
  onStop(async () => {
    controller.abort();
    await following.catch(() => {});
    await ingest.close();
  });

  return {
    ...base,
    get match() {
      if (!match) throw new Error("the match stage is stopped");
      return match;
    },
    notify,
    startMatch,
    stopMatch,
    async waitActive(ids) {
      await waitFor(async () => ids.every((id) => match?.index.get(id) !== undefined), 15_000, 25);
    },
    stop,
  };
}
