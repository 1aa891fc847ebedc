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
  },
  { description: "A registered ABI", ...component("AbiRegistration") },
);

/** Answer of `GET /abis/` and `GET /admin/abis/`. */
export const AbiListSchema = Type.Object(
  { abis: Type.Array(AbiRegistrationSchema, { description: "The namespace's registrations, by address" }) },
  component("AbiList"),
);
