/**
 * Checks a value against a JSON Schema (a TypeBox schema) and reports every problem at the JSON
 * path of the deepest offending value, so that a caller can map each one to its own stable code
 * with a table ({@link SchemaIssue} → code), as lib/rules/validate.ts does.
 *
 * TypeBox's own `Errors()` answers a failing `anyOf` with one error per branch plus one for the
 * union, and stops at the first failing item of an array. So the check walks the schema itself:
 * - every object, array or scalar node is checked by TypeBox against a *shallow* copy of its
 *   schema (nested objects, arrays and unions replaced by `{}`; arrays keep their item count and
 *   uniqueness bounds), and the walk then descends into each nested value;
 * - a union (`anyOf`) is resolved to one branch before descending: among object branches by their
 *   *discriminator* (the property every branch constrains with `const` or `enum`, e.g. `operator`),
 *   the matching branch with the fewest problems (the first on a tie); when no branch matches the
 *   discriminator, a *merged* branch (every branch's properties, the discriminator as the union of
 *   their values) reports what is wrong; among other branches by the value's JSON type (the branch
 *   of that type the value satisfies, if any; for a union of literals none of which it is, one
 *   `enum` problem listing them all; else the first branch of that type).
 * Problems come in document order: per object, unknown properties first, then the schema's
 * properties in their order, each followed by what was found inside it. At most one problem per path
 * (the first: e.g. `maxLength` before `pattern`).
 * @module
 */
import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { jsonPath, pointerSegments, segmentsPath } from "./path.js";
import { isJsonObject } from "./problems.js";

/** One problem found by {@link checkAgainstSchema}. */
export interface SchemaIssue {
  /**
   * The JSON Schema keyword that failed (`type`, `required`, `enum`, `const`, `maxLength`,
   * `minItems`, `uniqueItems`, `pattern`, …), or `additionalProperties` for a property the schema
   * does not allow (TypeBox reports it as `boolean`), or `anyOf` when the value's JSON type fits no
   * branch of a union.
   */
  keyword: string;
  /** JSON path of the offending value (`a.b[0].c`; `""` the checked value); for `required`, the missing property's path. */
  path: string;
  /** {@link SchemaIssue.path} with every array index written `[]`: what code tables match on (`config.targetMap[].value`). */
  shape: string;
  /** The offending value (undefined for a missing property). */
  value: unknown;
  /** Human-readable explanation without the path, e.g. `must be a string, got a number`. */
  message: string;
}

type Schema = Record<string, unknown>;

const validators = new WeakMap<object, ReturnType<typeof Compile>>();
const shallowCopies = new WeakMap<object, Schema>();
const merged = new WeakMap<object, Schema>();

/** The compiled validator of a schema, compiled once. */
function validatorOf(schema: Schema): ReturnType<typeof Compile> {
  let v = validators.get(schema);
  if (!v) {
    v = Compile(schema as TSchema);
    validators.set(schema, v);
  }
  return v;
}

const isUnion = (s: Schema): s is Schema & { anyOf: Schema[] } => Array.isArray(s.anyOf);
const isArraySchema = (s: Schema) => s.type === "array";
const isObjectSchema = (s: Schema) => s.type === "object" && isJsonObject(s.properties);
const isCompound = (s: Schema) => isUnion(s) || isArraySchema(s) || isObjectSchema(s);
const propertiesOf = (s: Schema) => (s.properties ?? {}) as Record<string, Schema>;

/** The schema with nested objects, arrays and unions replaced by `{}` (arrays keep their own bounds, items unchecked). */
function shallow(schema: Schema): Schema {
  let copy = shallowCopies.get(schema);
  if (!copy) {
    if (isArraySchema(schema)) copy = { ...schema, items: {} };
    else if (isObjectSchema(schema)) {
      const properties = Object.fromEntries(Object.entries(propertiesOf(schema)).map(([k, s]) => [k, isCompound(s) ? {} : s]));
      copy = { ...schema, properties };
      delete copy.anyOf;
    } else copy = schema;
    shallowCopies.set(schema, copy);
  }
  return copy;
}

/** What a value is, in messages. */
export function kindOf(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`;
}

const list = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v)).join(", ");

/** The JSON type a schema branch takes (`string`, `array`, `null`, `object`, …), from `type` or `const`. */
function branchType(s: Schema): string | undefined {
  if (typeof s.type === "string") return s.type;
  if ("const" in s) return s.const === null ? "null" : typeof s.const;
  if (Array.isArray(s.enum)) return typeof s.enum[0];
  return undefined;
}

function jsonType(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

/** The discriminator of a union of object branches: a property every branch constrains with `const` or `enum`. */
function discriminatorOf(branches: Schema[]): string | undefined {
  if (!branches.every(isObjectSchema)) return undefined;
  const first = propertiesOf(branches[0]!);
  return Object.keys(first).find((key) =>
    branches.every((b) => {
      const p = propertiesOf(b)[key];
      return p !== undefined && ("const" in p || Array.isArray(p.enum));
    }),
  );
}

/** The values a discriminator property allows. */
const allowedValues = (s: Schema): unknown[] => ("const" in s ? [s.const] : (s.enum as unknown[]));

/** The merged branch of a discriminated union (see the module notes). */
function mergedBranch(union: Schema & { anyOf: Schema[] }, discriminator: string): Schema {
  let m = merged.get(union);
  if (!m) {
    const branches = union.anyOf;
    const keys = [...new Set(branches.flatMap((b) => Object.keys(propertiesOf(b))))];
    const properties: Record<string, Schema> = {};
    for (const key of keys) {
      const options = branches.map((b) => propertiesOf(b)[key]).filter((s): s is Schema => s !== undefined);
      if (key === discriminator) properties[key] = { enum: [...new Set(options.flatMap(allowedValues))] };
      else {
        const flat = options.flatMap((s) => (isUnion(s) ? s.anyOf : [s]));
        const unique = [...new Map(flat.map((s) => [JSON.stringify(s), s])).values()];
        properties[key] = unique.length === 1 ? unique[0]! : { anyOf: unique };
      }
    }
    // Required: what every branch requires alike (a property whose schema depends on the branch is
    // not required: which branch applies is unknown).
    const alike = (k: string) => new Set(branches.map((b) => JSON.stringify(propertiesOf(b)[k]))).size === 1;
    const required = keys.filter(
      (k) => branches.every((b) => ((b.required ?? []) as string[]).includes(k)) && (k === discriminator || alike(k)),
    );
    m = { ...branches[0], type: "object", properties, required };
    merged.set(union, m);
  }
  return m;
}

/** Describes a TypeBox error in words, with the offending value. */
function describe(keyword: string, params: Record<string, unknown>, value: unknown, fallback: string): string {
  switch (keyword) {
    case "required":
      return "is required";
    case "type":
      return `must be ${params.type === "array" || params.type === "object" || params.type === "integer" ? "an" : "a"} ${params.type}, got ${kindOf(value)}`;
    case "enum":
      return `must be one of ${list(params.allowedValues as unknown[])}, got ${JSON.stringify(value)}`;
    case "const":
      return `must be ${JSON.stringify(params.allowedValue)}, got ${JSON.stringify(value)}`;
    case "minLength":
      return params.limit === 1 ? "must not be empty" : `must have at least ${params.limit} characters`;
    case "maxLength":
      return `must have at most ${params.limit} characters, got ${[...String(value)].length}`;
    case "minItems":
    case "maxItems":
      return `${fallback}, got ${Array.isArray(value) ? value.length : 0}`;
    default:
      return fallback;
  }
}

/**
 * Checks `value` against `schema` (see the module notes).
 * @param value - any JSON value.
 * @param schema - a JSON Schema, e.g. a TypeBox schema (unions as `anyOf`).
 * @param path - the JSON path of `value` in the document; default `""`.
 * @returns every problem found, in document order, at most one per path; empty when `value` is valid.
 */
export function checkAgainstSchema(value: unknown, schema: TSchema, path = ""): SchemaIssue[] {
  return dedupe(walk(value, schema as unknown as Schema, path));
}

function dedupe(issues: SchemaIssue[]): SchemaIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => !seen.has(i.path) && seen.add(i.path));
}

function issue(keyword: string, path: string, value: unknown, message: string): SchemaIssue {
  return { keyword, path, shape: path.replace(/\[\d+\]/g, "[]"), value, message };
}

/** The problems of `value` against the shallow copy of `schema`, as {@link SchemaIssue}s. */
function ownIssues(value: unknown, schema: Schema, path: string): SchemaIssue[] {
  const own = shallow(schema);
  const validator = validatorOf(own);
  if (validator.Check(value)) return [];
  const out: SchemaIssue[] = [];
  for (const e of validator.Errors(value)) {
    const segments = pointerSegments(e.instancePath);
    const at = segmentsPath(path, segments);
    const v = segments.reduce<unknown>((o, s) => (o as Record<string, unknown> | undefined)?.[s], value);
    const params = e.params as Record<string, unknown>;
    if (e.keyword === "required") {
      for (const key of params.requiredProperties as string[]) out.push(issue("required", jsonPath(at, key), undefined, "is required"));
    } else if (e.keyword === "boolean" && e.schemaPath.endsWith("/additionalProperties")) {
      const allowed = Object.keys(propertiesOf(schema));
      out.push(issue("additionalProperties", at, v, `unknown property (allowed: ${list(allowed)})`));
    } else if (e.keyword === "uniqueItems" && Array.isArray(v)) {
      for (const i of params.duplicateItems as number[]) {
        const first = v.findIndex((item) => validatorOf({ const: item }).Check(v[i]));
        out.push(issue("uniqueItems", jsonPath(at, i), v[i], `duplicates ${jsonPath(at, first)} (items must be unique)`));
      }
    } else if (e.keyword !== "additionalProperties" && e.keyword !== "anyOf") {
      out.push(issue(e.keyword, at, v, describe(e.keyword, params, v, e.message)));
    }
  }
  return out;
}

/** Picks the branch of a union that `value` was meant for, or reports why none fits. */
function resolve(value: unknown, union: Schema & { anyOf: Schema[] }, path: string): { branch: Schema } | { problem: SchemaIssue } {
  const branches = union.anyOf;
  const discriminator = discriminatorOf(branches);
  if (discriminator !== undefined && isJsonObject(value)) {
    const candidates = branches.filter((b) => validatorOf(propertiesOf(b)[discriminator]!).Check(value[discriminator]));
    if (candidates.length === 0) return { branch: mergedBranch(union, discriminator) };
    let best = candidates[0]!;
    let fewest = Number.POSITIVE_INFINITY;
    for (const b of candidates) {
      const n = walk(value, b, path).length;
      if (n < fewest) [best, fewest] = [b, n];
    }
    return { branch: best };
  }
  const type = jsonType(value);
  const typed = branches.filter((b) => {
    const t = branchType(b);
    return t === type || (t === "integer" && Number.isInteger(value)) || (t === "number" && type === "number");
  });
  if (typed.length > 0) {
    // The branch the value satisfies, if any (e.g. the second literal of a union of literals).
    const valid = typed.find((b) => validatorOf(b).Check(value));
    if (valid) return { branch: valid };
    // A union of literals that the value is none of: one problem listing every allowed value.
    if (typed.length > 1 && typed.every((b) => "const" in b || Array.isArray(b.enum)))
      return { branch: { enum: [...new Set(typed.flatMap(allowedValues))] } };
    return { branch: typed[0]! };
  }
  const types = [...new Set(branches.map((b) => branchType(b) ?? "value"))];
  const message = `must be ${types.map((t) => (t === "null" ? "null" : `a ${t}`)).join(" or ")}, got ${kindOf(value)}`;
  return { problem: issue("anyOf", path, value, message) };
}

function walk(value: unknown, schema: Schema, path: string): SchemaIssue[] {
  if (isUnion(schema)) {
    const resolved = resolve(value, schema, path);
    return "problem" in resolved ? [resolved.problem] : walk(value, resolved.branch, path);
  }
  const found = ownIssues(value, schema, path);
  if (isArraySchema(schema) && Array.isArray(value)) {
    value.forEach((item, i) => {
      found.push(...walk(item, schema.items as Schema, jsonPath(path, i)));
    });
    return found;
  }
  if (!isObjectSchema(schema) || !isJsonObject(value)) return found;
  const properties = propertiesOf(schema);
  for (const [key, child] of Object.entries(properties)) {
    if (isCompound(child) && Object.hasOwn(value, key)) found.push(...walk(value[key], child, jsonPath(path, key)));
  }
  // Document order: unknown properties first, then the schema's properties in order (stable sort).
  const order = Object.keys(properties);
  const rank = (i: SchemaIssue) => {
    const rest = i.path.slice(path.length).replace(/^\./, "");
    const key = /^\["((?:[^"\\]|\\.)*)"\]/.exec(rest)?.[1] ?? /^[^.[]+/.exec(rest)?.[0] ?? "";
    const at = order.indexOf(key);
    return at === -1 ? -1 : at;
  };
  return found
    .map((i, n) => ({ i, n, r: rank(i) }))
    .sort((a, b) => a.r - b.r || a.n - b.n)
    .map(({ i }) => i);
}
