/**
 * The index stage's removal of orphaned records against every order in which its partitions may
 * deliver the facts of one reorg (real Elasticsearch, real Redis for ingest's canonical map): the
 * orphaned block's records (seq 10), the reorg announcement (seq 20) and the new branch's records
 * (seq 30), where one transaction moved from the orphaned block to the new one (same `_id`).
 */
import { Client, errors } from "@elastic/elasticsearch";
import type { KafkaMessage } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexName } from "../../../es/mappings.js";
import { type ChainState, createRedisChainState } from "../../../lib/chain/state.js";
import type { BlockRecord, ReorgRecord, TransactionRecord } from "../../../lib/records.js";
import { connectRedisClient } from "../../../lib/redis.js";
import { createIndexer, ensureIndices, type Indexer } from "../../../pipeline/index/indexer.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";
import { SEQ_HEADER, type TopicKind } from "../../../topics/index.js";
import { createHarness, type Harness, probeStack } from "../../support/harness.js";
import { blocks, hash, q, txs } from "../api/fixtures.js";

const up = await probeStack();

const HEIGHT = 100;
const A = hash("orphaned block");
const B = hash("new branch block");
const blockAt = (h: string): BlockRecord => ({ ...(blocks[0] as BlockRecord), hash: h, number: q(HEIGHT), transactionCount: 2 });
const moved = txs[0] as TransactionRecord;
const dropped = txs[1] as TransactionRecord;
const txIn = (t: TransactionRecord, block: string): TransactionRecord => ({ ...t, blockHash: block, blockNumber: q(HEIGHT) });

let offset = 0;
function input(topicKind: TopicKind, record: unknown, seq: number): InputRecord {
  const message = {
    key: null,
    value: null,
    offset: String(offset),
    timestamp: "0",
    attributes: 0,
    headers: { [SEQ_HEADER]: Buffer.from(String(seq)) },
  };
  return {
    topicKind,
    topic: topicKind,
    partition: 0,
    offset: String(offset++),
    key: null,
    record,
    message: message as unknown as KafkaMessage,
  } as InputRecord;
}

const orphanedRecords = () => [input("blocks", blockAt(A), 10)];
const orphanedTxs = () => [input("transactions", txIn(moved, A), 10), input("transactions", txIn(dropped, A), 10)];
const reorg = (): ReorgRecord => ({
  number: HEIGHT,
  orphanedHash: A,
  replacedBy: B,
  ancestorNumber: HEIGHT - 1,
  ancestorHash: hash("ancestor"),
  depth: 1,
  detectedAt: new Date().toISOString(),
});
const newBranch = () => [input("blocks", blockAt(B), 30)];
const newTxs = () => [input("transactions", txIn(moved, B), 30)];

describe.skipIf(!up.ok)("index stage: orphaned records are removed whatever the order of partitions", () => {
  let h: Harness;
  let redis: Awaited<ReturnType<typeof connectRedisClient>>;
  let state: ChainState;

  beforeAll(async () => {
    h = createHarness();
    redis = await connectRedisClient(h.config.redisUrl);
    await ensureIndices(h.es, h.config.chain, h.config.elasticsearch.indexPrefix);
  });
  afterAll(async () => {
    await state?.reset();
    await redis?.close();
    await h?.cleanup();
  });

  /** An indexer into a fresh index prefix `<id>-<name>-` (its indices created). */
  async function indexerInto(
    name: string,
    canonical: ChainState | undefined,
    es: Client = h.es,
  ): Promise<{ indexer: Indexer; prefix: string }> {
    const prefix = `${h.id}-${name}-`;
    await ensureIndices(h.es, h.config.chain, prefix);
    const indexer = createIndexer({
      es,
      chain: h.config.chain,
      indexPrefix: prefix,
      logger: h.logger,
      refresh: true,
      decode: { chainId: 1 },
      ...(canonical ? { canonical } : {}),
    });
    return { indexer, prefix };
  }
  /** A fresh index prefix and canonical map per case. */
  async function fresh(name: string, canonical?: ChainState, es: Client = h.es): Promise<{ indexer: Indexer; prefix: string }> {
    state = createRedisChainState(redis.client, `${h.config.redisKeyPrefix}${name}:`, h.config.chain);
    await state.expect([{ number: HEIGHT, hash: A }]);
    return indexerInto(name, canonical ?? state, es);
  }
  /** Ingest's side of a reorg: canon first, then the announcement. */
  const announce = () => state.announce([{ number: HEIGHT, hash: A, replacedBy: B }]);

  async function served(prefix: string) {
    const idx = (k: "block" | "tx") => indexName(h.config.chain, k, prefix);
    await h.es.indices.refresh({ index: [idx("block"), idx("tx")] });
    const get = async (index: string) =>
      (await h.es.search<{ blockHash?: string; hash?: string }>({ index, size: 100, query: { match_all: {} } })).hits.hits.map((x) => ({
        id: x._id,
        block: x._source?.blockHash ?? x._source?.hash,
      }));
    return { blocks: await get(idx("block")), txs: (await get(idx("tx"))).sort((a, b) => String(a.id).localeCompare(String(b.id))) };
  }
  const expectCanonical = (s: Awaited<ReturnType<typeof served>>) => {
    expect(s.blocks).toEqual([{ id: B, block: B }]);
    // The moved transaction keeps exactly one document, on the new block; the dropped one is gone.
    expect(s.txs).toEqual([{ id: moved.hash, block: B }]);
  };

  it("in ingest's order: orphaned records, reorg, new branch", async () => {
    const { indexer, prefix } = await fresh("inorder");
    await indexer.indexBatch(orphanedRecords());
    await indexer.indexBatch(orphanedTxs());
    await announce();
    await indexer.indexBatch([input("reorgs", reorg(), 20)]);
    await indexer.indexBatch(newBranch());
    await indexer.indexBatch(newTxs());
    expectCanonical(await served(prefix));
  });

  it("new branch first, then the reorg, then the orphaned records from a lagging partition", async () => {
    const { indexer, prefix } = await fresh("reversed");
    await announce();
    await state.expect([{ number: HEIGHT, hash: B }]);
    await indexer.indexBatch(newBranch());
    await indexer.indexBatch(newTxs());
    await indexer.indexBatch([input("reorgs", reorg(), 20)]);
    await indexer.indexBatch(orphanedRecords());
    await indexer.indexBatch(orphanedTxs());
    expectCanonical(await served(prefix));
    expect(indexer.counts().skippedOrphaned).toBe(3);
  });

  it("without the canonical map, external versions alone keep the moved transaction on the new block", async () => {
    const prefix = `${h.id}-nomap-`;
    await ensureIndices(h.es, h.config.chain, prefix);
    const indexer = createIndexer({
      es: h.es,
      chain: h.config.chain,
      indexPrefix: prefix,
      logger: h.logger,
      refresh: true,
      decode: { chainId: 1 },
    });
    await indexer.indexBatch(newTxs());
    await indexer.indexBatch(orphanedTxs()); // older version of the moved tx: refused (409), not dead-lettered
    await indexer.indexBatch([input("reorgs", reorg(), 20)]); // must not delete the newer document
    const s = await served(prefix);
    expect(s.txs).toEqual([{ id: moved.hash, block: B }]);
    expect(indexer.counts().superseded).toBe(1);
  });

  it("a reorg announced while the orphaned records' bulk is in flight: the check after the bulk deletes them", async () => {
    // The map still names the orphaned block when the bulk starts; ingest announces during it.
    let reads = 0;
    let setReads = 0;
    const racing: ChainState = {
      ...({} as ChainState),
      hashesAt: async (heights) => {
        const answer = await state.hashesAt(heights);
        if (++reads === 1) await announce();
        return answer;
      },
      // The first read of the orphaned set is as old as the first read of the map: before the announcement.
      orphanedSince: async (hashes) => (++setReads === 1 ? new Map() : state.orphanedSince(hashes)),
    };
    const { indexer, prefix } = await fresh("race", racing);
    // The reorg record was handled before these records became visible to its search.
    await indexer.indexBatch([input("reorgs", reorg(), 20)]);
    await indexer.indexBatch(orphanedTxs());
    await indexer.indexBatch(newBranch());
    await indexer.indexBatch(newTxs());
    expectCanonical(await served(prefix));
    expect(indexer.counts().deletedOrphaned).toBe(2);
  });

  it("rebuilt from the topics after ingest pruned the canonical map: the orphaned records do not come back", async () => {
    // Live: the orphaned block, the reorg, the new branch, all handled in ingest's order.
    const { indexer } = await fresh("live");
    await indexer.indexBatch(orphanedRecords());
    await indexer.indexBatch(orphanedTxs());
    await announce();
    await indexer.indexBatch([input("reorgs", reorg(), 20)]);
    await state.expect([{ number: HEIGHT, hash: B }]);
    await indexer.indexBatch(newBranch());
    await indexer.indexBatch(newTxs());
    // 16 windows later (~7 h at mainnet pace) the follower prunes the map below its tip (ingest.ts).
    const tip = HEIGHT + 17 * 128;
    await state.prune(tip - 127, tip - 127 - 16 * 128);
    expect((await state.hashesAt([HEIGHT])).get(HEIGHT)).toBeUndefined();
    // Days later, the topics (7 days of records) are indexed again by a new consumer group into a
    // fresh index: no delete tombstone exists (as in an index whose 60 s `gc_deletes` passed). The
    // reorgs consumer, with one small topic, is ahead of the record consumers.
    const { indexer: rebuild, prefix } = await indexerInto("rebuilt", state);
    await rebuild.indexBatch([input("reorgs", reorg(), 20)]);
    await rebuild.indexBatch([...orphanedRecords(), ...newBranch()]);
    await rebuild.indexBatch([...orphanedTxs(), ...newTxs()]);
    expectCanonical(await served(prefix));
    expect(rebuild.counts().skippedOrphaned).toBe(3);
  });

  it("a block orphaned and later canonical again: records produced after its return are indexed, older ones are not", async () => {
    // Real sequence numbers from ingest's counter, in the order ingest reserves them.
    state = createRedisChainState(redis.client, `${h.config.redisKeyPrefix}flipflop:`, h.config.chain);
    const { indexer, prefix } = await indexerInto("flipflop", state);
    await state.expect([{ number: HEIGHT, hash: A }]);
    const first = await state.reserveSeq(1);
    await indexer.indexBatch([input("blocks", blockAt(A), first), input("transactions", txIn(dropped, A), first)]);
    await announce(); // A → B
    await indexer.indexBatch([input("reorgs", reorg(), await state.reserveSeq(1))]);
    await state.expect([{ number: HEIGHT, hash: B }]);
    const onB = await state.reserveSeq(1);
    await indexer.indexBatch([input("blocks", blockAt(B), onB), input("transactions", txIn(moved, B), onB)]);
    await state.announce([{ number: HEIGHT, hash: B, replacedBy: A }]); // B → A again
    const back = { ...reorg(), orphanedHash: B, replacedBy: A };
    await indexer.indexBatch([input("reorgs", back, await state.reserveSeq(1))]);
    await state.expect([{ number: HEIGHT, hash: A }]);
    const again = await state.reserveSeq(1);
    await state.prune(HEIGHT + 1, HEIGHT + 1); // the map no longer knows the height: only the orphaned set speaks
    // A lagging partition delivers the first A record again, then A's records of its return.
    await indexer.indexBatch([input("transactions", txIn(dropped, A), first)]);
    await indexer.indexBatch([input("blocks", blockAt(A), again), input("transactions", txIn(moved, A), again)]);
    await indexer.indexBatch([input("transactions", txIn(dropped, A), again)]);
    const s = await served(prefix);
    expect(s.blocks).toEqual([{ id: A, block: A }]);
    expect(s.txs).toEqual([moved, dropped].map((t) => ({ id: t.hash, block: A })).sort((x, y) => x.id.localeCompare(y.id)));
    expect([...(await state.orphanedSince([A.toUpperCase(), B, hash("never orphaned")])).keys()].sort()).toEqual([A, B].sort());
  });

  it.each([
    ["a bulk cut short by a dropped connection after its first document", "cut", [dropped]],
    ["the process killed after its bulk, before the check after it", "killed", [dropped, moved]],
  ] as const)("%s, with a reorg in between: the batch delivered again deletes what the first attempt wrote", async (_what, how, left) => {
    // A real client whose first bulk request of documents first lets the reorg happen, then either
    // sends only its first document to Elasticsearch and fails like a dropped connection (`cut`), or
    // goes through whole (`killed`); every other request goes through unchanged.
    const es = new Client({ node: h.config.elasticsearch.url });
    const send = es.bulk.bind(es) as (params: { body?: unknown[] }, options?: unknown) => Promise<unknown>;
    let bulks = 0;
    let meanwhile: () => Promise<void> = async () => {};
    Object.assign(es, {
      bulk: async (params: { body?: unknown[] }, options?: unknown) => {
        if (bulks > 0 || !Array.isArray(params.body) || params.body.length <= 2) return send(params, options);
        bulks++;
        await meanwhile();
        if (how === "killed") return send(params, options);
        await send({ ...params, body: params.body.slice(0, 2) }, options);
        throw new errors.ConnectionError("connection reset (the test cut the bulk after its first document)");
      },
    });
    // `killed`: the process dies where the check after the bulk would read the map (its second read).
    let reads = 0;
    const dying: ChainState = {
      ...({} as ChainState),
      hashesAt: async (heights) => {
        if (++reads > 1) throw new Error("killed before the check after the bulk");
        return state.hashesAt(heights);
      },
      orphanedSince: (hashes) => state.orphanedSince(hashes),
    };
    const name = `interrupted-${how}`;
    try {
      const { indexer, prefix } = await fresh(name, how === "killed" ? dying : undefined, es);
      const remover = (await indexerInto(name, state)).indexer;
      // The canonical check before the bulk saw A; ingest announces the reorg and the index stage's
      // reorgs consumer removes A's documents before the bulk's documents land.
      meanwhile = async () => {
        await announce();
        await remover.indexBatch([input("reorgs", reorg(), 20)]);
      };
      const batch = () => [input("transactions", txIn(dropped, A), 10), input("transactions", txIn(moved, A), 10)];
      await expect(indexer.indexBatch(batch())).rejects.toThrow(how === "cut" ? /bulk request failed/ : /killed/);
      expect(bulks).toBe(1);
      const leftover = left.map((t) => ({ id: t.hash, block: A })).sort((x, y) => x.id.localeCompare(y.id));
      expect((await served(prefix)).txs).toEqual(leftover); // what the first attempt left
      // The batch again: retried by the consumer (`cut`), or redelivered to the restarted stage (`killed`).
      const again = how === "killed" ? (await indexerInto(name, state)).indexer : indexer;
      await again.indexBatch(batch());
      await state.expect([{ number: HEIGHT, hash: B }]);
      await again.indexBatch(newBranch());
      await again.indexBatch(newTxs());
      expectCanonical(await served(prefix));
      expect(again.counts().skippedOrphaned).toBe(2);
    } finally {
      await es.close();
    }
  });

  it("a document Elasticsearch refuses comes back as a failure naming its own Kafka record (for the dead-letter topic)", async () => {
    const { indexer } = await fresh("rejected");
    const bad = input("transactions", { ...txIn(moved, A), notInTheMapping: 1 }, 10);
    const good = input("transactions", txIn(dropped, A), 10);
    const failures = await indexer.indexBatch([good, bad]);
    expect(failures).toHaveLength(1);
    expect(failures[0]?.input).toBe(bad);
    expect(failures[0]?.error.code).toBe("CS_ES_REJECTED");
    expect(indexer.counts().written).toBe(1);
  });
});
