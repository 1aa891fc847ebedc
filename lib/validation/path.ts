/**
 * JSON paths of the validators (search DSL, aggregations, rules, the API's schema errors): how the
 * place of a problem in a request is written in `path`.
 *
 * Object keys that are identifiers are joined with `.`, other keys (e.g. dotted field names) are
 * written `["number.num"]`, array indexes `[1]`; the root is `""`. E.g.
 * `query.bool.filter[1].term["blockNumber.num"]`, `config.targetMap[0].value`.
 * @module
 */

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const INDEX = /^(0|[1-9][0-9]*)$/;

/**
 * Appends a key or array index to a JSON path: `jsonPath("query", "bool")` → `query.bool`,
 * `jsonPath("query.term", "number.num")` → `query.term["number.num"]`, `jsonPath("sort", 0)` → `sort[0]`,
 * `jsonPath("", "a b")` → `["a b"]`.
 * @param base - the path so far; `""` for the root.
 * @param key - a property name or an array index.
 * @returns the path of `key` below `base`.
 */
export function jsonPath(base: string, key: string | number): string {
  if (typeof key === "number") return `${base}[${key}]`;
  if (!IDENTIFIER.test(key)) return `${base}[${JSON.stringify(key)}]`;
  return base === "" ? key : `${base}.${key}`;
}

/**
 * The unescaped segments of a JSON Pointer (RFC 6901; as Ajv and TypeBox report `instancePath`):
 * `/sort/0/a~1b` → `["sort", "0", "a/b"]`, `""` → `[]`.
 * @param pointer - `""` or a string starting with `/`.
 * @returns the segments, in order.
 */
export function pointerSegments(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/**
 * Appends path segments (e.g. from {@link pointerSegments}) to a JSON path; a segment that is a
 * canonical decimal index (`0`, `12`, not `01`) is written as an array index.
 * @param base - the path so far; `""` for the root.
 * @param segments - property names or indexes as strings.
 * @returns e.g. `segmentsPath("", ["config", "targetMap", "0"])` → `config.targetMap[0]`.
 */
export function segmentsPath(base: string, segments: readonly string[]): string {
  return segments.reduce((path, seg) => jsonPath(path, INDEX.test(seg) ? Number(seg) : seg), base);
}

/**
 * A JSON Pointer as a JSON path: `/config/targetMap/0/value` → `config.targetMap[0].value`.
 * @param pointer - `""` or a string starting with `/`.
 * @param base - the path the pointer is relative to; default the root `""`.
 * @returns the JSON path.
 */
export function pointerToPath(pointer: string, base = ""): string {
  return segmentsPath(base, pointerSegments(pointer));
}
