/**
 * Watchlists (docs/alerting.md "Watchlists"): named sets of addresses (or strings) per account.
 *
 * | method | path                                           | body                         | answer                          |
 * | ------ | ---------------------------------------------- | ---------------------------- | ------------------------------- |
 * | POST   | /alerting/watchlists/                          | {name, kind}                 | 201 watchlist (+ `Location`)    |
 * | GET    | /alerting/watchlists/                          | –                            | 200 `{watchlists}`              |
 * | GET    | /alerting/watchlists/:id/                      | –                            | 200 watchlist with `count`      |
 * | DELETE | /alerting/watchlists/:id/                      | –                            | 204                             |
 * | POST   | /alerting/watchlists/:id/members/              | JSON array, NDJSON or CSV    | 200 `{added, count}`            |
 * | POST   | /alerting/watchlists/:id/members/delete/       | JSON array, NDJSON or CSV    | 200 `{removed, count}`          |
 * | GET    | /alerting/watchlists/:id/members/:value/       | –                            | 200 `{member, value}`           |
 *
 * Bearer-token accounts as the rules routes; another account's watchlist answers 404. Uploads are
 * read whole (at most `bodyMaxBytes`, `maxMembersPerRequest` members), validated whole (the first bad
 * member answers 400 with its path and nothing is applied), then written in one SADD / SREM.
 * @module
 */
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { DEFAULT_WATCHLISTS_CONFIG, type WatchlistsConfig } from "../../../lib/config/watchlists.js";
import { component } from "../../../lib/validation/component.js";
import { normalizeMember, WATCHLIST_KINDS, type WatchlistStore, WatchlistStoreError } from "../../../lib/watchlists/store.js";
import { parseMembers } from "../../../lib/watchlists/upload.js";
import { apiError } from "../../errors.js";
import { callerId } from "../rules/index.js";
import { RULES_ERROR_RESPONSES, RulesErrorBodySchema } from "../rules/schema.js";

/** Base path of the watchlist routes. */
export const WATCHLISTS_PREFIX = "/alerting/watchlists";

/** Dependencies of {@link watchlistsRoutes}. */
export interface WatchlistsRoutesDeps {
  /** The store (lib/watchlists/store.ts). */
  store: WatchlistStore;
  /** Limits; default {@link DEFAULT_WATCHLISTS_CONFIG}. */
  limits?: WatchlistsConfig;
}

const common = { tags: ["alerting"] };
const errors = { ...RULES_ERROR_RESPONSES, 409: RulesErrorBodySchema, 413: RulesErrorBodySchema };
const Params = Type.Object({ id: Type.String({ format: "uuid", description: "The watchlist's id" }) });
// Named schemas (lib/validation/component.ts): one model each in generated clients.
const KindSchema = Type.Enum(WATCHLIST_KINDS, {
  description: "address: 0x + 40 hex digits, stored lowercased; string: 1–256 characters",
  ...component("WatchlistKind"),
});
const WatchlistSchema = Type.Object(
  {
    id: Type.String({ format: "uuid" }),
    accountId: Type.String(),
    name: Type.String(),
    kind: KindSchema,
    createdAt: Type.String({ format: "date-time" }),
    count: Type.Optional(Type.Integer({ minimum: 0, description: "Members (GET of one watchlist only)" })),
  },
  { additionalProperties: false, ...component("Watchlist") },
);
const CreateSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    kind: KindSchema,
  },
  { additionalProperties: false, ...component("WatchlistCreate") },
);
const ListSchema = Type.Object({ watchlists: Type.Array(WatchlistSchema) }, component("WatchlistList"));
const AddedSchema = Type.Object({ added: Type.Integer(), count: Type.Integer() }, component("WatchlistMembersAdded"));
const RemovedSchema = Type.Object({ removed: Type.Integer(), count: Type.Integer() }, component("WatchlistMembersRemoved"));
const MembershipSchema = Type.Object({ member: Type.Boolean(), value: Type.String() }, component("WatchlistMembership"));
const UPLOAD_DESCRIPTION =
  "Body: a JSON array of values (application/json), one value per line (application/x-ndjson: a JSON string or a bare value), or CSV (text/csv: the first column; a header line such as `address` is skipped). " +
  "Refusals: 400 CS_WATCHLIST_MEMBER_INVALID (path body[i] or lines[n], nothing applied), 413 CS_WATCHLIST_BATCH_TOO_LARGE, 409 CS_WATCHLIST_FULL.";

const ROUTE_CONFIG = {
  validationErrorCode: { body: "CS_WATCHLIST_INVALID", params: "CS_WATCHLIST_INVALID" },
  bodyTooLarge: { code: "CS_WATCHLIST_BATCH_TOO_LARGE", message: "the upload body is too large: split it" },
  backend: "the watchlist store",
} as const;

function idOf(request: FastifyRequest): string {
  return (request.params as { id: string }).id.toLowerCase();
}

/**
 * Builds the plugin of the watchlist routes. Needs the auth hook and the app's error handler.
 * @param deps see {@link WatchlistsRoutesDeps}.
 */
export function watchlistsRoutes(deps: WatchlistsRoutesDeps): FastifyPluginAsync {
  const { store } = deps;
  const limits = deps.limits ?? DEFAULT_WATCHLISTS_CONFIG;
  const owned = async (request: FastifyRequest) => {
    const accountId = callerId(request);
    const id = idOf(request);
    const w = await store.get(accountId, id);
    if (!w) throw apiError("CS_WATCHLIST_NOT_FOUND", `no watchlist with id ${id}`, "params.id");
    return { accountId, w };
  };
  const uploaded = async (request: FastifyRequest) => {
    const { accountId, w } = await owned(request);
    const csv = String(request.headers["content-type"] ?? "").startsWith("text/csv");
    const parsed = parseMembers(w.kind, request.body, csv, limits.maxMembersPerRequest);
    if (!parsed.ok) {
      if ("tooMany" in parsed) {
        throw apiError("CS_WATCHLIST_BATCH_TOO_LARGE", `one request may carry at most ${limits.maxMembersPerRequest} members`);
      }
      throw apiError("CS_WATCHLIST_MEMBER_INVALID", `not a valid ${w.kind}: ${parsed.bad.value}`, parsed.bad.path);
    }
    return { accountId, w, members: parsed.members };
  };
  return async (app) => {
    app.addContentTypeParser(["application/x-ndjson", "text/csv", "text/plain"], { parseAs: "string" }, (_req, body, done) =>
      done(null, body),
    );
    const upload = { config: ROUTE_CONFIG, bodyLimit: limits.bodyMaxBytes };
    app.post(
      `${WATCHLISTS_PREFIX}/`,
      {
        config: ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "createWatchlist",
          summary: "Create a watchlist",
          body: CreateSchema,
          response: { 201: WatchlistSchema, ...errors },
        },
      },
      async (request, reply) => {
        const body = request.body as { name: string; kind: (typeof WATCHLIST_KINDS)[number] };
        try {
          const w = await store.create(callerId(request), body);
          return reply.code(201).header("location", `${WATCHLISTS_PREFIX}/${w.id}/`).send(w);
        } catch (err) {
          if (err instanceof WatchlistStoreError) throw apiError(err.code, err.message);
          throw err;
        }
      },
    );
    app.get(
      `${WATCHLISTS_PREFIX}/`,
      {
        config: ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "listWatchlists",
          summary: "List the caller's watchlists, oldest first",
          response: { 200: ListSchema, ...errors },
        },
      },
      async (request) => ({ watchlists: await store.list(callerId(request)) }),
    );
    app.get(
      `${WATCHLISTS_PREFIX}/:id/`,
      {
        config: ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "getWatchlist",
          summary: "Get a watchlist and its member count",
          params: Params,
          response: { 200: WatchlistSchema, ...errors },
        },
      },
      async (request) => {
        const { accountId, w } = await owned(request);
        return { ...w, count: await store.count(accountId, w.id) };
      },
    );
    app.delete(
      `${WATCHLISTS_PREFIX}/:id/`,
      {
        config: ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "deleteWatchlist",
          summary: "Delete a watchlist and its members",
          params: Params,
          response: { 204: { type: "null" }, ...errors },
        },
      },
      async (request, reply) => {
        const { accountId, w } = await owned(request);
        await store.delete(accountId, w.id);
        return reply.code(204).send();
      },
    );
    app.post(
      `${WATCHLISTS_PREFIX}/:id/members/`,
      {
        ...upload,
        schema: {
          ...common,
          operationId: "addWatchlistMembers",
          summary: "Add members in bulk",
          description: UPLOAD_DESCRIPTION,
          params: Params,
          response: { 200: AddedSchema, ...errors },
        },
      },
      async (request) => {
        const { accountId, w, members } = await uploaded(request);
        try {
          return await store.add(accountId, w.id, members);
        } catch (err) {
          if (err instanceof WatchlistStoreError) throw apiError(err.code, err.message);
          throw err;
        }
      },
    );
    app.post(
      `${WATCHLISTS_PREFIX}/:id/members/delete/`,
      {
        ...upload,
        schema: {
          ...common,
          operationId: "removeWatchlistMembers",
          summary: "Remove members in bulk",
          description: UPLOAD_DESCRIPTION,
          params: Params,
          response: { 200: RemovedSchema, ...errors },
        },
      },
      async (request) => {
        const { accountId, w, members } = await uploaded(request);
        return store.remove(accountId, w.id, members);
      },
    );
    app.get(
      `${WATCHLISTS_PREFIX}/:id/members/:value/`,
      {
        config: ROUTE_CONFIG,
        schema: {
          ...common,
          operationId: "checkWatchlistMember",
          summary: "Whether a value is a member (normalised by the list's kind)",
          params: Type.Object({ id: Type.String({ format: "uuid" }), value: Type.String() }),
          response: { 200: MembershipSchema, ...errors },
        },
      },
      async (request) => {
        const { accountId, w } = await owned(request);
        const raw = (request.params as { value: string }).value;
        const value = normalizeMember(w.kind, raw);
        if (value === null) throw apiError("CS_WATCHLIST_MEMBER_INVALID", `not a valid ${w.kind}`, "params.value");
        const [member] = await store.contains(accountId, w.id, [value]);
        return { member: member === true, value };
      },
    );
  };
}
