/**
 * Unit tests of the watchlist Bloom filters' pure parts: the filter (lib/watchlists/bloom.ts) never
 * says "no" for a member and stays under its designed false-positive rate at capacity; the value
 * tested is the normalised member for every valid member; the change log (lib/watchlists/changes.ts)
 * is applied only when it reaches back to the reader's revision.
 */

import { getAddress } from "ethers";
import { describe, expect, it } from "vitest";
import { prng } from "../../../../lib/prng.js";
import {
  addMember,
  createMemberFilter,
  filterValue,
  MEMBER_FILTER_ERROR,
  mayContain,
  memberFilterBytes,
  memberFilterCapacity,
} from "../../../../lib/watchlists/bloom.js";
import { CHANGE_LOG_MEMBERS, changePayload, changesSince } from "../../../../lib/watchlists/changes.js";
import { normalizeMember } from "../../../../lib/watchlists/store.js";

const member = (i: number) => `0x${"c".repeat(24)}${i.toString(16).padStart(16, "0")}`;
const other = (i: number) => `0x${(i * 7919).toString(16).padStart(40, "d")}`;

describe("member filters", () => {
  it("answers 'maybe' for every member and at most the designed rate of false positives at capacity", () => {
    const capacity = memberFilterCapacity(5_000);
    expect(capacity).toBe(10_000);
    const f = createMemberFilter(capacity);
    for (let i = 0; i < capacity; i++) f.add(member(i));
    for (let i = 0; i < capacity; i++) expect(f.test(member(i))).toBe(true);
    let fp = 0;
    for (let i = 0; i < 100_000; i++) if (f.test(other(i))) fp++;
    expect(fp / 100_000).toBeLessThan(MEMBER_FILTER_ERROR * 1.5);
    // 9.59 bits per unit of capacity.
    expect(memberFilterBytes(f)).toBe(Math.ceil(Math.ceil((-capacity * Math.log2(MEMBER_FILTER_ERROR)) / Math.LN2) / 32) * 4);
  });

  it("address lists (keyed by the address's own digits): no false negatives, any letter case, the designed rate at capacity", () => {
    const seed = 20261129;
    const rand = prng(seed);
    const address = () => `0x${Array.from({ length: 40 }, () => "0123456789abcdef"[Math.floor(rand() * 16)]).join("")}`;
    const capacity = memberFilterCapacity(5_000);
    const f = createMemberFilter(capacity);
    const members = Array.from({ length: capacity }, address);
    for (const m of members) addMember(f, "address", m);
    for (const m of members) expect(mayContain(f, "address", m)).toBe(true);
    expect(members.slice(0, 100).every((m) => mayContain(f, "address", getAddress(m)))).toBe(true); // EIP-55 letter case
    let fp = 0;
    for (let i = 0; i < 100_000; i++) if (mayContain(f, "address", address())) fp++;
    expect(fp / 100_000, `seed ${seed}`).toBeLessThan(MEMBER_FILTER_ERROR * 1.5);
    // Not an address: never a member, so "maybe" (Redis says no); a string list uses the package's hash.
    expect(mayContain(f, "address", ` ${members[0]}`)).toBe(true);
    const names = createMemberFilter(1_024);
    addMember(names, "string", " Transfer");
    expect(mayContain(names, "string", "Transfer ")).toBe(true);
    expect(mayContain(names, "string", "Approval")).toBe(false);
  });

  it("a small list gets the minimum capacity", () => {
    expect(memberFilterCapacity(0)).toBe(1_024);
    expect(memberFilterCapacity(3)).toBe(1_024);
  });

  it("tests the normalised member of every valid value", () => {
    const values = [" 0xAbCdEf0000000000000000000000000000001234\t", "0xabcdef0000000000000000000000000000001234", "0X12", ""];
    for (const v of values) {
      const m = normalizeMember("address", v);
      if (m !== null) expect(filterValue("address", v)).toBe(m);
    }
    for (const v of ["  Transfer ", "Transfer", "x".repeat(256)]) expect(filterValue("string", v)).toBe(normalizeMember("string", v));
  });
});

describe("the change log", () => {
  const entry = (rev: number, members: string[] | null, remove = false) =>
    `${rev} ${remove ? "-" : ""}${members === null ? "null" : changePayload(members)}`;
  const add = (...members: string[]) => ({ remove: false, members });
  const remove = (...members: string[]) => ({ remove: true, members });

  it("gives the changes after the reader's revision, contiguously and in order", () => {
    const log = [entry(3, ["a"]), entry(4, ["b", "c"]), entry(5, ["b"], true), entry(6, ["d"])];
    expect(changesSince(log, 3, 6)).toEqual({ rev: 6, steps: [add("b", "c"), remove("b"), add("d")] });
    expect(changesSince(log, 2, 4)).toEqual({ rev: 6, steps: [add("a"), add("b", "c"), remove("b"), add("d")] });
    expect(changesSince(log, 6, 6)).toEqual({ rev: 6, steps: [] });
    expect(changesSince([entry(7, ["-x"])], 6, 7)).toEqual({ rev: 7, steps: [add("-x")] });
  });

  it("says rebuild when the log no longer reaches back, is behind the revision, or an add was too large to log", () => {
    expect(changesSince([entry(3, ["a"])], 1, 3)).toBeNull();
    expect(changesSince([entry(2, ["a"])], 1, 3)).toBeNull();
    expect(changesSince([], 0, 1)).toBeNull();
    expect(changesSince([entry(2, null)], 1, 2)).toBeNull();
    expect(changesSince([entry(2, null, true)], 1, 2)).toBeNull();
  });

  it("logs an add's members up to its cap, and null past it", () => {
    const many = Array.from({ length: CHANGE_LOG_MEMBERS + 1 }, (_, i) => member(i));
    expect(changePayload(many)).toBe("null");
    expect(JSON.parse(changePayload(many.slice(1)))).toHaveLength(CHANGE_LOG_MEMBERS);
    expect(JSON.parse(changePayload(['a "quoted"\nname']))).toEqual(['a "quoted"\nname']);
  });
});
