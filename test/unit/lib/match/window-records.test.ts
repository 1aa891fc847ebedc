import { describe, expect, it } from "vitest";
import { parseDecimalString } from "../../../../lib/match/values.js";
import { fieldAt, firingEntity, keyOf, numberOf, windowRecordOf, windowSearch } from "../../../../lib/match/window-records.js";
import { decString } from "../../../../lib/match/windows.js";

const arg = (name: string, hex: string, type: string, num: number | null, scaled: number | null) => ({
  name,
  pos: 0,
  value: { hex, num, scaled, type },
});
const transfer = {
  entityId: "0xabc_e_1",
  address: "0x00000000000000000000000000000000000000aa",
  blockNumber: { num: 7, raw: "0x7" },
  args: [
    arg("from", "0x00000000000000000000000000000000000000f1", "address", null, null),
    arg("to", "0x00000000000000000000000000000000000000f2", "address", null, null),
    // 1.5 tokens of 6 decimals
    arg("value", "0x16e360", "uint256", 1_500_000, 1.5),
  ],
};

describe("window records of entities", () => {
  it("reads named arguments and plain attributes", () => {
    expect((fieldAt(transfer, "args.value") as { hex: string }).hex).toBe("0x16e360");
    expect(fieldAt(transfer, "address")).toBe(transfer.address);
    expect(fieldAt(transfer, "args.nope")).toBeUndefined();
    expect(fieldAt(transfer, "missing.x")).toBeUndefined();
  });
  it("sums raw integers exactly and scaled values as <raw>e-<decimals>", () => {
    const v = fieldAt(transfer, "args.value");
    expect(decString(parseDecimalString(numberOf(v, false) as string) ?? { m: 0n, e: 0 })).toBe("1500000");
    expect(decString(parseDecimalString(numberOf(v, true) as string) ?? { m: 0n, e: 0 })).toBe("1.5");
    // An 18-decimal amount beyond 2^53 stays exact.
    const big = {
      hex: `0x${(123456789012345678901234n).toString(16)}`,
      num: Number(123456789012345678901234n),
      scaled: Number(123456789012345678901234n) / 1e18,
      type: "uint256",
    };
    expect(decString(parseDecimalString(numberOf(big, true) as string) ?? { m: 0n, e: 0 })).toBe("123456.789012345678901234");
    expect(numberOf(fieldAt(transfer, "args.from"), false)).toBeUndefined();
    expect(numberOf({ num: 5, raw: "0x5" }, false)).toBe("0x5");
  });
  it("keys of groups and distinct values", () => {
    expect(keyOf(fieldAt(transfer, "args.from"))).toBe("0x00000000000000000000000000000000000000f1");
    expect(keyOf(transfer.blockNumber)).toBe("0x7");
    expect(keyOf({})).toBeUndefined();
  });
  it("builds the record a window needs", () => {
    const w = { blocks: 5, operator: "Greater", threshold: "1" } as const;
    expect(windowRecordOf({ ...w, aggregate: { fn: "count" } }, transfer)).toEqual({ id: "0xabc_e_1" });
    expect(windowRecordOf({ ...w, aggregate: { fn: "sum", field: "args.value" }, groupBy: "args.to" }, transfer)).toEqual({
      id: "0xabc_e_1",
      group: "0x00000000000000000000000000000000000000f2",
      value: "0x16e360",
    });
    expect(windowRecordOf({ ...w, aggregate: { fn: "distinct", field: "args.from" } }, transfer).key).toBe(
      "0x00000000000000000000000000000000000000f1",
    );
  });
  it("a firing's search lists its group's records of the window, block order, capped and saying so", () => {
    const block = (number: number, records: Array<{ id: string; group?: string }>) => ({
      number,
      hash: `0x${number}`,
      timestamp: number,
      records,
    });
    const blocks = [
      block(9, [{ id: "a9", group: "g" }]),
      block(10, [
        { id: "a10", group: "g" },
        { id: "b10", group: "h" },
      ]),
      block(11, [
        { id: "a11", group: "g" },
        { id: "c11", group: "g" },
      ]),
      block(12, [{ id: "a12", group: "g" }]),
    ];
    const firing = (group: string | null) => ({
      group,
      end: { number: 11, hash: "0x11", timestamp: 11 },
      window: { fromBlock: 10, toBlock: 11, fromTimestamp: 10, toTimestamp: 11 },
      aggregate: "3",
      recordCount: 3,
      recordIds: [],
    });
    expect(windowSearch(blocks, firing("g"))).toEqual({
      search: { query: { ids: { values: ["a10", "a11", "c11"] } }, size: 3 },
      searchComplete: true,
    });
    expect(windowSearch(blocks, firing(null)).search.query.ids.values).toEqual(["a10", "b10", "a11", "c11"]);
    expect(windowSearch(blocks, firing("g"), 2)).toEqual({
      search: { query: { ids: { values: ["a10", "a11"] } }, size: 2 },
      searchComplete: false,
    });
    expect(firingEntity(firing("g"), false, windowSearch(blocks, firing("g"))).window).toMatchObject({
      aggregate: "3",
      searchComplete: true,
    });
  });
});
