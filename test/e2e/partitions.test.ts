/**
 * Indices partitioned by block range (issue 22), end to end: anvil with ERC-20 traffic, decode +
 * index with partitions of 10 blocks, and a second index stage over the same topics (its own
 * consumer group) writing the same records into ONE partition per kind (N = 10^9) under another
 * prefix. Then:
 * - a reorg spanning a partition boundary that moves a transaction across it: compareWithChain
 *   holds, the transaction has one document (in the new block's partition), no `_id` is in two
 *   backing indices;
 * - ≥ 5 partitions per kind, and every query shape of the contract (filters, nested, ids across
 *   kinds, sorts, aggregations, search_after paging, `size: -1`) and of the Elasticsearch-compatible
 *   routes (`_search` by the hits' `_index`, `_count`, `_msearch`) answers exactly what the one
 *   index answers (`took` and `_shards` aside: those count the backing indices), including queries
 *   the API prunes to the partitions of their block filter (api/search/partitions.ts), which search
 *   1 or 2 shards where the unpruned range searches every partition.
 */

import { Interface, Wallet } from "ethers";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../api/app.js";
import { rpcCall } from "../../cli/devchain/rpc.js";
import { indexName } from "../../es/mappings.js";
import { publishIndexWrites } from "../../lib/index-writes.js";
import { uniformPartitioning } from "../../lib/partitioning.js";
import { RECORD_KINDS } from "../../lib/records.js";
import { type ConnectedRedis, connectRedisClient } from "../../lib/redis.js";
import { createDecoder } from "../../pipeline/decode/decoder.js";
import { startIndexStage } from "../../pipeline/index/indexer.js";
import { type Bus, createBus } from "../../pipeline/kafka/bus.js";
import type { RunningConsumer } from "../../pipeline/kafka/consumer.js";
import { compareWithChain } from "../support/canonical.js";
import { type FollowedChain, startFollowedChain } from "../support/followed-chain.js";
import { probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();
const N = 10;
const erc20 = new Interface(["function transfer(address to, uint256 amount) returns (bool)"]);
const hex = (n: number) => `0x${n.toString(16)}`;

type Json = Record<string, unknown>;

describe.skipIf(!up.ok)("Indices partitioned by block range (anvil, partitions of 10 blocks vs one index)", () => {
  const decoder = createDecoder({ chainId: 31337 });
  const wallet = Wallet.createRandom();
  let env: FollowedChain;
  let singleBus: Bus;
  let singleRedis: ConnectedRedis;
  let single: RunningConsumer;
  let singleApp: FastifyInstance;
  let singlePrefix = "";

  /** A JSON-RPC call to anvil, tried up to 5 times (anvil stalls for seconds on a loaded machine). */
  const rpc = async (method: string, params: unknown[] = []): Promise<unknown> => {
    for (let attempt = 1; ; attempt++) {
      try {
        return await rpcCall(env.anvil.rpcUrl, method, params);
      } catch (err) {
        if (attempt >= 5 || /reverted|invalid|nonce/i.test(String(err))) throw err;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  };
  const headNumber = async () => Number(await rpc("eth_blockNumber"));
  const receipt = async (hash: string) =>
    (await rpc("eth_getTransactionReceipt", [hash])) as { blockNumber: string; blockHash: string } | null;
  const base = () => {
    const { chain } = env.h.config;
    return `/${chain.technology}/${chain.blockchain}/${chain.network}/es`;
  };
  const ask = async (app: FastifyInstance, url: string, payload: string, contentType = "application/json") => {
    const res = await app.inject({
      method: "POST",
      url: `${base()}${url}`,
      headers: { authorization: `Bearer ${env.h.config.api.tokens[0]}`, "content-type": contentType },
      payload,
    });
    return { status: res.statusCode, body: res.body };
  };
  const search = async (app: FastifyInstance, kinds: string, body: Json) => {
    const r = await ask(app, `/${kinds}/search/`, JSON.stringify(body));
    expect(r.status, r.body.slice(0, 300)).toBe(200);
    return JSON.parse(r.body) as { hits: { total: number; hits: Array<{ _id: string; _index: string; _source?: Json }> } };
  };

  beforeAll(async () => {
    env = await startFollowedChain(decoder, { partitioning: uniformPartitioning(N) });
    singlePrefix = `${env.h.id}-single-`;
    const config = {
      ...env.h.config,
      kafka: { ...env.h.config.kafka, groupPrefix: `${env.h.config.kafka.groupPrefix}-single` },
      elasticsearch: { ...env.h.config.elasticsearch, indexPrefix: singlePrefix, partitioning: uniformPartitioning(1e9) },
    };
    singleBus = await createBus({ config, logger: env.h.logger, setup: false });
    singleRedis = await connectRedisClient(config.redisUrl);
    single = await startIndexStage({
      bus: singleBus,
      es: env.h.es,
      chain: config.chain,
      indexPrefix: singlePrefix,
      partitioning: config.elasticsearch.partitioning,
      decode: { chainId: 31337 },
      logger: env.h.logger,
      canonical: await env.pipeline.chainState(),
      // Announced as pipeline/runtime.ts wires it, so that the single-index API's result cache drops its answers.
      onWrite: (aliases) => publishIndexWrites(singleRedis.client, config.redisKeyPrefix, aliases),
    });
    singleApp = await buildApi({ config, es: env.h.es, logger: false });
  }, 180_000);
  afterAll(async () => {
    await singleApp?.close();
    await single?.stop();
    await singleRedis?.close();
    await env?.stop();
  });

  /** Every `_id` of every backing index of the partitioned aliases, with the indices holding it. */
  const idsInPartitions = async (): Promise<Map<string, string[]>> => {
    const out = new Map<string, string[]>();
    for (const kind of RECORD_KINDS) {
      const alias = indexName(env.h.config.chain, kind, env.h.config.elasticsearch.indexPrefix);
      await env.h.es.indices.refresh({ index: alias, ignore_unavailable: true });
      for await (const page of env.h.es.helpers.scrollSearch({ index: alias, size: 1000, _source: false, ignore_unavailable: true })) {
        for (const hit of page.body.hits.hits) out.set(`${kind}/${hit._id}`, [...(out.get(`${kind}/${hit._id}`) ?? []), hit._index]);
      }
    }
    return out;
  };
  const duplicates = async () => [...(await idsInPartitions())].filter(([, indices]) => indices.length > 1);

  it("a reorg across a partition boundary moves a transaction into the next partition: one document, compareWithChain holds", async () => {
    // Gas money for the test's own key (the traffic generator races the deployer's nonces, not this key's).
    const fund = (await rpc("eth_sendTransaction", [{ from: env.traffic.deployer, to: wallet.address, value: hex(1e18) }])) as string;
    await waitFor(async () => (await receipt(fund)) !== null, 60_000, 100);
    const raw = await wallet.signTransaction({
      chainId: 31337,
      nonce: 0,
      to: env.traffic.token,
      data: erc20.encodeFunctionData("transfer", [env.traffic.deployer, 0]),
      gasLimit: 100_000,
      maxFeePerGas: 50_000_000_000n,
      maxPriorityFeePerGas: 1_000_000_000n,
      type: 2,
    });
    const hash = (await rpc("eth_sendRawTransaction", [raw])) as string;
    await waitFor(async () => (await receipt(hash)) !== null, 60_000, 100);
    await rpc("evm_setIntervalMining", [0]);
    try {
      const at = Number((await receipt(hash))?.blockNumber);
      let head = await headNumber();
      // The first partition boundary above the transaction's block, at or above the head: the reorg replaces at..boundary.
      const boundary = Math.max(Math.floor(at / N) + 1, Math.ceil(head / N)) * N;
      if (head < boundary) await rpc("anvil_mine", [hex(boundary - head)]);
      head = await headNumber();
      expect(head).toBe(boundary);
      const orphaned = await Promise.all(
        Array.from(
          { length: head - at + 1 },
          async (_, i) => ((await rpc("eth_getBlockByNumber", [hex(at + i), false])) as { hash: string }).hash,
        ),
      );
      // Indexed before the reorg (in the old block's partition), so its move is what is tested.
      const compare = (to: number, orph: string[] = []) =>
        compareWithChain({ rpcUrl: env.anvil.rpcUrl, app: env.app, config: env.h.config, decoder, from: 0, to, orphaned: orph });
      await waitFor(async () => (await compare(head)).ok, 180_000, 1000);
      const before = await search(env.app, "tx", { query: { ids: { values: [hash] } }, _source: ["blockNumber"] });
      expect(before.hits.hits.map((h) => (h._source?.blockNumber as { num: number } | undefined)?.num)).toEqual([at]);

      const depth = head - at + 1;
      await rpc("anvil_reorg", [depth, [[raw, depth - 1]]]);
      await rpc("anvil_mine", ["0x3"]);
      const moved = await receipt(hash);
      expect(Number(moved?.blockNumber)).toBe(boundary);
      expect(Math.floor(at / N)).toBeLessThan(boundary / N); // another partition
      const end = await headNumber();
      // The node answers slowly on a loaded machine: a comparison that throws is tried again.
      let last: Awaited<ReturnType<typeof compare>> | undefined;
      await waitFor(
        async () => {
          last = await compare(end, orphaned);
          return last.ok;
        },
        120_000,
        1000,
      ).catch(() => {});
      expect(last?.problems).toEqual([]);
      expect(last?.stillCanonical).toEqual([]);
      const after = await search(env.app, "tx", { query: { ids: { values: [hash] } }, _source: ["blockNumber", "blockHash"] });
      expect(after.hits.hits).toHaveLength(1);
      expect(after.hits.hits[0]?._source?.blockHash).toBe(moved?.blockHash);
      expect(await duplicates()).toEqual([]);
    } finally {
      await rpc("evm_setIntervalMining", [1]);
    }
  }, 300_000);

  it("over ≥ 5 partitions, every query shape answers exactly what one index answers", async () => {
    await waitFor(async () => (await headNumber()) >= 6 * N + 5, 120_000, 500);
    await rpc("evm_setIntervalMining", [0]);
    try {
      const head = await headNumber();
      // Both layouts hold the node's canonical chain 0..head.
      for (const app of [env.app, singleApp]) {
        const compare = () => compareWithChain({ rpcUrl: env.anvil.rpcUrl, app, config: env.h.config, decoder, to: head });
        let last: Awaited<ReturnType<typeof compare>> | undefined;
        await waitFor(
          async () => {
            last = await compare();
            return last.ok;
          },
          120_000,
          1000,
        ).catch(() => {});
        expect(last?.problems).toEqual([]);
      }
      // ≥ 5 backing indices per kind, one for the single layout.
      for (const kind of RECORD_KINDS) {
        const parts = Object.keys(
          await env.h.es.indices.get({ index: indexName(env.h.config.chain, kind, env.h.config.elasticsearch.indexPrefix) }),
        );
        expect(parts.length, kind).toBeGreaterThanOrEqual(kind === "call" ? 1 : 5);
        expect(parts.every((p) => /-p\d{6}$/.test(p))).toBe(true);
      }
      expect(await duplicates()).toEqual([]);

      const prefix = env.h.config.elasticsearch.indexPrefix;
      const norm = (body: string, p: string) => {
        expect(body).not.toMatch(/-p\d{6}"/); // hits name the alias, never a backing index
        const v = JSON.parse(body.split(p).join("<prefix>")) as Json;
        const strip = (o: unknown): unknown => {
          if (Array.isArray(o)) return o.map(strip);
          if (o && typeof o === "object")
            return Object.fromEntries(
              Object.entries(o as Json)
                .filter(([k]) => k !== "took" && k !== "_shards")
                .map(([k, x]) => [k, strip(x)]),
            );
          return o;
        };
        return strip(v);
      };
      const same = async (what: string, url: string, payload: string, contentType?: string) => {
        const [a, b] = await Promise.all([
          ask(env.app, url, payload, contentType),
          ask(singleApp, url.split(prefix).join(singlePrefix), payload.split(prefix).join(singlePrefix), contentType),
        ]);
        expect(a.status, `${what}: ${a.body.slice(0, 300)}`).toBe(200);
        expect(b.status, what).toBe(200);
        const [na, nb] = [norm(a.body, prefix), norm(b.body, singlePrefix)];
        expect(na, what).toEqual(nb);
        return na as Json;
      };
      const range = { range: { "blockNumber.num": { gte: 3, lte: head - 2 } } };
      const narrow = { range: { "blockNumber.num": { gte: N + 2, lte: 2 * N + 7 } } };
      const bySort = { "blockNumber.num": "asc" };
      const token = env.traffic.token.toLowerCase();
      const shapes: Array<[string, string, Json]> = [
        [
          "blocks by number range, sorted",
          "block",
          { query: { range: { "number.num": { gte: 1, lte: head } } }, sort: [{ "number.num": "desc" }], size: 1000 },
        ],
        ["txs by block range", "tx", { query: range, sort: [bySort, { "transactionIndex.num": "asc" }], size: 1000 }],
        ["logs by address term", "log", { query: { term: { address: token } }, sort: [bySort, { "logIndex.num": "asc" }], size: 1000 }],
        [
          "events: bool filter + nested args",
          "event",
          {
            query: {
              bool: {
                filter: [
                  { term: { "event.raw": "Transfer" } },
                  {
                    nested: {
                      path: "args",
                      query: { bool: { filter: [{ term: { "args.name": "to" } }, { exists: { field: "args.value.hex" } }] } },
                    },
                  },
                ],
              },
            },
            sort: [{ "blockNumber.num": "desc" }, { "logIndex.num": "asc" }],
            size: 500,
            _source: ["transactionHash", "args", "blockNumber"],
          },
        ],
        ["events: one small sorted page", "event", { query: range, sort: [bySort, { "logIndex.num": "asc" }], size: 7 }],
        [
          "aggregations over every partition",
          "log",
          {
            size: 0,
            query: range,
            aggs: {
              per10: { histogram: { field: "blockNumber.num", interval: 10 } },
              addresses: { terms: { field: "address", size: 20 } },
              blocks: { cardinality: { field: "blockHash" } },
            },
          },
        ],
        [
          "tx gas sum and stats",
          "tx",
          { size: 0, aggs: { gas: { sum: { field: "gasUsed.num" } }, top: { max: { field: "blockNumber.num" } } } },
        ],
        ["count only", "event", { size: 0, query: range }],
        // Pruned to the partitions of the block range (api/search/partitions.ts): the same answers.
        ["block by number (pruned to one partition)", "block", { query: { term: { "number.num": 2 * N + 3 } } }],
        ["txs of a narrow range (pruned)", "tx", { query: narrow, sort: [bySort, { "transactionIndex.num": "asc" }], size: 1000 }],
        [
          "events: bool filter range + term (pruned), aggregations",
          "event",
          {
            query: { bool: { filter: [narrow, { term: { "event.raw": "Transfer" } }], should: [{ term: { "blockNumber.num": 1 } }] } },
            sort: [{ "blockNumber.num": "desc" }, { "logIndex.num": "asc" }],
            size: 100,
            aggs: { per: { terms: { field: "blockNumber.num", size: 50 } } },
          },
        ],
        [
          "txs of blocks by terms (pruned)",
          "tx",
          {
            query: { terms: { "blockNumber.num": [3, 2 * N + 1, 4 * N + 2] } },
            size: 1000,
            sort: [bySort, { "transactionIndex.num": "asc" }],
          },
        ],
        [
          "beyond the head (partitions not created yet)",
          "tx",
          { query: { range: { "blockNumber.num": { gte: head + 10 * N, lte: head + 10 * N + 5 } } } },
        ],
      ];
      for (const [what, kinds, body] of shapes) await same(what, `/${kinds}/search/`, JSON.stringify(body));

      // Pruning happened: the block-by-number search touched one shard, the narrow range two; the unpruned range all.
      const shards = async (kinds: string, body: Json) =>
        (JSON.parse((await ask(env.app, `/${kinds}/search/`, JSON.stringify(body))).body) as { _shards: { total: number } })._shards.total;
      expect(await shards("block", { query: { term: { "number.num": 2 * N + 3 } } })).toBe(1);
      expect(await shards("tx", { query: narrow })).toBe(2);
      expect(await shards("tx", { query: range })).toBeGreaterThanOrEqual(5);

      // ids across kinds (GET a block or a transaction by hash): a search over the aliases.
      const blocks = await search(env.app, "block", {
        query: { range: { "number.num": { gte: head - 30, lte: head } } },
        size: 40,
        _source: ["hash"],
      });
      const someTx = await search(env.app, "tx", { query: range, size: 3, sort: [bySort], _source: ["hash"] });
      const ids = [...blocks.hits.hits.map((h) => h._id), ...someTx.hits.hits.map((h) => h._id)];
      // Unsorted (blocks have no blockNumber to sort on): compared as sets.
      const idsBody = { query: { ids: { values: ids } }, size: 100 };
      const [ia, ib] = [await search(env.app, "block,tx", idsBody), await search(singleApp, "block,tx", idsBody)];
      const key = (h: { _index: string; _id: string }) => `${h._index.split(singlePrefix).join("").split(prefix).join("")}/${h._id}`;
      expect(ia.hits.total).toBe(ids.length);
      expect(ia.hits.hits.map(key).sort()).toEqual(ib.hits.hits.map(key).sort());

      // search_after paging through all transactions, 9 per page.
      const pages = async (app: FastifyInstance) => {
        const all: string[] = [];
        let after: unknown[] | undefined;
        for (;;) {
          const body: Json = { query: { match_all: {} }, sort: [bySort, { "transactionIndex.num": "asc" }], size: 9, _source: ["hash"] };
          if (after) body.search_after = after;
          const res = await ask(app, "/tx/search/", JSON.stringify(body));
          expect(res.status, res.body.slice(0, 300)).toBe(200);
          const r = JSON.parse(res.body) as { hits: { hits: Array<{ _id: string; sort: unknown[] }> } };
          if (r.hits.hits.length === 0) return all;
          all.push(...r.hits.hits.map((h) => h._id));
          after = r.hits.hits.at(-1)?.sort;
        }
      };
      const [pa, pb] = [await pages(env.app), await pages(singleApp)];
      expect(pa.length).toBeGreaterThan(3 * 9);
      expect(pa).toEqual(pb);

      // size -1: streamed through a point in time over every partition.
      const streamed = await same(
        "size -1",
        "/log/search/",
        JSON.stringify({ query: range, size: -1, sort: [bySort, { "logIndex.num": "asc" }] }),
      );
      expect((streamed.hits as { hits: unknown[] }).hits.length).toBe((streamed.hits as { total: number }).total);
      const prunedStream = await same(
        "size -1 (pruned)",
        "/log/search/",
        JSON.stringify({ query: narrow, size: -1, sort: [bySort, { "logIndex.num": "asc" }] }),
      );
      expect((prunedStream.hits as { total: number }).total).toBeGreaterThan(0);
      await same(
        "size -1 beyond the head",
        "/tx/search/",
        JSON.stringify({ query: { term: { "blockNumber.num": head + 10 * N } }, size: -1 }),
      );

      // The Elasticsearch-compatible routes, by the hits' `_index` (the alias) and by kind.
      const alias = indexName(env.h.config.chain, "event", prefix);
      const esBody = JSON.stringify({ query: range, sort: [bySort, { "logIndex.num": "asc" }], size: 50 });
      const esHits = await same("es _search by _index", `/${alias}/_search`, esBody);
      expect(((esHits.hits as { hits: Array<{ _index: string }> }).hits[0] as { _index: string })._index).toBe(
        `<prefix>${alias.slice(prefix.length)}`,
      );
      await same("es _count", "/log,tx/_count", JSON.stringify({ query: range }));
      await same("es _count (pruned)", "/log,tx/_count", JSON.stringify({ query: narrow }));
      await same(
        "es _msearch",
        "/_msearch",
        [
          JSON.stringify({ index: "tx" }),
          JSON.stringify({ query: range, size: 5, sort: [bySort, { "transactionIndex.num": "asc" }] }),
          JSON.stringify({}),
          JSON.stringify({ size: 0, aggs: { k: { terms: { field: "from", size: 5 } } } }),
        ]
          .map((l) => `${l}\n`)
          .join(""),
        "application/x-ndjson",
      );
    } finally {
      await rpc("evm_setIntervalMining", [1]);
    }
  }, 300_000);
});
