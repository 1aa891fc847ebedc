/**
 * Random instances of a JSON Schema, as a fast-check arbitrary: what an independent client does
 * when it generates requests from the OpenAPI document (e.g. the probe that found every rule
 * generated from the published rule schema refused). Used to prove that the rule schema describes
 * what `validateRuleInput` accepts.
 *
 * Supports the subset the rule schemas use and throws on anything else, so a schema change that
 * the generator would silently misread fails the test instead: `type` object / array / string /
 * integer / boolean / null, `properties`, `required`, `additionalProperties` (a boolean or absent),
 * `maxProperties`, `anyOf` (also beside `properties`, as a list of `const` overrides), `enum`,
 * `const`, `minItems`, `maxItems`, `uniqueItems`, `minLength`, `maxLength`, `pattern`, `minimum`,
 * `maximum`, and the annotations `description`, `default`, `examples`, `format`, `x-*`.
 *
 * Strings: from `pattern` when there is one (fast-check `stringMatching`), else short ASCII, any
 * Unicode, or exactly `maxLength` code points (to hit the caps). Additional properties (where
 * allowed): up to `x-chainsift-maxAdditionalProperties` (else 2) small JSON values under new names.
 * @module
 */
import fc from "fast-check";

/** A JSON Schema object (the subset above). */
export type JsonSchema = Record<string, unknown>;

const ANNOTATIONS = new Set(["description", "default", "examples", "format", "title"]);
const KNOWN = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "maxProperties",
  "anyOf",
  "enum",
  "const",
  "items",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minLength",
  "maxLength",
  "pattern",
  "minimum",
  "maximum",
]);

/** JSON with object keys sorted: deep-equal values give the same text (for `uniqueItems`). */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

function codePoints(s: string): number {
  return [...s].length;
}

function stringArbitrary(schema: JsonSchema): fc.Arbitrary<string> {
  const min = (schema.minLength as number | undefined) ?? 0;
  const max = schema.maxLength as number | undefined;
  if (typeof schema.pattern === "string") {
    const re = new RegExp(schema.pattern, "u");
    return fc
      .stringMatching(new RegExp(schema.pattern))
      .filter((s) => re.test(s) && codePoints(s) >= min && (max === undefined || codePoints(s) <= max));
  }
  const small = Math.max(min, Math.min(max ?? 12, 12));
  const options: fc.Arbitrary<string>[] = [
    fc.string({ minLength: min, maxLength: small }),
    fc.string({ unit: "binary", minLength: min, maxLength: small }),
  ];
  if (max !== undefined) options.push(fc.string({ unit: "binary", minLength: max, maxLength: max }));
  return fc.oneof(...options);
}

function objectArbitrary(schema: JsonSchema, path: string): fc.Arbitrary<Record<string, unknown>> {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, s] of Object.entries(properties)) model[k] = schemaArbitrary(s, `${path}.${k}`);
  let base: fc.Arbitrary<Record<string, unknown>> = fc.record(model, { requiredKeys: [...required] as never[] }) as fc.Arbitrary<
    Record<string, unknown>
  >;
  const additional = schema.additionalProperties;
  if (additional !== undefined && additional !== false && additional !== true) {
    throw new Error(`${path}: additionalProperties other than a boolean or absent is not supported`);
  }
  if (additional !== false) {
    const declared = Object.keys(properties).length;
    const annotated = schema["x-chainsift-maxAdditionalProperties"] as number | undefined;
    const byCount = schema.maxProperties === undefined ? 2 : (schema.maxProperties as number) - declared;
    const most = Math.max(0, Math.min(annotated ?? 2, byCount));
    const extras = fc.dictionary(
      fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !(k in properties) && k !== "__proto__"),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: most },
    );
    base = fc.tuple(base, extras).map(([o, x]) => ({ ...x, ...o }));
  }
  if (Array.isArray(schema.anyOf)) {
    // Beside properties: each branch pins some properties to constants (e.g. the served chains).
    const overrides = (schema.anyOf as JsonSchema[]).map((branch, i) => {
      const pinned: Record<string, unknown> = {};
      for (const [k, s] of Object.entries((branch.properties ?? {}) as Record<string, JsonSchema>)) {
        if (!("const" in s) || Object.keys(branch).some((key) => key !== "properties")) {
          throw new Error(`${path}.anyOf[${i}]: only {properties: {name: {const}}} branches are supported beside properties`);
        }
        pinned[k] = s.const;
      }
      return pinned;
    });
    base = fc
      .tuple(base, fc.constantFrom(...overrides))
      .map(([o, pinned]) => ({ ...o, ...Object.fromEntries(Object.entries(pinned).filter(([k]) => k in o)) }));
  }
  return base;
}

/**
 * A fast-check arbitrary of instances of `schema` (see the module doc for the supported subset).
 * @param schema a JSON Schema (e.g. a request body schema of an OpenAPI document).
 * @param path where `schema` is, for error messages.
 * @throws {Error} on a keyword outside the supported subset (or `$ref`).
 */
export function schemaArbitrary(schema: JsonSchema, path = "#"): fc.Arbitrary<unknown> {
  for (const key of Object.keys(schema)) {
    if (!KNOWN.has(key) && !ANNOTATIONS.has(key) && !key.startsWith("x-")) throw new Error(`${path}: unsupported keyword ${key}`);
  }
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.anyOf) && schema.type === undefined) {
    return fc.oneof(...(schema.anyOf as JsonSchema[]).map((s, i) => schemaArbitrary(s, `${path}.anyOf[${i}]`)));
  }
  switch (schema.type) {
    case "object":
      return objectArbitrary(schema, path);
    case "array": {
      const item = schemaArbitrary((schema.items ?? {}) as JsonSchema, `${path}[]`);
      const minLength = (schema.minItems as number | undefined) ?? 0;
      const maxLength = Math.min((schema.maxItems as number | undefined) ?? minLength + 3, minLength + 3);
      return schema.uniqueItems === true
        ? fc.uniqueArray(item, { minLength, maxLength, selector: canonical })
        : fc.array(item, { minLength, maxLength });
    }
    case "string":
      return stringArbitrary(schema);
    case "integer":
      return fc.integer({
        min: (schema.minimum as number | undefined) ?? -1_000_000,
        max: (schema.maximum as number | undefined) ?? 1_000_000_000,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    default:
      throw new Error(`${path}: unsupported schema ${JSON.stringify(schema).slice(0, 200)}`);
  }
}
