/**
 * Migration in place from the layout before partitioning (one concrete index per kind, named like
 * today's alias) to indices partitioned by block range (es/partitions.ts `migrateToAlias`), with
 * data in it, while searches keep running: no search fails or misses a document during the swap,
 * the old index becomes the first backing index behind the alias, a replay of an old record
 * overwrites its document there (no duplicate in a range partition), and new blocks go to their
 * range partitions. The layout the API prunes by is read back from the indices, and another N is
 * refused. Then the admin CLI's `partitions seal` (`sealPartitions`) force-merges and write-blocks
 * the ranges below a height.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_OK, runCli } from "../../../cli/chainsift.js";
import { INDEX_SETTINGS, indexName, MAPPINGS } from "../../../es/mappings.js";
import { partitionIndexName, readLayout, uniformPartitioning } from "../../../es/partitions.js";
import type { TransactionRecord } from "../../../lib/records.js";
import { createIndexer, ensureIndices } from "../../../pipeline/index/indexer.js";
import type { InputRecord } from "../../../pipeline/kafka/consumer.js";
import { SEQ_HEADER } from "../../../topics/index.js";
import { createHarness, type Harness, probeStack } from "../../support/harness.js";
import { hash, q, txs } from "../api/fixtures.js";

const up = await probeStack();
const N = 10;

const txAt = (i: number, height: number): TransactionRecord => ({
  ...(txs[0] as TransactionRecord),
  hash: hash(`tx ${i}`),
  blockHash: hash(`block ${height}`),
  blockNumber: q(height),
});

let offset = 0;
const input = (record: TransactionRecord, seq: number): InputRecord =>
  ({
    topicKind: "transactions",
    topic: "transactions",
    partition: 0,
    offset: String(offset++),
    key: null,
    record,
    message: { key: null, value: null, offset: "0", timestamp: "0", attributes: 0, headers: { [SEQ_HEADER]: Buffer.from(String(seq)) } },
  }) as unknown as InputRecord;

describe.skipIf(!up.ok)("partitioned indices: in-place migration from one index per kind", () => {
  let h: Harness;
  let alias = "";
  beforeAll(() => {
    h = createHarness();
    alias = indexName(h.config.chain, "tx", h.config.elasticsearch.indexPrefix);
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it("the old index becomes partition 0 behind the alias without a failed or short search; replays stay in it, new blocks go to their range", async () => {
    // Today's layout: a concrete index per kind, 40 transactions in blocks 0..39.
    await h.es.indices.create({ index: alias, settings: INDEX_SETTINGS as never, mappings: MAPPINGS.tx as never });
    const old = Array.from({ length: 40 }, (_, i) => txAt(i, i));
    await h.es.bulk({
      refresh: true,
      operations: old.flatMap((t) => [{ index: { _index: alias, _id: t.hash, version: 5, version_type: "external_gte" } }, t]),
    });

    // Searches by the alias name run all along the migration.
    let searching = true;
    const seen: Array<number | string> = [];
    const searcher = (async () => {
      while (searching) {
        try {
          seen.push((await h.es.count({ index: alias })).count);
        } catch (err) {
          seen.push(String(err));
        }
      }
    })();
    await ensureIndices(h.es, h.config.chain, h.config.elasticsearch.indexPrefix, uniformPartitioning(N));
    searching = false;
    await searcher;
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((c) => c !== 40)).toEqual([]);

    // The name is now an alias over the clone; the old concrete index is gone.
    const aliases = await h.es.indices.getAlias({ name: alias });
    expect(Object.keys(aliases)).toEqual([partitionIndexName(alias, 0)]);
    expect((await h.es.count({ index: alias })).count).toBe(40);

    // A replay of an old record (block 25: partition 2 by range, but it lives in the migrated index) and new blocks.
    const indexer = createIndexer({
      es: h.es,
      chain: h.config.chain,
      indexPrefix: h.config.elasticsearch.indexPrefix,
      logger: h.logger,
      partitioning: uniformPartitioning(N),
      decode: { chainId: 1 },
      refresh: true,
    });
    // Blocks 40..44 and 49: the last tenth of partition 4 creates partition 5 ahead of need.
    const fresh = Array.from({ length: 6 }, (_, i) => txAt(100 + i, i === 5 ? 49 : 40 + i));
    expect(await indexer.indexBatch([input(old[25] as TransactionRecord, 5), ...fresh.map((t) => input(t, 9))])).toEqual([]);
    await h.es.indices.refresh({ index: alias });
    const where = new Map<string, string>();
    for await (const page of h.es.helpers.scrollSearch({ index: alias, size: 1000, _source: false })) {
      for (const hit of page.body.hits.hits) {
        expect(where.has(hit._id as string), `duplicate ${hit._id}`).toBe(false);
        where.set(hit._id as string, hit._index);
      }
    }
    expect(where.size).toBe(46);
    expect(where.get((old[25] as TransactionRecord).hash)).toBe(partitionIndexName(alias, 0));
    expect(where.get((fresh[0] as TransactionRecord).hash)).toBe(partitionIndexName(alias, 4));
    expect(where.get((fresh[5] as TransactionRecord).hash)).toBe(partitionIndexName(alias, 4));
    // Created ahead of need: the next partition exists, empty.
    expect((await h.es.count({ index: partitionIndexName(alias, 5) })).count).toBe(0);
    // Migrating again is a no-op.
    await ensureIndices(h.es, h.config.chain, h.config.elasticsearch.indexPrefix, uniformPartitioning(N));
    expect((await h.es.count({ index: alias })).count).toBe(46);
    // The layout the API prunes by is read from the indices: N, and the migrated index's last block.
    expect(await readLayout(h.es, alias)).toEqual({ blocks: N, legacyThrough: 39 });
    // N cannot change once the alias has partitions.
    await expect(ensureIndices(h.es, h.config.chain, h.config.elasticsearch.indexPrefix, uniformPartitioning(2 * N))).rejects.toThrow(
      /CHAINSIFT_INDEX_PARTITION_BLOCKS.*made with 10/,
    );

    // Sealing below block 50: the migrated index (blocks ≤ 39) and partition 4 (40..49), not 5 (50..59).
    // Through the admin CLI (`partitions seal`), which calls es/partitions.ts sealPartitions.
    const out: string[] = [];
    const config = { ...h.config, elasticsearch: { ...h.config.elasticsearch, partitioning: uniformPartitioning(N) } };
    const code = await runCli(["partitions", "seal", "--below", "50", "--json"], {
      config,
      output: { out: (t) => out.push(t), err: (t) => out.push(t) },
    });
    expect(code, out.join("\n")).toBe(EXIT_OK);
    const { sealed } = JSON.parse(out.join("\n")) as { sealed: string[] };
    expect(sealed.filter((i) => i.startsWith(`${alias}-`))).toEqual([partitionIndexName(alias, 0), partitionIndexName(alias, 4)]);
    const settings = await h.es.indices.getSettings({ index: alias, name: "index.blocks.write" });
    expect(settings[partitionIndexName(alias, 0)]?.settings?.index?.blocks?.write).toBe("true");
    expect(settings[partitionIndexName(alias, 5)]?.settings?.index?.blocks?.write).toBeUndefined();
    expect((await h.es.count({ index: alias })).count).toBe(46);
  }, 120_000);
});
