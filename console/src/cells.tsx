/**
 * How a record's values are shown in a table cell: quantities (`{hex, num, …}`) as their number
 * (or hex), 32-byte hashes as links to the record page, other objects as short JSON.
 * @module
 */

const HASH = /^0x[0-9a-fA-F]{64}$/;

/** A cell's text for one value. */
export function cellText(v: unknown): string {
  if (v === null || v === undefined) return "";
  if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") return String(v);
  if (typeof v === "object" && !Array.isArray(v) && ("num" in v || "hex" in v)) {
    const q = v as { num?: unknown; hex?: unknown };
    return String(q.num ?? q.hex ?? "");
  }
  const s = JSON.stringify(v);
  return s.length > 120 ? `${s.slice(0, 117)}…` : s;
}

/** A table cell: a hash links to its block/transaction page of `chain`. */
export function Cell({ value, chain }: { value: unknown; chain: string }) {
  if (typeof value === "string" && HASH.test(value)) {
    return (
      <td>
        <a class="hash" href={`#/record/${encodeURIComponent(chain)}/${value}`} title={value}>
          {`${value.slice(0, 10)}…${value.slice(-6)}`}
        </a>
      </td>
    );
  }
  return <td>{cellText(value)}</td>;
}

/** A CSV field (RFC 4180 quoting). */
export function csvField(v: unknown): string {
  const s = typeof v === "object" && v !== null && !("num" in v || "hex" in v) ? JSON.stringify(v) : cellText(v);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}
