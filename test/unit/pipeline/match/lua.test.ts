/** Unit tests of the Lua layouts (pipeline/match/lua.ts): the generated prelude and argument arrays agree by name. */
import { describe, expect, it } from "vitest";
import { luaPrelude, luaScript } from "../../../../pipeline/match/lua.js";

describe("luaPrelude", () => {
  it("binds fixed keys and arguments in order and builds item(i) from the item group", () => {
    const prelude = luaPrelude({ keys: ["a", "b"], args: ["x"], item: { keys: ["k"], args: ["p", "q"] } });
    expect(prelude).toBe(
      [
        "local a, b = KEYS[1], KEYS[2]",
        "local x = ARGV[1]",
        "local itemCount = (#KEYS - 2) / 1",
        "local function item(i)",
        "  local k, a = 2 + (i - 1) * 1, 1 + (i - 1) * 2",
        "  return { k = KEYS[k + 1], p = ARGV[a + 1], q = ARGV[a + 2] }",
        "end",
        "",
      ].join("\n"),
    );
  });

  it("counts items by ARGV when the item group has no keys, and omits empty bindings", () => {
    expect(luaPrelude({ keys: [], args: [], item: { keys: [], args: ["id"] } })).toContain("local itemCount = (#ARGV - 0) / 1");
    expect(luaPrelude({ keys: ["s"], args: [] })).toBe("local s = KEYS[1]\n");
  });

  it("refuses names that cannot be Lua locals, duplicates and empty item groups", () => {
    expect(() => luaPrelude({ keys: ["end"], args: [] })).toThrow(/cannot name a local/);
    expect(() => luaPrelude({ keys: ["a-b"], args: [] })).toThrow(/cannot name a local/);
    expect(() => luaPrelude({ keys: ["itemCount"], args: [] })).toThrow(/cannot name a local/);
    expect(() => luaPrelude({ keys: ["a"], args: ["a"] })).toThrow(/twice/);
    expect(() => luaPrelude({ keys: [], args: [], item: { keys: [], args: [] } })).toThrow(/at least one/);
  });
});

describe("luaScript params", () => {
  it("lays out fixed values, then each item's keys and arguments, as strings", () => {
    const s = luaScript({ keys: ["a", "b"], args: ["x"], item: { keys: ["k"], args: ["p", "q"] } }, "return 1");
    const { keys, args } = s.params({ a: "A", b: "B", x: 7 }, [
      { k: "K1", p: "P1", q: 1 },
      { k: "K2", p: "P2", q: 2 },
    ]);
    expect(keys).toEqual(["A", "B", "K1", "K2"]);
    expect(args).toEqual(["7", "P1", "1", "P2", "2"]);
    expect(s.source.endsWith("return 1")).toBe(true);
    expect(s.sha1).toMatch(/^[0-9a-f]{40}$/);
  });
});
