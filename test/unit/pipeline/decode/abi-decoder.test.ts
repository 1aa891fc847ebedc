/**
 * Unit tests of user-ABI decoding (pipeline/decode/abi-decoder.ts) on real mainnet logs
 * (../shared/data/mainnet): Seaport 1.5's OrderFulfilled (arrays of tuples), Uniswap Permit2's
 * Permit (three indexed addresses, uint160/uint48) and the AAVE token's DelegatedPowerChanged
 * (behind its proxy). Expected values come from an independent decode of the same log with ethers'
 * `Interface.parseLog` over the same JSON ABI; expected counts from raw address + topic0.
 */
import { Interface, id } from "ethers";
import { describe, expect, it } from "vitest";
import type { AbiRegistration } from "../../../../lib/abis/model.js";
import type { AbiEntry } from "../../../../lib/abis/schema.js";
import type { EventArg, EventRecord, LogRecord } from "../../../../lib/records.js";
import { abiCovers, buildAbiIndex, decodeWithAbis, mayNeedImplementation } from "../../../../pipeline/decode/abi-decoder.js";
import { createDecoder } from "../../../../pipeline/decode/decoder.js";
import { withAbis } from "../../../../pipeline/decode/stage.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const have = hasMainnetFixtures();
if (!have) console.warn(SKIP_NO_FIXTURES);

const SEAPORT_15 = "0x00000000000001ad428e4906ae43d8f9852d0dd6";
const SEAPORT_11 = "0x00000000006c3852cbef3e08e8df289169ede581";
const PERMIT2 = "0x000000000022d473030f116ddee9f6b43ac78ba3";
const AAVE = "0x7fc66500c84a76ad7e9c93437bfc5ac33e2ddae9";
const USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7";

const item = (extra: AbiEntry["inputs"] = []) => [
  { name: "itemType", type: "uint8" },
  { name: "token", type: "address" },
  { name: "identifier", type: "uint256" },
  { name: "amount", type: "uint256" },
  ...(extra ?? []),
];
/** Seaport's OrderFulfilled as in its published ABI (SeaportInterface / ConsiderationEventsAndErrors). */
const SEAPORT_ABI: AbiEntry[] = [
  {
    type: "event",
    name: "OrderFulfilled",
    anonymous: false,
    inputs: [
      { name: "orderHash", type: "bytes32", indexed: false },
      { name: "offerer", type: "address", indexed: true },
      { name: "zone", type: "address", indexed: true },
      { name: "recipient", type: "address", indexed: false },
      { name: "offer", type: "tuple[]", indexed: false, components: item() },
      { name: "consideration", type: "tuple[]", indexed: false, components: item([{ name: "recipient", type: "address" }]) },
    ],
  },
  { type: "function", name: "getCounter", inputs: [{ name: "offerer", type: "address" }], outputs: [{ name: "counter", type: "uint256" }] },
];
const PERMIT2_ABI: AbiEntry[] = [
  {
    type: "event",
    name: "Permit",
    inputs: [
      { name: "owner", type: "address", indexed: true },
      { name: "token", type: "address", indexed: true },
      { name: "spender", type: "address", indexed: true },
      { name: "amount", type: "uint160" },
      { name: "expiration", type: "uint48" },
      { name: "nonce", type: "uint48" },
    ],
  },
];
/** AAVE's DelegatedPowerChanged; `DelegationType` is an enum, uint8 in the ABI; the user left the last argument unnamed. */
const AAVE_ABI: AbiEntry[] = [
  {
    type: "event",
    name: "DelegatedPowerChanged",
    inputs: [
      { name: "user", type: "address", indexed: true },
      { name: "amount", type: "uint256" },
      { name: "", type: "uint8" },
    ],
  },
];

const reg = (namespace: string, address: string, abi: AbiEntry[], createdAt = "2026-01-01T00:00:00.000Z"): AbiRegistration => ({
  namespace,
  address,
  name: null,
  abi,
  events: abi.filter((e) => e.type === "event").length,
  createdAt,
  updatedAt: createdAt,
});

let allLogs: LogRecord[] | undefined;
function logs(): LogRecord[] {
  allLogs ??= loadCompleteBlocks().flatMap((b) => toBlockBundle(b.block, b.receipts).logs);
  return allLogs;
}
const logsOf = (address: string, topic0: string) =>
  logs().filter((l) => l.address.toLowerCase() === address && l.topics[0]?.toLowerCase() === topic0);

/** The ABI's independent decode of a value into the record's hex rendering (addresses lower-case, ints minimal hex, nested arrays JSON). */
function hexOf(v: unknown): string {
  if (typeof v === "bigint") return `0x${v.toString(16)}`;
  if (Array.isArray(v)) return JSON.stringify(v.map(hexOf));
  return String(v).toLowerCase();
}

function expectMatchesEthers(ev: EventRecord | null, log: LogRecord, abi: AbiEntry[]): void {
  const parsed = new Interface(abi as never).parseLog({ topics: log.topics, data: log.data });
  expect(parsed, "ethers parses the log").not.toBeNull();
  expect(ev).toMatchObject({ source: "abi", standard: "abi", error: null, event: parsed?.name, signature: parsed?.signature });
  const args = ev?.args as EventArg[];
  expect(args.map((a) => a.name)).toEqual(parsed?.fragment.inputs.map((p, i) => p.name || `arg${i}`));
  parsed?.args.forEach((v, i) => {
    expect(args[i]?.value.hex, `${args[i]?.name}`).toBe(hexOf(v));
    expect(args[i]?.value.type).toBe(parsed.fragment.inputs[i]?.type);
  });
}

describe.skipIf(!have)("user ABIs on mainnet fixture logs", () => {
  const index = buildAbiIndex([reg("acc-1", SEAPORT_15, SEAPORT_ABI), reg("acc-1", PERMIT2, PERMIT2_ABI), reg("acc-2", AAVE, AAVE_ABI)]);
  const topicOf = (abi: AbiEntry[]) =>
    new Interface(abi as never).fragments.find((f) => f.type === "event") as unknown as { topicHash: string };

  it("decodes every Seaport 1.5 OrderFulfilled (arrays of tuples) exactly as ethers does", () => {
    const topic = topicOf(SEAPORT_ABI).topicHash;
    const found = logsOf(SEAPORT_15, topic);
    expect(found.length).toBeGreaterThanOrEqual(10);
    for (const log of found) expectMatchesEthers(decodeWithAbis(index, log, null), log, SEAPORT_ABI);
    const first = decodeWithAbis(index, found[0] as LogRecord, null) as EventRecord;
    expect(first.str.startsWith("OrderFulfilled(orderHash=0x")).toBe(true);
    // The tuple array renders as a JSON array of tuple renderings (each a JSON array of member renderings).
    const offer = JSON.parse(first.args[4]?.value.hex as string) as string[];
    expect((JSON.parse(offer[0] as string) as string[]).length).toBe(4);
  });

  it("decodes Permit2's Permit and AAVE's DelegatedPowerChanged (unnamed argument → arg2)", () => {
    const permits = logsOf(PERMIT2, topicOf(PERMIT2_ABI).topicHash);
    const delegations = logsOf(AAVE, topicOf(AAVE_ABI).topicHash);
    expect(permits.length).toBeGreaterThanOrEqual(1);
    expect(delegations.length).toBeGreaterThanOrEqual(1);
    for (const log of permits) expectMatchesEthers(decodeWithAbis(index, log, null), log, PERMIT2_ABI);
    for (const log of delegations) {
      const ev = decodeWithAbis(index, log, null);
      expectMatchesEthers(ev, log, AAVE_ABI);
      expect(ev?.args[2]?.name).toBe("arg2");
    }
  });

  it("leaves other contracts alone unless an any-address event ABI knows the event", () => {
    const topic = topicOf(SEAPORT_ABI).topicHash;
    const v11 = logsOf(SEAPORT_11, topic);
    expect(v11.length).toBeGreaterThanOrEqual(1);
    for (const log of v11) expect(decodeWithAbis(index, log, null)).toBeNull();
    const withAny = buildAbiIndex([
      reg(
        "acc-3",
        "any",
        SEAPORT_ABI.filter((e) => e.type === "event"),
      ),
    ]);
    for (const log of v11) expectMatchesEthers(decodeWithAbis(withAny, log, null), log, SEAPORT_ABI);
  });

  it("decodes a proxy's logs with its implementation's ABI (registered at the implementation address)", () => {
    const implementation = "0xc13eac3b4f9eed480045113b7af00f7b5655ece8";
    const proxied = buildAbiIndex([reg("acc-2", implementation, AAVE_ABI)]);
    const [log] = logsOf(AAVE, topicOf(AAVE_ABI).topicHash);
    expect(mayNeedImplementation(proxied, log as LogRecord)).toBe(true);
    expect(decodeWithAbis(proxied, log as LogRecord, null)).toBeNull();
    expectMatchesEthers(decodeWithAbis(proxied, log as LogRecord, implementation), log as LogRecord, AAVE_ABI);
  });

  it("applies one registration per address: global first, then the earliest", () => {
    const renamed = (name: string): AbiEntry[] => [
      {
        ...(AAVE_ABI[0] as AbiEntry),
        inputs: [
          { name: "user", type: "address", indexed: true },
          { name, type: "uint256" },
          { name: "kind", type: "uint8" },
        ],
      },
    ];
    const [log] = logsOf(AAVE, topicOf(AAVE_ABI).topicHash);
    const later = reg("acc-a", AAVE, renamed("later"), "2026-02-01T00:00:00.000Z");
    const earlier = reg("acc-b", AAVE, renamed("earlier"), "2026-01-01T00:00:00.000Z");
    const global = reg("global", AAVE, renamed("global"), "2026-03-01T00:00:00.000Z");
    expect(decodeWithAbis(buildAbiIndex([later, earlier]), log as LogRecord, null)?.args[1]?.name).toBe("earlier");
    expect(decodeWithAbis(buildAbiIndex([later, earlier, global]), log as LogRecord, null)?.args[1]?.name).toBe("global");
  });

  it("keeps standard events standard: an ABI registered for USDT does not rename its Transfer", () => {
    const usdtAbi: AbiEntry[] = [
      {
        type: "event",
        name: "Transfer",
        inputs: [
          { name: "src", type: "address", indexed: true },
          { name: "dst", type: "address", indexed: true },
          { name: "wad", type: "uint256" },
        ],
      },
    ];
    const abis = buildAbiIndex([reg("acc-1", USDT, usdtAbi)]);
    const decoder = withAbis(createDecoder({ chainId: 1 }), {
      decode: (l) => decodeWithAbis(abis, l, null),
      covers: (l) => abiCovers(abis, l.address, null),
    });
    const transfers = logsOf(USDT, topicOf(usdtAbi).topicHash);
    expect(transfers.length).toBeGreaterThan(10);
    for (const log of transfers) expect(decoder.decode(log)).toMatchObject({ source: "standard", standard: "erc20", event: "Transfer" });
  });
  it("a user ABI wins over the signature database; a contract with a user ABI never gets a signature decode", () => {
    // Block 18,000,000: an OwnershipTransferred(address,address) that the signature database (OpenZeppelin) decodes.
    const topic0 = id("OwnershipTransferred(address,address)");
    const [log] = logs().filter((l) => l.blockNumber.num === 18_000_000 && l.topics[0]?.toLowerCase() === topic0);
    expect(log, "the fixture log").toBeDefined();
    const contract = (log as LogRecord).address.toLowerCase();
    const owned: AbiEntry[] = [
      {
        type: "event",
        name: "OwnershipTransferred",
        inputs: [
          { name: "from", type: "address", indexed: true },
          { name: "to", type: "address", indexed: true },
        ],
      },
    ];
    const other: AbiEntry[] = [{ type: "event", name: "Ping", inputs: [{ name: "n", type: "uint256" }] }];
    const registry = (regs: AbiRegistration[]) => {
      const index = buildAbiIndex(regs);
      return { decode: (l: LogRecord) => decodeWithAbis(index, l, null), covers: (l: LogRecord) => abiCovers(index, l.address, null) };
    };
    const decode = (regs: AbiRegistration[]) => withAbis(createDecoder({ chainId: 1 }), registry(regs)).decode(log as LogRecord);
    expect(decode([])).toMatchObject({ source: "signature", event: "OwnershipTransferred" });
    expect(decode([reg("acc-1", contract, owned)])).toMatchObject({ source: "abi", args: [{ name: "from" }, { name: "to" }] });
    // The contract's own ABI lacks the event: no signature decode either.
    expect(decode([reg("acc-1", contract, other)])).toBeNull();
    // An ABI registered for another contract changes nothing here.
    expect(decode([reg("acc-1", USDT, other)])).toMatchObject({ source: "signature" });
  });
});
