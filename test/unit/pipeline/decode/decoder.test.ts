/**
 * Unit tests of the decode stage's pure logic on real mainnet logs (../shared/data/mainnet) and on
 * synthetic malformed logs. Expected counts are computed independently from raw topics (topic0 +
 * topic count), with topic hashes derived here from the signatures, not taken from the decoder.
 */
import avro from "avsc";
import { formatUnits, id } from "ethers";
import { describe, expect, it } from "vitest";
import { lookupToken, TOKEN_LIST_VERSION } from "../../../../lib/chain/tokens.js";
import { type EventRecord, eventId, type LogRecord } from "../../../../lib/records.js";
import { createDecoder, supportedEvents } from "../../../../pipeline/decode/decoder.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { eventSchema } from "../../../../topics/schemas.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";
import { syntheticLog } from "../../../support/sample-records.js";

const TRANSFER = id("Transfer(address,address,uint256)");
const APPROVAL = id("Approval(address,address,uint256)");
const APPROVAL_FOR_ALL = id("ApprovalForAll(address,address,bool)");
const DEPOSIT = id("Deposit(address,uint256)");
const WITHDRAWAL = id("Withdrawal(address,uint256)");
const V2_SWAP = id("Swap(address,uint256,uint256,uint256,uint256,address)");
const V2_SYNC = id("Sync(uint112,uint112)");
const V3_SWAP = id("Swap(address,address,int256,int256,uint160,uint128,int24)");
const TRANSFER_SINGLE = id("TransferSingle(address,address,address,uint256,uint256)");
const TRANSFER_BATCH = id("TransferBatch(address,address,address,uint256[],uint256[])");

const USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const WETH = "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2";
const CRYPTOKITTIES = "0x06012c8cf97bead5deae237070f9587f8e7a266d";
const MAX_UINT256 = (1n << 256n) - 1n;

const eventType = avro.Type.forSchema(eventSchema as avro.Schema);
const decoder = createDecoder({ chainId: 1 });

/** The address held in a 32-byte topic or data word, lower-case. */
const wordAddress = (word: string): string => `0x${word.slice(-40)}`;
/** The n-th 32-byte word of `data`. */
const dataWord = (data: string, n: number): string => `0x${data.slice(2 + 64 * n, 2 + 64 * (n + 1))}`;

const logCache = new Map<number, LogRecord[]>();
/** LogRecords of a complete fixture block, via the ingest transform. */
function logsOf(blockNumber: number): LogRecord[] {
  let logs = logCache.get(blockNumber);
  if (!logs) {
    const b = loadCompleteBlocks().find((x) => x.number === blockNumber);
    if (!b) throw new Error(`fixture block ${blockNumber} is missing`);
    logs = toBlockBundle(b.block, b.receipts).logs;
    logCache.set(blockNumber, logs);
  }
  return logs;
}

/** Number of logs with this topic0 and topic count, from the raw topics. */
function rawCount(logs: LogRecord[], topic0: string, topicCount: number, address?: string): number {
  return logs.filter((l) => l.topics[0] === topic0 && l.topics.length === topicCount && (!address || l.address.toLowerCase() === address))
    .length;
}

/** Decodes every log; returns (log, event) pairs of the decoded ones. */
function decodeAll(logs: LogRecord[]): { log: LogRecord; ev: EventRecord }[] {
  const out: { log: LogRecord; ev: EventRecord }[] = [];
  for (const log of logs) {
    const ev = decoder.decode(log);
    if (ev) out.push({ log, ev });
  }
  return out;
}

function countBy(pairs: { ev: EventRecord }[], standard: string, event: string, address?: string): number {
  return pairs.filter(
    ({ ev }) => ev.standard === standard && ev.event === event && ev.error === null && (!address || ev.address.toLowerCase() === address),
  ).length;
}

function arg(ev: EventRecord, name: string) {
  const a = ev.args.find((x) => x.name === name);
  if (!a) throw new Error(`no argument ${name} in ${ev.str}`);
  return a.value;
}

/** A synthetic log around given topics and data. */
const synthetic = (topics: string[], data: string, address = USDT): LogRecord => syntheticLog(topics, data, address);
const word = (v: bigint): string => v.toString(16).padStart(64, "0");
const addrTopic = (a: string): string => `0x${a.slice(2).padStart(64, "0")}`;
const ALICE = "0x1111111111111111111111111111111111111111";
const BOB = "0x2222222222222222222222222222222222222222";

describe.skipIf(!hasMainnetFixtures())(`decoder on mainnet fixtures${hasMainnetFixtures() ? "" : ` (${SKIP_NO_FIXTURES})`}`, () => {
  it("block 17000000: decoded counts per standard and event match the raw topic counts", () => {
    const logs = logsOf(17_000_000);
    const pairs = decodeAll(logs);
    const expected: [string, string, string, number][] = [
      ["erc20", "Transfer", TRANSFER, 3],
      ["erc721", "Transfer", TRANSFER, 4],
      ["erc20", "Approval", APPROVAL, 3],
      ["erc721", "Approval", APPROVAL, 4],
      ["erc721", "ApprovalForAll", APPROVAL_FOR_ALL, 3],
      ["weth", "Deposit", DEPOSIT, 2],
      ["weth", "Withdrawal", WITHDRAWAL, 2],
      ["uniswap-v2", "Swap", V2_SWAP, 3],
      ["uniswap-v2", "Sync", V2_SYNC, 1],
      ["uniswap-v3", "Swap", V3_SWAP, 3],
      ["erc1155", "TransferSingle", TRANSFER_SINGLE, 4],
    ];
    let total = 0;
    for (const [standard, event, topic0, n] of expected) {
      const raw = rawCount(logs, topic0, n);
      total += raw;
      expect(countBy(pairs, standard, event), `${standard} ${event}`).toBe(raw);
    }
    expect(pairs.filter(({ ev }) => ev.error !== null)).toEqual([]);
    expect(pairs.length).toBe(total);
    // Every one of them was decoded from the standard layouts.
    expect(new Set(pairs.map(({ ev }) => ev.source))).toEqual(new Set(["standard"]));
    // Figures stated by the fixture README.
    expect(countBy(pairs, "erc721", "Transfer")).toBe(19);
    expect(countBy(pairs, "uniswap-v2", "Swap")).toBe(17);
    expect(countBy(pairs, "uniswap-v2", "Sync")).toBe(19);
    expect(countBy(pairs, "uniswap-v3", "Swap")).toBe(3);
    expect(countBy(pairs, "erc1155", "TransferSingle")).toBe(3);
    // The README's "WETH 37, USDT 10" are ERC-20 Transfers of those tokens.
    expect(countBy(pairs, "erc20", "Transfer", WETH)).toBe(37);
    expect(countBy(pairs, "erc20", "Transfer", USDT)).toBe(10);
    // Every log of WETH (53: Transfer, Approval, Deposit, Withdrawal) and USDT is a recognised event.
    const tokenLogs = logs.filter((l) => [WETH, USDT].includes(l.address.toLowerCase()));
    expect(tokenLogs).toHaveLength(63);
    for (const l of tokenLogs) expect(decoder.decode(l)?.error, l.topics[0]).toBeNull();
  });

  it("a USDT Transfer: addresses from the topics, exact value, scaled by 6 decimals", () => {
    const log = logsOf(17_000_000).find((l) => l.address.toLowerCase() === USDT && l.topics[0] === TRANSFER);
    if (!log) throw new Error("no USDT Transfer in 17000000");
    const ev = decoder.decode(log) as EventRecord;
    const value = BigInt(log.data);
    expect(ev).toMatchObject({
      event: "Transfer",
      signature: "Transfer(address,address,uint256)",
      standard: "erc20",
      source: "standard",
      error: null,
      address: log.address,
      transactionHash: log.transactionHash,
      blockHash: log.blockHash,
      timestamp: log.timestamp,
    });
    expect(ev.logIndex).toEqual(log.logIndex);
    expect(ev.transactionIndex).toEqual(log.transactionIndex);
    expect(ev.blockNumber).toEqual({ num: 17_000_000, raw: "0x1036640" });
    expect(ev.args.map((a) => [a.name, a.pos, a.value.type])).toEqual([
      ["from", 0, "address"],
      ["to", 1, "address"],
      ["value", 2, "uint256"],
    ]);
    expect(arg(ev, "from")).toEqual({ hex: wordAddress(log.topics[1] as string), num: null, scaled: null, type: "address" });
    expect(arg(ev, "to").hex).toBe(wordAddress(log.topics[2] as string));
    const v = arg(ev, "value");
    expect(v.hex).toBe(`0x${value.toString(16)}`);
    expect(v.num).toBe(Number(value));
    expect(v.scaled).toBe((v.num as number) / 1e6);
    expect(ev.str).toContain(`value=${value} [${formatUnits(value, 6).replace(/\.0$/, "")} USDT]`);
    expect(ev.str.startsWith(`Transfer(from=${wordAddress(log.topics[1] as string)}, to=`)).toBe(true);
    expect(eventId(ev)).toMatch(/^0x[0-9a-f]{64}_e_\d+$/);
    expect(eventId(ev)).toBe(`${log.transactionHash}_e_${log.logIndex.num}`);
  });

  it("ERC-721 vs ERC-20 Transfer by topic count: a 4-topic Transfer carries an indexed tokenId", () => {
    const logs = logsOf(17_000_000);
    const nft = logs.find((l) => l.topics[0] === TRANSFER && l.topics.length === 4);
    if (!nft) throw new Error("no 4-topic Transfer");
    const ev = decoder.decode(nft) as EventRecord;
    expect(ev.standard).toBe("erc721");
    expect(ev.args.map((a) => a.name)).toEqual(["from", "to", "tokenId"]);
    const tokenId = BigInt(nft.topics[3] as string);
    expect(arg(ev, "tokenId")).toEqual({ hex: `0x${tokenId.toString(16)}`, num: Number(tokenId), scaled: null, type: "uint256" });
    expect(nft.data).toBe("0x");
    const erc20 = logs.filter((l) => l.topics[0] === TRANSFER && l.topics.length === 3);
    for (const l of erc20) expect(decoder.decode(l)?.args.map((a) => a.name)).toEqual(["from", "to", "value"]);
  });

  it("block 7280016: the CryptoKitties Transfer with one topic decodes from data as erc721", () => {
    const logs = logsOf(7_280_016).filter((l) => l.topics[0] === TRANSFER && l.topics.length === 1);
    expect(logs).toHaveLength(1);
    const log = logs[0] as LogRecord;
    expect(log.address.toLowerCase()).toBe(CRYPTOKITTIES);
    const ev = decoder.decode(log) as EventRecord;
    expect(ev.error).toBeNull();
    expect(ev.standard).toBe("erc721");
    expect(arg(ev, "from").hex).toBe(wordAddress(dataWord(log.data, 0)));
    expect(arg(ev, "to").hex).toBe(wordAddress(dataWord(log.data, 1)));
    expect(arg(ev, "tokenId")).toMatchObject({ hex: "0x877e9", num: 0x877e9, scaled: null });
  });

  it("block 11098450: 16 UniV2 Swap, 17 Sync, 14 WETH Deposit/Withdrawal, 1 ERC-1155 TransferBatch", () => {
    const logs = logsOf(11_098_450);
    const pairs = decodeAll(logs);
    expect(countBy(pairs, "uniswap-v2", "Swap")).toBe(16);
    expect(countBy(pairs, "uniswap-v2", "Sync")).toBe(17);
    expect(countBy(pairs, "weth", "Deposit", WETH) + countBy(pairs, "weth", "Withdrawal", WETH)).toBe(14);
    expect(countBy(pairs, "weth", "Deposit") + countBy(pairs, "weth", "Withdrawal")).toBe(
      rawCount(logs, DEPOSIT, 2) + rawCount(logs, WITHDRAWAL, 2),
    );

    const sync = pairs.find(({ ev }) => ev.event === "Sync");
    if (!sync) throw new Error("no Sync");
    expect(sync.ev.args.map((a) => [a.name, a.value.type])).toEqual([
      ["reserve0", "uint112"],
      ["reserve1", "uint112"],
    ]);
    expect(arg(sync.ev, "reserve0").hex).toBe(`0x${BigInt(dataWord(sync.log.data, 0)).toString(16)}`);

    const batch = pairs.filter(({ ev }) => ev.event === "TransferBatch");
    expect(batch).toHaveLength(rawCount(logs, TRANSFER_BATCH, 4));
    expect(batch).toHaveLength(1);
    const b = (batch[0] as { ev: EventRecord }).ev;
    expect(b.standard).toBe("erc1155");
    expect(arg(b, "ids")).toEqual({ hex: '["0x6","0xc","0xe","0x12","0x14"]', num: null, scaled: null, type: "uint256[]" });
    expect(JSON.parse(arg(b, "values").hex)).toEqual(["0x1", "0x1", "0x1", "0x1", "0x1"]);
    expect(b.str).toContain("ids=[6, 12, 14, 18, 20]");

    const dep = pairs.find(({ ev }) => ev.event === "Deposit" && ev.address.toLowerCase() === WETH);
    if (!dep) throw new Error("no WETH Deposit");
    const wad = BigInt(dep.log.data);
    expect(arg(dep.ev, "wad").scaled).toBe(Number(formatUnits(wad, 18)));
    expect(dep.ev.str).toContain("WETH]");
  });

  it("block 15753009: 26 UniV2 Swap, 28 Sync, 9 UniV3 Swap, 47 ERC-721 Transfer", () => {
    const pairs = decodeAll(logsOf(15_753_009));
    expect(countBy(pairs, "uniswap-v2", "Swap")).toBe(26);
    expect(countBy(pairs, "uniswap-v2", "Sync")).toBe(28);
    expect(countBy(pairs, "uniswap-v3", "Swap")).toBe(9);
    expect(countBy(pairs, "erc721", "Transfer")).toBe(47);
  });

  it("a UniV3 Swap renders signed amounts as -0x… hex with negative num, and no scaled values", () => {
    const pairs = decodeAll(logsOf(17_000_000)).filter(({ ev }) => ev.standard === "uniswap-v3");
    expect(pairs).toHaveLength(3);
    for (const { log, ev } of pairs) {
      expect(ev.args.map((a) => `${a.name}:${a.value.type}`)).toEqual([
        "sender:address",
        "recipient:address",
        "amount0:int256",
        "amount1:int256",
        "sqrtPriceX96:uint160",
        "liquidity:uint128",
        "tick:int24",
      ]);
      expect(ev.args.every((a) => a.value.scaled === null)).toBe(true);
      const amount0 = BigInt.asIntN(256, BigInt(dataWord(log.data, 0)));
      const expectedHex = amount0 < 0n ? `-0x${(-amount0).toString(16)}` : `0x${amount0.toString(16)}`;
      expect(arg(ev, "amount0")).toMatchObject({ hex: expectedHex, num: Number(amount0) });
      const tick = BigInt.asIntN(24, BigInt(dataWord(log.data, 4)));
      expect(arg(ev, "tick").num).toBe(Number(tick));
    }
    const amounts = pairs.flatMap(({ ev }) => [arg(ev, "amount0"), arg(ev, "amount1")]);
    expect(amounts.some((a) => a.hex.startsWith("-0x") && (a.num as number) < 0)).toBe(true);
  });

  it("uint256 values beyond 2^53 keep an exact hex; num is the nearest double", () => {
    const pairs = decodeAll(logsOf(17_000_000));
    const unlimited = pairs.filter(
      ({ ev }) => ev.event === "Approval" && ev.standard === "erc20" && arg(ev, "value").hex === `0x${"f".repeat(64)}`,
    );
    expect(unlimited.length).toBeGreaterThan(0);
    for (const { ev } of unlimited) expect(arg(ev, "value").num).toBe(Number(MAX_UINT256));
    const bigIds = pairs.filter(({ ev }) => ev.event === "TransferSingle" && (arg(ev, "id").num as number) > Number.MAX_SAFE_INTEGER);
    expect(bigIds.length).toBeGreaterThan(0);
    for (const { log, ev } of bigIds) expect(arg(ev, "id").hex).toBe(`0x${BigInt(dataWord(log.data, 0)).toString(16)}`);
  });

  it("every complete fixture block decodes without errors into records valid against the Avro event schema", () => {
    let decoded = 0;
    for (const b of loadCompleteBlocks()) {
      for (const { ev } of decodeAll(logsOf(b.number))) {
        decoded++;
        expect(ev.error, `${b.number} ${ev.str}`).toBeNull();
        expect(eventType.isValid(ev), ev.str).toBe(true);
        for (const a of ev.args) {
          if (a.value.type === "address") expect(a.value.hex).toMatch(/^0x[0-9a-f]{40}$/);
          else if (/^u?int\d+$/.test(a.value.type)) expect(a.value.hex).toMatch(/^-?0x(0|[1-9a-f][0-9a-f]*)$/);
        }
      }
    }
    expect(decoded).toBeGreaterThan(1500);
  });

  it("is chain-aware: a log on another chain gets no mainnet decimals", () => {
    const log = logsOf(17_000_000).find((l) => l.address.toLowerCase() === USDT && l.topics[0] === TRANSFER) as LogRecord;
    const ev = createDecoder({ chainId: 137 }).decode(log) as EventRecord;
    expect(ev.error).toBeNull();
    expect(arg(ev, "value").scaled).toBeNull();
    expect(ev.str).not.toContain("USDT");
  });
});

describe("decoder on synthetic logs", () => {
  const value = 1_500_000n;

  it("decodes a 3-topic Transfer and scales by the bundled token list", () => {
    const ev = decoder.decode(synthetic([TRANSFER, addrTopic(ALICE), addrTopic(BOB)], `0x${word(value)}`)) as EventRecord;
    expect(ev.error).toBeNull();
    expect(arg(ev, "value")).toEqual({ hex: "0x16e360", num: 1_500_000, scaled: 1.5, type: "uint256" });
    expect(ev.str).toBe(`Transfer(from=${ALICE}, to=${BOB}, value=1500000 [1.5 USDT])`);
  });

  it("matches topic0 case-insensitively", () => {
    const ev = decoder.decode(
      synthetic([TRANSFER.toUpperCase().replace("0X", "0x"), addrTopic(ALICE), addrTopic(BOB)], `0x${word(value)}`),
    );
    expect(ev?.error).toBeNull();
  });

  it("renders zero as 0x0 and a bool as 0x1/0x0", () => {
    const zero = decoder.decode(synthetic([TRANSFER, addrTopic(ALICE), addrTopic(BOB)], `0x${word(0n)}`)) as EventRecord;
    expect(arg(zero, "value")).toMatchObject({ hex: "0x0", num: 0, scaled: 0 });
    const yes = decoder.decode(synthetic([APPROVAL_FOR_ALL, addrTopic(ALICE), addrTopic(BOB)], `0x${word(1n)}`)) as EventRecord;
    expect(arg(yes, "approved")).toEqual({ hex: "0x1", num: 1, scaled: null, type: "bool" });
    expect(yes.str).toBe(`ApprovalForAll(owner=${ALICE}, operator=${BOB}, approved=true)`);
    const no = decoder.decode(synthetic([APPROVAL_FOR_ALL, addrTopic(ALICE), addrTopic(BOB)], `0x${word(0n)}`)) as EventRecord;
    expect(arg(no, "approved")).toMatchObject({ hex: "0x0", num: 0 });
  });

  it("scales with a token lookup override and ignores unusable decimals", () => {
    const log = synthetic([DEPOSIT, addrTopic(ALICE)], `0x${word(25n * 10n ** 17n)}`, "0x000000000000000000000000000000000000bEEF");
    const seen: [string, number][] = [];
    const custom = createDecoder({
      chainId: 10,
      tokens: (address, chainId) => {
        seen.push([address, chainId]);
        return { symbol: "WRAP", decimals: 18 };
      },
    });
    const ev = custom.decode(log) as EventRecord;
    expect(seen).toEqual([["0x000000000000000000000000000000000000beef", 10]]);
    expect(ev.standard).toBe("weth");
    expect(arg(ev, "wad").scaled).toBe(2.5);
    expect(ev.str).toBe(`Deposit(dst=${ALICE}, wad=2500000000000000000 [2.5 WRAP])`);
    const bad = createDecoder({ chainId: 1, tokens: () => ({ symbol: "X", decimals: -1 }) }).decode(log) as EventRecord;
    expect(arg(bad, "wad").scaled).toBeNull();
    // Events without a token amount never consult the lookup.
    seen.length = 0;
    custom.decode(synthetic([V2_SYNC], `0x${word(1n)}${word(2n)}`));
    expect(seen).toEqual([]);
  });

  it("scales by a token's decimals above 80 (decimals() is a uint8) instead of failing the log", () => {
    const log = synthetic([DEPOSIT, addrTopic(ALICE)], `0x${word(15n * 10n ** 75n)}`);
    const ev = createDecoder({ chainId: 1, tokens: () => ({ symbol: "BIG", decimals: 90 }) }).decode(log) as EventRecord;
    expect(ev.error).toBeNull();
    expect(arg(ev, "wad").scaled).toBe(1.5e-14);
    expect(ev.str).toBe(`Deposit(dst=${ALICE}, wad=${15n * 10n ** 75n} [0.000000000000015 BIG])`);
  });

  it("unknown topic0 and logs without topics give null", () => {
    expect(decoder.decode(synthetic([id("Foo(uint256)")], `0x${word(1n)}`))).toBeNull();
    expect(decoder.decode(synthetic([], "0x"))).toBeNull();
  });

  it("a Transfer with 2 topics is an error record, not a throw", () => {
    const ev = decoder.decode(synthetic([TRANSFER, addrTopic(ALICE)], `0x${word(BigInt(BOB))}${word(value)}`)) as EventRecord;
    expect(ev.event).toBe("Transfer");
    expect(ev.signature).toBe("Transfer(address,address,uint256)");
    expect(ev.standard).toBe("erc20|erc721");
    expect(ev.args).toEqual([]);
    expect(ev.error).toMatch(/2 topics fits no known layout/);
    expect(ev.str).toBe(`Transfer(undecodable: ${ev.error})`);
    expect(eventType.isValid(ev)).toBe(true);
    expect(eventId(ev)).toBe(`0x${"cd".repeat(32)}_e_42`);
  });

  it("truncated, overlong or non-hex data is an error record", () => {
    const topics = [TRANSFER, addrTopic(ALICE), addrTopic(BOB)];
    const short = decoder.decode(synthetic(topics, `0x${word(value).slice(2)}`)) as EventRecord;
    expect(short.standard).toBe("erc20");
    expect(short.error).toBe("Transfer(address,address,uint256) [erc20]: data is 31 bytes, expected 32");
    expect(short.args).toEqual([]);
    const long = decoder.decode(synthetic(topics, `0x${word(value)}00`)) as EventRecord;
    expect(long.error).toMatch(/data is 33 bytes, expected 32/);
    expect((decoder.decode(synthetic(topics, "0xzz")) as EventRecord).error).toMatch(/not 0x-prefixed hex/);
    expect((decoder.decode(synthetic(topics, "0x")) as EventRecord).error).toMatch(/data is 0 bytes/);
  });

  it("a malformed topic or a dirty address word is an error record", () => {
    const bad = decoder.decode(synthetic([TRANSFER, "0x1234", addrTopic(BOB)], `0x${word(value)}`)) as EventRecord;
    expect(bad.error).toMatch(/topic 1 is not a 32-byte hex word/);
    const dirty = `0x01${addrTopic(ALICE).slice(4)}`;
    const ev = decoder.decode(synthetic([TRANSFER, dirty, addrTopic(BOB)], `0x${word(value)}`)) as EventRecord;
    expect(ev.error).toMatch(/argument from is not an address/);
  });

  it("a malformed dynamic (TransferBatch) payload is an error record", () => {
    const topics = [TRANSFER_BATCH, addrTopic(ALICE), addrTopic(ALICE), addrTopic(BOB)];
    const ev = decoder.decode(synthetic(topics, `0x${word(0x40n)}${word(0x1000n)}`)) as EventRecord;
    expect(ev.standard).toBe("erc1155");
    expect(ev.error).toMatch(/TransferBatch\(address,address,address,uint256\[\],uint256\[\]\) \[erc1155\]: cannot decode/);
    expect(ev.error?.length).toBeLessThan(1024);
  });

  it("decodes an ERC-1155 TransferBatch", () => {
    const topics = [TRANSFER_BATCH, addrTopic(ALICE), addrTopic(ALICE), addrTopic(BOB)];
    const data = `0x${word(0x40n)}${word(0xa0n)}${word(2n)}${word(1n)}${word(MAX_UINT256)}${word(2n)}${word(5n)}${word(0n)}`;
    const ev = decoder.decode(synthetic(topics, data)) as EventRecord;
    expect(ev.error).toBeNull();
    expect(arg(ev, "ids").hex).toBe(`["0x1","0x${"f".repeat(64)}"]`);
    expect(arg(ev, "values").hex).toBe('["0x5","0x0"]');
    expect(ev.str).toBe(`TransferBatch(operator=${ALICE}, from=${ALICE}, to=${BOB}, ids=[1, ${MAX_UINT256}], values=[5, 0])`);
  });

  it("never throws, even on structurally broken input", () => {
    const broken = { ...synthetic([TRANSFER, addrTopic(ALICE), addrTopic(BOB)], `0x${word(1n)}`), data: undefined } as unknown as LogRecord;
    expect(decoder.decode(broken)?.error).toMatch(/not 0x-prefixed hex/);
    const noTopics = { ...synthetic([], "0x"), topics: undefined } as unknown as LogRecord;
    expect(decoder.decode(noTopics)).toBeNull();
  });

  it("lists the supported layouts with distinct (topic0, topic count) pairs", () => {
    const all = supportedEvents();
    const keys = all.map((e) => `${e.topic0}/${e.topicCount}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(all.find((e) => e.topic0 === TRANSFER && e.topicCount === 1)?.standard).toBe("erc721");
    expect(all.map((e) => e.standard)).toEqual(expect.arrayContaining(["erc20", "erc721", "erc1155", "weth", "uniswap-v2", "uniswap-v3"]));
  });
});

describe("bundled token list", () => {
  it("knows USDT with 6 decimals on chain 1 only, by lower-case or checksummed address", () => {
    expect(lookupToken(USDT, 1)).toEqual({ symbol: "USDT", decimals: 6 });
    expect(lookupToken("0xdAC17F958D2ee523a2206206994597C13D831ec7", 1)).toEqual({ symbol: "USDT", decimals: 6 });
    expect(lookupToken(WETH, 1)).toEqual({ symbol: "WETH", decimals: 18 });
    expect(lookupToken(USDT, 137)).toBeUndefined();
    expect(TOKEN_LIST_VERSION.version).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
