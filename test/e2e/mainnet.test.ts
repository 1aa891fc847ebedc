/**
 * End to end on real mainnet data: a JSON-RPC server replaying ../shared/data/mainnet feeds the
 * ingest stage exactly as a node would; Kafka, the schema registry and Elasticsearch are the real
 * services; every assertion goes through the search API over HTTP.
 */
import { getAddress } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApi } from "../../api/server.js";
import { indexName } from "../../es/mappings.js";
import { partitionIndexName } from "../../es/partitions.js";
import { uniformPartitioning } from "../../lib/partitioning.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { type FixtureBlock, hasMainnetFixtures, loadCompleteBlocks, type RpcObject, SKIP_NO_FIXTURES } from "../support/fixtures.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { type RpcReplay, startRpcReplay } from "../support/rpc-replay.js";

const fixtures = hasMainnetFixtures();
const up = await probeStack();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

const USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

interface Hit {
  _index: string;
  _type: string;
  _id: string;
  _score: number;
  _routing?: string;
  _parent?: string;
  _source: Record<string, unknown>;
}
interface Envelope {
  took: number;
  timed_out: boolean;
  hits: { total: number; max_score: number | null; hits: Hit[] };
}

describe.skipIf(!fixtures || !up.ok)("mainnet fixtures → ingest → Kafka → decode → index → search API", () => {
  let h: Harness;
  let pipeline: Pipeline;
  let replay: RpcReplay;
  let api: { app: { close(): Promise<unknown> }; url: string };
  let blocks: FixtureBlock[];
  let base: string;
  let token: string;

  const search = async (kind: string, body?: unknown): Promise<Envelope> => {
    const res = await fetch(`${base}/${kind}/search/`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${kind} search → ${res.status}: ${text}`);
    return JSON.parse(text) as Envelope;
  };
  const receiptLogs = (fb: FixtureBlock) => (fb.receipts ?? []).flatMap((r) => r.logs as RpcObject[]);

  beforeAll(async () => {
    blocks = loadCompleteBlocks();
    h = createHarness();
    // Partitions of 1 block (issue 22): each block's records in a backing index of their own behind each kind's alias.
    h.config.elasticsearch.partitioning = uniformPartitioning(1);
    token = h.config.api.tokens[0] as string;
    replay = await startRpcReplay({ blocks, blockReceipts: true, traces: true });
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es });
    const { ingester, close } = await pipeline.createIngester(replay.url, { traces: true });
    const stats = await ingester.ingestBlocks(blocks.map((b) => b.number));
    await close();
    expect(stats.blocks).toBe(blocks.length);
    api = await startApi({ config: h.config, logger: h.logger });
    base = `${api.url}/${h.config.chain.technology}/${h.config.chain.blockchain}/${h.config.chain.network}/es`;
    const txTotal = blocks.reduce((n, b) => n + (b.block.transactions as unknown[]).length, 0);
    const logTotal = blocks.reduce((n, b) => n + receiptLogs(b).length, 0);
    // Wait until everything is searchable.
    await waitFor(async () => (await search("block", { size: 0 })).hits.total === blocks.length, 120_000, 500);
    await waitFor(async () => (await search("tx", { size: 0 })).hits.total === txTotal, 120_000, 500);
    await waitFor(async () => (await search("log", { size: 0 })).hits.total === logTotal, 120_000, 500);
    await waitFor(
      async () => {
        const a = (await search("event", { size: 0 })).hits.total;
        await new Promise((r) => setTimeout(r, 1500));
        return a > 0 && (await search("event", { size: 0 })).hits.total === a;
      },
      120_000,
      500,
    );
  }, 300_000);

  afterAll(async () => {
    await api?.app.close();
    await pipeline?.stop();
    await replay?.close();
    await h?.cleanup();
  });

  it("indexes every fixture block: per block, tx and log counts equal the fixture's", async () => {
    for (const fb of blocks) {
      const block = await search("block", { query: { term: { "number.num": fb.number } } });
      expect(block.hits.total, `block ${fb.number}`).toBe(1);
      expect(block.hits.hits[0]?._id).toBe(fb.hash);
      expect(block.hits.hits[0]?._type).toBe("block");
      const txs = await search("tx", { query: { term: { blockHash: fb.hash } }, size: 0 });
      expect(txs.hits.total, `txs of ${fb.number}`).toBe((fb.block.transactions as unknown[]).length);
      const logs = await search("log", { query: { range: { "blockNumber.num": { gte: fb.number, lte: fb.number } } }, size: 0 });
      expect(logs.hits.total, `logs of ${fb.number}`).toBe(receiptLogs(fb).length);
    }
    // One backing index per block (and ahead of need, the next block's).
    const blockAlias = indexName(h.config.chain, "block", h.config.elasticsearch.indexPrefix);
    const backing = new Set(Object.keys(await h.es.indices.get({ index: blockAlias })));
    for (const fb of blocks) expect(backing.has(partitionIndexName(blockAlias, fb.number)), `partition of ${fb.number}`).toBe(true);
    const b17 = await search("tx", { query: { term: { "blockNumber.num": 17_000_000 } }, size: 0 });
    expect(b17.hits.total).toBe(102);
    const l17 = await search("log", { query: { term: { "blockNumber.num": 17_000_000 } }, size: 0 });
    expect(l17.hits.total).toBe(237);
  });

  it("returns 10 records for a search with no body, in the contract's envelope", async () => {
    const res = await search("tx");
    expect(res.hits.hits).toHaveLength(10);
    expect(res.hits.total).toBeGreaterThan(1000);
    const hit = res.hits.hits[0]!;
    expect(hit._type).toBe("tx");
    expect(hit._parent).toBe(hit._source.blockHash);
    expect(hit._routing).toBe(hit._source.blockHash);
    expect(hit._id).toBe(hit._source.hash);
  });

  it("scales a USDT Transfer's value by 6 decimals", async () => {
    const fb = blocks.find((b) => b.number === 17_000_000)!;
    const raw = receiptLogs(fb).find((l) => String(l.address).toLowerCase() === USDT && (l.topics as string[])[0] === TRANSFER)!;
    expect(raw).toBeDefined();
    const res = await search("event", { query: { ids: { values: [`${raw.transactionHash}_e_${Number(raw.logIndex)}`] } } });
    expect(res.hits.total).toBe(1);
    const ev = res.hits.hits[0]!._source as {
      event: string;
      args: Array<{ name: string; value: { num: number; scaled: number; hex: string } }>;
    };
    expect(ev.event).toBe("Transfer");
    const value = ev.args.find((a) => a.name === "value")!.value;
    expect(BigInt(value.hex)).toBe(BigInt(String(raw.data)));
    expect(value.num).toBe(Number(BigInt(String(raw.data))));
    expect(value.scaled).toBeCloseTo(value.num / 1e6, 9);
    expect(res.hits.hits[0]!._parent).toBe(raw.transactionHash);
  });

  it("finds events by exact name plus a nested argument condition", async () => {
    const fb = blocks.find((b) => b.number === 17_000_000)!;
    const usdtTransfers = receiptLogs(fb).filter((l) => String(l.address).toLowerCase() === USDT && (l.topics as string[])[0] === TRANSFER);
    const to = `0x${String((usdtTransfers[0]!.topics as string[])[2]).slice(26)}`;
    const expected = blocks
      .flatMap(receiptLogs)
      .filter(
        (l) =>
          (l.topics as string[])[0] === TRANSFER &&
          (l.topics as string[]).length >= 3 &&
          `0x${String((l.topics as string[])[2]).slice(26)}` === to,
      );
    const res = await search("event", {
      query: {
        bool: {
          filter: [
            { term: { "event.raw": "Transfer" } },
            {
              nested: { path: "args", query: { bool: { filter: [{ term: { "args.name": "to" } }, { term: { "args.value.hex": to } }] } } },
            },
          ],
        },
      },
      size: 100,
    });
    expect(res.hits.total).toBe(expected.length);
    expect(res.hits.max_score).toBe(1);
    // Same argument: name "from" with that address must not match via another argument.
    const wrong = await search("event", {
      query: {
        nested: { path: "args", query: { bool: { filter: [{ term: { "args.name": "from" } }, { term: { "args.value.hex": to } }] } } },
      },
      size: 0,
    });
    const asFrom = blocks
      .flatMap(receiptLogs)
      .filter((l) => (l.topics as string[])[0] === TRANSFER && `0x${String((l.topics as string[])[1]).slice(26)}` === to);
    expect(wrong.hits.total).toBe(asFrom.length);
    // event.raw is exact and case-sensitive; event (text) is not.
    expect((await search("event", { query: { term: { "event.raw": "transfer" } }, size: 0 })).hits.total).toBe(0);
    expect((await search("event", { query: { match: { event: "transfer" } }, size: 0 })).hits.total).toBeGreaterThan(0);
  });

  it("matches address in any letter case while address.raw is exact", async () => {
    const lower = await search("event", { query: { term: { address: USDT } }, size: 0 });
    const upper = await search("event", { query: { term: { address: USDT.toUpperCase().replace("0X", "0x") } }, size: 0 });
    const checksummed = getAddress(USDT);
    expect(lower.hits.total).toBeGreaterThan(0);
    expect(upper.hits.total).toBe(lower.hits.total);
    expect((await search("event", { query: { term: { "address.raw": checksummed } }, size: 0 })).hits.total).toBe(lower.hits.total);
    expect((await search("event", { query: { term: { "address.raw": USDT } }, size: 0 })).hits.total).toBe(0);
    const logs = await search("log", { query: { term: { address: checksummed.toLowerCase() } }, size: 0 });
    const expected = blocks.flatMap(receiptLogs).filter((l) => String(l.address).toLowerCase() === USDT).length;
    expect(logs.hits.total).toBe(expected);
  });

  it("finds the entity behind a hash with the block,tx search", async () => {
    const fb = blocks.find((b) => b.number === 17_000_000)!;
    const txHash = String((fb.block.transactions as RpcObject[])[5]!.hash);
    const asTx = await search("block,tx", { query: { ids: { values: [txHash] } } });
    expect(asTx.hits.total).toBe(1);
    expect(asTx.hits.hits[0]).toMatchObject({ _type: "tx", _id: txHash });
    const asBlock = await search("block,tx", { query: { ids: { values: [fb.hash] } } });
    expect(asBlock.hits.total).toBe(1);
    expect(asBlock.hits.hits[0]).toMatchObject({ _type: "block", _id: fb.hash });
    const res = await fetch(`${base}/block/${fb.hash}/`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const env = (await res.json()) as Envelope;
    expect(env.hits.hits[0]?._source.number).toEqual({ num: 17_000_000, raw: "0x1036640" });
  });

  it("serves the fields of later forks: withdrawals (nested in the block), typed-transaction fields, receipt blooms", async () => {
    const withWithdrawals = blocks.filter((fb) => Array.isArray(fb.block.withdrawals)).map((fb) => fb.number);
    expect(withWithdrawals.length).toBeGreaterThan(0);
    const anyWithdrawal = { nested: { path: "withdrawals", query: { range: { "withdrawals.amount.num": { gt: 0 } } } } };
    const found = await search("block", { query: anyWithdrawal, size: 50, sort: { "number.num": "asc" } });
    expect(found.hits.hits.map((h) => (h._source.number as { num: number }).num)).toEqual(withWithdrawals);
    const shanghai = blocks.find((fb) => fb.number === 17_053_184)!;
    const w0 = (shanghai.block.withdrawals as Array<Record<string, string>>)[0]!;
    const byValidator = await search("block", {
      query: { nested: { path: "withdrawals", query: { term: { "withdrawals.validatorIndex.num": Number(w0.validatorIndex) } } } },
    });
    expect(byValidator.hits.hits.map((h) => h._id)).toContain(shanghai.hash);
    const typed = (shanghai.block.transactions as Array<Record<string, unknown>>).filter((t) => t.type === "0x2").length;
    const inBlock = { term: { blockHash: shanghai.hash } };
    // Typed transactions sign with v = y parity (0 or 1); legacy EIP-155 ones with v = chainId * 2 + 35/36.
    const parityV = await search("tx", { query: { bool: { filter: [inBlock, { terms: { "v.num": [0, 1] } }] } }, size: 0 });
    expect(parityV.hits.total).toBe(
      typed + (shanghai.block.transactions as Array<Record<string, unknown>>).filter((t) => t.type === "0x1" || t.type === "0x3").length,
    );
    const tx = await search("tx", { query: inBlock, size: 1 });
    expect(tx.hits.hits[0]?._source.logsBloom).toMatch(/^0x[0-9a-f]{512}$/);
    expect(tx.hits.hits[0]?._source.chainId).toEqual({ num: 1, raw: "0x1" });
  });

  it("sorts by blockNumber.num desc and streams size -1 over a range", async () => {
    const sorted = await search("tx", { sort: { "blockNumber.num": "desc" }, size: 5 });
    expect(sorted.hits.hits[0]?._source.blockNumber).toMatchObject({ num: blocks.at(-1)!.number });
    const range = { range: { "blockNumber.num": { gte: 4_000_000, lte: 12_000_000 } } };
    const count = (await search("log", { query: range, size: 0 })).hits.total;
    const all = await search("log", { query: range, size: -1 });
    expect(count).toBeGreaterThan(400);
    expect(all.hits.total).toBe(count);
    expect(all.hits.hits).toHaveLength(count);
    expect(new Set(all.hits.hits.map((x) => x._id)).size).toBe(count);
  });

  it("answers 401 without a valid token and 400 with a code for a refused clause", async () => {
    const noToken = await fetch(`${base}/tx/search/`, { method: "POST" });
    expect(noToken.status).toBe(401);
    const bad = await fetch(`${base}/tx/search/`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ query: { wildcard: { from: "0x*" } } }),
    });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { error: { code: string; path: string } };
    expect(body.error.code).toBe("CS_QUERY_UNSUPPORTED_CLAUSE");
    expect(body.error.path).toContain("wildcard");
  });

  it("indexes every frame of the recorded call traces as searchable `call` records", async () => {
    const fb = blocks.find((b) => b.number === 17_053_184)!;
    expect(fb.traces).toBeTruthy();
    const countFrames = (f: RpcObject): number => 1 + ((f.calls as RpcObject[] | undefined) ?? []).reduce((n, c) => n + countFrames(c), 0);
    const expected = fb.traces!.reduce((n, f) => n + countFrames(f), 0);
    const range = { range: { "blockNumber.num": { gte: fb.number, lte: fb.number } } };
    await waitFor(async () => (await search("call", { query: range, size: 0 })).hits.total === expected, 60_000, 500);
    const top = await search("call", { query: { bool: { filter: [range, { term: { depth: 0 } }] } }, size: 0 });
    expect(top.hits.total).toBe((fb.block.transactions as unknown[]).length);
    const transfers = await search("call", { query: { bool: { filter: [range, { term: { name: "transfer" } }] } }, size: 5 });
    expect(transfers.hits.total).toBeGreaterThan(0);
    const hit = transfers.hits.hits[0]!;
    expect(hit._type).toBe("call");
    expect(hit._parent).toBe(hit._source.transactionHash);
    expect(hit._id).toBe(`${hit._source.transactionHash}_c_${(hit._source.traceAddress as number[]).join("_")}`);
    expect((hit._source.args as Array<{ name: string }>).map((a) => a.name)).toContain("to");
  });
});
