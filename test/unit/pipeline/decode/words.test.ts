/**
 * The decoder's fast path (pipeline/decode/words.ts: fixed layouts read from the hex words) against
 * the ethers path it replaces (`fastPath: false`, ethers' AbiCoder): the same record, field for
 * field, on every mainnet fixture log, on edge cases (wrong data length, extra or missing topics,
 * dirty words, upper-case hex) and on seeded random words for every word type; and `decimalText`
 * against ethers' `formatUnits`.
 */
import { AbiCoder, EventFragment, formatUnits, id } from "ethers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { TokenLookup } from "../../../../lib/chain/tokens.js";
import { prng } from "../../../../lib/prng.js";
import type { EventRecord, LogRecord } from "../../../../lib/records.js";
import { compileLayout, createDecoder, decodeWith, type Layout } from "../../../../pipeline/decode/decoder.js";
import { EVENT_SPECS } from "../../../../pipeline/decode/events.js";
import { decimalText } from "../../../../pipeline/decode/words.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";
import { syntheticLog } from "../../../support/sample-records.js";

const fast = createDecoder({ chainId: 1 }); // the fixtures are Ethereum mainnet
const reference = createDecoder({ chainId: 1, fastPath: false });

/** Decimals for every contract (0..36 from its address), so every amount of the fixtures gets `scaled` on both paths. */
const everyToken: TokenLookup = (address) => {
  const n = Number.parseInt(address.slice(-2), 16) % 37;
  return { symbol: n % 5 === 0 ? "" : `T${n}`, decimals: n };
};

/** A log with these topics and data, from USDT's address. */
const logOf = (topics: string[], data: string): LogRecord => syntheticLog(topics, data, "0xdac17f958d2ee523a2206206994597c13d831ec7");

/** A random 32-byte word: all zeros, all ones, a small value, a value of `bytes` random low bytes, or fully random. */
function randomWord(rand: () => number): string {
  const hexDigit = () => "0123456789abcdefABCDEF"[Math.floor(rand() * 22)] as string;
  const pick = rand();
  if (pick < 0.1) return "0".repeat(64);
  if (pick < 0.2) return "f".repeat(64);
  if (pick < 0.35)
    return Math.floor(rand() * 1000)
      .toString(16)
      .padStart(64, "0");
  if (pick < 0.45) return Array.from({ length: 64 }, (_, i) => (i < 8 ? "f" : hexDigit())).join(""); // negative-looking
  const low = pick < 0.8 ? 2 * (1 + Math.floor(rand() * 32)) : 64;
  return Array.from({ length: 64 }, (_, i) => (i < 64 - low ? "0" : hexDigit())).join("");
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe.skipIf(!hasMainnetFixtures())(
  `fast path vs ethers on mainnet fixtures${hasMainnetFixtures() ? "" : ` (${SKIP_NO_FIXTURES})`}`,
  () => {
    // A skipped describe's body still runs at collection: load nothing without the fixtures.
    const logs = hasMainnetFixtures() ? loadCompleteBlocks().flatMap((b) => toBlockBundle(b.block, b.receipts).logs) : [];

    it("every fixture log decodes to the same record (name, args, scaled values, str, error) on both paths", () => {
      expect(logs.length).toBeGreaterThan(2000);
      let decoded = 0;
      for (const log of logs) {
        const a = fast.decode(log);
        expect(a, `log ${log.transactionHash}/${log.logIndex.num}`).toEqual(reference.decode(log));
        if (a && a.error === null) decoded++;
      }
      expect(decoded).toBeGreaterThan(1600);
    });

    it("with decimals for every contract, every amount gets the same scaled value and str on both paths", () => {
      let scaled = 0;
      for (const log of logs) {
        const a = fast.decode(log, everyToken);
        expect(a, `log ${log.transactionHash}/${log.logIndex.num}`).toEqual(reference.decode(log, everyToken));
        scaled += a?.args.filter((x) => x.value.scaled !== null).length ?? 0;
      }
      expect(scaled).toBeGreaterThan(1000);
    });

    it("the fast path calls ethers' AbiCoder only for TransferBatch (dynamic arrays)", () => {
      // Without the signature database, which decodes with ethers whatever the path.
      const [fastOnly, ethersOnly] = [
        createDecoder({ chainId: 1, signatures: false }),
        createDecoder({ chainId: 1, signatures: false, fastPath: false }),
      ];
      const decode = vi.spyOn(AbiCoder.prototype, "decode");
      const batches = logs.filter((l) => l.topics[0] === id("TransferBatch(address,address,address,uint256[],uint256[])")).length;
      expect(batches).toBeGreaterThan(0);
      for (const log of logs) fastOnly.decode(log);
      expect(decode.mock.calls.length).toBe(2 * batches); // its topics, its data
      decode.mockClear();
      for (const log of logs) ethersOnly.decode(log);
      expect(decode.mock.calls.length).toBeGreaterThan(1600);
    });
  },
);

describe("fast path vs ethers on edge cases", () => {
  const TRANSFER = id("Transfer(address,address,uint256)");
  const SYNC = id("Sync(uint112,uint112)");
  const V3_SWAP = id("Swap(address,address,int256,int256,uint160,uint128,int24)");
  const APPROVAL_FOR_ALL = id("ApprovalForAll(address,address,bool)");
  const A = `0x${"0".repeat(24)}${"11".repeat(20)}`;
  const B = `0x${"0".repeat(24)}${"2F".repeat(20)}`;
  const w = (v: bigint) => (v < 0n ? (1n << 256n) + v : v).toString(16).padStart(64, "0");

  const cases: Array<[string, LogRecord]> = [
    ["ERC-20 Transfer", logOf([TRANSFER, A, B], `0x${w(10n ** 30n)}`)],
    ["data one byte short", logOf([TRANSFER, A, B], `0x${w(5n).slice(2)}`)],
    ["data one word long", logOf([TRANSFER, A, B], `0x${w(5n)}${w(6n)}`)],
    ["data empty", logOf([TRANSFER, A, B], "0x")],
    ["data not hex", logOf([TRANSFER, A, B], `0x${"zz".repeat(32)}`)],
    ["data odd length", logOf([TRANSFER, A, B], `0x${w(5n)}0`)],
    ["extra topic (5)", logOf([TRANSFER, A, B, A, B], `0x${w(5n)}`)],
    ["missing topic (2)", logOf([TRANSFER, A], `0x${w(5n)}${w(6n)}`)],
    ["ERC-721 Transfer, 4 topics, upper-case hex", logOf([TRANSFER, A, B, `0x${w(123456789n).toUpperCase()}`], "0x")],
    ["ERC-721 Transfer with data", logOf([TRANSFER, A, B, `0x${w(1n)}`], `0x${w(1n)}`)],
    ["dirty address topic", logOf([TRANSFER, `0x01${A.slice(4)}`, B], `0x${w(5n)}`)],
    ["topic not a word", logOf([TRANSFER, "0x1234", B], `0x${w(5n)}`)],
    ["CryptoKitties Transfer, addresses in data", logOf([TRANSFER], `0x${A.slice(2)}${B.slice(2)}${w(7n)}`)],
    ["CryptoKitties Transfer, dirty address in data", logOf([TRANSFER], `0x${"f".repeat(64)}${B.slice(2)}${w(7n)}`)],
    ["Sync with dirty bits above 112", logOf([SYNC], `0x${"ab".repeat(32)}${"f".repeat(64)}`)],
    ["Sync zero reserves", logOf([SYNC], `0x${w(0n)}${w(0n)}`)],
    [
      "V3 Swap negative amounts and tick",
      logOf([V3_SWAP, A, B], `0x${w(-5n)}${w(10n ** 40n)}${w(1n << 96n)}${w(1n << 127n)}${w(-887272n)}`),
    ],
    [
      "V3 Swap tick with dirty upper bits",
      logOf([V3_SWAP, A, B], `0x${w(1n)}${w(-1n)}${"f".repeat(64)}${"e".repeat(64)}${"1".repeat(58)}800000`),
    ],
    ["ApprovalForAll with a dirty bool", logOf([APPROVAL_FOR_ALL, A, B], `0x${"0".repeat(63)}2`)],
    ["ApprovalForAll false", logOf([APPROVAL_FOR_ALL, A, B], `0x${w(0n)}`)],
    [
      "Deposit by a topic-0 in upper case",
      logOf([id("Deposit(address,uint256)").toUpperCase().replace("0X", "0x"), A], `0x${w(2n ** 53n + 1n)}`),
    ],
  ];

  for (const [name, log] of cases) {
    it(`${name}: same record on both paths`, () => {
      const a = fast.decode(log, everyToken);
      expect(a).toEqual(reference.decode(log, everyToken));
      expect(a).not.toBeNull();
    });
  }

  it("a dirty address word is an error on both paths, with the same message", () => {
    const ev = fast.decode(logOf([TRANSFER, `0x01${A.slice(4)}`, B], `0x${w(5n)}`)) as EventRecord;
    expect(ev.error).toBe("Transfer(address,address,uint256) [erc20]: argument from is not an address (non-zero upper 12 bytes)");
  });
});

describe("fast path vs ethers on random words", () => {
  const SEED = 20261126;
  /** Standard layouts with a word plan, plus user-ABI-like layouts covering every word type. */
  const layouts: Layout[] = [
    ...EVENT_SPECS.map((spec) => compileLayout(spec, EventFragment.from(spec.abi))),
    ...[
      "event A(uint8 indexed a, int8 b, int16 c, uint24 d, int24 indexed e, bool f, bytes1 g, bytes4 h, bytes32 i)",
      "event B(address a, int256 b, uint256 c, int128 d, uint128 e, bytes20 f, bool indexed g)",
      "event C(string indexed a, bytes indexed b, uint256[] indexed c, int64 d, uint64 e, int40 f, uint40 g, int48 h)",
      "event D(int56 a, uint56 b, uint160 c, int248 d, uint248 e, bytes31 f, bytes16 g)",
    ].map((abi) => compileLayout({ standard: "abi", abi, source: "test" }, EventFragment.from(abi))),
  ].filter((l) => l.words);

  it(`same record on both paths for 200 random logs per layout (seed ${SEED})`, () => {
    expect(layouts.length).toBeGreaterThanOrEqual(16);
    const rand = prng(SEED);
    let errors = 0;
    for (const layout of layouts) {
      for (let n = 0; n < 200; n++) {
        const topics = [layout.topic0, ...Array.from({ length: layout.topicCount - 1 }, () => `0x${randomWord(rand)}`)];
        const data = `0x${Array.from({ length: (layout.dataLength ?? 0) / 32 }, () => randomWord(rand)).join("")}`;
        const log = logOf(topics, data);
        const token = rand() < 0.5 ? { symbol: "X", decimals: Math.floor(rand() * 80) } : undefined;
        const a = decodeWith(layout, log, token, true);
        expect(a, `${layout.signature} ${JSON.stringify(topics)} ${data} ${JSON.stringify(token)}`).toEqual(
          decodeWith(layout, log, token, false),
        );
        if (typeof a === "string") errors++;
      }
    }
    expect(errors).toBeGreaterThan(0); // dirty address words were drawn
    expect(errors).toBeLessThan(layouts.length * 200);
  });
});

describe("decimalText", () => {
  it(`equals ethers' formatUnits without a trailing ".0" (seed 7)`, () => {
    const rand = prng(7);
    const values = [0n, 1n, 9n, 10n, 100n, 10n ** 18n, 15n * 10n ** 17n, (1n << 256n) - 1n, -1n, -(10n ** 20n), -123456789n];
    for (let i = 0; i < 300; i++) values.push(BigInt(`0x${randomWord(rand)}`) >> BigInt(Math.floor(rand() * 256)));
    for (const v of values) {
      for (const decimals of [0, 1, 2, 6, 8, 9, 18, 19, 24, 36, 77, 78, 80]) {
        const s = formatUnits(v, decimals);
        expect(decimalText(v, decimals), `${v} / 10^${decimals}`).toBe(s.endsWith(".0") ? s.slice(0, -2) : s);
      }
    }
  });

  it("handles decimals above 80, where formatUnits throws (a uint8 decimals() may say up to 255)", () => {
    expect(() => formatUnits(1n, 81)).toThrow(/too large/);
    expect(decimalText(15n, 81)).toBe(`0.${"0".repeat(79)}15`);
    expect(decimalText(10n ** 255n, 255)).toBe("1");
    expect(decimalText(-(10n ** 100n) * 25n, 101)).toBe("-2.5");
  });
});
