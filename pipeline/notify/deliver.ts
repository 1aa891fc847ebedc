/**
 * Delivery of one alert action: {@link createDeliverer} picks the action's channel
 * (`channels/`: webhook, Slack, Discord, Telegram, e-mail, PagerDuty, Opsgenie, Teams) and makes one attempt ({@link Deliverer.attempt}, what the
 * scheduler uses) or a whole retry loop ({@link Deliverer.deliver}) with exponential backoff and
 * full jitter. The loop ({@link runWithRetry}) is a pure function of an injected `attempt` and
 * `sleep`, so it is unit-tested without real waits.
 *
 * Outcomes ({@link DeliveryResult}):
 * - `ok: true` — delivered (2xx, or the SMTP server accepted the message);
 * - `ok: false, final: true` — refused for good (non-retryable 4xx, SMTP 5xx, SSRF refusal, bad
 *   template or action): retrying or replaying would fail the same way, so it is only logged;
 * - `ok: false, final: false, code: CS_DELIVERY_EXHAUSTED` (or `CS_MAILER_UNCONFIGURED`, `CS_TELEGRAM_UNCONFIGURED`) — still
 *   deliverable later: it is dead-lettered and `chainsift alerts replay` re-sends it.
 * @module
 */
import type { Dispatcher } from "undici";
import type { Alert } from "../../lib/alerting/alert.js";
import { CHANNELS } from "../../lib/alerting/channels.js";
import type { Digest } from "../../lib/alerting/storm.js";
import type { ExplorerUrls } from "../../lib/alerting/template.js";
import type { Logger } from "../../lib/logger.js";
import type { AlertDefinition, AlertType } from "../../lib/rules/model.js";
import type { Attempt, Channel } from "./channels/channel.js";
import { createDiscordChannel } from "./channels/discord.js";
import { createEmailChannel, type MailerConfig } from "./channels/email.js";
import { createHttpSender } from "./channels/http.js";
import { createKafkaChannel } from "./channels/kafka.js";
import { createOpsgenieChannel } from "./channels/opsgenie.js";
import { createPagerDutyChannel } from "./channels/pagerduty.js";
import { createSlackChannel, type SlackConfig } from "./channels/slack.js";
import { createTeamsChannel } from "./channels/teams.js";
import { createTelegramChannel, type TelegramConfig } from "./channels/telegram.js";
import { createWebhookChannel } from "./channels/webhook.js";
import { describeDestination } from "./log.js";
import type { MessageStore } from "./messages.js";
import {
  type AttemptOutcome,
  CS_DELIVERY_EXHAUSTED,
  classifyRequestError,
  type DeliveryResult,
  invalid,
  nonRetryableIn,
} from "./outcome.js";
import { createGuardedAgent, type DestinationPolicy, parseAllowlist } from "./ssrf.js";

export { classifySmtpError, createSmtpTransport, type MailerConfig, type MailTransport, type OutgoingMail } from "./channels/email.js";
export { USER_AGENT } from "./channels/http.js";
export { CS_KAFKA_REJECTED, CS_KAFKA_UNAVAILABLE } from "./channels/kafka.js";
export { CS_SLACK_API_ERROR, CS_SLACK_UNCONFIGURED, type SlackConfig } from "./channels/slack.js";
export { CS_TELEGRAM_UNCONFIGURED, type TelegramConfig } from "./channels/telegram.js";
export * from "./outcome.js";

/** Retry budget. */
export interface RetryPolicy {
  /** Attempts in total, the first included. Default 8. */
  maxAttempts: number;
  /** Backoff ceiling before the first retry, in ms; doubles per attempt. Default 500. */
  baseDelayMs: number;
  /** Largest wait between attempts, in ms (also caps `Retry-After`). Default 60000. */
  maxDelayMs: number;
}

/** Defaults of {@link RetryPolicy}: 8 attempts; waits drawn from [0, 0.5 s], [0, 1 s], … [0, 32 s] (≤ 63.5 s in total). */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = { maxAttempts: 8, baseDelayMs: 500, maxDelayMs: 60_000 };

/**
 * Wait before the next attempt after `failedAttempt` (1-based) failed: "full jitter" — uniform in
 * [0, min(maxDelayMs, baseDelayMs · 2^(failedAttempt−1))). With a server-requested `retryAfterMs`,
 * at least that long, and never more than `maxDelayMs`.
 * @param random Uniform [0, 1) source (default `Math.random`).
 * @returns Milliseconds (integer).
 */
export function retryDelayMs(
  failedAttempt: number,
  policy: RetryPolicy,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, failedAttempt - 1));
  const jittered = Math.floor(random() * ceiling);
  if (retryAfterMs === undefined) return jittered;
  return Math.min(policy.maxDelayMs, Math.max(retryAfterMs, jittered));
}

/** Hooks of {@link runWithRetry}. */
export interface RetryHooks {
  /** Waits `ms` milliseconds (tests record instead of waiting). */
  sleep: (ms: number) => Promise<void>;
  /** Uniform [0, 1) (default `Math.random`). */
  random?: () => number;
  /** Called before each wait. */
  onRetry?: (info: { attempt: number; delayMs: number; outcome: Extract<AttemptOutcome, { ok: false }> }) => void;
}

/**
 * Runs `attempt(1)`, `attempt(2)`, … until one succeeds, one fails for good, or `maxAttempts` is
 * reached, sleeping {@link retryDelayMs} between attempts. An attempt that throws is classified with
 * {@link classifyRequestError}. Never throws itself.
 * @returns The {@link DeliveryResult} (without `destination`); exhaustion gives
 *   `{ok: false, final: false, code: CS_DELIVERY_EXHAUSTED}` with the last failure in `error`.
 */
export async function runWithRetry(
  attempt: (n: number) => Promise<AttemptOutcome>,
  policy: RetryPolicy,
  hooks: RetryHooks,
): Promise<DeliveryResult> {
  const max = Math.max(1, Math.floor(policy.maxAttempts));
  for (let n = 1; ; n++) {
    let out: AttemptOutcome;
    try {
      out = await attempt(n);
    } catch (err) {
      out = classifyRequestError(err);
    }
    if (out.ok) return { ok: true, attempts: n, final: true, ...(out.status === undefined ? {} : { status: out.status }) };
    const status = out.status === undefined ? {} : { status: out.status };
    if (!out.retryable) return { ok: false, attempts: n, final: true, code: out.code, error: out.error, ...status };
    if (n >= max) {
      return {
        ok: false,
        attempts: n,
        final: false,
        code: CS_DELIVERY_EXHAUSTED,
        error: `gave up after ${n} attempts; last: ${out.code} ${out.error}`,
        ...status,
      };
    }
    const delayMs = retryDelayMs(n, policy, out.retryAfterMs, hooks.random);
    hooks.onRetry?.({ attempt: n, delayMs, outcome: out });
    await hooks.sleep(delayMs);
  }
}

/** Where per-account signing secrets come from (see `createSecretStore` in `sign.ts`). */
export interface SecretSource {
  getOrCreate(accountId: string): Promise<string>;
}

/** Dependencies of {@link createDeliverer}. */
export interface DelivererDeps {
  /** Whole-attempt timeout of an HTTP request (connect + headers + body), and of each SMTP step, in ms. Default 10000. */
  fetchTimeoutMs?: number;
  /** Retry budget; missing fields take {@link DEFAULT_RETRY}. */
  retry?: Partial<RetryPolicy>;
  /** Hosts, IPs and CIDRs exempt from the SSRF refusal (e.g. `["127.0.0.1"]` in tests). Default none. */
  allowlist?: readonly string[];
  /** Host resolution override (tests); see {@link DestinationPolicy.resolve}. */
  resolve?: DestinationPolicy["resolve"];
  /** Per-account signing secrets. */
  secrets: SecretSource;
  /** E-mail settings; without them Email actions end with {@link CS_MAILER_UNCONFIGURED}. */
  mailer?: MailerConfig;
  /** The operator's Telegram bot; without a token Telegram actions end with `CS_TELEGRAM_UNCONFIGURED`. Default no token, `https://api.telegram.org`. */
  telegram?: TelegramConfig;
  /** The operator's Slack bot for Web API actions (`chat.postMessage`/`chat.update`); default no token, `https://slack.com/api`. */
  slack?: SlackConfig;
  /**
   * The operator's incident-tool API base URLs (issue 35; config `notify.pagerdutyApiUrl`,
   * `notify.opsgenieApiUrl`), no trailing slash. Default `https://events.pagerduty.com` and
   * `https://api.opsgenie.com`.
   */
  incidents?: IncidentApis;
  /**
   * Where the messages of pending alerts are remembered (`createMessageStore`, messages.ts), so
   * that a retraction edits them (Discord, Telegram, Slack Web API), names them (Slack incoming
   * webhook) or answers them in their thread (e-mail). Without it, a retraction is a new message.
   */
  messages?: MessageStore;
  /** Block-explorer base URLs by chain for the links in messages (config `notify.explorerUrls`); default `DEFAULT_EXPLORER_URLS` (lib/config/index.ts). */
  explorers?: ExplorerUrls;
  /** Clock (default `() => new Date()`); gives the signature timestamp and `Retry-After` dates. */
  now?: () => Date;
  /** Wait function (default a `setTimeout` promise). */
  sleep?: (ms: number) => Promise<void>;
  /** Uniform [0, 1) source for jitter (default `Math.random`). */
  random?: () => number;
  /** Receives `warn` on each retry and final failure, `debug` on success. */
  log?: Pick<Logger, "warn" | "debug">;
  /** HTTP dispatcher override (default: an SSRF-guarded undici Agent, see `ssrf.ts`). */
  dispatcher?: Dispatcher;
}

/** The incident tools' API base URLs, without trailing slash (issue 35). */
export interface IncidentApis {
  /** PagerDuty Events API v2 base (`<url>/v2/enqueue`). */
  pagerdutyApiUrl: string;
  /** Opsgenie Alert API base (`<url>/v2/alerts`). */
  opsgenieApiUrl: string;
}

/** A deliverer. */
export interface Deliverer {
  /**
   * Delivers action `actionIndex` (`action` = `alert.actions[actionIndex]`, passed explicitly) of an
   * alert, retrying as configured. Resolves with the outcome; rejects only when the secret store
   * fails (an infrastructure failure: the shell should retry the batch, not dead-letter).
   */
  deliver(alert: Alert, action: AlertDefinition, actionIndex: number): Promise<DeliveryResult>;
  /**
   * Makes **one** attempt of action `actionIndex` of an alert, without retrying: the unit of work of
   * the notify scheduler, which keeps the retry schedule itself (`scheduler.ts`). Resolves with the
   * outcome; rejects only when the secret store fails (infrastructure: retry later).
   */
  attempt(alert: Alert, action: AlertDefinition, actionIndex: number): Promise<AttemptResult>;
  /**
   * Makes one attempt at sending a storm-control digest (lib/alerting/storm.ts) through its action's
   * channel; outcomes as {@link attempt}. A channel without digests (`Webhook (GET)`) gives a final
   * `CS_ACTION_INVALID`. Rejects only when the secret store fails.
   */
  attemptDigest(digest: Digest): Promise<AttemptResult>;
  /** Closes the HTTP agent and the SMTP transport. */
  close(): Promise<void>;
}

/**
 * Outcome of one attempt ({@link Deliverer.attempt}). `attempts` is 1 when something was sent and
 * 0 when the action could not be rendered or no mailer is configured.
 * - `ok: true` — delivered;
 * - `ok: false, retryable: true` — a transient failure (timeout, network, 5xx/408/429, SMTP 4xx):
 *   the scheduler retries it later, honouring `retryAfterMs`;
 * - `ok: false, retryable: false, final: true` — refused for good: only logged;
 * - `ok: false, retryable: false, final: false` — not deliverable now but later
 *   (`CS_MAILER_UNCONFIGURED`): dead-lettered at once for a replay.
 */
export interface AttemptResult extends DeliveryResult {
  /** Whether another attempt may succeed soon. */
  retryable: boolean;
  /** The receiver's `Retry-After`, in ms, when it sent one. */
  retryAfterMs?: number;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Creates a deliverer. Webhook and chat requests go through an SSRF-guarded undici Agent (no
 * redirects followed, no proxy); every attempt re-checks the destination, takes a fresh timestamp
 * and signature, and is bounded by `fetchTimeoutMs`. E-mails go through nodemailer.
 * @throws {Error} when `allowlist` holds an entry that is not an IP, CIDR or host name.
 */
export function createDeliverer(deps: DelivererDeps): Deliverer {
  const timeoutMs = deps.fetchTimeoutMs ?? 10_000;
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...deps.retry };
  const allowlist = parseAllowlist(deps.allowlist ?? []);
  const destPolicy: DestinationPolicy = { allowlist, ...(deps.resolve ? { resolve: deps.resolve } : {}) };
  const ownAgent = deps.dispatcher
    ? undefined
    : createGuardedAgent(destPolicy, { connectTimeoutMs: timeoutMs, headersTimeoutMs: timeoutMs, bodyTimeoutMs: timeoutMs });
  const dispatcher: Dispatcher = deps.dispatcher ?? ownAgent!;
  const now = deps.now ?? (() => new Date());
  const sleep = deps.sleep ?? defaultSleep;
  const send = createHttpSender({ dispatcher, policy: destPolicy, timeoutMs, now });
  const messages = deps.explorers ? { explorers: deps.explorers } : {};
  const telegram: TelegramConfig = deps.telegram ?? { botToken: undefined, apiUrl: "https://api.telegram.org" };
  const slack: SlackConfig = deps.slack ?? { botToken: undefined, apiUrl: "https://slack.com/api" };
  const incidents: IncidentApis = deps.incidents ?? {
    pagerdutyApiUrl: "https://events.pagerduty.com",
    opsgenieApiUrl: "https://api.opsgenie.com",
  };
  /** The posted-message store, for the channels whose retractions change their earlier message. */
  const posted = (type: AlertType) => (CHANNELS[type].editsOnRetraction ? deps.messages : undefined);
  const webhook = createWebhookChannel(send, deps.secrets);
  const mailer = deps.mailer ? { mailer: deps.mailer } : {};
  const email = posted("Email");
  // One sender per action type (lib/alerting/channels.ts): the compiler asks for the sender of a new type.
  const senders: Record<AlertType, Channel> = {
    "Webhook (GET)": webhook,
    "Webhook (POST)": webhook,
    Email: createEmailChannel({ ...mailer, timeoutMs, messages, ...(email ? { posted: email } : {}) }),
    Slack: createSlackChannel(send, deps.secrets, messages, slack, posted("Slack")),
    Discord: createDiscordChannel(send, deps.secrets, messages, posted("Discord")),
    Telegram: createTelegramChannel(send, deps.secrets, telegram, messages, posted("Telegram")),
    PagerDuty: createPagerDutyChannel(send, deps.secrets, incidents.pagerdutyApiUrl, messages),
    Opsgenie: createOpsgenieChannel(send, deps.secrets, incidents.opsgenieApiUrl, messages),
    Teams: createTeamsChannel(send, deps.secrets, messages),

    Kafka: createKafkaChannel({ policy: destPolicy, timeoutMs, send, secrets: deps.secrets }),
  };
  const channels = [...new Set(Object.values(senders))];
  const byType = new Map<string, Channel>(Object.entries(senders));

  /** Validates the action and returns the attempt function, or throws NonRetryableError. */
  async function prepare(alert: Alert, action: AlertDefinition, actionIndex: number): Promise<Attempt | DeliveryResult> {
    const channel = byType.get(String(action?.type));
    if (!channel) throw invalid(`unknown alert action type ${JSON.stringify((action as { type?: unknown })?.type)}`);
    return channel.prepare(alert, action, actionIndex);
  }

  /**
   * The redacted destination and either the attempt function or the outcome that makes an attempt
   * pointless (bad template or action: final; no mailer: `CS_MAILER_UNCONFIGURED`). Rejects only
   * when the secret store fails.
   */
  async function begin(
    alert: Alert,
    action: AlertDefinition,
    actionIndex: number,
  ): Promise<{ destination: string; run?: (n: number) => Promise<AttemptOutcome>; result?: DeliveryResult }> {
    const base = { alertId: alert.id, ruleId: alert.ruleId, actionIndex, type: action?.type };
    let destination: string;
    try {
      destination = describeDestination(action, alert.entity);
    } catch {
      destination = "(invalid)";
    }
    try {
      const prepared = await prepare(alert, action, actionIndex);
      if (typeof prepared === "function") return { destination, run: prepared };
      deps.log?.warn({ ...base, code: prepared.code }, prepared.error ?? "alert action not delivered");
      return { destination, result: { ...prepared, destination } };
    } catch (err) {
      const nr = nonRetryableIn(err);
      if (!nr) throw err; // secret store failure: infrastructure, let the caller retry
      deps.log?.warn({ ...base, code: nr.code, err: nr.message }, "alert action cannot be delivered");
      return { destination, result: { ok: false, attempts: 0, final: true, code: nr.code, error: nr.message, destination } };
    }
  }

  return {
    async deliver(alert, action, actionIndex) {
      const base = { alertId: alert.id, ruleId: alert.ruleId, actionIndex, type: action?.type };
      const { destination, run: prepared, result: early } = await begin(alert, action, actionIndex);
      if (!prepared) return early!;
      const result = await runWithRetry(prepared, policy, {
        sleep,
        ...(deps.random ? { random: deps.random } : {}),
        onRetry: ({ attempt, delayMs, outcome }) =>
          deps.log?.warn(
            { ...base, attempt, delayMs, code: outcome.code, status: outcome.status, err: outcome.error },
            "alert delivery attempt failed; retrying",
          ),
      });
      if (result.ok) deps.log?.debug({ ...base, attempts: result.attempts, status: result.status }, "alert delivered");
      else
        deps.log?.warn(
          { ...base, attempts: result.attempts, code: result.code, final: result.final, err: result.error },
          "alert delivery failed",
        );
      return { ...result, destination };
    },
    async attempt(alert, action, actionIndex) {
      const { destination, run: prepared, result: early } = await begin(alert, action, actionIndex);
      if (!prepared) return { ...early!, retryable: false };
      return once(prepared, destination);
    },
    async attemptDigest(digest) {
      let destination: string;
      try {
        destination = describeDestination(digest.action, digest.entity);
      } catch {
        destination = "(invalid)";
      }
      const channel = byType.get(String(digest.action?.type));
      let prepared: Attempt | DeliveryResult;
      try {
        if (!channel?.prepareDigest) throw invalid(`action type ${JSON.stringify(digest.action?.type)} cannot send a digest`);
        prepared = await channel.prepareDigest(digest);
      } catch (err) {
        const nr = nonRetryableIn(err);
        if (!nr) throw err;
        return { ok: false, attempts: 0, final: true, retryable: false, code: nr.code, error: nr.message, destination };
      }
      if (typeof prepared !== "function") return { ...prepared, destination, retryable: false };
      return once(prepared, destination);
    },
    async close() {
      await ownAgent?.close();
      await Promise.all(channels.map((c) => c.close?.()));
    },
  };

  /** One attempt of a prepared send, classified. */
  async function once(prepared: Attempt, destination: string): Promise<AttemptResult> {
    let out: AttemptOutcome;
    try {
      out = await prepared(1);
    } catch (err) {
      out = classifyRequestError(err);
    }
    if (out.ok)
      return {
        ok: true,
        attempts: 1,
        final: true,
        retryable: false,
        destination,
        ...(out.status === undefined ? {} : { status: out.status }),
      };
    return {
      ok: false,
      attempts: 1,
      final: !out.retryable,
      retryable: out.retryable,
      code: out.code,
      error: out.error,
      destination,
      ...(out.status === undefined ? {} : { status: out.status }),
      ...(out.retryAfterMs === undefined ? {} : { retryAfterMs: out.retryAfterMs }),
    };
  }
}
