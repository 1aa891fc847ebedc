/**
 * Every field a node returns is carried (issue #9 §1): for every complete mainnet fixture block
 * (2015 to 2025, geth, Erigon and chainstorage sources), each key of the raw block, transaction,
 * receipt and log JSON must appear in the record with the same value (quantities as `{num, raw}`,
 * hashes lower-cased, addresses EIP-55), except the few keys the record renders differently, listed
 * below with what they become. A key a node adds that the record does not carry fails the test.
 */
import { describe, expect, it } from "vitest";
import { toBlockBundle } from "../../../../pipeline/ingest/transform.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../../support/fixtures.js";

const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/**
 * Fields only OpenEthereum (Parity) returned — it is no current client; the 2015–2016 fixtures come
 * from one — and what carries the same information: `author` = `miner`, `sealFields` = `mixHash` +
 * `nonce`, `creates` = the receipt's `contractAddress`, `standardV` = the y parity of `v`, `raw` =
 * the signed transaction (re-encodable from the fields), `publicKey` = recoverable from the
 * signature, `condition` (a Parity scheduling option, always null), `transactionLogIndex` (the
 * position within the transaction), log `type` (always `mined`). Not carried (docs/decoding.md).
 */
const PARITY_ONLY = {
  block: ["author", "sealFields"],
  transaction: ["condition", "creates", "publicKey", "raw", "standardV"],
  log: ["transactionLogIndex", "type"],
} as const;

/** Raw keys rendered differently: key → how the record carries it (checked separately below). */
const RENAMED = {
  block: { transactions: "transactionCount", timestamp: "timestamp (ISO 8601)", ...ignore(PARITY_ONLY.block) },
  transaction: { blockTimestamp: "timestamp", data: "input", ...ignore(PARITY_ONLY.transaction) },
  receipt: { logs: "logCount and the log records", transactionHash: "hash", blockTimestamp: "timestamp" },
  log: { blockTimestamp: "timestamp", ...ignore(PARITY_ONLY.log) },
};

function ignore(keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(keys.map((k) => [k, "OpenEthereum only"]));
}

type Raw = Record<string, unknown>;
const HEX_QUANTITY = /^0x[0-9a-fA-F]+$/;

/** Mismatches found by {@link carries}: one line each (asserted empty at the end of a test, so one failure lists them all). */
const mismatches: string[] = [];
const differ = (path: string, record: unknown, raw: unknown) =>
  mismatches.push(`${path}: the record carries ${JSON.stringify(record)} for ${JSON.stringify(raw)}`);

/** Whether a record value carries the raw JSON-RPC value (see the module notes); records a mismatch when not. */
function carries(record: unknown, raw: unknown, path: string): void {
  if (raw === null || raw === undefined) {
    if ((record ?? null) !== null) differ(path, record, raw);
  } else if (Array.isArray(raw)) {
    if (!Array.isArray(record) || record.length !== raw.length) differ(path, record, raw);
    else
      raw.forEach((r, i) => {
        carries(record[i], r, `${path}[${i}]`);
      });
  } else if (typeof raw === "object") {
    if (typeof record !== "object" || record === null) differ(path, record, raw);
    else for (const [k, v] of Object.entries(raw as Raw)) carries((record as Raw)[k], v, `${path}.${k}`);
  } else if (typeof record === "object" && record !== null && "raw" in record) {
    const q = record as { num: number; raw: string };
    const ok =
      typeof raw === "string" && HEX_QUANTITY.test(raw) && q.raw === `0x${BigInt(raw).toString(16)}` && q.num === Number(BigInt(raw));
    if (!ok) differ(path, record, raw);
  } else if (typeof raw === "string" && typeof record === "string") {
    if (record.toLowerCase() !== raw.toLowerCase()) differ(path, record, raw);
  } else if (typeof raw === "boolean" || typeof record === "number") {
    if (record !== (typeof raw === "boolean" ? raw : Number(raw))) differ(path, record, raw);
  } else differ(path, record, raw);
}

function carriesAll(record: Raw, raw: Raw, renamed: Record<string, string>, path: string): void {
  for (const [key, value] of Object.entries(raw)) {
    if (key in renamed) continue;
    if (!(key in record)) mismatches.push(`${path}.${key}: a field the node returns is not in the record`);
    else carries(record[key], value, `${path}.${key}`);
  }
}

describe.skipIf(!fixtures)("every field the node returns, on every complete mainnet block", () => {
  const blocks = fixtures ? loadCompleteBlocks() : [];

  it("blocks, transactions merged with receipts, and logs carry every raw field", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(15);
    const seen = { block: new Set<string>(), transaction: new Set<string>(), receipt: new Set<string>() };
    for (const fb of blocks) {
      const bundle = toBlockBundle(fb.block, fb.receipts);
      const at = `block ${fb.number}`;
      carriesAll(bundle.block as unknown as Raw, fb.block, RENAMED.block, at);
      if (fb.block.author !== undefined) carries(bundle.block.miner, fb.block.author, `${at}.author`);
      expect(bundle.block.transactionCount).toBe((fb.block.transactions as unknown[]).length);
      for (const k of Object.keys(fb.block)) seen.block.add(k);
      const rawTxs = fb.block.transactions as Raw[];
      rawTxs.forEach((tx, i) => {
        const record = bundle.transactions[i] as unknown as Raw;
        const receipt = (fb.receipts as Raw[])[i] as Raw;
        carriesAll(record, tx, RENAMED.transaction, `${at} tx ${i}`);
        carriesAll(record, receipt, RENAMED.receipt, `${at} receipt ${i}`);
        expect(record.logCount).toBe((receipt.logs as unknown[]).length);
        if (tx.creates !== undefined) carries(record.contractAddress, tx.creates, `${at} tx ${i}.creates`);
        for (const k of Object.keys(tx)) seen.transaction.add(k);
        for (const k of Object.keys(receipt)) seen.receipt.add(k);
      });
      const rawLogs = (fb.receipts as Raw[]).flatMap((r) => r.logs as Raw[]);
      rawLogs.forEach((log, i) => {
        carriesAll(bundle.logs[i] as unknown as Raw, log, RENAMED.log, `${at} log ${i}`);
      });
    }
    // The fixtures span the eras: pre-London, post-Shanghai withdrawals, typed transactions.
    expect(mismatches).toEqual([]);
    for (const k of ["withdrawals", "withdrawalsRoot", "baseFeePerGas", "mixHash", "logsBloom", "sha3Uncles"])
      expect(seen.block).toContain(k);
    for (const k of ["v", "r", "s", "accessList", "chainId", "maxFeePerGas"]) expect(seen.transaction).toContain(k);
    for (const k of ["logsBloom", "status", "effectiveGasPrice"]) expect(seen.receipt).toContain(k);
  });

  it("leaves fields of later forks null before the fork (never invented)", () => {
    const old = blocks.find((b) => b.number === 47_218);
    expect(old).toBeDefined();
    const bundle = toBlockBundle(old!.block, old!.receipts);
    expect(bundle.block.baseFeePerGas).toBeNull();
    expect(bundle.block.withdrawals).toBeNull();
    expect(bundle.block.withdrawalsRoot).toBeNull();
    expect(bundle.block.parentBeaconBlockRoot).toBeNull();
    expect(bundle.block.blobGasUsed).toBeNull();
    expect(bundle.transactions[0]?.accessList).toBeNull();
    expect(bundle.transactions[0]?.yParity).toBeNull();
    const shanghai = blocks.find((b) => b.number === 17_053_184);
    const withdrawals = toBlockBundle(shanghai!.block, shanghai!.receipts).block.withdrawals;
    expect(withdrawals).toHaveLength(16);
    expect(withdrawals![0]!.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
  });
});
