/**
 * The interface every notification channel implements. A channel turns one action of one alert
 * into an attempt function; the deliverer (`deliver.ts`) runs attempts and the scheduler retries
 * them. What a channel's actions are (parameters, rendering, destination, default throttle, whether
 * retractions edit) is its descriptor in lib/alerting/channels.ts; its sender is one file in this
 * folder implementing {@link Channel}, registered by action type in `createDeliverer` (deliver.ts),
 * whose `Record<AlertType, Channel>` the compiler checks (docs/architecture.md, "A new notification channel").
 * @module
 */
import type { Alert } from "../../../lib/alerting/alert.js";
import type { Digest } from "../../../lib/alerting/storm.js";
import type { AlertDefinition } from "../../../lib/rules/model.js";
import type { AttemptOutcome, DeliveryResult } from "../outcome.js";

/** One attempt (`n` = 1-based attempt number); may throw, which counts as a request error. */
export type Attempt = (n: number) => Promise<AttemptOutcome>;

/** A notification channel's sender (which action types it serves: the table of `createDeliverer`). */
export interface Channel {
  /**
   * Checks the action and renders what is sent, returning the attempt; or the result when no attempt
   * can be made now (e.g. `CS_MAILER_UNCONFIGURED`).
   * @throws {NonRetryableError} when the action cannot be delivered as written (bad template, missing
   *   url, no valid recipient): the failure is final.
   * @throws {Error} any other error is infrastructure (e.g. the secret store): retry later.
   */
  prepare(alert: Alert, action: AlertDefinition, actionIndex: number): Promise<Attempt | DeliveryResult>;
  /**
   * Like {@link prepare}, for a storm-control digest of the action (`digest.action`): one message
   * summarising the alerts held back in a window (lib/alerting/storm.ts). Absent: no digests.
   * @throws as {@link prepare}.
   */
  prepareDigest?(digest: Digest): Promise<Attempt | DeliveryResult>;
  /** Releases connections and transports. */
  close?(): Promise<void>;
}
