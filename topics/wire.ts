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
 * @module
 */

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

function addWire(v: unknown, top: boolean): unknown {
  if (Array.isArray(v)) return v.map((x) => addWire(x, false));
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) out[k] = addWire(x, false);
  if (isQuantity(v)) out.dec = BigInt(v.raw as string).toString();
  else if (isArgValue(v)) out.dec = argDecimal(v.hex as string, v.type as string);
  if (top && typeof v.timestamp === "string") {
    const ms = Date.parse(`${v.timestamp}Z`);
    out.timestampMs = Number.isNaN(ms) ? null : ms;
  }
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
