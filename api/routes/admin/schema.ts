/**
 * TypeBox schemas of the admin routes: they validate requests and generate the OpenAPI document.
 * Response schemas only document the answers (the app serializes with `JSON.stringify`).
 * The store (lib/accounts/model.ts) validates the values again and has the last word (e.g. trimming,
 * e-mail syntax, expiry in the future).
 * @module
 */
import { Type } from "typebox";
import { MAX_EMAIL_LENGTH, MAX_NAME_LENGTH } from "../../../lib/accounts/model.js";
import { component } from "../../../lib/validation/component.js";

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T, description: string) => Type.Union([t, Type.Null()], { description });
const Time = (description: string) => Type.String({ description: `${description}, ISO 8601 UTC`, examples: ["2025-05-02T09:12:06.930Z"] });

/** An account, as the admin routes return it. */
export const AccountSchema = Type.Object(
  {
    id: Type.String({ description: "Account id (UUID v4)" }),
    name: Type.String(),
    email: Nullable(Type.String(), "Contact address, or null"),
    createdAt: Time("Creation time"),
    disabled: Type.Boolean({ description: "When true, none of the account's tokens authenticates" }),
  },
  { description: "An account", ...component("Account") },
);

/** What is known about a token (never its secret). */
export const TokenInfoSchema = Type.Object(
  {
    id: Type.String({ description: "Token id (UUID v4); what DELETE /admin/tokens/:tokenId takes" }),
    accountId: Type.String(),
    name: Nullable(Type.String(), "Label, or null"),
    prefix: Type.String({ description: "First 8 characters after cs_ of the secret" }),
    createdAt: Time("Issue time"),
    expiresAt: Nullable(Time("Expiry time"), "Expiry time, or null for none"),
    revokedAt: Nullable(Time("Revocation time"), "Revocation time, or null"),
    lastUsedAt: Type.Optional(Time("Last successful use (about a minute resolution)")),
  },
  { description: "An API token (without its secret)", ...component("TokenInfo") },
);

/** Body of `POST /admin/accounts/`. */
export const CreateAccountBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH, description: "Display name (not unique)" }),
    email: Type.Optional(Nullable(Type.String({ maxLength: MAX_EMAIL_LENGTH }), "Contact address")),
  },
  { additionalProperties: false, ...component("CreateAccountBody") },
);

/** Body of `POST /admin/accounts/:id/tokens/` (may be omitted). */
export const IssueTokenBody = Type.Object(
  {
    name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: MAX_NAME_LENGTH }), "Label shown in listings")),
    expiresAt: Type.Optional(
      Nullable(Type.String({ description: "ISO 8601 time in the future" }), "When the token stops working; null = never"),
    ),
  },
  { additionalProperties: false, ...component("IssueTokenBody") },
);

/** Answer of `POST /admin/accounts/:id/tokens/`. */
export const IssuedTokenSchema = Type.Object(
  {
    token: Type.String({ description: "The secret (cs_…), shown only in this answer: it is not stored" }),
    info: TokenInfoSchema,
  },
  component("IssuedToken"),
);

/** `:id` of the account routes. */
export const AccountParams = Type.Object({ id: Type.String({ description: "Account id" }) });

/** `:tokenId` of the token routes. */
export const TokenParams = Type.Object({ tokenId: Type.String({ description: "Token id" }) });

/** Answer of `GET /admin/accounts/`. */
export const AccountListSchema = Type.Object(
  { accounts: Type.Array(AccountSchema, { description: "All accounts, oldest first" }) },
  component("AccountList"),
);

/** Answer of `GET /admin/accounts/:id/tokens/`. */
export const TokenListSchema = Type.Object(
  {
    tokens: Type.Array(TokenInfoSchema, { description: "The account's tokens, oldest first, revoked and expired ones included" }),
  },
  component("TokenList"),
);
