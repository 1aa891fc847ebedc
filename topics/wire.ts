/**
 * What a record carries on the wire (Kafka) beyond what it carries everywhere else, for consumers
 * in other languages: every quantity's exact value as a decimal string (`dec`, next to the double
 * `num` and the hex `raw`), every int/uint event argument's exact value (`args[].value.dec`), and the
 * block time as Avro `timestamp-millis` (`timestampMs`, next to the ISO `timestamp`). Doubles lose
 * precision beyond 2^53: on the mainnet fixtures 68 of 1,130 transaction `value.num` differ from
 * `raw`; `dec` never does. See docs/kafka-consumers.md.
 *
 * {@link toWire} adds these fields before Avro encoding; {@link fromWire} removes them after
 * decoding, so chainsift's own stages (and the Elasticsearch documents, `dynamic: strict`) see the
 * records of lib/records.ts unchanged. Both are pure and copy: the input is not mutated.
 *
 * The stages' hot path uses the per-schema forms instead: {@link compileToWire} (the same result
 * as {@link toWire} for every field the schema declares, copying only the objects on the way to a
 * quantity, an argument value or `timestampMs`) and {@link stripWireFields} (the schema without the
 * wire fields: an Avro reader schema, so decoding skips them instead of copying the record).
 * @module
 */
import type { AvroSchema } from "./schemas.js";

type Json = Record<string, unknown>;

/** A JSON-like object: not an array, not bytes (an Avro `bytes` field is a Buffer and stays one). */
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v) && !ArrayBuffer.isView(v);
const isQuantity = (v: Json): boolean => typeof v.num === "number" && typeof v.raw === "string" && v.raw.startsWith("0x");
/** An event argument value `{hex, num, scaled, type}` (lib/records.ts `EventArgValue`). */
const isArgValue = (v: Json): boolean => typeof v.hex === "string" && typeof v.type === "string" && "scaled" in v;

/**
 * The exact integer of an int/uint argument word, decimal; null for other types or non-hex values.
 * Signed types are two's complement of their bit width (Solidity ABI spec, "Formal Specification of the Encoding").
 */
function argDecimal(hex: string, type: string): string | null {
  const m = /^(u?)int(\d*)$/.exec(type);
  if (!m || !/^0x[0-9a-fA-F]+$/.test(hex)) return null;
  const word = BigInt(hex);
  return (m[1] === "u" ? word : BigInt.asIntN(Number(m[2] || 256), word)).toString();
}

/** Sets `out.dec` from `v` when `v` is a quantity or an int/uint argument value (else leaves it). */
function setDec(out: Json, v: Json): void {
  if (isQuantity(v)) out.dec = BigInt(v.raw as string).toString();
  else if (isArgValue(v)) out.dec = argDecimal(v.hex as string, v.type as string);
}

/** Sets `out.timestampMs` (ms since the epoch, null when unparsable) from `v.timestamp` when it is a string. */
function setTimestampMs(out: Json, v: Json): void {
  if (typeof v.timestamp !== "string") return;
  const ms = Date.parse(`${v.timestamp}Z`);
  out.timestampMs = Number.isNaN(ms) ? null : ms;
}

function addWire(v: unknown, top: boolean): unknown {
  if (Array.isArray(v)) return v.map((x) => addWire(x, false));
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = addWire(x, false);
  setDec(out, v);
  if (top) setTimestampMs(out, v);
  return out;
}

function removeWire(v: unknown, top: boolean): unknown {
  if (Array.isArray(v)) return v.map((x) => removeWire(x, false));
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === "dec" && (isQuantity(v) || isArgValue(v))) continue;
    if (top && k === "timestampMs") continue;
    out[k] = removeWire(x, false);
  }
  return out;
}

/**
 * The record as written to Kafka: `dec` on every quantity and int/uint event argument value,
 * `timestampMs` (ms since the epoch, UTC) on a record with an ISO `timestamp`. Fields a topic's
 * schema does not declare are ignored by the Avro encoder.
 * @param record - a record of lib/records.ts (any JSON value).
 * @returns a copy with the wire fields added.
 */
export function toWire(record: unknown): unknown {
  return addWire(record, true);
}

/**
 * The record as chainsift's stages use it: {@link toWire}'s fields removed (old messages, written
 * before they existed, decode with them null; they are removed too).
 * @param record - a decoded Avro record.
 * @returns a copy without the wire fields.
 */
export function fromWire(record: unknown): unknown {
  return removeWire(record, true);
}

/** A converter of one Avro type's values to their wire form; null: the values pass unchanged. */
type Conv = ((v: unknown) => unknown) | null;

/** An Avro record schema's field list (`fields`), or undefined for another type. */
const fieldsOf = (t: Json): Json[] | undefined => (t.type === "record" && Array.isArray(t.fields) ? (t.fields as Json[]) : undefined);
/** Whether a record type carries a wire `dec` field: the quantity and event argument value records. */
const hasDec = (fields: Json[]): boolean => fields.some((f) => f.name === "dec");

/**
 * The wire transform of one Avro schema (a topic's value schema of topics/schemas.ts), compiled
 * once: for every field the schema declares, the result encodes to the same Avro bytes as
 * {@link toWire}'s (a unit test compares them on every fixture record kind). Copies only the
 * records that contain a wire field (a quantity, an argument value, the top-level `timestampMs`)
 * and the arrays and records on the way to them; everything else is shared with the input, which
 * is not mutated. Unions with more than one non-null branch fall back to {@link toWire}'s walk.
 * @param schema - an Avro record schema (JSON form).
 * @returns the transform (the identity when the schema has no wire field).
 */
export function compileToWire(schema: AvroSchema): (record: unknown) => unknown {
  const named = new Map<string, Conv>();
  const compile = (t: unknown, ns: string | undefined, top: boolean): Conv => {
    if (typeof t === "string") return named.get(t) ?? named.get(`${ns}.${t}`) ?? null;
    if (Array.isArray(t)) {
      const branches = t.filter((b) => b !== "null").map((b) => compile(b, ns, false));
      if (branches.every((c) => c === null)) return null;
      if (branches.length > 1) return (v) => addWire(v, false);
      const c = branches[0] as (v: unknown) => unknown;
      return (v) => (v === null || v === undefined ? v : c(v));
    }
    if (!isObject(t)) return null;
    if (t.type === "array") {
      const c = compile(t.items, ns, false);
      return c && ((v) => (Array.isArray(v) ? v.map(c) : v));
    }
    if (t.type === "map") {
      const c = compile(t.values, ns, false);
      return c && ((v) => (isObject(v) ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, c(x)])) : v));
    }
    const fields = fieldsOf(t);
    if (!fields) return typeof t.type === "string" && t.type !== "record" ? compile(t.type, ns, false) : null;
    const space = typeof t.namespace === "string" ? t.namespace : ns;
    const convs: Array<[string, (v: unknown) => unknown]> = [];
    for (const f of fields) {
      const c = compile(f.type, space, false);
      if (c) convs.push([f.name as string, c]);
    }
    const dec = hasDec(fields);
    const stamp = top && fields.some((f) => f.name === "timestampMs");
    const conv: Conv =
      convs.length === 0 && !dec && !stamp
        ? null
        : (v) => {
            if (!isObject(v)) return v;
            const out: Json = { ...v };
            for (const [name, c] of convs) {
              const x = v[name];
              if (x !== undefined) out[name] = c(x);
            }
            if (dec) setDec(out, v);
            if (stamp) setTimestampMs(out, v);
            return out;
          };
    if (typeof t.name === "string") named.set(t.name.includes(".") ? t.name : `${space}.${t.name}`, conv);
    return conv;
  };
  return compile(schema, undefined, true) ?? ((record) => record);
}

/**
 * A copy of an Avro schema without the wire fields: `dec` of the quantity and event argument value
 * records, and the top-level `timestampMs`. Used as the reader schema of a message written with
 * the full schema (Avro schema resolution skips the fields the reader lacks), the decoded record is
 * what {@link fromWire} would return, without a copy.
 * @param schema - an Avro record schema (JSON form); not mutated.
 * @returns the stripped copy (JSON form).
 */
export function stripWireFields(schema: AvroSchema): AvroSchema {
  const strip = (t: unknown, top: boolean): unknown => {
    if (Array.isArray(t)) return t.map((b) => strip(b, false));
    if (!isObject(t)) return t;
    const out: Json = { ...t };
    if (t.type === "array") out.items = strip(t.items, false);
    if (t.type === "map") out.values = strip(t.values, false);
    const fields = fieldsOf(t);
    if (fields) {
      const dec = hasDec(fields) && fields.some((f) => f.name === "num" || f.name === "hex");
      out.fields = fields
        .filter((f) => !(dec && f.name === "dec") && !(top && f.name === "timestampMs"))
        .map((f) => ({ ...f, type: strip(f.type, false) }));
    } else if (isObject(t.type)) out.type = strip(t.type, false);
    return out;
  };
  return strip(schema, true) as AvroSchema;
}
