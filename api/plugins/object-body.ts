/**
 * The rule that a request body, when a route takes one, is a JSON object: `null`, arrays, numbers,
 * strings and booleans are refused with 400 `CS_BODY_INVALID` (path null), the same answer as a
 * body that is not JSON at all. Without it, a route that reads "no body" as `{}` (the search
 * routes, token issuing) took a JSON `null` for "no body" and answered 200/201.
 *
 * An empty body is not affected: it parses to `undefined` and keeps its meaning per route.
 * api/app.ts installs the hook on the search and admin routes only: the alerting rules routes
 * validate their bodies themselves (400 `CS_RULE_INVALID`, "the rule must be a JSON object").
 * @module
 */
import type { FastifyRequest } from "fastify";
import { apiError } from "../errors.js";

/** What a parsed JSON value is, for messages: `null`, `an array`, `a number`, … */
function jsonKind(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : `a ${typeof v}`;
}

/**
 * A `preValidation` hook: on routes that declare a body schema, refuses a parsed body that is not
 * a JSON object. Register it on an instance whose routes all take object bodies; it runs before the
 * routes' own `preValidation` hooks, so such a body is refused before the path is checked (as
 * invalid JSON is, at parsing).
 * @throws {ApiError} `CS_BODY_INVALID` when the body is `null`, an array or a scalar.
 */
export async function requireObjectBody(request: FastifyRequest): Promise<void> {
  if (request.routeOptions.schema?.body === undefined) return;
  const body: unknown = request.body;
  if (body === undefined || (typeof body === "object" && body !== null && !Array.isArray(body))) return;
  throw apiError("CS_BODY_INVALID", `the body must be a JSON object, got ${jsonKind(body)}`);
}
