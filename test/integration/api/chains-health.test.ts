/**
 * `GET /chains/health/` over the real stack (Kafka, schema registry, Elasticsearch, Redis), under a
 * unique topic/group/index/Redis prefix (test/support/harness.ts): the decode stage consumes one
 * message that is not Avro and dead-letters it; the route then answers the decode group's lag 0 on
 * its partitions, the groups that never ran as null, one dead letter in the last hour — the same
 * figures `chainsift status` (cli/status.ts `gatherStatus`) reads, since both use
 * lib/kafka/consumer-health.ts. It needs a token; with Kafka unreachable it answers 503
 * `CS_BACKEND_UNAVAILABLE`.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { gatherStatus } from "../../../cli/status.js";
import { CONSUMER_GROUP_STAGES } from "../../../lib/kafka/consumer-health.js";
import { createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";

const up = await probeStack();

interface HealthAnswer {
  at: string;
  chains: Array<{
    technology: string;
    blockchain: string;
    network: string;
    groups: Array<{ stage: string; lag: number | null; partitions: number }>;
    deadLettersLastHour: number | null;
  }>;
}

describe.skipIf(!up.ok)("GET /chains/health/ (real stack)", () => {
  let h: Harness;
  let pipeline: Pipeline;
  let app: FastifyInstance;
  let auth: { authorization: string };

  beforeAll(async () => {
    h = createHarness();
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, stages: ["decode"] });
    const producer = await createRecordProducer(pipeline.bus);
    await producer.producer.sendBatch([
      { topic: pipeline.bus.topic("logs"), messages: [{ key: "garbage", value: Buffer.from("not avro") }] },
    ]);
    await producer.disconnect();
    app = await buildApi({ config: h.config, es: h.es, logger: false });
    auth = { authorization: `Bearer ${h.config.api.tokens[0]}` };
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await pipeline?.stop();
    await h?.cleanup();
  });

  it("answers each consumer group's lag and the dead letters of the last hour, as chainsift status reads them", {
    timeout: 120_000,
  }, async () => {
    const health = await waitFor(async () => {
      const res = await app.inject({ method: "GET", url: "/chains/health/", headers: auth });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json() as HealthAnswer;
      const chain = body.chains[0];
      const decode = chain?.groups.find((g) => g.stage === "decode");
      return decode?.lag === 0 && chain?.deadLettersLastHour === 1 ? body : undefined;
    });
    const { technology, blockchain, network } = h.config.chain;
    expect(health.chains).toHaveLength(1);
    const chain = health.chains[0] as HealthAnswer["chains"][number];
    expect(chain).toMatchObject({ technology, blockchain, network, deadLettersLastHour: 1 });
    expect(chain.groups.map((g) => g.stage)).toEqual([...CONSUMER_GROUP_STAGES]);
    // decode committed on the partitions of the topics it read; the stages that never ran have no offsets.
    expect(chain.groups.find((g) => g.stage === "decode")?.partitions).toBeGreaterThan(0);
    for (const g of chain.groups.filter((x) => x.stage !== "decode")) expect(g).toEqual({ stage: g.stage, lag: null, partitions: 0 });
    expect(Date.parse(health.at)).not.toBeNaN();

    // The same figures as the CLI's status (nothing is produced meanwhile: they are stable).
    const status = await gatherStatus(h.config);
    expect(status.deadLettersLastHour).toBe(chain.deadLettersLastHour);
    expect(status.groups.map(({ stage, lag, partitions }) => ({ stage, lag, partitions }))).toEqual(chain.groups);
  });

  it("needs a token", async () => {
    const res = await app.inject({ method: "GET", url: "/chains/health/" });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe("CS_AUTH_REQUIRED");
  });

  it("answers 503 CS_BACKEND_UNAVAILABLE when Kafka does not answer", { timeout: 60_000 }, async () => {
    const down = await buildApi({
      config: { ...h.config, kafka: { ...h.config.kafka, brokers: ["127.0.0.1:1"] } },
      es: h.es,
      logger: false,
    });
    try {
      const res = await down.inject({ method: "GET", url: "/chains/health/", headers: auth });
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json().error.code).toBe("CS_BACKEND_UNAVAILABLE");
      expect(res.json().error.message).toMatch(/Kafka/);
    } finally {
      await down.close();
    }
  });
});
