/**
 * TypeBox schemas of the user-ABI routes. The body schema is lib/abis/schema.ts's
 * `AbiRegistrationBodySchema` (the one schema of a registration: it validates and documents).
 * @module
 */
import { Type } from "typebox";
import { AbiSchema } from "../../../lib/abis/schema.js";
import { component } from "../../../lib/validation/component.js";

/** `:address` of the ABI routes: a contract address in any letter case, or `any`. */
export const AbiParams = Type.Object({
  address: Type.String({
    pattern: "^(0[xX][0-9a-fA-F]{40}|[aA][nN][yY])$",
    description: "Contract address (0x + 40 hex digits, any letter case), or `any` for event ABIs that apply to every contract",
  }),
});

/** Where the re-decode of history after a registration stands (lib/abis/redecode-status.ts). */
export const RedecodeStatusSchema = Type.Object(
  {
    state: Type.Union([Type.Literal("running"), Type.Literal("done"), Type.Literal("failed"), Type.Literal("gave_up")], {
      description:
        "`running`; `done`; `failed`: the last attempt failed and another one is due at `nextAttemptAt`; `gave_up`: every attempt failed, register the ABI again to retry",
    }),
    registrationAt: Type.String({ description: "`updatedAt` of the registration this re-decode is for" }),
    attempts: Type.Integer({ description: "Attempts so far, the current one included" }),
    logs: Type.Optional(Type.Integer({ description: "Logs read from the log index (`done`)" })),
    events: Type.Optional(Type.Integer({ description: "Events produced (`done`)" })),
    truncated: Type.Optional(Type.Boolean({ description: "Whether CHAINSIFT_ABI_REDECODE_MAX_LOGS stopped it before the end (`done`)" })),
    lastError: Type.Union([Type.String(), Type.Null()], {
      description: "Message of the last failed attempt (kept after a later success), or null",
    }),
    nextAttemptAt: Type.Union([Type.String(), Type.Null()], {
      description: "When the next attempt is due (`failed`), ISO 8601 UTC, or null",
    }),
    at: Type.String({ description: "When this status was written, ISO 8601 UTC" }),
  },
  {
    description: "The re-decode of history that followed the registration (docs/decoding.md, Re-decode)",
    ...component("AbiRedecodeStatus"),
  },
);

/** A registration, as the routes answer it. */
export const AbiRegistrationSchema = Type.Object(
  {
    namespace: Type.String({ description: "`global`, or the id of the account that registered it" }),
    address: Type.String({ description: "Lower-case address, or `any`" }),
    name: Type.Union([Type.String(), Type.Null()], { description: "Label given at registration, or null" }),
    abi: AbiSchema,
    events: Type.Integer({ description: "Non-anonymous events of the ABI, the ones decoding uses" }),
    createdAt: Type.String({ description: "First registration, ISO 8601 UTC" }),
    updatedAt: Type.String({ description: "Last registration (replacement), ISO 8601 UTC" }),
    redecode: Type.Optional(
      Type.Union([RedecodeStatusSchema, Type.Null()], {
        description: "`GET /abis/<address>` only: the re-decode of history after the latest registration, or null when none was recorded",
      }),
    ),
  },
  { description: "A registered ABI", ...component("AbiRegistration") },
);

/** Answer of `GET /abis/` and `GET /admin/abis/`. */
export const AbiListSchema = Type.Object(
  { abis: Type.Array(AbiRegistrationSchema, { description: "The namespace's registrations, by address" }) },
  component("AbiList"),
);
