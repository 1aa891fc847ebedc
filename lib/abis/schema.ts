/**
 * The one TypeBox schema of a user ABI registration body (`PUT /abis/:address`, `PUT
 * /admin/abis/:address`, `npm run chainsift -- abis add`): it drives the API's validation and its
 * OpenAPI document, and the CLI checks files against it too (lib/abis/validate.ts).
 *
 * The ABI is the Solidity JSON ABI (https://docs.soliditylang.org/en/latest/abi-spec.html#json), as
 * `solc --abi`, Foundry, Hardhat and Etherscan's "Contract ABI" export it. Only `event` entries are
 * used for decoding; the other entry types are accepted (so a whole contract ABI can be pasted) and
 * their parameters are checked the same way.
 * @module
 */

import { type TSchema, Type } from "typebox";
import { component } from "../validation/component.js";

/** Most entries (events, functions, errors, …) in one registered ABI. */
export const MAX_ABI_ENTRIES = 2000;
/** Most parameters of one ABI entry (inputs, outputs, tuple components). */
export const MAX_ABI_PARAMS = 64;
/** Deepest nesting of tuple `components` (a tuple of a tuple of … 4 levels). */
export const MAX_TUPLE_DEPTH = 4;
/** Longest name (entry, parameter, registration label), in characters. */
export const MAX_ABI_NAME_LENGTH = 256;
/** Largest registration body, in bytes (the routes' `bodyLimit`): 512 KiB, which fits Uniswap's or Seaport's full ABI. */
export const MAX_ABI_BODY_BYTES = 512 * 1024;

const SIZES = Array.from({ length: 32 }, (_, i) => String((i + 1) * 8)).join("|");
/**
 * A Solidity ABI type: an elementary type or `tuple`, followed by any number of array suffixes
 * (`[]`, `[3]`). `uintN`/`intN` with N a multiple of 8 from 8 to 256 (bare `uint`/`int` mean 256),
 * `bytesN` with N from 1 to 32, `bytes`, `string`, `address`, `bool`, `function`.
 */
export const SOLIDITY_TYPE_PATTERN = `^(address|bool|string|function|tuple|bytes([1-9]|[12][0-9]|3[0-2])?|u?int(${SIZES})?)(\\[([1-9][0-9]{0,5})?\\])*$`;

const Name = (description: string) => Type.String({ maxLength: MAX_ABI_NAME_LENGTH, description });

/** A parameter whose `components` may nest `depth` more levels. */
function paramSchema(depth: number): TSchema {
  const properties: Record<string, TSchema> = {
    name: Type.Optional(Name("Parameter name; an empty or missing name decodes as `arg<position>`")),
    type: Type.String({ pattern: SOLIDITY_TYPE_PATTERN, description: "Solidity type, e.g. `uint256`, `address[]`, `tuple`, `tuple[2]`" }),
    internalType: Type.Optional(Type.String({ maxLength: MAX_ABI_NAME_LENGTH, description: "Compiler's type name (ignored)" })),
    indexed: Type.Optional(Type.Boolean({ description: "Events only: the argument is a topic" })),
  };
  if (depth > 0) {
    properties.components = Type.Optional(
      Type.Array(paramSchema(depth - 1), { maxItems: MAX_ABI_PARAMS, description: "Members of a `tuple` (and only of a tuple)" }),
    );
  }
  // Named per nesting level for the OpenAPI document (one model each): AbiParameter, AbiParameter1 (its components), …
  return Type.Object(properties, { additionalProperties: false, ...component(`AbiParameter${MAX_TUPLE_DEPTH - depth || ""}`) });
}

/** One parameter of an ABI entry (tuples nest up to {@link MAX_TUPLE_DEPTH} levels). */
export const AbiParamSchema = paramSchema(MAX_TUPLE_DEPTH);

const Params = (description: string) => Type.Optional(Type.Array(AbiParamSchema, { maxItems: MAX_ABI_PARAMS, description }));

/** One entry of a JSON ABI. Unknown keys are allowed (compilers add some), parameters are checked. */
export const AbiEntrySchema = Type.Object(
  {
    type: Type.Enum(["event", "function", "constructor", "fallback", "receive", "error"], {
      description: "Entry type; only `event` entries are used for decoding",
    }),
    name: Type.Optional(Name("Event, function or error name (required for events)")),
    inputs: Params("Arguments, in signature order"),
    outputs: Params("Return values (functions)"),
    anonymous: Type.Optional(
      Type.Boolean({ description: "Events: logged without topic0; such events cannot be recognised and are ignored" }),
    ),
    stateMutability: Type.Optional(Type.String({ maxLength: 32 })),
  },
  { additionalProperties: true, ...component("AbiEntry") },
);

/** A JSON ABI: 1 to {@link MAX_ABI_ENTRIES} entries. */
export const AbiSchema = Type.Array(AbiEntrySchema, {
  minItems: 1,
  maxItems: MAX_ABI_ENTRIES,
  description: "Solidity JSON ABI (an array of entries); for the `any` address, event entries only",
  ...component("Abi"),
});

/** Body of `PUT /abis/:address` and `PUT /admin/abis/:address`. */
export const AbiRegistrationBodySchema = Type.Object(
  {
    abi: AbiSchema,
    name: Type.Optional(Type.Union([Name("A label, e.g. the contract's name"), Type.Null()])),
  },
  { additionalProperties: false, ...component("AbiRegistrationBody") },
);

/** One JSON ABI entry, as validated by {@link AbiEntrySchema} (other keys kept as given). */
export interface AbiEntry {
  type: "event" | "function" | "constructor" | "fallback" | "receive" | "error";
  name?: string;
  inputs?: AbiParam[];
  outputs?: AbiParam[];
  anonymous?: boolean;
  stateMutability?: string;
  [key: string]: unknown;
}
/** One ABI parameter (recursive through `components`). */
export interface AbiParam {
  name?: string;
  type: string;
  internalType?: string;
  indexed?: boolean;
  components?: AbiParam[];
}
/** A registration body, as validated by {@link AbiRegistrationBodySchema}. */
export interface AbiRegistrationBody {
  abi: AbiEntry[];
  name?: string | null;
}
