/**
 * Unit tests of decoding by signature (pipeline/decode/signatures.ts through the decoder) on real
 * mainnet logs (../shared/data/mainnet). Expected values are computed independently: the database
 * figures from the artifacts with ethers' `Interface`, the decoded arguments with
 * `Interface.parseLog` on the artifact that declares the event, and by hand from the topic words.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { type EventFragment, hexlify, Interface, id, keccak256, toUtf8Bytes } from "ethers";
import { describe, expect, it } from "vitest";
import type { EventRecord, LogRecord } from "../../../../lib/records.js";
import { createDecoder, supportedEvents } from "../../../../pipeline/decode/decoder.js";
import { signatureDatabase } from "../../../../pipeline/decode/signatures.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const PKG = createRequire(import.meta.url).resolve("@openzeppelin/contracts/package.json");
const ARTIFACTS = join(dirname(PKG), "build", "contracts");
const artifactAbi = (name: string): Interface =>
  new Interface((JSON.parse(readFileSync(join(ARTIFACTS, `${name}.json`), "utf8")) as { abi: unknown[] }).abi as never);

const OWNERSHIP_TRANSFERRED = id("OwnershipTransferred(address,address)");
const QUEUE_TRANSACTION = id("QueueTransaction(bytes32,address,uint256,string,bytes,uint256)");
const ERC777_SENT = id("Sent(address,address,address,uint256,bytes,bytes)");
/** EtherDelta's `Deposit(address token, address user, uint256 amount, uint256 balance)`, nothing indexed: same topic0 as ERC-4626's Deposit (2 indexed). */
const DEPOSIT_4626 = id("Deposit(address,address,uint256,uint256)");

const decoder = createDecoder({ chainId: 1 });
const standardTopics = new Set(supportedEvents().map((e) => e.topic0));

let fixtureLogs: LogRecord[] | undefined;
/** Every log of every complete fixture block, via the ingest transform. */
function allLogs(): LogRecord[] {
  fixtureLogs ??= loadCompleteBlocks().flatMap((b) => toBlockBundle(b.block, b.receipts).logs);
  return fixtureLogs;
}
/** The one fixture log with this transaction hash and log index. */
function fixtureLog(tx: string, logIndex: number): LogRecord {
  const log = allLogs().find((l) => l.transactionHash === tx && l.logIndex.num === logIndex);
  if (!log) throw new Error(`fixture log ${tx}#${logIndex} is missing`);
  return log;
}
/** The expected `value.hex` of an ethers-decoded value: this file's own reading of docs/decoding.md "Arguments". */
function expectedHex(type: string, v: unknown): string {
  if (typeof v === "bigint") return `0x${v.toString(16)}`;
  if (type === "string") return hexlify(toUtf8Bytes(v as string));
  return String(v).toLowerCase();
}

describe("the signature database (@openzeppelin/contracts)", () => {
  it("holds every distinct event layout of the installed artifacts except the standard topic0s", () => {
    // Independent count: every artifact's events through ethers' Interface, deduplicated by signature + indexed flags.
    const files = readdirSync(ARTIFACTS).filter((f) => f.endsWith(".json"));
    const keys = new Set<string>();
    for (const f of files) {
      const iface = new Interface((JSON.parse(readFileSync(join(ARTIFACTS, f), "utf8")) as { abi: unknown[] }).abi as never);
      iface.forEachEvent((e: EventFragment) => {
        if (!standardTopics.has(e.topicHash)) keys.add(`${e.format("sighash")}/${e.inputs.map((p) => Number(p.indexed)).join("")}`);
      });
    }
    const db = signatureDatabase();
    expect(db.version).toBe((JSON.parse(readFileSync(PKG, "utf8")) as { version: string }).version);
    expect(db.artifacts).toBe(files.length);
    expect(db.layouts).toBe(keys.size);
    const layouts = [...db.byTopic.values()].flat();
    expect(layouts.length).toBe(db.layouts);
    for (const l of layouts) {
      expect(l.topic0).toBe(id(l.signature));
      expect(standardTopics.has(l.topic0), l.signature).toBe(false);
    }
    // ERC-20 Transfer is in the artifacts (ERC20.json) but belongs to the standard layouts.
    expect(db.byTopic.has(id("Transfer(address,address,uint256)"))).toBe(false);
    // Figures quoted in docs/decoding.md for 5.7.0: a change of the package shows up here.
    expect({ version: db.version, artifacts: db.artifacts, layouts: db.layouts, topics: db.byTopic.size }).toEqual({
      version: "5.7.0",
      artifacts: 257,
      layouts: 106,
      topics: 106,
    });
    expect(layouts.filter((l) => l.inputs.some((i) => /^arg\d+$/.test(i.name)))).toEqual([]);
  });
});

describe.skipIf(!hasMainnetFixtures())("decoding mainnet fixture logs by signature", () => {
  if (!hasMainnetFixtures()) console.warn(SKIP_NO_FIXTURES);

  it("decodes exactly 3 of the 2,206 complete-block logs; standard topic0s stay standard", () => {
    const logs = allLogs();
    expect(logs.length).toBe(2206);
    const bySource = new Map<string, EventRecord[]>();
    for (const log of logs) {
      const ev = decoder.decode(log);
      if (!ev) continue;
      const list = bySource.get(ev.source) ?? [];
      list.push(ev);
      bySource.set(ev.source, list);
      // A log whose topic0 is a standard layout is never decoded by signature.
      expect(ev.source === "standard", ev.str).toBe(standardTopics.has(log.topics[0]?.toLowerCase() ?? ""));
    }
    const bySignature = (bySource.get("signature") ?? []).map((e) => `${e.blockNumber.num} ${e.event}`);
    expect(bySignature).toEqual(["11098450 QueueTransaction", "15753009 Sent", "18000000 OwnershipTransferred"]);
    expect(bySource.get("signature")?.every((e) => e.standard === "openzeppelin" && e.error === null)).toBe(true);
  });

  it("OwnershipTransferred (block 18,000,000): the arguments are the two topic words' addresses", () => {
    const log = fixtureLog("0x24578bf2676fabd01269543dda61e53496a3282b1d9794ddb141319578052359", 54);
    expect(log.topics[0]).toBe(OWNERSHIP_TRANSFERRED);
    const ev = decoder.decode(log) as EventRecord;
    expect(ev).toMatchObject({
      event: "OwnershipTransferred",
      signature: "OwnershipTransferred(address,address)",
      standard: "openzeppelin",
      source: "signature",
      error: null,
      address: log.address,
      logIndex: log.logIndex,
    });
    const prev = `0x${(log.topics[1] as string).slice(-40)}`;
    const next = `0x${(log.topics[2] as string).slice(-40)}`;
    expect(prev).toBe("0x0000000000000000000000000000000000000000");
    expect(ev.args).toEqual([
      { name: "previousOwner", pos: 0, value: { hex: prev, num: null, scaled: null, type: "address" } },
      { name: "newOwner", pos: 1, value: { hex: next, num: null, scaled: null, type: "address" } },
    ]);
    expect(ev.str).toBe(`OwnershipTransferred(previousOwner=${prev}, newOwner=${next})`);
  });

  it("QueueTransaction (Compound timelock, block 11,098,450) and ERC-777 Sent (block 15,753,009) match ethers' parseLog on their artifacts", () => {
    const cases = [
      {
        tx: "0x5222132d9cf0404b3ac3e0e4655e0844646f8e8744869753282e26a3ea93ffe3",
        index: 212,
        artifact: "ICompoundTimelock",
        topic0: QUEUE_TRANSACTION,
      },
      { tx: "0xc18489a80896db123ed85651dd63ffc45d94dd8f28bbab2af2645369df29e3b0", index: 352, artifact: "IERC777", topic0: ERC777_SENT },
    ];
    for (const c of cases) {
      const log = fixtureLog(c.tx, c.index);
      expect(log.topics[0]).toBe(c.topic0);
      const parsed = artifactAbi(c.artifact).parseLog({ topics: log.topics, data: log.data });
      if (!parsed) throw new Error(`${c.artifact} does not parse the log`);
      const ev = decoder.decode(log) as EventRecord;
      expect(ev.event).toBe(parsed.name);
      expect(ev.signature).toBe(parsed.signature);
      expect(ev.args).toEqual(
        parsed.fragment.inputs.map((p, pos) => ({
          name: p.name,
          pos,
          value: {
            hex: expectedHex(p.type, parsed.args[pos]),
            num: typeof parsed.args[pos] === "bigint" ? Number(parsed.args[pos]) : null,
            scaled: null,
            type: p.type,
          },
        })),
      );
    }
    const queued = decoder.decode(fixtureLog(cases[0]?.tx as string, 212)) as EventRecord;
    // The queued call's signature, a string argument: its text in `str`, its UTF-8 bytes in `hex`.
    expect(queued.str).toContain('signature="set(uint256,uint256,bool)"');
    expect(queued.args.find((a) => a.name === "eta")?.value).toMatchObject({ hex: "0x5f914a10", num: 1_603_357_200 });
  });

  it("a topic0 in the database with another indexed split gives no event (EtherDelta Deposit, nothing indexed)", () => {
    const deposits = allLogs().filter((l) => l.topics[0] === DEPOSIT_4626);
    expect(deposits.map((l) => l.topics.length)).toEqual([1, 1, 1]);
    expect(
      signatureDatabase()
        .byTopic.get(DEPOSIT_4626)
        ?.map((l) => l.topicCount),
    ).toEqual([3]);
    for (const log of deposits) expect(decoder.decode(log)).toBeNull();
  });

  it("rejects trailing bytes, dirty padding and short data: the log must re-encode exactly", () => {
    const owner = fixtureLog("0x24578bf2676fabd01269543dda61e53496a3282b1d9794ddb141319578052359", 54);
    const queued = fixtureLog("0x5222132d9cf0404b3ac3e0e4655e0844646f8e8744869753282e26a3ea93ffe3", 212);
    expect(decoder.decode(queued)?.source).toBe("signature");
    const zeros = "00".repeat(32);
    // Static layout with empty data: one extra word.
    expect(decoder.decode({ ...owner, data: `0x${zeros}` })).toBeNull();
    // Dynamic layout: ethers' AbiCoder alone would ignore the trailing word; the re-encoding does not.
    expect(decoder.decode({ ...queued, data: `${queued.data}${zeros}` })).toBeNull();
    expect(decoder.decode({ ...queued, data: `${queued.data}00` })).toBeNull();
    expect(decoder.decode({ ...queued, data: queued.data.slice(0, -64) })).toBeNull();
    // An address topic with a non-zero upper byte.
    const dirty = `0x01${(owner.topics[2] as string).slice(4)}`;
    expect(decoder.decode({ ...owner, topics: [owner.topics[0] as string, owner.topics[1] as string, dirty] })).toBeNull();
    // Topic count other than 1 + indexed.
    expect(decoder.decode({ ...owner, topics: owner.topics.slice(0, 2) })).toBeNull();
  });

  it("an indexed dynamic argument is its 32-byte hash, typed as declared", () => {
    const owner = fixtureLog("0x24578bf2676fabd01269543dda61e53496a3282b1d9794ddb141319578052359", 54);
    const hash = keccak256("0x1234");
    const ev = decoder.decode({ ...owner, topics: [id("ERC7913SignerAdded(bytes)"), hash], data: "0x" }) as EventRecord;
    expect(ev.source).toBe("signature");
    expect(ev.args).toEqual([{ name: "signers", pos: 0, value: { hex: hash, num: null, scaled: null, type: "bytes" } }]);
  });

  it("the switch off (CHAINSIFT_DECODE_SIGNATURES=false) gives no event; standard layouts are unaffected", () => {
    const off = createDecoder({ chainId: 1, signatures: false });
    expect(off.decode(fixtureLog("0x24578bf2676fabd01269543dda61e53496a3282b1d9794ddb141319578052359", 54))).toBeNull();
    const transfer = allLogs().find((l) => standardTopics.has(l.topics[0] as string)) as LogRecord;
    expect(off.decode(transfer)).toEqual(decoder.decode(transfer));
  });
});
