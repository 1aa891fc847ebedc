/**
 * Shared setup of the alerting-API end-to-end suites (`test/e2e/alerting-api/*.test.ts`): one
 * anvil chain (automine off) with the dev contracts deployed (ChainsiftTestToken: ERC-20 "CST",
 * 6 decimals; ChainsiftTestNFT: ERC-721 "CSNFT", both OpenZeppelin, compiled with solc-js), the
 * pipeline (ingest → Kafka → decode; no index stage), the match and notify stages, the real API
 * over HTTP (`startApi`, port 0) for rule management, two accounts created through the admin
 * endpoints, and local receivers on 127.0.0.1 (allowlisted): an HTTP webhook receiver, a
 * Slack-shaped receiver and an SMTP server (smtp-server, mails parsed with mailparser).
 *
 * Everything runs under the harness's unique topic, consumer-group, index and Redis prefixes;
 * `stop()` removes the topics and the Redis keys of the run. One environment per test file
 * (beforeAll): each file runs in its own process.
 * @module
 */
import { createHash } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { type Contract, ContractFactory, getAddress, hexlify, JsonRpcProvider, JsonRpcSigner, randomBytes, toQuantity } from "ethers";
import type { FastifyInstance } from "fastify";
import { simpleParser } from "mailparser";
import { createClient } from "redis";
import { SMTPServer } from "smtp-server";
import { startApi } from "../../../api/server.js";
import { type AnvilHandle, startAnvil } from "../../../cli/devchain/anvil.js";
import { compileDevContracts, type DevContracts } from "../../../cli/devchain/contracts.js";
import type { Config } from "../../../lib/config.js";
import { createLogger } from "../../../lib/logger.js";
import type { AlertDefinition, Rule, TargetDefinition, TargetType } from "../../../lib/rules/model.js";
import { createDecoder } from "../../../pipeline/decode/decoder.js";
import { lookupToken, type TokenInfo } from "../../../pipeline/decode/tokens.js";
import { type MatchStage, startMatchStage } from "../../../pipeline/match/stage.js";
import { rpcTokenMetadataSource } from "../../../pipeline/match/token-metadata.js";
import { createSecretStore, type SecretStore } from "../../../pipeline/notify/sign.js";
import { type NotifyStage, startNotifyStage } from "../../../pipeline/notify/stage.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { deletePrefix, redisUp } from "../../integration/accounts/redis.js";
import { createHarness, type Harness, servicesUp, skipMessage, waitFor } from "../../support/harness.js";

/** Which services are missing (Kafka, schema registry, Elasticsearch from the harness probe, plus Redis). */
export async function probeServices(): Promise<{ ok: boolean; message: string }> {
  const up = await servicesUp();
  const missing = [...up.missing];
  if (!(await redisUp(createHarness().config.redisUrl))) missing.push("redis");
  return { ok: missing.length === 0, message: missing.length === 0 ? "" : skipMessage(missing) };
}

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

async function startReceiver(okBody: string): Promise<Receiver> {
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

/** One mail received by the local SMTP server, parsed. */
export interface ReceivedMail {
  envelopeFrom: string;
  envelopeTo: string[];
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  headers: Map<string, unknown>;
  messageId: string | undefined;
}

async function startSmtp(): Promise<{ url: string; mails: ReceivedMail[]; close(): Promise<void> }> {
  const mails: ReceivedMail[] = [];
  const server = new SMTPServer({
    secure: false,
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      simpleParser(stream)
        .then((m) => {
          mails.push({
            envelopeFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            envelopeTo: session.envelope.rcptTo.map((r) => r.address),
            from: m.from?.text ?? "",
            to: Array.isArray(m.to) ? m.to.map((t) => t.text).join(", ") : (m.to?.text ?? ""),
            subject: m.subject ?? "",
            text: m.text ?? "",
            html: typeof m.html === "string" ? m.html : "",
            headers: m.headers as Map<string, unknown>,
            messageId: m.messageId,
          });
          callback();
        })
        .catch(callback);
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  return { url: `smtp://127.0.0.1:${port}`, mails, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** An account created through the admin endpoints, with its bearer token. */
export interface TestAccount {
  id: string;
  token: string;
}

/** Answer of {@link AlertingEnv.request}. */
export interface ApiAnswer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

/** What a test gives {@link AlertingEnv.createRule}: the rule body minus the chain, with defaults. */
export interface RuleSpec {
  name: string;
  targetType: TargetType;
  targetMap: TargetDefinition[];
  alerts: AlertDefinition[];
  /** Default 0 (alerts at first sight). */
  maxConfirmationCount?: number;
  sendPendingAlerts?: boolean;
  description?: string | null;
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
}

/** A running end-to-end environment. */
export interface AlertingEnv {
  h: Harness;
  config: Config;
  /** The API's base URL, e.g. `http://127.0.0.1:41234`. */
  apiUrl: string;
  api: FastifyInstance;
  adminToken: string;
  /** Two accounts created with `POST /admin/accounts/` and `POST /admin/accounts/:id/tokens/`. */
  accounts: { a: TestAccount; b: TestAccount };
  anvil: AnvilHandle;
  provider: JsonRpcProvider;
  /** anvil's first dev account: owner of the token and the NFT, sender of `transfer`. */
  deployer: JsonRpcSigner;
  contracts: DevContracts;
  /** The ERC-20 (CST, 6 decimals) deployed at start; the deployer holds 1,000,000 CST. */
  token: Contract;
  /** EIP-55 address of {@link token}. */
  tokenAddress: string;
  /** The ERC-721 (CSNFT) deployed at start. */
  nft: Contract;
  nftAddress: string;
  pipeline: Pipeline;
  match: MatchStage;
  notify: NotifyStage;
  /** Signing secrets on the same Redis and prefix as the notify stage. */
  secrets: SecretStore;
  http: Receiver;
  slack: Receiver;
  smtp: { url: string; mails: ReceivedMail[] };
  /** Decimals the decoder knows per lower-case token address (for `scaled`); tests may add tokens. */
  knownTokens: Map<string, TokenInfo>;

  /** An HTTP request to the API with `Authorization: Bearer <token>`; JSON body in and out. */
  request<T = unknown>(method: string, path: string, token: string | null, body?: unknown): Promise<ApiAnswer<T>>;
  /** `POST /alerting/rules/` (asserts 201 and the Location header), then waits until the match stage holds the rule. */
  createRule(token: string, spec: RuleSpec): Promise<Rule>;
  /** Waits until the match stage's index holds every rule id. */
  waitActive(ids: string[]): Promise<void>;
  /** Mines `n` blocks. */
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
  /** Parsed POST bodies delivered (2xx) at `/hook/<label>`. */
  alertsAt(label: string): WebhookAlert[];
  /** Waits until `/hook/<label>` got at least `n` delivered POST alerts, and returns them. */
  waitAlerts(label: string, n: number, timeoutMs?: number): Promise<WebhookAlert[]>;
  stop(): Promise<void>;
}

/** Options of {@link startAlertingEnv}. */
export interface AlertingEnvOptions {
  /** Overrides of `config.notify` (allowlist, smtpUrl and mailFrom are set by the environment). */
  notify?: Partial<Config["notify"]>;
}

/** The alert id the match stage gives a match: hex SHA-256 of `ruleId|entityId|blockHash|status` (docs/alerting-delivery.md). */
export function alertId(ruleId: string, entityId: string, blockHash: string, status = "confirmed"): string {
  return createHash("sha256").update(`${ruleId}|${entityId}|${blockHash}|${status}`).digest("hex");
}

/** Mail `From:` of the environment; its domain is the `Message-ID` domain of alert e-mails. */
export const MAIL_FROM = "chainsift <alerts@chainsift.test>";

/** Starts the whole environment (about 5 s: anvil, solc, Kafka consumer groups); `stop()` takes about 5 s more. */
export async function startAlertingEnv(options: AlertingEnvOptions = {}): Promise<AlertingEnv> {
  const closers: Array<() => Promise<unknown>> = [];
  const h = createHarness();
  closers.push(async () => {
    await h.cleanup();
    await deletePrefix(h.config.redisUrl, h.redisPrefix).catch(() => 0);
  });
  const stop = async () => {
    for (const close of closers.reverse()) await close().catch(() => {});
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
  options: AlertingEnvOptions,
): Promise<AlertingEnv> {
  const [http, slack, smtp] = await Promise.all([startReceiver("ok"), startReceiver("ok"), startSmtp()]);
  closers.push(http.close, slack.close, smtp.close);

  h.config.chain = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
  h.config.api = { ...h.config.api, rateLimitMax: 1_000_000 };
  h.config.notify = {
    ...h.config.notify,
    timeoutMs: 3000,
    maxAttempts: 3,
    baseDelayMs: 20,
    maxDelayMs: 100,
    ...options.notify,
    allowlist: ["127.0.0.1"],
    smtpUrl: smtp.url,
    mailFrom: MAIL_FROM,
  };
  // Trace and Call entities need call traces, which the ingester fetches only when asked to
  // (`CHAINSIFT_INGEST_TRACES`, default off). Keep them off whatever the environment says: the
  // suites document that Trace and Call rules do not fire in this pipeline configuration.
  (h.config.ingest as unknown as Record<string, unknown>).traces = false;
  const config = h.config;
  // Retries and dead letters are expected here: keep the stages' warnings out of the test output.
  const logger = createLogger(process.env.LOG_LEVEL ?? "error", `test-${h.id}`);

  const anvil = await startAnvil({ blockTimeSec: 0 });
  closers.push(() => anvil.stop());
  const provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1, pollingInterval: 100 });
  closers.push(async () => provider.destroy());
  const rpc = (method: string, params: unknown[] = []) => provider.send(method, params) as Promise<unknown>;
  const mine = async (n = 1) => {
    await rpc("anvil_mine", [toQuantity(n)]);
  };

  const [accounts, contracts] = await Promise.all([rpc("eth_accounts") as Promise<string[]>, compileDevContracts()]);
  const deployer = new JsonRpcSigner(provider, getAddress(accounts[0]!));
  // Deploy both contracts and mint while automine is on (one block each), then switch it off.
  const token = (await (
    await new ContractFactory(contracts.token.abi, contracts.token.bytecode, deployer).deploy(deployer.address)
  ).waitForDeployment()) as unknown as Contract;
  const nft = (await (
    await new ContractFactory(contracts.nft.abi, contracts.nft.bytecode, deployer).deploy(deployer.address)
  ).waitForDeployment()) as unknown as Contract;
  const tokenAddress = getAddress(await token.getAddress());
  const nftAddress = getAddress(await nft.getAddress());
  await (await token.getFunction("mint")(deployer.address, 10n ** 12n)).wait();
  await rpc("evm_setAutomine", [false]);

  const knownTokens = new Map<string, TokenInfo>([[tokenAddress.toLowerCase(), { symbol: "CST", decimals: 6 }]]);
  const decoder = createDecoder({ chainId: anvil.chainId, tokens: (a, c) => knownTokens.get(a) ?? lookupToken(a, c) });
  const pipeline = await startPipeline({ config, logger, es: h.es, decoder, stages: ["decode"] });
  // Each Kafka consumer's disconnect waits for its pending fetch (up to ~5 s): stop them together.
  const services: Array<() => Promise<unknown>> = [() => pipeline.stop()];
  closers.push(() => Promise.allSettled(services.map((stopOne) => stopOne())));

  const secretsRedis = createClient({ url: config.redisUrl });
  secretsRedis.on("error", () => {});
  await secretsRedis.connect();
  closers.push(() => secretsRedis.close());
  const secrets = createSecretStore({ redis: secretsRedis, keyPrefix: config.redisKeyPrefix });

  const started = await Promise.allSettled([
    startMatchStage({ bus: pipeline.bus, config, logger, tokens: rpcTokenMetadataSource(provider), reloadIntervalMs: 1000 }),
    startNotifyStage({ bus: pipeline.bus, config, logger }),
    startApi({ config, es: h.es, logger: false }),
  ] as const);
  const [matchStarted, notifyStarted, apiStarted] = started;
  if (matchStarted.status === "fulfilled") services.push(() => matchStarted.value.stop());
  if (notifyStarted.status === "fulfilled") services.push(() => notifyStarted.value.stop());
  if (apiStarted.status === "fulfilled") services.push(() => apiStarted.value.app.close());
  for (const s of started) if (s.status === "rejected") throw s.reason;
  const match = (matchStarted as PromiseFulfilledResult<MatchStage>).value;
  const notify = (notifyStarted as PromiseFulfilledResult<NotifyStage>).value;
  const running = (apiStarted as PromiseFulfilledResult<Awaited<ReturnType<typeof startApi>>>).value;

  const controller = new AbortController();
  const ingest = await pipeline.createIngester(anvil.rpcUrl);
  const following = ingest.ingester.follow({ from: 0, pollIntervalMs: 100, signal: controller.signal });
  closers.push(async () => {
    controller.abort();
    await following.catch(() => {});
    await ingest.close();
  });

  const adminToken = config.api.adminToken!;
  const request = async <T>(method: string, path: string, token: string | null, body?: unknown): Promise<ApiAnswer<T>> => {
    const headers: Record<string, string> = {};
    if (token !== null) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${running.url}${path}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await res.text();
    const type = res.headers.get("content-type") ?? "";
    return { status: res.status, headers: res.headers, body: (text !== "" && type.includes("json") ? JSON.parse(text) : text) as T };
  };

  const makeAccount = async (name: string): Promise<TestAccount> => {
    const acc = await request<{ id: string }>("POST", "/admin/accounts/", adminToken, { name, email: `${name}@example.test` });
    if (acc.status !== 201) throw new Error(`account creation answered ${acc.status}: ${JSON.stringify(acc.body)}`);
    const tok = await request<{ token: string }>("POST", `/admin/accounts/${acc.body.id}/tokens/`, adminToken, { name: "e2e" });
    if (tok.status !== 201) throw new Error(`token issue answered ${tok.status}: ${JSON.stringify(tok.body)}`);
    return { id: acc.body.id, token: tok.body.token };
  };
  const [a, b] = await Promise.all([makeAccount("alice"), makeAccount("bob")]);

  const waitActive = async (ids: string[]) => {
    await waitFor(async () => ids.every((id) => match.index.get(id) !== undefined), 15_000, 25);
  };

  const createRule = async (token: string, spec: RuleSpec): Promise<Rule> => {
    const body = {
      name: spec.name,
      description: spec.description ?? null,
      maxConfirmationCount: spec.maxConfirmationCount ?? 0,
      sendPendingAlerts: spec.sendPendingAlerts ?? false,
      state: "enabled",
      ...config.chain,
      config: { targetType: spec.targetType, targetMap: spec.targetMap, alerts: spec.alerts },
    };
    const res = await request<Rule>("POST", "/alerting/rules/", token, body);
    if (res.status !== 201) throw new Error(`POST /alerting/rules/ (${spec.name}) answered ${res.status}: ${JSON.stringify(res.body)}`);
    if (res.headers.get("location") !== `/alerting/rules/${res.body.id}/`)
      throw new Error(`unexpected Location ${res.headers.get("location")}`);
    await waitActive([res.body.id]);
    return res.body;
  };

  const hook = (label: string) => `${http.base}/hook/${label}`;
  const alertsAt = (label: string) =>
    http
      .deliveredAt(`/hook/${label}`)
      .filter((r) => r.method === "POST")
      .map((r) => JSON.parse(r.body) as WebhookAlert);

  return {
    h,
    config,
    apiUrl: running.url,
    api: running.app,
    adminToken,
    accounts: { a, b },
    anvil,
    provider,
    deployer,
    contracts,
    token,
    tokenAddress,
    nft,
    nftAddress,
    pipeline,
    match,
    notify,
    secrets,
    http,
    slack,
    smtp,
    knownTokens,
    request,
    createRule,
    waitActive,
    mine,
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
    stop,
  };
}
