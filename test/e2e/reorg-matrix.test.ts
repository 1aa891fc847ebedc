/**
 * Reorg matrix: one anvil (ERC-20 traffic), one pipeline (decode + index) and one follower for the
 * whole file; reorgs of depth 1, 2, 5, 16 and 64, each without and with replacement transactions
 * (ERC-20 `transfer`s, so the new branch has logs and events), one reorg that drops a transaction
 * entirely and one that moves a transaction to the new branch (same hash, other block). After each
 * reorg, compareWithChain over heights 0..N (N read from the node once the reorg settled) proves
 * that the API serves exactly the node's canonical chain and none of the orphaned blocks.
 *
 * Determinism: anvil mines every 0.25 s, so between reading the head and calling `anvil_reorg` a
 * block could be mined and the orphaned set would not be the one read. Each case therefore pauses
 * interval mining (`evm_setIntervalMining 0`) around the reorg, mines the few blocks after it with
 * `anvil_mine`, and resumes interval mining afterwards (1 s: the RPC takes whole seconds).
 *
 * anvil facts used: `anvil_reorg [depth, [[tx, blockOffset], …]]` replaces the last `depth` blocks
 * by `depth` new ones (same height); a tx entry is a TransactionRequest from an unlocked account or
 * raw signed bytes (checked with anvil 1.7.1: the raw bytes of an orphaned transaction are mined
 * again in the new branch with the same hash); transactions of orphaned blocks are dropped, not
 * re-queued (their receipt becomes null).
 */
import { Interface, Wallet } from "ethers";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilHandle } from "../../cli/devchain/anvil.js";
import { rpcCall } from "../../cli/devchain/rpc.js";
import type { TrafficHandle } from "../../cli/devchain/traffic.js";
import { uniformPartitioning } from "../../lib/partitioning.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { type ChainComparison, compareWithChain } from "../support/canonical.js";
import { type FollowedChain, startFollowedChain } from "../support/followed-chain.js";
import { type Harness, probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();

const erc20 = new Interface(["function transfer(address to, uint256 amount) returns (bool)"]);
const hex = (n: number) => `0x${n.toString(16)}`;

type RpcBlock = { hash: string; number: string; transactions: string[] };
type TxHit = { _id: string; _source?: { blockHash?: string; blockNumber?: { num: number } } };

describe.skipIf(!up.ok)("Reorg matrix (anvil with ERC-20 traffic, decode + index, one follower)", () => {
  let h: Harness;
  let anvil: AnvilHandle;
  let traffic: TrafficHandle;
  let app: FastifyInstance;
  const decoder = createDecoder({ chainId: 31337 });
  /** A key only this test signs with (its nonces are not raced by the traffic generator). */
  const wallet = Wallet.createRandom();
  /** Head once the traffic generator deployed and minted: no reorg may reach below it (the token balances live there). */
  let setupHeight = 0;

  const rpc = (method: string, params: unknown[] = []) => rpcCall(anvil.rpcUrl, method, params);
  const headNumber = async () => Number(await rpc("eth_blockNumber"));
  const blockAt = async (n: number) => (await rpc("eth_getBlockByNumber", [hex(n), false])) as RpcBlock;
  const receipt = async (hash: string) =>
    (await rpc("eth_getTransactionReceipt", [hash])) as { blockHash: string; blockNumber: string; status: string; logs: unknown[] } | null;
  const pauseMining = () => rpc("evm_setIntervalMining", [0]);
  const resumeMining = () => rpc("evm_setIntervalMining", [1]);

  /** Searches transactions by `_id` through the API (the real route). */
  const txById = async (hash: string): Promise<TxHit[]> => {
    const { chain } = h.config;
    const res = await app.inject({
      method: "POST",
      url: `/${chain.technology}/${chain.blockchain}/${chain.network}/es/tx/search/`,
      headers: { authorization: `Bearer ${h.config.api.tokens[0]}`, "content-type": "application/json" },
      payload: JSON.stringify({ query: { ids: { values: [hash] } }, _source: ["blockHash", "blockNumber"] }),
    });
    expect(res.statusCode).toBe(200);
    return (res.json() as { hits: { hits: TxHit[] } }).hits.hits;
  };

  /** Compares 0..to (or from..to) until it matches (or the timeout), returning the last result. */
  const settle = async (to: number, orphaned: string[] = [], from = 0, timeoutMs = 120_000): Promise<ChainComparison | undefined> => {
    let last: ChainComparison | undefined;
    await waitFor(
      async () => {
        last = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config: h.config, decoder, from, to, orphaned });
        return last.ok;
      },
      timeoutMs,
      1000,
    ).catch(() => {});
    return last;
  };

  /** Signs and sends a transaction from {@link wallet}; resolves with its hash once mined (interval mining must be on). */
  const sendFromWallet = async (to: string, data: string): Promise<string> => {
    const balance = BigInt((await rpc("eth_getBalance", [wallet.address, "latest"])) as string);
    if (balance < 10n ** 17n) {
      // Gas money, sent right before first use (a deep reorg could orphan an earlier funding).
      const fund = (await rpc("eth_sendTransaction", [{ from: traffic.deployer, to: wallet.address, value: hex(1e18) }])) as string;
      await waitFor(async () => (await receipt(fund)) !== null, 60_000, 100);
    }
    const nonce = Number(await rpc("eth_getTransactionCount", [wallet.address, "latest"]));
    const raw = await wallet.signTransaction({
      chainId: 31337,
      nonce,
      to,
      data,
      gasLimit: 100_000,
      maxFeePerGas: 50_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      type: 2,
    });
    const hash = (await rpc("eth_sendRawTransaction", [raw])) as string;
    await waitFor(async () => (await receipt(hash)) !== null, 60_000, 100);
    return hash;
  };

  /**
   * One reorg case: waits for a couple of fresh traffic blocks, pauses mining, lets `plan` choose
   * the depth and the new branch's transactions from the head, waits until the blocks about to be
   * orphaned are indexed (so their removal is what is tested), reorgs, mines 3 more blocks, and
   * compares 0..N (N: the node's head then) with the orphaned hashes. Mining resumes at the end.
   */
  const reorgCase = async (plan: (head: number) => { depth: number; txs: Array<[unknown, number]> }, opts: { minHead?: number } = {}) => {
    const start = await headNumber();
    await waitFor(async () => (await headNumber()) >= start + 2, 60_000, 100);
    await pauseMining();
    try {
      if (opts.minHead !== undefined) {
        const head0 = await headNumber();
        if (head0 < opts.minHead) await rpc("anvil_mine", [hex(opts.minHead - head0)]);
      }
      const head = await headNumber();
      const { depth, txs } = plan(head);
      expect(head).toBeGreaterThan(depth);
      const ancestor = await blockAt(head - depth);
      const old = await Promise.all(Array.from({ length: depth }, (_, i) => blockAt(head - depth + 1 + i)));
      const orphaned = old.map((b) => b.hash);
      const before = await settle(head, [], Math.max(0, head - depth - 1), 60_000);
      expect(before?.problems).toEqual([]);

      await rpc("anvil_reorg", [depth, txs]);
      // The reorg replaced exactly the blocks read above, at the same heights, above the same ancestor.
      expect(await headNumber()).toBe(head);
      expect((await blockAt(head - depth)).hash).toBe(ancestor.hash);
      const fresh = await Promise.all(Array.from({ length: depth }, (_, i) => blockAt(head - depth + 1 + i)));
      for (const [i, b] of fresh.entries()) expect(b.hash).not.toBe(orphaned[i]);

      await rpc("anvil_mine", ["0x3"]);
      const end = await headNumber();
      const last = await settle(end, orphaned);
      expect(last?.problems).toEqual([]);
      expect(last?.stillCanonical).toEqual([]);
      expect(last?.heights).toBe(end + 1);
      expect(last?.documents).toBeGreaterThan(end);
      return { head, end, depth, old, fresh };
    } finally {
      await resumeMining();
    }
  };

  let env: FollowedChain;
  beforeAll(async () => {
    // Partitions of 25 blocks (es/partitions.ts): the deeper reorgs span partition boundaries.
    env = await startFollowedChain(decoder, { partitioning: uniformPartitioning(25) });
    ({ h, anvil, traffic, app, setupHeight } = env);
  });
  afterAll(async () => {
    await env?.stop();
  });

  /** ERC-20 transfers from the deployer (an unlocked dev account), one per new block, as anvil_reorg tx entries. */
  const replacements = (depth: number): Array<[unknown, number]> =>
    Array.from({ length: depth }, (_, i) => [
      {
        from: traffic.deployer,
        to: traffic.token,
        data: erc20.encodeFunctionData("transfer", [traffic.accounts[1 + (i % (traffic.accounts.length - 1))], 1000 + i]),
      },
      i,
    ]);

  for (const depth of [1, 2, 5, 16, 64]) {
    // Depth 64 needs a chain taller than 64 (anvil's finalized block is head - 64; the follower's
    // window is 128), and the ancestor must stay above the token deployment and mints.
    const minHead = () => setupHeight + depth + 8;

    it(`depth ${depth}, no replacement transactions: orphaned blocks (and their transactions) are gone`, async () => {
      const { old, fresh } = await reorgCase(() => ({ depth, txs: [] }), { minHead: minHead() });
      // anvil drops the orphaned transactions: the new branch is empty.
      for (const b of fresh) expect(b.transactions).toEqual([]);
      console.info(`depth ${depth}: ${old.reduce((n, b) => n + b.transactions.length, 0)} transactions dropped`);
    }, 240_000);

    it(`depth ${depth}, with ERC-20 replacement transactions: the new branch's txs, logs and events are served`, async () => {
      const { fresh } = await reorgCase(() => ({ depth, txs: replacements(depth) }), { minHead: minHead() });
      for (const b of fresh) expect(b.transactions).toHaveLength(1);
      for (const b of [fresh[0], fresh.at(-1)]) {
        const r = await receipt(b?.transactions[0] as string);
        expect(r?.status).toBe("0x1");
        expect(r?.logs).toHaveLength(1); // the Transfer event
      }
    }, 240_000);
  }

  it("a reorg that drops a transaction entirely: not on the node, not searchable", async () => {
    const hash = await sendFromWallet(traffic.token, erc20.encodeFunctionData("transfer", [traffic.deployer, 0]));
    const at = Number((await receipt(hash))?.blockNumber);
    // Searchable first, so its removal is what is tested.
    await waitFor(async () => (await txById(hash)).length === 1, 60_000, 500);
    const { old } = await reorgCase((head) => ({ depth: head - at + 1, txs: [] }));
    expect(old[0]?.transactions).toContain(hash);
    expect(await receipt(hash)).toBeNull();
    expect(await rpc("eth_getTransactionByHash", [hash])).toBeNull();
    expect(await txById(hash)).toEqual([]);
  }, 240_000);

  it("a reorg that moves a transaction to the new branch: same hash, one document, in the new block", async () => {
    const hash = await sendFromWallet(traffic.token, erc20.encodeFunctionData("transfer", [traffic.accounts[2], 0]));
    const at = Number((await receipt(hash))?.blockNumber);
    await waitFor(async () => (await txById(hash)).length === 1, 60_000, 500);
    const raw = (await rpc("eth_getRawTransactionByHash", [hash])) as string;
    expect(raw).toMatch(/^0x[0-9a-f]+$/);
    // The block at `at` is the first orphaned one; the raw bytes go into the LAST new block (another height).
    const { fresh, old, depth } = await reorgCase((head) => {
      const d = head - at + 1;
      return { depth: d, txs: [[raw, d - 1]] };
    });
    expect(depth).toBeGreaterThan(1);
    expect(old[0]?.transactions).toContain(hash);
    const newBlock = fresh[depth - 1] as RpcBlock;
    expect(newBlock.transactions).toEqual([hash]);
    const r = await receipt(hash);
    expect(r?.status).toBe("0x1");
    expect(r?.blockHash).toBe(newBlock.hash);
    expect(Number(r?.blockNumber)).toBeGreaterThan(at);
    const hits = await txById(hash);
    expect(hits).toHaveLength(1);
    expect(hits[0]?._source?.blockHash).toBe(newBlock.hash);
    expect(hits[0]?._source?.blockNumber?.num).toBe(Number(newBlock.number));
  }, 240_000);
});
