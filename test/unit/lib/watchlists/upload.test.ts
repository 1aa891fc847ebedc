/** parseMembers (lib/watchlists/upload.ts): the three upload formats, normalisation, bad members' paths, the cap. */
import { describe, expect, it } from "vitest";
import { parseMembers } from "../../../../lib/watchlists/upload.js";

const A = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const a = A.toLowerCase();

describe("parseMembers", () => {
  it("reads a JSON array, NDJSON (quoted or bare) and CSV's first column, lowercasing addresses", () => {
    expect(parseMembers("address", [A, ` ${a} `], false, 10)).toEqual({ ok: true, members: [a, a] });
    expect(parseMembers("address", `"${A}"\r\n\n${a}\n`, false, 10)).toEqual({ ok: true, members: [a, a] });
    expect(parseMembers("address", `Address,label\n"${A}",hot\n`, true, 10)).toEqual({ ok: true, members: [a] });
    expect(parseMembers("string", "alice\nbob\n", false, 10)).toEqual({ ok: true, members: ["alice", "bob"] });
  });

  it("names the first bad member by index or 1-based line, and a header only on the first line", () => {
    expect(parseMembers("address", [A, 5], false, 10)).toMatchObject({ ok: false, bad: { path: "body[1]" } });
    expect(parseMembers("address", `${A}\n\n0x12\n`, false, 10)).toMatchObject({ ok: false, bad: { path: "lines[3]", value: "0x12" } });
    expect(parseMembers("address", `${A}\naddress\n`, true, 10)).toMatchObject({ ok: false, bad: { path: "lines[2]" } });
  });

  it("refuses more members than the cap", () => {
    expect(parseMembers("address", [A, A, A], false, 2)).toEqual({ ok: false, tooMany: true });
    expect(parseMembers("address", `${A}\n${A}\n${A}\n`, true, 2)).toEqual({ ok: false, tooMany: true });
    expect(parseMembers("address", `${A}\n${A}\n`, true, 2)).toMatchObject({ ok: true });
  });
});
