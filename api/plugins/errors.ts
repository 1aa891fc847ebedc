/**
 * The one error handler of the API: maps every error to a status and the JSON error body
 * `{error: {code, message, path}, errors: [...]}` (api/errors.ts), and answers unknown routes with
 * 404 `CS_ROUTE_NOT_FOUND`. Never returns stack traces or internal messages: 5xx answers carry a
 * fixed message and the details go to the log.
 *
 * Mapping:
 * - {@link ApiError} (our routes and plugins): its code(s) and status.
 * - `AccountError` (admin routes, lib/accounts): its code, the status of
 *   `ACCOUNT_ERROR_HTTP_STATUS`, and its `field` as path.
 * - `RuleStoreError` (rules routes, lib/rules/store.ts): its code with the status of
 *   `RULES_ERROR_CODES` and the path and message of api/routes/rules/errors.ts `ruleStoreErrorDetail`.
 * - Redis unreachable ({@link isRedisUnavailable}: node-redis offline/closed/timeout errors, socket
 *   errors) → 503 CS_BACKEND_UNAVAILABLE, naming the route's `config.backend` (default `Redis`).
 * - Fastify schema validation errors: on routes declaring `config.validationErrorCode` (admin
 *   routes; rules routes per request part), that code with the failing part's path; otherwise by
 *   the top-level key of the failing body part — `size` → CS_SIZE_INVALID, `sort` → CS_SORT_INVALID, `_source` → CS_SOURCE_INVALID,
 *   `query` → CS_QUERY_INVALID, `search_after` → CS_SEARCH_AFTER_INVALID, `aggs`/`aggregations` →
 *   CS_AGG_INVALID, an unknown key or a non-object body → CS_BODY_INVALID.
 * - Fastify body parsing: invalid/empty-but-required JSON → CS_BODY_INVALID, too large →
 *   CS_BODY_TOO_LARGE (413) or the route's `config.bodyTooLarge`, wrong Content-Type → CS_UNSUPPORTED_MEDIA_TYPE (415), other 4xx → CS_BAD_REQUEST.
 * - Router errors before any route or hook ({@link frameworkErrorHandler}): bad percent-encoding in
 *   the path → 400 CS_URL_INVALID, an over-long path parameter → 414 CS_URL_TOO_LONG.
 * - Connection-level client errors (before any request object exists; {@link clientErrorHandler}):
 *   headers/request timeout → 408 CS_REQUEST_TIMEOUT, oversized headers → 431 CS_HEADERS_TOO_LARGE,
 *   unparseable HTTP → 400 CS_BAD_REQUEST; the connection is then closed.
 * - Elasticsearch client errors: `too_many_buckets_exception` → CS_AGG_TOO_MANY_BUCKETS; other HTTP
 *   400 → CS_QUERY_REJECTED (with ES's root-cause reason);
 *   connection errors, timeouts, 408/429/502/503/504 → 503 CS_BACKEND_UNAVAILABLE; anything else → 500 CS_INTERNAL.
 * @module
 */

import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { errors as esErrors } from "@elastic/elasticsearch";
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { AccountError } from "../../lib/accounts/model.js";
import { isRuleStoreError } from "../../lib/rules/store.js";
import { jsonPath, pointerSegments, segmentsPath } from "../../lib/validation/path.js";
import { unknownKeyMessage } from "../dsl/validate.js";
import { ACCOUNT_ERROR_HTTP_STATUS, ApiError, type ApiErrorDetail, ERROR_CODES, type ErrorCode, errorBody } from "../errors.js";
import { ruleStoreErrorDetail } from "../routes/rules/errors.js";
import { globalPlugin } from "./plugin.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * Code of every validation failure of the route (instead of the search body mapping), or one
     * code per request part (a part without one gets the default mapping).
     */
    validationErrorCode?: ErrorCode | ValidationErrorCodes;
    /** The answer to a body over the route's `bodyLimit` (instead of 413 CS_BODY_TOO_LARGE). */
    bodyTooLarge?: { code: ErrorCode; message: string };
    /** What the route reads from Redis, named in the 503 message when Redis is unreachable (default `Redis`). */
    backend?: string;
  }
}

/** Validation error codes per request part, see `FastifyContextConfig.validationErrorCode`. */
export type ValidationErrorCodes = Partial<Record<"body" | "params" | "querystring" | "headers", ErrorCode>>;

/** The per-route settings of {@link mapError} (a route's `config`, see `FastifyContextConfig`). */
export interface ErrorRouteConfig {
  /** See `FastifyContextConfig.validationErrorCode`. */
  validationErrorCode?: ErrorCode | ValidationErrorCodes | undefined;
  /** See `FastifyContextConfig.bodyTooLarge`. */
  bodyTooLarge?: { code: ErrorCode; message: string } | undefined;
  /** See `FastifyContextConfig.backend`. */
  backend?: string | undefined;
}

/** node-redis errors (and socket errors) that mean "Redis cannot be asked right now". */
const REDIS_UNAVAILABLE_NAMES = new Set([
  "ClientOfflineError",
  "ClientClosedError",
  "ConnectionTimeoutError",
  "SocketClosedUnexpectedlyError",
  "SocketTimeoutError",
  "ReconnectStrategyError",
  "DisconnectsClientError",
  "TimeoutError",
]);
const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * Whether `err` says that Redis is unreachable (client offline or closed, connection lost or timed
 * out), as opposed to a refused operation or a bug. The API's one Redis-down classifier.
 * @param err - anything thrown.
 * @returns true for node-redis connection errors and socket errors (`ECONNREFUSED`, …).
 */
export function isRedisUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return REDIS_UNAVAILABLE_NAMES.has(err.constructor.name) || REDIS_UNAVAILABLE_NAMES.has(err.name) || SOCKET_CODES.has(String(code));
}

/** Result of {@link mapError}: the HTTP status and the problems to report. */
export interface MappedError {
  /** HTTP status. */
  status: number;
  /** At least one problem; the first is the body's `error`. */
  details: ApiErrorDetail[];
  /** Whether the error is unexpected (5xx) and must be logged with its details. */
  unexpected: boolean;
}

interface ValidationItem {
  instancePath?: string;
  keyword?: string;
  params?: Record<string, unknown>;
  message?: string;
}

const ES_UNAVAILABLE_STATUS = new Set([408, 429, 502, 503, 504]);
const CODE_BY_BODY_KEY: Record<string, ErrorCode> = {
  query: "CS_QUERY_INVALID",
  sort: "CS_SORT_INVALID",
  size: "CS_SIZE_INVALID",
  _source: "CS_SOURCE_INVALID",
  search_after: "CS_SEARCH_AFTER_INVALID",
  aggs: "CS_AGG_INVALID",
  aggregations: "CS_AGG_INVALID",
};

function detail(code: ErrorCode, message: string, path: string | null = null): ApiErrorDetail {
  return { code, message, path };
}

function single(code: ErrorCode, message: string, path: string | null = null): MappedError {
  const status = ERROR_CODES[code].status;
  return { status, details: [detail(code, message, path)], unexpected: status >= 500 };
}

/** The JSON path of a validation item: the failing value, or for `required` the missing property. */
function itemPath(prefix: string, item: ValidationItem): string {
  const segments = pointerSegments(item.instancePath ?? "");
  const required = item.keyword === "required" ? (item.params?.requiredProperties ?? item.params?.missingProperty) : undefined;
  const missing = Array.isArray(required) ? required[0] : required;
  if (typeof missing === "string") segments.push(missing);
  const extra = item.keyword === "additionalProperties" ? item.params?.additionalProperties : undefined;
  const extraKey = Array.isArray(extra) ? extra[0] : extra;
  if (typeof extraKey === "string") segments.push(extraKey);
  return segmentsPath(prefix, segments);
}

/**
 * Maps Fastify schema-validation errors (TypeBox/Ajv shaped) of a request part to our details.
 * @param context - `body`, `params`, `querystring` or `headers`.
 * @param code - when given (routes with `config.validationErrorCode`), every problem gets this
 *   code and the failing part's path (body paths bare, others prefixed with the context).
 */
export function mapValidation(items: readonly ValidationItem[], context: string | undefined, code?: ErrorCode): ApiErrorDetail[] {
  const out: ApiErrorDetail[] = [];
  const seen = new Set<string>();
  const push = (d: ApiErrorDetail): void => {
    const key = `${d.code} ${d.path}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(d);
    }
  };
  if (code) {
    // Union branches (anyOf) report one item per branch plus the anyOf itself; keep the last (summary) per path.
    const byPath = new Map<string, ValidationItem>();
    for (const item of items) byPath.set(itemPath(context === "body" ? "" : (context ?? ""), item), item);
    for (const [path, item] of byPath) {
      const what = path || context || "request";
      const message =
        item.keyword === "required"
          ? `${what} is required`
          : item.keyword === "additionalProperties"
            ? `unknown key ${what}`
            : `${what} ${item.message ?? "is invalid"}`;
      push(detail(code, message, path || null));
    }
    return out.length > 0 ? out : [detail(code, "the request is invalid", null)];
  }
  for (const item of items) {
    const segments = pointerSegments(item.instancePath ?? "");
    if (context !== "body") {
      push(detail("CS_BAD_REQUEST", `${context ?? "request"} ${item.message ?? "is invalid"}`, segmentsPath(context ?? "", segments)));
      continue;
    }
    const extra = item.keyword === "additionalProperties" ? item.params?.additionalProperties : undefined;
    const extraKeys = Array.isArray(extra) ? extra.map(String) : typeof extra === "string" ? [extra] : [];
    if (segments.length === 0 && extraKeys.length > 0) {
      for (const k of extraKeys) push(detail("CS_BODY_INVALID", unknownKeyMessage(k), jsonPath("", k)));
      continue;
    }
    const top = segments[0];
    if (top === undefined) {
      push(detail("CS_BODY_INVALID", "the body must be a JSON object", null));
      continue;
    }
    // Own keys only: a body key such as `toString` must not find Object.prototype's.
    const keyCode = Object.hasOwn(CODE_BY_BODY_KEY, top) ? CODE_BY_BODY_KEY[top] : undefined;
    if (!keyCode) {
      push(detail("CS_BODY_INVALID", unknownKeyMessage(top), jsonPath("", top)));
      continue;
    }
    push(detail(keyCode, `${top} ${item.message ?? "is invalid"}`, segmentsPath("", segments)));
  }
  return out.length > 0 ? out : [detail("CS_BODY_INVALID", "the body is invalid", null)];
}

/** Whether ES refused the request for creating too many aggregation buckets (`search.max_buckets`). */
function tooManyBuckets(err: InstanceType<typeof esErrors.ResponseError>): boolean {
  return JSON.stringify(err.body ?? "").includes("too_many_buckets_exception");
}

/** ES's own explanation of a rejected request (root cause reason), trimmed to 300 characters. */
function esReason(err: InstanceType<typeof esErrors.ResponseError>): string {
  const body = err.body as { error?: { reason?: string; root_cause?: Array<{ reason?: string }> } } | string | undefined;
  const reason = typeof body === "object" ? (body.error?.root_cause?.[0]?.reason ?? body.error?.reason) : undefined;
  return (reason ?? "Elasticsearch rejected the query").slice(0, 300);
}

/**
 * Maps any thrown value to a status and problems (pure; used by the error handler).
 * @param err - anything thrown by a route, hook, plugin or Fastify itself.
 * @param route - the route's `config` ({@link ErrorRouteConfig}), e.g. its `validationErrorCode`.
 * @returns the status, the details and whether the error is unexpected.
 */
export function mapError(err: unknown, route: ErrorRouteConfig = {}): MappedError {
  if (err instanceof ApiError) return { status: err.statusCode, details: err.details, unexpected: err.statusCode >= 500 };
  if (err instanceof AccountError) {
    return { status: ACCOUNT_ERROR_HTTP_STATUS[err.code], details: [detail(err.code, err.message, err.field ?? null)], unexpected: false };
  }
  if (isRuleStoreError(err)) {
    const d = ruleStoreErrorDetail(err);
    return { status: ERROR_CODES[d.code].status, details: [d], unexpected: false };
  }
  if (err instanceof esErrors.ResponseError) {
    const status = err.statusCode ?? err.meta?.statusCode ?? 500;
    if (tooManyBuckets(err))
      return single(
        "CS_AGG_TOO_MANY_BUCKETS",
        "the aggregations create too many buckets; raise the interval, add hard_bounds, or narrow the query",
        "aggs",
      );
    if (status === 400) return single("CS_QUERY_REJECTED", esReason(err));
    if (ES_UNAVAILABLE_STATUS.has(status)) return single("CS_BACKEND_UNAVAILABLE", `Elasticsearch answered ${status}`);
    return single("CS_INTERNAL", "internal error");
  }
  if (
    err instanceof esErrors.ConnectionError ||
    err instanceof esErrors.TimeoutError ||
    err instanceof esErrors.NoLivingConnectionsError ||
    err instanceof esErrors.ProductNotSupportedError
  ) {
    return single("CS_BACKEND_UNAVAILABLE", "Elasticsearch is unavailable or timed out");
  }
  const e = err as { validation?: ValidationItem[]; validationContext?: string; code?: string; statusCode?: number } | undefined;
  if (e && Array.isArray(e.validation)) {
    const codes = route.validationErrorCode;
    const code = typeof codes === "object" ? codes[e.validationContext as keyof ValidationErrorCodes] : codes;
    const details = mapValidation(e.validation, e.validationContext, code);
    const first = details[0] as ApiErrorDetail;
    return { status: ERROR_CODES[first.code].status, details, unexpected: false };
  }
  if (isRedisUnavailable(err))
    return single("CS_BACKEND_UNAVAILABLE", `${route.backend ?? "Redis"} is temporarily unavailable; retry later`);
  switch (e?.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      if (route.bodyTooLarge) return single(route.bodyTooLarge.code, route.bodyTooLarge.message);
      return single("CS_BODY_TOO_LARGE", "the body is too large");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return single("CS_UNSUPPORTED_MEDIA_TYPE", "send the body as Content-Type: application/json");
    case "FST_ERR_BAD_URL":
      return single("CS_URL_INVALID", "the URL path is not validly percent-encoded");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return single("CS_URL_TOO_LONG", "a path segment is longer than 100 characters");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return single("CS_BODY_INVALID", "the body is not valid JSON");
    default:
      break;
  }
  if (err instanceof SyntaxError && e?.statusCode === 400) return single("CS_BODY_INVALID", "the body is not valid JSON");
  const status = typeof e?.statusCode === "number" ? e.statusCode : 500;
  if (status === 404) return single("CS_ROUTE_NOT_FOUND", "no such route");
  if (status === 413) return single("CS_BODY_TOO_LARGE", "the body is too large");
  if (status === 415) return single("CS_UNSUPPORTED_MEDIA_TYPE", "send the body as Content-Type: application/json");
  if (status >= 400 && status < 500) return single("CS_BAD_REQUEST", "the request is malformed");
  return single("CS_INTERNAL", "internal error");
}

/**
 * The raw HTTP/1.1 answer to a connection-level client error (Node's `clientError` event: no
 * request object exists), with the usual error body and `Connection: close`:
 * `ERR_HTTP_REQUEST_TIMEOUT` (headers or request timeout, see api/app.ts `serverTimeouts`) → 408
 * `CS_REQUEST_TIMEOUT`; `HPE_HEADER_OVERFLOW` → 431 `CS_HEADERS_TOO_LARGE`; any other parse
 * error (bad request line, bad header, bad chunked encoding) → 400 `CS_BAD_REQUEST`.
 * @returns null for `ECONNRESET` (the client is gone: nothing to answer).
 */
export function clientErrorAnswer(err: { code?: string } | undefined): string | null {
  if (err?.code === "ECONNRESET") return null;
  const [code, message]: [ErrorCode, string] =
    err?.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? ["CS_REQUEST_TIMEOUT", "the request did not arrive in time"]
      : err?.code === "HPE_HEADER_OVERFLOW"
        ? ["CS_HEADERS_TOO_LARGE", "the request headers are too large"]
        : ["CS_BAD_REQUEST", "the request is not valid HTTP/1.1"];
  const status = ERROR_CODES[code].status;
  const body = JSON.stringify(errorBody([detail(code, message)]));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n` +
    "Content-Type: application/json; charset=utf-8\r\n" +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/**
 * Fastify's `clientErrorHandler` option (the server's `clientError` listener, called with the app
 * as `this`): writes {@link clientErrorAnswer} when the socket is still writable, then destroys it.
 * Logged at debug level only: these are the client's (or its network's) failures.
 */
export function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Duplex): void {
  if (socket.destroyed) return;
  const answer = clientErrorAnswer(err);
  this.log.debug({ err }, "client error");
  // As Node's own default: answer unless the socket is not writable or an answer to an earlier
  // (pipelined) request has started on it, then destroy (a small write goes to the kernel at once).
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (answer !== null && socket.writable && !inFlight) socket.write(answer);
  socket.destroy();
}

/**
 * Fastify's `frameworkErrors` option: errors the router raises before a route is chosen, so before
 * any hook (authentication, rate limit) or error handler runs. Answers them with the error body via
 * {@link mapError}: bad percent-encoding in the path (`FST_ERR_BAD_URL`) → 400 CS_URL_INVALID, a
 * path parameter over the router's length limit (`FST_ERR_MAX_PARAM_LENGTH`) → 414
 * CS_URL_TOO_LONG; anything else (an async constraint failing) → 500 CS_INTERNAL, logged.
 */
export function frameworkErrorHandler(err: Error, request: FastifyRequest, reply: FastifyReply): void {
  const mapped = mapError(err);
  if (mapped.unexpected) request.log.error({ err }, "request failed before routing");
  void reply.code(mapped.status).type("application/json; charset=utf-8").send(errorBody(mapped.details));
}

/** Installs the error handler and the not-found handler on the whole app. */
export const errorsPlugin: FastifyPluginAsync = globalPlugin(async (app) => {
  app.setErrorHandler(async (err, request, reply) => {
    const mapped = mapError(err, request.routeOptions.config ?? {});
    if (mapped.unexpected) {
      if (mapped.status === 503) request.log.warn({ err }, "backend unavailable");
      else request.log.error({ err }, "request failed");
    }
    return reply.code(mapped.status).type("application/json; charset=utf-8").send(errorBody(mapped.details));
  });
  app.setNotFoundHandler(async (request, reply) => {
    return reply
      .code(404)
      .type("application/json; charset=utf-8")
      .send(errorBody([detail("CS_ROUTE_NOT_FOUND", `no route ${request.method} ${request.url.split("?")[0]}`)]));
  });
}, "chainsift-errors");
