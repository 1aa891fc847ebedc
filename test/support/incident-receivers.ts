/**
 * Local receivers (node:http on 127.0.0.1, a free port) of the incident-tool APIs chainsift calls
 * (issue 35), answering the way their API references describe, and keeping the incidents so a test
 * can read them as an on-call engineer would (open or resolved, how often paged):
 *
 * - PagerDuty Events API v2 `POST /v2/enqueue` (https://developer.pagerduty.com/docs/send-alert-event,
 *   response codes: https://developer.pagerduty.com/docs/events-api-v2-overview#response-codes--retry-logic):
 *   `202 {"status": "success", "message": "Event processed", "dedup_key"}`; `400 {"status":
 *   "invalid event", "message": "Event object is invalid", "errors": [...]}` for a bad body (routing
 *   key not 32 characters, unknown `event_action`, a `trigger` without `payload.summary`, `source`
 *   or a known `severity`, a summary over 1024 characters); `429` with `Retry-After` while
 *   {@link IncidentReceivers.throttle} says so. Dedup: a `trigger` on the key of an open alert is
 *   grouped into it (no new page); `resolve` resolves it; a `trigger` on a resolved key opens a new one.
 * - Opsgenie Alert API (https://docs.opsgenie.com/docs/alert-api) with `Authorization: GenieKey
 *   <key>` (else `401`): "Create Alert" `POST /v2/alerts` → `202 {"result": "Request will be
 *   processed", "took", "requestId"}`, `422` for a missing or over-long `message` (130) or alias
 *   (512); an open alert with the same `alias` gets its `count` increased; "Close Alert"
 *   `POST /v2/alerts/<alias>/close?identifierType=alias` → `202`, closing it.
 * - A Microsoft Teams Workflows webhook `POST /teams/workflows/<id>/invoke?sig=<secret>` → `202`
 *   for a message carrying one Adaptive Card
 *   (`{"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": {"type": "AdaptiveCard", "body": [...]}}]}`),
 *   `400` otherwise; the cards are kept in {@link IncidentReceivers.cards} (a webhook cannot edit them).
 * @module
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** A PagerDuty alert (one per dedup key and opening) or an Opsgenie alert (one per alias and opening). */
export interface Incident {
  service: "pagerduty" | "opsgenie";
  /** PagerDuty `dedup_key`, Opsgenie `alias`. */
  key: string;
  status: "open" | "resolved";
  /** Requests grouped into it (the opening one included): a confirmed alert after a pending one makes 2. */
  count: number;
  /** The opening request's body (PagerDuty event, Opsgenie Create Alert). */
  opened: Record<string, unknown>;
  /** Bodies of the later requests on it (grouped triggers, the resolve or close). */
  updates: Record<string, unknown>[];
}

/** One request received, for assertions on paths, headers and statuses. */
export interface IncidentRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** The status answered. */
  status: number;
  /** When it arrived (ms since the epoch). */
  at: number;
}

/** A running {@link startIncidentReceivers}. */
export interface IncidentReceivers {
  /** `http://127.0.0.1:<port>`: both `CHAINSIFT_PAGERDUTY_API_URL` and `CHAINSIFT_OPSGENIE_API_URL`. */
  base: string;
  incidents: Incident[];
  requests: IncidentRequest[];
  /** The Teams webhook URL (`<base>/teams/workflows/<id>/invoke?sig=<secret>`). */
  teamsUrl: string;
  /** The Adaptive Cards posted to Teams, in order, with the `webhook-id` (alert id) of their request. */
  cards: { alertId: string; card: { body: { type: string; text?: string }[] } }[];
  /** Answers the next `n` PagerDuty events with `429` and `Retry-After: <retryAfterSec>`. */
  throttle(n: number, retryAfterSec: number): void;
  /** The incidents of a service and key, oldest first. */
  find(service: Incident["service"], key: string): Incident[];
  close(): Promise<void>;
}

const SEVERITIES = ["critical", "error", "warning", "info"];

/** Why a PagerDuty event is invalid, or null. */
function pagerDutyProblems(b: Record<string, unknown>): string[] {
  const errors: string[] = [];
  if (typeof b.routing_key !== "string" || b.routing_key.length !== 32) errors.push("'routing_key' must be 32 characters");
  if (!["trigger", "acknowledge", "resolve"].includes(String(b.event_action))) errors.push("'event_action' is invalid");
  if (b.dedup_key !== undefined && (typeof b.dedup_key !== "string" || b.dedup_key.length > 255)) errors.push("'dedup_key' is invalid");
  if (b.event_action !== "trigger") {
    if (typeof b.dedup_key !== "string") errors.push("'dedup_key' is required");
    return errors;
  }
  const p = b.payload as Record<string, unknown> | undefined;
  if (typeof p?.summary !== "string" || p.summary === "" || p.summary.length > 1024) errors.push("'payload.summary' is invalid");
  if (typeof p?.source !== "string" || p.source === "") errors.push("'payload.source' is missing");
  if (!SEVERITIES.includes(String(p?.severity))) errors.push("'payload.severity' is invalid");
  return errors;
}

/** Starts the receivers; `opsgenieKeys` are the API keys Opsgenie accepts. */
export async function startIncidentReceivers(opsgenieKeys: readonly string[]): Promise<IncidentReceivers> {
  const incidents: Incident[] = [];
  const requests: IncidentRequest[] = [];
  const cards: IncidentReceivers["cards"] = [];
  const teamsPath = "/teams/workflows/5e1f0c2a/invoke";
  const teamsSig = "tEaMs-SiG-0123";
  let throttled = 0;
  let retryAfter = 1;
  const open = (service: Incident["service"], key: string) =>
    incidents.find((i) => i.service === service && i.key === key && i.status === "open");

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const u = new URL(req.url ?? "/", "http://x");
      let body: Record<string, unknown> = {};
      const record = (status: number) =>
        requests.push({ method: req.method ?? "", path: `${u.pathname}${u.search}`, headers: req.headers, body, status, at: Date.now() });
      const json = (r: ServerResponse, status: number, answer: unknown, headers: Record<string, string> = {}) => {
        record(status);
        r.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(answer));
      };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
      } catch {
        return json(res, 400, { status: "invalid event", message: "Event object is invalid", errors: ["body is not JSON"] });
      }
      if (req.method === "POST" && u.pathname === "/v2/enqueue") {
        if (throttled > 0) {
          throttled--;
          return json(
            res,
            429,
            { status: "throttle event", message: "Requests for this service are arriving too quickly." },
            {
              "retry-after": String(retryAfter),
            },
          );
        }
        const errors = pagerDutyProblems(body);
        if (errors.length > 0) return json(res, 400, { status: "invalid event", message: "Event object is invalid", errors });
        const key = typeof body.dedup_key === "string" ? body.dedup_key : randomUUID().replaceAll("-", "");
        const current = open("pagerduty", key);
        if (body.event_action === "trigger") {
          if (current) {
            current.count++;
            current.updates.push(body);
          } else incidents.push({ service: "pagerduty", key, status: "open", count: 1, opened: body, updates: [] });
        } else if (body.event_action === "resolve" && current) {
          current.status = "resolved";
          current.updates.push(body);
        }
        return json(res, 202, { status: "success", message: "Event processed", dedup_key: key });
      }
      if (req.method === "POST" && u.pathname.startsWith("/v2/alerts")) {
        const auth = String(req.headers.authorization ?? "");
        if (!auth.startsWith("GenieKey ") || !opsgenieKeys.includes(auth.slice("GenieKey ".length))) {
          return json(res, 401, { message: "Could not authenticate", took: 0.001, requestId: randomUUID() });
        }
        const accepted = { result: "Request will be processed", took: 0.01, requestId: randomUUID() };
        if (u.pathname === "/v2/alerts") {
          const message = body.message;
          const alias = typeof body.alias === "string" ? body.alias : randomUUID();
          if (typeof message !== "string" || message === "" || message.length > 130 || alias.length > 512) {
            return json(res, 422, { message: "Request body is not processable", took: 0.001, requestId: randomUUID() });
          }
          const current = open("opsgenie", alias);
          if (current) {
            current.count++;
            current.updates.push(body);
          } else incidents.push({ service: "opsgenie", key: alias, status: "open", count: 1, opened: body, updates: [] });
          return json(res, 202, accepted);
        }
        const close = /^\/v2\/alerts\/([^/]+)\/close$/.exec(u.pathname);
        if (close && u.searchParams.get("identifierType") === "alias") {
          const current = open("opsgenie", decodeURIComponent(close[1]!));
          if (current) {
            current.status = "resolved";
            current.updates.push(body);
          }
          return json(res, 202, accepted);
        }
      }
      if (req.method === "POST" && u.pathname === teamsPath && u.searchParams.get("sig") === teamsSig) {
        const a = (body.attachments as { contentType?: unknown; content?: { type?: unknown; body?: unknown } }[] | undefined)?.[0];
        if (
          body.type !== "message" ||
          a?.contentType !== "application/vnd.microsoft.card.adaptive" ||
          a.content?.type !== "AdaptiveCard" ||
          !Array.isArray(a.content.body)
        ) {
          return json(res, 400, { error: { code: "InvalidRequestContent", message: "not a message with an Adaptive Card" } });
        }
        cards.push({ alertId: String(req.headers["webhook-id"] ?? ""), card: a.content as IncidentReceivers["cards"][number]["card"] });
        record(202);
        return res.writeHead(202).end();
      }
      return json(res, 404, { message: "not found" });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}`,
    teamsUrl: `http://127.0.0.1:${port}${teamsPath}?api-version=1&sig=${teamsSig}`,
    cards,
    incidents,
    requests,
    throttle(n, retryAfterSec) {
      throttled = n;
      retryAfter = retryAfterSec;
    },
    find: (service, key) => incidents.filter((i) => i.service === service && i.key === key),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
