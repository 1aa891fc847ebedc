/**
 * User ABI routes: register the ABI of a contract (or event ABIs for every contract, address `any`)
 * so that the decode stage decodes its logs (docs/decoding.md, "User ABIs").
 *
 * | method | path                      | auth        | answer                                      |
 * | ------ | ------------------------- | ----------- | ------------------------------------------- |
 * | PUT    | /abis/:address            | API token   | 201 registration (new) / 200 (replaced)     |
 * | GET    | /abis/                    | API token   | 200 `{abis}`: the caller's registrations    |
 * | GET    | /abis/:address            | API token   | 200 registration with its `redecode` status |
 * | DELETE | /abis/:address            | API token   | 204                                         |
 * | PUT    | /admin/abis/:address      | admin token | 201 / 200, in the global namespace          |
 * | GET    | /admin/abis/              | admin token | 200 `{abis}`: the global registrations      |
 * | GET    | /admin/abis/:address      | admin token | 200 registration with its `redecode` status |
 * | DELETE | /admin/abis/:address      | admin token | 204                                         |
 *
 * Namespaces: every `/abis/` route acts in the caller's account namespace (`request.account.id`,
 * api/plugins/auth.ts); no parameter names another, so another account's registrations can be
 * neither read, replaced nor deleted (they answer 404 `CS_ABI_NOT_FOUND` like missing ones).
 * The global namespace is written with the admin token only. Which registration decodes an address
 * registered in several namespaces: pipeline/decode/abi-decoder.ts (global first, then the earliest).
 *
 * Validation: the body against `AbiRegistrationBodySchema` (lib/abis/schema.ts, also the OpenAPI
 * document), then `abiProblems` (lib/abis/model.ts); every problem is 400 `CS_ABI_INVALID` with its
 * path (`abi[3].inputs[1].type`). A body over 512 KiB is 413 `CS_ABI_TOO_LARGE`.
 * @module
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { abiProblems, GLOBAL_NAMESPACE, normalizeAbiAddress } from "../../../lib/abis/model.js";
import type { RedecodeStatusStore } from "../../../lib/abis/redecode-status.js";
import { type AbiRegistrationBody, AbiRegistrationBodySchema, MAX_ABI_BODY_BYTES } from "../../../lib/abis/schema.js";
import { type AbiStore, AbiStoreError } from "../../../lib/abis/store.js";
import { ApiError, apiError } from "../../errors.js";
import { requireObjectBody } from "../../plugins/object-body.js";
import { ErrorBodySchema } from "../search/schema.js";
import { AbiListSchema, AbiParams, AbiRegistrationSchema } from "./schema.js";

/** Dependencies of {@link abisRoutes}. */
export interface AbisRoutesDeps {
  /** The ABI store (lib/abis/store.ts) over the app's Redis client. */
  store: AbiStore;
  /** The re-decode statuses the decode stage writes (lib/abis/redecode-status.ts); absent: GET answers `redecode: null`. */
  redecodeStatus?: Pick<RedecodeStatusStore, "get">;
}

const errors = {
  400: ErrorBodySchema,
  401: ErrorBodySchema,
  404: ErrorBodySchema,
  409: ErrorBodySchema,
  413: ErrorBodySchema,
  503: ErrorBodySchema,
};

const ROUTE_CONFIG = {
  validationErrorCode: { body: "CS_ABI_INVALID", params: "CS_ABI_ADDRESS_INVALID" },
  bodyTooLarge: { code: "CS_ABI_TOO_LARGE", message: `an ABI registration body may have at most ${MAX_ABI_BODY_BYTES} bytes` },
  backend: "the ABI store",
} as const;

/** The caller's namespace: its account id (api/plugins/auth.ts); 401 when there is none. */
function accountNamespace(request: FastifyRequest): string {
  const id = request.account?.id;
  if (!id) throw apiError("CS_AUTH_REQUIRED", "a valid bearer token is required: Authorization: Bearer <token>");
  return id;
}

function addressOf(request: { params: { address: string } }): string {
  const a = normalizeAbiAddress(request.params.address);
  if (!a) throw apiError("CS_ABI_ADDRESS_INVALID", "expected 0x followed by 40 hex digits, or any", "params.address");
  return a;
}

const notFound = (address: string) => apiError("CS_ABI_NOT_FOUND", `no ABI registered for ${address} in this namespace`, "params.address");

/**
 * Builds the plugin of the ABI routes (account routes under `/abis/`, global ones under `/admin/abis/`).
 * @param deps - the store.
 */
export function abisRoutes(deps: AbisRoutesDeps): FastifyPluginAsyncTypebox {
  const { store, redecodeStatus } = deps;
  return async (app) => {
    app.addHook("preValidation", requireObjectBody);
    for (const scope of [
      { base: "/abis", admin: false, namespace: accountNamespace, tags: ["abis"], security: undefined, ids: "Abi" },
      {
        base: "/admin/abis",
        admin: true,
        namespace: () => GLOBAL_NAMESPACE,
        tags: ["admin"],
        security: [{ adminAuth: [] }],
        ids: "GlobalAbi",
      },
    ]) {
      const common = { tags: scope.tags, ...(scope.security ? { security: scope.security } : {}) };
      const config = { ...ROUTE_CONFIG, ...(scope.admin ? { admin: true } : {}) };
      const where = scope.admin ? "the global namespace" : "the caller's namespace";
      app.put(
        `${scope.base}/:address`,
        {
          bodyLimit: MAX_ABI_BODY_BYTES,
          config,
          schema: {
            ...common,
            operationId: `put${scope.ids}`,
            summary: `Register (or replace) the ABI of a contract, or event ABIs for any contract, in ${where}`,
            params: AbiParams,
            body: AbiRegistrationBodySchema,
            response: { 200: AbiRegistrationSchema, 201: AbiRegistrationSchema, ...errors },
          },
        },
        async (request, reply) => {
          const address = addressOf(request);
          const body = request.body as unknown as AbiRegistrationBody;
          const problems = abiProblems(body.abi, address);
          if (problems.length > 0) throw new ApiError(problems);
          try {
            const { registration, created } = await store.put(scope.namespace(request), address, body);
            return reply.code(created ? 201 : 200).send(registration as never);
          } catch (err) {
            if (err instanceof AbiStoreError) throw apiError(err.code, err.message);
            throw err;
          }
        },
      );
      app.get(
        `${scope.base}/`,
        {
          config,
          schema: {
            ...common,
            operationId: `list${scope.ids}s`,
            summary: `List the ABIs of ${where}`,
            response: { 200: AbiListSchema, ...errors },
          },
        },
        async (request) => ({ abis: (await store.list(scope.namespace(request))) as never[] }),
      );
      app.get(
        `${scope.base}/:address`,
        {
          config,
          schema: {
            ...common,
            operationId: `get${scope.ids}`,
            summary: `Get an ABI of ${where}`,
            params: AbiParams,
            response: { 200: AbiRegistrationSchema, ...errors },
          },
        },
        async (request) => {
          const address = addressOf(request);
          const namespace = scope.namespace(request);
          const reg = await store.get(namespace, address);
          if (!reg) throw notFound(address);
          const status = (await redecodeStatus?.get(namespace, address)) ?? null;
          // A status of an earlier registration of the address says nothing about this one.
          const redecode = status && status.registrationAt === reg.updatedAt ? status : null;
          return { ...reg, redecode } as never;
        },
      );
      app.delete(
        `${scope.base}/:address`,
        {
          config,
          schema: {
            ...common,
            operationId: `delete${scope.ids}`,
            summary: `Remove an ABI of ${where} (its logs decode no more; events already produced stay)`,
            params: AbiParams,
            response: { 204: { type: "null", description: "Removed" }, ...errors },
          },
        },
        async (request, reply) => {
          const address = addressOf(request);
          if (!(await store.remove(scope.namespace(request), address))) throw notFound(address);
          return reply.code(204).send(null);
        },
      );
    }
  };
}
