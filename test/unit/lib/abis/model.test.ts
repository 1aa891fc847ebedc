/**
 * Unit tests of the user-ABI checks (lib/abis/model.ts) and the proxy slot parsing
 * (pipeline/decode/proxy.ts): pure logic, no services.
 */
import { describe, expect, it } from "vitest";
import { eventFragments, normalizeAbiAddress, validateAbiBody } from "../../../../lib/abis/model.js";
import { loadConfig } from "../../../../lib/config/index.js";
import { addressInSlot } from "../../../../pipeline/decode/proxy.js";

const event = (inputs: unknown[], extra: object = {}) => ({ type: "event" as const, name: "E", inputs: inputs as never[], ...extra });

describe("validateAbiBody", () => {
  const paths = (body: unknown, address = `0x${"a".repeat(40)}`) => {
    const r = validateAbiBody(body, address);
    return r.ok ? [] : r.errors.map((e) => e.path);
  };

  it("accepts a full contract ABI with tuples, arrays and every entry type", () => {
    const body = {
      abi: [
        event([
          {
            name: "p",
            type: "tuple[2]",
            components: [
              { name: "a", type: "int24" },
              { name: "b", type: "bytes" },
            ],
          },
          { name: "s", type: "string", indexed: true },
        ]),
        { type: "function", name: "f", inputs: [], outputs: [{ name: "", type: "uint" }], stateMutability: "view" },
        { type: "constructor", inputs: [] },
        { type: "error", name: "Nope", inputs: [{ name: "why", type: "string" }] },
        { type: "receive", stateMutability: "payable" },
      ],
      name: "X",
    };
    expect(paths(body)).toEqual([]);
  });

  it("reports each problem at its path", () => {
    expect(paths({ abi: [event([]), event([{ name: "x", type: "uint7" }])] })).toEqual(["abi[1].inputs[0].type"]);
    expect(paths({ abi: [event([{ type: "tuple" }])] })).toEqual(["abi[0].inputs[0].components"]);
    expect(paths({ abi: [event([{ type: "uint8", components: [{ type: "uint8" }] }])] })).toEqual(["abi[0].inputs[0].components"]);
    expect(paths({ abi: [{ type: "function", name: "f", inputs: [{ type: "uint8", indexed: true }] }] })).toEqual([
      "abi[0].inputs[0].indexed",
    ]);
    expect(paths({ abi: [{ type: "event", inputs: [] }] })).toEqual(["abi[0].name"]);
    const four = [1, 2, 3, 4].map((i) => ({ name: `a${i}`, type: "uint8", indexed: true }));
    expect(paths({ abi: [event(four)] })).toEqual(["abi[0].inputs"]);
    expect(paths({ abi: [event(four, { anonymous: true })] })).toEqual([]);
    expect(paths({ abi: [{ type: "function", name: "f" }] }, "any")).toEqual(["abi[0].type"]);
    expect(paths({ abi: "nope" })).toEqual(["abi"]);
  });

  it("names unnamed arguments arg<position> and skips anonymous events", () => {
    const fragments = eventFragments([
      event([
        { type: "address", indexed: true },
        { name: "v", type: "uint256" },
      ]),
      event([], { name: "A", anonymous: true }),
    ]);
    expect(fragments.map((f) => f.format("full"))).toEqual(["event E(address indexed arg0, uint256 v)"]);
  });
});

describe("addresses and slots", () => {
  it("normalizes registration addresses", () => {
    expect(normalizeAbiAddress("0x5FbDB2315678afecb367f032d93F642f64180aa3")).toBe("0x5fbdb2315678afecb367f032d93f642f64180aa3");
    expect(normalizeAbiAddress("ANY")).toBe("any");
    expect(normalizeAbiAddress("0x1234")).toBeUndefined();
  });

  it("reads the implementation address from a storage word", () => {
    expect(addressInSlot(`0x${"0".repeat(24)}${"ab".repeat(20)}`)).toBe(`0x${"ab".repeat(20)}`);
    expect(addressInSlot("0x0")).toBeNull();
    expect(addressInSlot(`0x${"0".repeat(64)}`)).toBeNull();
    expect(addressInSlot(null)).toBeNull();
  });

  it("reads the user-ABI settings from the environment", () => {
    expect(loadConfig({}).abis).toEqual({ maxPerAccount: 100, reloadIntervalMs: 30_000, proxyTtlMs: 600_000, redecodeMaxLogs: 100_000 });
    expect(loadConfig({ CHAINSIFT_ABI_MAX_PER_ACCOUNT: "5", CHAINSIFT_ABI_REDECODE_MAX_LOGS: "0" }).abis).toMatchObject({
      maxPerAccount: 5,
      redecodeMaxLogs: 0,
    });
    expect(() => loadConfig({ CHAINSIFT_ABI_MAX_PER_ACCOUNT: "0" })).toThrow(/CHAINSIFT_ABI_MAX_PER_ACCOUNT/);
  });
});
