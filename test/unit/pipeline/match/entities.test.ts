/**
 * Unit tests of the match entities (lib/match/entities.ts, methods.ts) on real mainnet data
 * (../shared/data/mainnet): flattenCallTrace on geth callTracer output of the chainstorage blocks,
 * Method/Call decoding checked against independently parsed calldata, Contract entities from
 * receipts and from CREATE frames, and the record adapters.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { getAddress, id } from "ethers";
import { describe, expect, it } from "vitest";
import { type CallFrame, callEntity, flattenCallTrace, type TraceEntity, traceContextOf } from "../../../../lib/chain/calltrace.js";
import { decodeMethod, supportedMethods } from "../../../../lib/chain/methods.js";
import {
  contractEntitiesFromTrace,
  contractEntity,
  eventEntity,
  logEntity,
  methodEntity,
  transactionEntity,
} from "../../../../lib/match/entities.js";
import { eventId, logId, type TransactionRecord } from "../../../../lib/records.js";
import { createDecoder } from "../../../../pipeline/decode/decoder.js";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, MAINNET_DIR, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const CHAINSTORAGE = join(MAINNET_DIR, "coinbase-chainstorage");
const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** Every chainstorage block with its callTracer frames (one per transaction) and transaction records. */
function tracedBlocks(): { number: number; frames: CallFrame[]; txs: TransactionRecord[] }[] {
  const blocks = loadCompleteBlocks();
  return readdirSync(CHAINSTORAGE)
    .filter((d) => d.startsWith("block_"))
    .map((d) => {
      const number = Number(d.slice("block_".length));
      const frames = JSON.parse(
        readFileSync(join(CHAINSTORAGE, d, "debug_traceBlock_callTracer_per_tx.results.json"), "utf8"),
      ) as CallFrame[];
      const b = blocks.find((x) => x.number === number);
      if (!b) throw new Error(`block ${number} missing`);
      return { number, frames, txs: toBlockBundle(b.block, b.receipts).transactions };
    });
}

/** Frames counted by plain recursion, independently of flattenCallTrace. */
function countFrames(f: CallFrame): number {
  return 1 + (f.calls ?? []).reduce((s, c) => s + countFrames(c), 0);
}

/** The frame at a traceAddress, found by walking the nested structure. */
function frameAt(root: CallFrame, addr: number[]): CallFrame {
  let f = root;
  for (const i of addr) f = (f.calls ?? [])[i] as CallFrame;
  return f;
}

/** Calls `fn` with every transaction of the traced fixture blocks and its root call frame. */
function forEachTracedTx(fn: (root: CallFrame, tx: TransactionRecord) => void): void {
  for (const { frames, txs } of tracedBlocks()) {
    for (const [i, root] of frames.entries()) fn(root, txs[i] as TransactionRecord);
  }
}

describe.skipIf(!fixtures)("flattenCallTrace on real geth callTracer output", () => {
  it("yields one entity per frame with unique traceAddresses, in pre-order, matching the nested frames", () => {
    let total = 0;
    let errors = 0;
    let creates = 0;
    for (const { frames, txs } of tracedBlocks()) {
      expect(frames.length).toBe(txs.length);
      frames.forEach((root, i) => {
        const tx = txs[i] as TransactionRecord;
        const flat = flattenCallTrace(root, traceContextOf(tx));
        expect(flat.length).toBe(countFrames(root));
        const keys = flat.map((f) => f.traceAddress.join("."));
        expect(new Set(keys).size).toBe(flat.length);
        expect(new Set(flat.map((f) => f.entityId)).size).toBe(flat.length);
        // top-level frame = the transaction
        const top = flat[0] as TraceEntity;
        expect(top.traceAddress).toEqual([]);
        expect(top.from).toBe(tx.from);
        if (tx.to) expect(top.to).toBe(tx.to);
        else expect(top.to).toBe(tx.contractAddress);
        expect(top.input).toBe(tx.input);
        expect(top.entityId).toBe(`${tx.hash}_t`);
        flat.forEach((f, k) => {
          const src = frameAt(root, f.traceAddress);
          expect(f.type).toBe(src.type);
          expect(f.from.toLowerCase()).toBe(src.from.toLowerCase());
          expect(f.value?.raw ?? null).toBe(src.value === undefined ? null : `0x${BigInt(src.value).toString(16)}`);
          expect(f.error).toBe(src.error ?? null);
          expect(f.depth).toBe(f.traceAddress.length);
          expect(f.subtraces).toBe((src.calls ?? []).length);
          expect(f.transactionHash).toBe(tx.hash);
          expect(f.blockHash).toBe(tx.blockHash);
          expect(f.blockNumber).toEqual(tx.blockNumber);
          if (k > 0) {
            // pre-order: the parent appears before the child, the previous sibling's subtree before it
            const parent = f.traceAddress.slice(0, -1).join(".");
            expect(keys.indexOf(parent)).toBeLessThan(k);
            expect(f.entityId).toBe(`${tx.hash}_t_${f.traceAddress.join("_")}`);
          }
        });
        total += flat.length;
        errors += flat.filter((f) => f.error !== null).length;
        creates += flat.filter((f) => f.type.startsWith("CREATE")).length;
      });
    }
    // totals computed independently by a recursive walk of the same files (see the fixtures README)
    expect(total).toBe(4179);
    expect(errors).toBe(33);
    expect(creates).toBe(18);
  });

  it("unwraps {txHash, result} wrappers and rejects malformed frames", () => {
    const ctx = { transactionHash: "0xaa", blockHash: "0xbb", blockNumber: { num: 1, raw: "0x1" } };
    const frame: CallFrame = {
      type: "CALL",
      from: "0x0000000000000000000000000000000000000001",
      to: "0x0000000000000000000000000000000000000002",
      input: "0x",
    };
    expect(flattenCallTrace({ result: frame }, ctx)).toHaveLength(1);
    expect(() => flattenCallTrace({ ...frame, from: "nope" }, ctx)).toThrow(/from/);
    expect(() => flattenCallTrace({ ...frame, calls: [null as never] }, ctx)).toThrow(/calls\[0\]/);
    expect(() => flattenCallTrace({ ...frame, gas: "12" }, ctx)).toThrow(/gas/);
    const deep: CallFrame = { ...frame };
    let cur = deep;
    for (let i = 0; i < 1100; i++) {
      const next: CallFrame = { ...frame };
      cur.calls = [next];
      cur = next;
    }
    const flat = flattenCallTrace(deep, ctx);
    expect(flat).toHaveLength(1101);
    expect(flat[1100]?.depth).toBe(1100); // deeper than the EVM allows (1024): no stack overflow
  });

  it("Contract entities: receipt creations and CREATE/CREATE2 frames share entity ids", () => {
    let fromReceipts = 0;
    let fromTraces = 0;
    forEachTracedTx((root, tx) => {
      const flat = flattenCallTrace(root, traceContextOf(tx));
      const traced = contractEntitiesFromTrace(flat, traceContextOf(tx));
      fromTraces += traced.length;
      const c = contractEntity(tx);
      if (c) {
        fromReceipts++;
        expect(c.address).toBe(tx.contractAddress);
        expect(c.creator).toBe(tx.from);
        expect(traced.map((t) => t.entityId)).toContain(c.entityId);
      }
      for (const t of traced) {
        expect(t.transactionFrom).toBe(tx.from);
        expect(["CREATE", "CREATE2"]).toContain(t.createType);
      }
    });
    expect(fromReceipts).toBe(3); // block 7280016 has three contract-creation transactions
    expect(fromTraces).toBeGreaterThan(fromReceipts); // factories (CREATE2) too
  });

  it("Call entities decode frame inputs with the Method ABI set; DELEGATECALL/CREATE handled", () => {
    let calls = 0;
    let transfers = 0;
    forEachTracedTx((root, tx) => {
      for (const f of flattenCallTrace(root, traceContextOf(tx))) {
        const c = callEntity(f, { chainId: 1 });
        const known = f.methodId !== null && supportedMethods().some((m) => m.methodId === f.methodId) && !f.type.startsWith("CREATE");
        if (!known) {
          expect(c).toBeNull();
          continue;
        }
        if (!c) continue; // known selector, undecodable arguments
        calls++;
        expect(c.entityId).toBe(f.entityId.replace(/_t(?=_|$)/, "_c"));
        expect(c.methodId).toBe(f.methodId);
        if (c.name === "transfer") {
          transfers++;
          const word = (n: number) => f.input.slice(10 + 64 * n, 10 + 64 * (n + 1));
          expect(c.args[0]?.value.hex).toBe(`0x${word(0).slice(24)}`);
          expect(BigInt(c.args[1]?.value.hex ?? "0")).toBe(BigInt(`0x${word(1)}`));
        }
      }
    });
    expect(calls).toBeGreaterThan(100);
    expect(transfers).toBeGreaterThan(50);
  });
});

describe.skipIf(!fixtures)("Method entities from real transactions", () => {
  it("decode transfer calldata exactly as the raw words say; unknown selectors give null", () => {
    const TRANSFER = id("transfer(address,uint256)").slice(0, 10);
    let checked = 0;
    let unknown = 0;
    for (const b of loadCompleteBlocks()) {
      for (const tx of toBlockBundle(b.block, b.receipts).transactions) {
        const m = methodEntity(tx, { chainId: 1 });
        const sel = tx.input.slice(0, 10);
        if (!supportedMethods().some((s) => s.methodId === sel) || tx.to === null) {
          expect(m).toBeNull();
          unknown++;
          continue;
        }
        if (sel === TRANSFER && tx.input.length === 10 + 128 && m) {
          checked++;
          expect(m.name).toBe("transfer");
          expect(m.signature).toBe("transfer(address,uint256)");
          expect(m.entityId).toBe(`${tx.hash}_m`);
          expect(m.to).toBe(tx.to);
          expect(m.address).toBe(tx.to);
          expect(m.from).toBe(tx.from);
          expect(m.args.map((a) => a.name)).toEqual(["to", "value"]);
          expect(m.args[0]?.value.hex).toBe(`0x${tx.input.slice(34, 74)}`);
          expect(BigInt(m.args[1]?.value.hex ?? "")).toBe(BigInt(`0x${tx.input.slice(74)}`));
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(unknown).toBeGreaterThan(100);
  });

  it("scales token amounts of known tokens; labels shared ERC-20/721 selectors", () => {
    const usdt = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
    const input = `0xa9059cbb${"0".repeat(24)}${"11".repeat(20)}${1_500_500_000n.toString(16).padStart(64, "0")}`;
    const m = decodeMethod(input, usdt, { chainId: 1 });
    expect(m?.args[1]?.value).toEqual({ hex: "0x596fd020", num: 1_500_500_000, scaled: 1500.5, type: "uint256" });
    expect(decodeMethod(input, "0x0000000000000000000000000000000000000001", { chainId: 1 })?.args[1]?.value.scaled).toBeNull();
    const approve = `0x095ea7b3${"0".repeat(24)}${"11".repeat(20)}${"0".repeat(63)}5`;
    expect(decodeMethod(approve, usdt, { chainId: 1 })?.standard).toBe("erc20");
    expect(decodeMethod(approve, "0x0000000000000000000000000000000000000001", { chainId: 1 })?.standard).toBe("erc20|erc721");
    expect(decodeMethod("0xa9059cbb00", usdt, { chainId: 1 })).toBeNull();
    expect(decodeMethod("0x12345678", usdt, { chainId: 1 })).toBeNull();
    expect(decodeMethod("0x", usdt, { chainId: 1 })).toBeNull();
    const path = decodeMethod(
      `0x7ff36ab5${"0".repeat(63)}1${"0".repeat(62)}80${"0".repeat(24)}${"22".repeat(20)}${"0".repeat(63)}9${"0".repeat(63)}2${"0".repeat(24)}${"c0".repeat(20)}${"0".repeat(24)}${"dd".repeat(20)}`,
      "0x7a250d5630B4cF539739dF2C5dAcb4c659F2488D",
      { chainId: 1 },
    );
    expect(path?.name).toBe("swapExactETHForTokens");
    expect(path?.args[1]).toEqual({
      name: "path",
      pos: 1,
      value: { hex: JSON.stringify([`0x${"c0".repeat(20)}`, `0x${"dd".repeat(20)}`]), num: null, scaled: null, type: "address[]" },
    });
  });
});

describe.skipIf(!fixtures)("record adapters", () => {
  it("event, log and transaction entities keep the record and add entityId", () => {
    const b = loadCompleteBlocks().find((x) => x.number === 17053184);
    if (!b) throw new Error("block 17053184 missing");
    const bundle = toBlockBundle(b.block, b.receipts);
    const decoder = createDecoder({ chainId: 1 });
    const log = bundle.logs[0] as (typeof bundle.logs)[number];
    const le = logEntity(log);
    expect(le.entityId).toBe(logId(log));
    expect(le.topic0).toBe(log.topics[0]);
    expect(le.topic3).toBe(log.topics[3] ?? null);
    const evr = bundle.logs.map((l) => decoder.decode(l)).find((e) => e !== null);
    if (!evr) throw new Error("no decodable log");
    const ee = eventEntity(evr);
    expect(ee.entityId).toBe(eventId(evr));
    expect(ee.args).toBe(evr.args);
    const tx = bundle.transactions[0] as TransactionRecord;
    expect(transactionEntity(tx)).toMatchObject({ entityId: tx.hash, hash: tx.hash, blockHash: tx.blockHash, blockNumber: tx.blockNumber });
    expect(getAddress(transactionEntity(tx).from)).toBe(tx.from);
  });
});
