/**
 * forgetEarlierRuns (pipeline/wiring.ts), as npm start runs it for an embedded chain: it deletes
 * the previous run's records and publishes the deleted aliases as an index write
 * (lib/index-writes.ts), so that every API instance's result cache drops its answers of them at once.
 */
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexName } from "../../../es/mappings.js";
import { indexWritesChannel, parseIndexWrites } from "../../../lib/index-writes.js";
import { RECORD_KINDS } from "../../../lib/records.js";
import type { PipelineChainContext } from "../../../pipeline/chain-context.js";
import { createBus } from "../../../pipeline/kafka/bus.js";
import { forgetEarlierRuns } from "../../../pipeline/wiring.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";

const up = await probeStack();

describe.skipIf(!up.ok)("forgetEarlierRuns (real Elasticsearch, Redis, Kafka)", () => {
  let h: Harness;

  beforeAll(() => {
    h = createHarness();
  });
  afterAll(async () => {
    await h?.cleanup();
  });

  it("publishes the chain's deleted aliases on the index-writes channel", async () => {
    await createBus({ config: h.config, logger: h.logger }); // the topics of an earlier run
    const sub = createClient({ url: h.config.redisUrl });
    await sub.connect();
    const notices: string[][] = [];
    try {
      await sub.subscribe(indexWritesChannel(h.config.redisKeyPrefix), (message) => {
        const m = parseIndexWrites(message);
        if (m && "indices" in m) notices.push(m.indices);
      });
      await forgetEarlierRuns({ logger: h.logger }, { config: h.config } as PipelineChainContext);
      await waitFor(async () => notices.length > 0, 5_000, 20);
      const aliases = RECORD_KINDS.map((k) => indexName(h.config.chain, k, h.config.elasticsearch.indexPrefix));
      expect(notices[0]).toEqual([...aliases].sort());
    } finally {
      await sub.quit();
    }
  });
});
