/**
 * TypeBox schemas of the search routes. The body schema checks only the top level (known keys and
 * their JSON types); the query tree, sort fields, size bounds and `_source` paths are checked by
 * the allowlist validator (api/dsl/validate.ts), which knows the requested kinds.
 * @module
 */
import { type Static, Type } from "typebox";

/** Path parameters of `POST /:technology/:blockchain/:network/es/:kinds/search/`. */
export const SearchParams = Type.Object({
  technology: Type.String(),
  blockchain: Type.String(),
  network: Type.String(),
  kinds: Type.String(),
});

/** Path parameters of `GET /:technology/:blockchain/:network/es/block/:hash/`. */
export const BlockParams = Type.Object({
  technology: Type.String(),
  blockchain: Type.String(),
  network: Type.String(),
  hash: Type.String(),
});

/** Top level of a query body: all keys optional, no other keys. */
export const SearchBody = Type.Object(
  {
    query: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    sort: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Array(Type.Unknown())])),
    size: Type.Optional(Type.Integer()),
    _source: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

/** Static type of {@link SearchBody}. */
export type SearchBodyType = Static<typeof SearchBody>;
