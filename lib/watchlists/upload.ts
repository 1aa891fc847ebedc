/**
 * Members of a watchlist upload, from a JSON array, NDJSON (one JSON string, or a bare value, per
 * line) or CSV (the first column of each line; a first line that is a header such as `address` is
 * skipped). Every member is normalised by its list's kind (lib/watchlists/store.ts `normalizeMember`).
 * @module
 */
import { normalizeMember, type WatchlistKind } from "./store.js";

/** A member that is not valid for the list's kind: its path (`body[3]`, `lines[4]` 1-based) and value. */
export interface BadMember {
  /** `body[<index>]` for a JSON array, `lines[<1-based line>]` for NDJSON and CSV. */
  path: string;
  /** The value as sent (cut to 100 characters). */
  value: string;
}

/** The parsed upload: normalised members (duplicates kept), or the first bad member. */
export type ParsedMembers = { ok: true; members: string[] } | { ok: false; bad: BadMember } | { ok: false; tooMany: true };

const HEADERS = new Set(["address", "value", "member", "addresses"]);

function lineValue(line: string, csv: boolean): unknown {
  if (csv) {
    const cell = line.split(",")[0] ?? "";
    return cell.trim().replace(/^"(.*)"$/, "$1");
  }
  const t = line.trim();
  if (t.startsWith('"')) {
    try {
      return JSON.parse(t) as unknown;
    } catch {
      return t;
    }
  }
  return t;
}

/**
 * Parses an upload body.
 * @param kind the list's kind.
 * @param body an array (JSON body) or a string (NDJSON or CSV body).
 * @param csv whether a string body is CSV (else NDJSON).
 * @param max most members allowed in one request; more answers `{ok: false, tooMany: true}`.
 */
export function parseMembers(kind: WatchlistKind, body: unknown, csv: boolean, max: number): ParsedMembers {
  const members: string[] = [];
  if (Array.isArray(body)) {
    if (body.length > max) return { ok: false, tooMany: true };
    for (const [i, raw] of body.entries()) {
      const m = normalizeMember(kind, raw);
      if (m === null) return { ok: false, bad: { path: `body[${i}]`, value: String(JSON.stringify(raw)).slice(0, 100) } };
      members.push(m);
    }
    return { ok: true, members };
  }
  const lines = typeof body === "string" ? body.split(/\r?\n/) : [];
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    const raw = lineValue(line, csv);
    const m = normalizeMember(kind, raw);
    if (m === null) {
      if (members.length === 0 && typeof raw === "string" && HEADERS.has(raw.toLowerCase())) continue;
      return { ok: false, bad: { path: `lines[${i + 1}]`, value: line.slice(0, 100) } };
    }
    members.push(m);
    if (members.length > max) return { ok: false, tooMany: true };
  }
  return { ok: true, members };
}
