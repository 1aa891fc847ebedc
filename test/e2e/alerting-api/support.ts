/**
 * Shared setup of the alerting-API end-to-end suites (`test/e2e/alerting-api/*.test.ts`): the
 * anvil environment of `test/support/anvil-env.ts` (anvil with automine off, ChainsiftTestToken
 * and ChainsiftTestNFT deployed, ingest → Kafka → decode, the match and notify stages, a webhook
 * receiver), plus the real API over HTTP (`startApi`, port 0) for rule management, two accounts
 * created through the admin endpoints, and more local receivers on 127.0.0.1 (allowlisted): a
 * Slack-shaped receiver and an SMTP server (smtp-server, mails parsed with mailparser).
 *
 * Everything runs under the harness's unique topic, consumer-group, index and Redis prefixes;
 * `stop()` removes the topics and the Redis keys of the run. One environment per test file
 * (beforeAll): each file runs in its own process.
 * @module
 */
import { createHash } from "node:crypto";
import type { Contract } from "ethers";
import type { FastifyInstance } from "fastify";
import { createClient } from "redis";
import { startApi } from "../../../api/server.js";
import type { Config } from "../../../lib/config/index.js";
import type { AlertDefinition, Rule, TargetDefinition, TargetType } from "../../../lib/rules/model.js";
import { rpcTokenMetadataSource } from "../../../pipeline/match/token-metadata.js";
import { createSecretStore, type SecretStore } from "../../../pipeline/notify/sign.js";
import { redisUp } from "../../integration/accounts/redis.js";
import { type AnvilEnv, type Receiver, startAnvilEnv, startReceiver } from "../../support/anvil-env.js";
import { createHarness, servicesUp, skipMessage } from "../../support/harness.js";
import { transferTo } from "../../support/rules.js";
import { type ReceivedMail, type SmtpReceiver, startSmtpReceiver } from "../../support/smtp.js";

export type { Receiver, Recorded, WebhookAlert } from "../../support/anvil-env.js";
export type { ReceivedMail } from "../../support/smtp.js";

/** Which services are missing (Kafka, schema registry, Elasticsearch from the harness probe, plus Redis). */
export async function probeServices(): Promise<{ ok: boolean; message: string }> {
  const up = await servicesUp();
  const missing = [...up.missing];
  if (!(await redisUp(createHarness().config.redisUrl))) missing.push("redis");
  return { ok: missing.length === 0, message: missing.length === 0 ? "" : skipMessage(missing) };
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

/** A running end-to-end environment: the anvil environment plus the API, its accounts and the extra receivers. */
export interface AlertingEnv extends AnvilEnv {
  /** The API's base URL, e.g. `http://127.0.0.1:41234`. */
  apiUrl: string;
  api: FastifyInstance;
  adminToken: string;
  /** Two accounts created with `POST /admin/accounts/` and `POST /admin/accounts/:id/tokens/`. */
  accounts: { a: TestAccount; b: TestAccount };
  /** The ERC-721 (CSNFT) deployed at start. */
  nft: Contract;
  nftAddress: string;
  /** Signing secrets on the same Redis and prefix as the notify stage. */
  secrets: SecretStore;
  slack: Receiver;
  smtp: { url: string; mails: ReceivedMail[] };

  /** An HTTP request to the API with `Authorization: Bearer <token>`; JSON body in and out. */
  request<T = unknown>(method: string, path: string, token: string | null, body?: unknown): Promise<ApiAnswer<T>>;
  /** `POST /alerting/rules/` (asserts 201 and the Location header), then waits until the match stage holds the rule. */
  createRule(token: string, spec: RuleSpec): Promise<Rule>;
}

/** Options of {@link startAlertingEnv}. */
export interface AlertingEnvOptions {
  /** Overrides of `config.notify` (allowlist, smtpUrl and mailFrom are set by the environment). */
  notify?: Partial<Config["notify"]>;
  /** Also run the index stage, so the API's search routes find the records (`startAnvilEnv`'s `index`). Default false. */
  index?: boolean;
}

/**
 * The target part of a {@link RuleSpec}: an Event rule named `name` on the ERC-20 Transfer events
 * to `to` (compared with `operator`, default `Equals (ignore case)`); spread it and add the alerts.
 */
export function transferRule(
  name: string,
  to: string,
  operator: Parameters<typeof transferTo>[1] = "Equals (ignore case)",
): Pick<RuleSpec, "name" | "targetType" | "targetMap"> {
  return { name, targetType: "Event", targetMap: transferTo(to, operator) };
}

/** The alert id the match stage gives a match: hex SHA-256 of `ruleId|entityId|blockHash|status` (docs/alerting-delivery.md). */
export function alertId(ruleId: string, entityId: string, blockHash: string, status = "confirmed"): string {
  return createHash("sha256").update(`${ruleId}|${entityId}|${blockHash}|${status}`).digest("hex");
}

/** The operator's Telegram bot token of the environment (its Bot API is the Slack-shaped receiver). */
export const TELEGRAM_BOT_TOKEN = "123456789:AAE2e-Test_token";

/** Mail `From:` of the environment; its domain is the `Message-ID` domain of alert e-mails. */
export const MAIL_FROM = "chainsift <alerts@chainsift.test>";

/** Starts the whole environment (about 5 s: anvil, solc, Kafka consumer groups); `stop()` takes about 5 s more. */
export async function startAlertingEnv(options: AlertingEnvOptions = {}): Promise<AlertingEnv> {
  let slack: Receiver | undefined;
  let smtp: SmtpReceiver | undefined;
  const env = await startAnvilEnv({
    // Trace and Call entities need call traces, which the ingester fetches only when asked to
    // (`CHAINSIFT_INGEST_TRACES`, default off). Keep them off whatever the environment says: the
    // suites document that Trace and Call rules do not fire in this pipeline configuration.
    traces: false,
    nft: true,
    ...(options.index ? { index: true } : {}),
    notify: { timeoutMs: 3000, ...options.notify },
    // Retries and dead letters are expected here: keep the stages' warnings out of the test output.
    logLevel: "error",
    prepare: async (h, onStop) => {
      const [slackStarted, smtpStarted] = await Promise.all([startReceiver("ok"), startSmtpReceiver()]);
      slack = slackStarted;
      smtp = smtpStarted;
      onStop(slackStarted.close);
      onStop(smtpStarted.close);
      h.config.api = { ...h.config.api, rateLimitMax: 1_000_000 };
      // Telegram actions go to the Slack-shaped receiver, as `/bot<TELEGRAM_BOT_TOKEN>/sendMessage`.
      h.config.notify = {
        ...h.config.notify,
        smtpUrl: smtpStarted.url,
        mailFrom: MAIL_FROM,
        telegramBotToken: TELEGRAM_BOT_TOKEN,
        telegramApiUrl: slackStarted.base,
      };
    },
    match: ({ anvil }) => ({ tokens: rpcTokenMetadataSource(anvil.rpcUrl), reloadIntervalMs: 1000 }),
  });
  try {
    return await withApi(env, slack!, smtp!);
  } catch (err) {
    await env.stop();
    throw err;
  }
}

async function withApi(env: AnvilEnv, slack: Receiver, smtp: SmtpReceiver): Promise<AlertingEnv> {
  const { config, nft, nftAddress } = env;
  if (!nft || !nftAddress) throw new Error("the NFT was not deployed");

  const secretsRedis = createClient({ url: config.redisUrl });
  secretsRedis.on("error", () => {});
  await secretsRedis.connect();
  env.onStop(() => secretsRedis.close());
  const secrets = createSecretStore({ redis: secretsRedis, keyPrefix: config.redisKeyPrefix });

  const running = await startApi({ config }, { es: env.h.es, logger: false });
  env.onStop(() => running.app.close());

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
    await env.waitActive([res.body.id]);
    return res.body;
  };

  // Object.assign keeps `env.match` a live getter (the current match stage).
  return Object.assign(env, {
    apiUrl: running.url,
    api: running.app,
    adminToken,
    accounts: { a, b },
    nft,
    nftAddress,
    secrets,
    slack,
    smtp,
    request,
    createRule,
  });
}
