/**
 * The incident-tool variables of `loadConfig` (lib/config/index.ts, `config.notify`; issue 35):
 * the API base URLs the `PagerDuty` and `Opsgenie` alert actions post to. The routing and API keys
 * are the rules' (lib/rules/schema.ts), not the operator's.
 * @module
 */
import { str } from "./parse.js";

/** The incident tools' API base URLs, without trailing slash. */
export interface IncidentApisConfig {
  /**
   * Base URL of the PagerDuty Events API v2; `PagerDuty` actions post to `<url>/v2/enqueue`
   * (https://developer.pagerduty.com/docs/send-alert-event). Env `CHAINSIFT_PAGERDUTY_API_URL`,
   * default `https://events.pagerduty.com` (the EU service: `https://events.eu.pagerduty.com`); a
   * local receiver in tests (a private address must be in `CHAINSIFT_NOTIFY_ALLOWLIST`).
   */
  pagerdutyApiUrl: string;
  /**
   * Base URL of the Opsgenie Alert API; `Opsgenie` actions post to `<url>/v2/alerts`
   * (https://docs.opsgenie.com/docs/alert-api). Env `CHAINSIFT_OPSGENIE_API_URL`, default
   * `https://api.opsgenie.com` (EU accounts: `https://api.eu.opsgenie.com`); a local receiver in
   * tests (a private address must be in `CHAINSIFT_NOTIFY_ALLOWLIST`).
   */
  opsgenieApiUrl: string;
}

/** Reads {@link IncidentApisConfig} from `env` (trailing slashes dropped). */
export function incidentApisOf(env: NodeJS.ProcessEnv): IncidentApisConfig {
  return {
    pagerdutyApiUrl: str(env, "CHAINSIFT_PAGERDUTY_API_URL", "https://events.pagerduty.com").replace(/\/+$/, ""),
    opsgenieApiUrl: str(env, "CHAINSIFT_OPSGENIE_API_URL", "https://api.opsgenie.com").replace(/\/+$/, ""),
  };
}
