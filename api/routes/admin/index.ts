/**
 * Admin endpoints: accounts and API tokens over HTTP (the same operations as the admin CLI),
 * protected by the admin credential (`Authorization: Bearer <config.api.adminToken>`, see
 * api/plugins/auth.ts; routes declare `config.admin`). Not rate limited once authenticated.
 *
 * | method | path                          | answer                                   |
 * | ------ | ----------------------------- | ---------------------------------------- |
 * | POST   | /admin/accounts/              | 201 account                              |
 * | GET    | /admin/accounts/              | 200 {accounts}                           |
 * | GET    | /admin/accounts/:id           | 200 account                              |
 * | POST   | /admin/accounts/:id/disable   | 200 account (disabled; idempotent)       |
 * | POST   | /admin/accounts/:id/tokens/   | 201 {token (shown once), info}           |
 * | GET    | /admin/accounts/:id/tokens/   | 200 {tokens}                             |
 * | GET    | /admin/tokens/:tokenId        | 200 token info                           |
 * | DELETE | /admin/tokens/:tokenId        | 204 (revoked at once; idempotent)        |
 *
 * Store errors (`AccountError`) are answered with their code and `ACCOUNT_ERROR_HTTP_STATUS`
 * (api/plugins/errors.ts); invalid bodies with `CS_ACCOUNT_INVALID` / `CS_TOKEN_INVALID`.
 * @module
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { apiError } from "../../errors.js";
import { ErrorBodySchema } from "../search/schema.js";
import {
  AccountListSchema,
  AccountParams,
  AccountSchema,
  CreateAccountBody,
  IssuedTokenSchema,
  IssueTokenBody,
  TokenInfoSchema,
  TokenListSchema,
  TokenParams,
} from "./schema.js";

const errors = { 400: ErrorBodySchema, 401: ErrorBodySchema, 404: ErrorBodySchema, 409: ErrorBodySchema, 503: ErrorBodySchema };
const common = { tags: ["admin"], security: [{ adminAuth: [] }] };

/**
 * `value` when the store found it.
 * @throws {ApiError} `code` (404) with the message `no <kind> with id "<id>"` and the path `params.<param>` when `value` is null.
 */
function found<T>(value: T | null, code: "CS_ACCOUNT_NOT_FOUND" | "CS_TOKEN_NOT_FOUND", kind: string, param: string, id: string): T {
  if (!value) throw apiError(code, `no ${kind} with id ${JSON.stringify(id)}`, `params.${param}`);
  return value;
}

/** Registers the `/admin/` routes (needs `app.accounts`). */
export const adminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const store = app.accounts;

  app.post(
    "/admin/accounts/",
    {
      config: { admin: true, validationErrorCode: "CS_ACCOUNT_INVALID" },
      schema: {
        ...common,
        operationId: "createAccount",
        summary: "Create an account",
        body: CreateAccountBody,
        response: { 201: AccountSchema, ...errors },
      },
    },
    async (request, reply) => {
      const account = await store.createAccount(request.body);
      return reply.code(201).send(account);
    },
  );

  app.get(
    "/admin/accounts/",
    {
      config: { admin: true },
      schema: { ...common, operationId: "listAccounts", summary: "List accounts", response: { 200: AccountListSchema, ...errors } },
    },
    async () => ({ accounts: await store.listAccounts() }),
  );

  app.get(
    "/admin/accounts/:id",
    {
      config: { admin: true },
      schema: {
        ...common,
        operationId: "getAccount",
        summary: "Get an account",
        params: AccountParams,
        response: { 200: AccountSchema, ...errors },
      },
    },
    async (request) => found(await store.getAccount(request.params.id), "CS_ACCOUNT_NOT_FOUND", "account", "id", request.params.id),
  );

  app.post(
    "/admin/accounts/:id/disable",
    {
      config: { admin: true },
      schema: {
        ...common,
        operationId: "disableAccount",
        summary: "Disable an account: its tokens stop working at once (idempotent)",
        params: AccountParams,
        response: { 200: AccountSchema, ...errors },
      },
    },
    async (request) => store.disableAccount(request.params.id),
  );

  app.post(
    "/admin/accounts/:id/tokens/",
    {
      config: { admin: true, validationErrorCode: "CS_TOKEN_INVALID" },
      schema: {
        ...common,
        operationId: "issueToken",
        summary: "Issue a token; the secret is in this answer only",
        params: AccountParams,
        body: IssueTokenBody,
        response: { 201: IssuedTokenSchema, ...errors },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const body = request.body ?? {};
      const issued = await store.issueToken(request.params.id, { name: body.name ?? null, expiresAt: body.expiresAt ?? null });
      return reply.code(201).header("cache-control", "no-store").send(issued);
    },
  );

  app.get(
    "/admin/accounts/:id/tokens/",
    {
      config: { admin: true },
      schema: {
        ...common,
        operationId: "listTokens",
        summary: "List an account's tokens",
        params: AccountParams,
        response: { 200: TokenListSchema, ...errors },
      },
    },
    async (request) => ({ tokens: await store.listTokens(request.params.id) }),
  );

  app.get(
    "/admin/tokens/:tokenId",
    {
      config: { admin: true },
      schema: {
        ...common,
        operationId: "getToken",
        summary: "Get a token's info",
        params: TokenParams,
        response: { 200: TokenInfoSchema, ...errors },
      },
    },
    async (request) =>
      found(await store.getToken(request.params.tokenId), "CS_TOKEN_NOT_FOUND", "token", "tokenId", request.params.tokenId),
  );

  app.delete(
    "/admin/tokens/:tokenId",
    {
      config: { admin: true },
      schema: {
        ...common,
        operationId: "revokeToken",
        summary: "Revoke a token with immediate effect (idempotent)",
        params: TokenParams,
        response: { 204: { type: "null", description: "Revoked" }, ...errors },
      },
    },
    async (request, reply) => {
      await store.revokeToken(request.params.tokenId);
      return reply.code(204).send(null);
    },
  );
};
