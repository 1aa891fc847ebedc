/**
 * Re-indexing a chain from its topics (a new consumer group into a fresh index, as after a mapping
 * change or a lost index) long after a reorg: ingest's canonical map no longer knows the orphaned
 * heights (the follower prunes it ~16 windows below its tip), the fresh index has no delete
 * tombstones, and the reorgs consumer, with one small topic, is done before the record consumers
 * reach the orphaned records. The index must still equal the node's canonical chain (issue 19 §3a,
 * docs/reorgs.md "What the index does" 4). Real anvil, Kafka, Elasticsearch, registry and Redis.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { rpcCall } from "../../../cli/devchain/rpc.js";
import type { Config } from "../../../lib/config/index.js";
import { createDecoder } from "../../../pipeline/decode/decoder.js";
import { createIndexer, ensureIndices, INDEX_REORGS_STAGE, startIndexStage } from "../../../pipeline/index/indexer.js";
import { type Bus, createBus } from "../../../pipeline/kafka/bus.js";
import { type RunningConsumer, runConsumer } from "../../../pipeline/kafka/consumer.js";
import type { TopicKind } from "../../../topics/index.js";
import { compareWithChain, waitForChain } from "../../support/canonical.js";
import { type FollowedChain, startFollowedChain } from "../../support/followed-chain.js";
import { probeStack, waitFor } from "../../support/harness.js";

const up = await probeStack();

const RECORD_TOPICS: TopicKind[] = ["blocks", "transactions", "logs", "events", "traces"];

/** True when the consumer group `groupId` has committed every partition of `topics` up to its end. */
async function caughtUp(bus: Bus, groupId: string, topics: TopicKind[]): Promise<boolean> {
  const admin = bus.kafka.admin();
  await admin.connect();
  try {
    const names = topics.map((t) => bus.topic(t));
    const committed = await admin.fetchOffsets({ groupId, topics: names });
    for (const name of names) {
      const ends = await admin.fetchTopicOffsets(name);
      const done = committed.find((c) => c.topic === name)?.partitions ?? [];
      for (const end of ends) {
        const at = done.find((p) => p.partition === end.partition)?.offset ?? "-1";
        if (Number(end.high) > 0 && Number(at) < Number(end.high)) return false;
      }
    }
    return true;
  } finally {
    await admin.disconnect();
  }
}

describe.skipIf(!up.ok)("index stage rebuilt from the topics after a reorg and a pruned canonical map", () => {
  const decoder = createDecoder({ chainId: 31337 });
  let env: FollowedChain;
  const stages: RunningConsumer[] = [];
  let app: FastifyInstance | undefined;

  beforeAll(async () => {
    env = await startFollowedChain(decoder);
  });
  afterAll(async () => {
    for (const s of stages) await s.stop().catch(() => {});
    await app?.close();
    await env?.stop();
  });

  it("serves exactly the node's canonical chain: the orphaned blocks' records do not come back", async () => {
    const { h, anvil, traffic, pipeline } = env;
    const rpc = (method: string, params: unknown[] = []) => rpcCall(anvil.rpcUrl, method, params);
    const hashAt = async (n: number) => ((await rpc("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as { hash: string }).hash;
    await waitFor(async () => Number(await rpc("eth_blockNumber")) >= 20, 60_000, 100);
    // A reorg of 3 blocks with transfers in them, repaired live; they are indexed first.
    await rpc("evm_setIntervalMining", [0]);
    const mined = Number(await rpc("eth_blockNumber"));
    expect((await waitForChain({ rpcUrl: anvil.rpcUrl, app: env.app, config: h.config, decoder, to: mined })).problems).toEqual([]);
    const top = Number(await rpc("eth_blockNumber"));
    const orphaned = await Promise.all([0, 1, 2].map((i) => hashAt(top - i)));
    await rpc("anvil_reorg", [3, []]);
    await rpc("evm_setIntervalMining", [1]);
    const end = Number(await rpc("eth_blockNumber")) + 3;
    await waitFor(async () => Number(await rpc("eth_blockNumber")) >= end, 30_000, 100);
    await traffic.stop();
    await rpc("evm_setIntervalMining", [0]); // the chain stops at `last`: the topics stop growing once it is ingested
    const last = Number(await rpc("eth_blockNumber"));
    const live = await waitForChain({ rpcUrl: anvil.rpcUrl, app: env.app, config: h.config, decoder, to: last, orphaned });
    expect(live.problems).toEqual([]);
    expect(live.stillCanonical).toEqual([]);

    // Much later: the follower has pruned the canonical map below its tip (here: all of it).
    const state = await pipeline.chainState();
    await state.prune(0, last + 1);
    expect([...(await state.hashesAt([top - 2, top - 1, top])).values()]).toEqual([undefined, undefined, undefined]);

    // The rebuild: new consumer groups, a fresh index; the reorgs topic is consumed first.
    const config: Config = {
      ...h.config,
      kafka: { ...h.config.kafka, groupPrefix: `${h.config.kafka.groupPrefix}-rebuild` },
      elasticsearch: { ...h.config.elasticsearch, indexPrefix: `${h.id}-rebuilt-` },
    };
    const bus = await createBus({ config, logger: h.logger });
    const common = {
      bus,
      es: h.es,
      chain: config.chain,
      indexPrefix: config.elasticsearch.indexPrefix,
      logger: h.logger,
      canonical: state,
      decode: { chainId: 1 },
    };
    await ensureIndices(h.es, config.chain, config.elasticsearch.indexPrefix);
    const removals = createIndexer(common);
    stages.push(
      await runConsumer({ bus, logger: h.logger, stage: INDEX_REORGS_STAGE, topics: ["reorgs"], handler: (b) => removals.indexBatch(b) }),
    );
    await waitFor(() => caughtUp(bus, bus.groupId(INDEX_REORGS_STAGE), ["reorgs"]), 60_000, 250);
    stages.push(await startIndexStage({ ...common, topics: RECORD_TOPICS }));
    await waitFor(() => caughtUp(bus, bus.groupId("index"), RECORD_TOPICS), 90_000, 250);
    await h.es.indices.refresh({ index: `${config.elasticsearch.indexPrefix}*` });
    app = await buildApi({ config, es: h.es, logger: false });
    const rebuilt = await compareWithChain({ rpcUrl: anvil.rpcUrl, app, config, decoder, to: last, orphaned });
    expect(rebuilt.problems).toEqual([]);
    expect(rebuilt.heights).toBe(last + 1);
    // What made it so: ingest remembered the orphaned blocks beyond the map's pruning.
    expect([...(await state.orphanedSince(orphaned)).keys()].sort()).toEqual(orphaned.map((x) => x.toLowerCase()).sort());
  }, 240_000);
});
