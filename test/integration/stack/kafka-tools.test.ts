/**
 * Kafka's own command-line tools through the stack script (`npm run stack -- kafka <tool>`, the
 * jars of org.apache.kafka:kafka-tools, docs/stack.md) against the real broker: `topics --list`
 * lists this run's topics, and `consumer-groups --describe` shows the decode stage's member with
 * its own client id, `chainsift-decode-<instance id>` (pipeline/kafka/bus.ts `kafkaClientId`).
 * The first call downloads the tools' jars when they are missing (Maven Central).
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kafkaClientId } from "../../../pipeline/kafka/bus.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";

const STACK = join(import.meta.dirname, "../../../scripts/stack.sh");
const up = await probeStack();

describe.skipIf(!up.ok)("Kafka command-line tools of the stack (real broker)", () => {
  let h: Harness;
  let pipeline: Pipeline;
  /** Runs `scripts/stack.sh kafka <args>` against this run's broker; resolves with its stdout. */
  const kafkaTool = async (...args: string[]): Promise<string> => {
    const { stdout } = await promisify(execFile)(
      "bash",
      [STACK, "kafka", ...args, "--bootstrap-server", h.config.kafka.brokers[0] as string],
      {
        timeout: 300_000, // the first call may download the tools' jars
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    return stdout;
  };

  beforeAll(async () => {
    h = createHarness();
    h.config.kafka.instanceId = `tools-${h.id}`;
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, stages: ["decode"] });
  }, 120_000);

  afterAll(async () => {
    await pipeline?.stop();
    await h?.cleanup();
  });

  it("`kafka topics --list` lists the topics this run created", async () => {
    const topics = (await kafkaTool("topics", "--list")).split("\n");
    expect(topics).toContain(pipeline.bus.topic("logs"));
    expect(topics).toContain(pipeline.bus.topic("events"));
  }, 320_000);

  it("`kafka consumer-groups --describe` shows the decode stage's partition held by client id chainsift-decode-<instance>", async () => {
    const clientId = kafkaClientId(h.config.kafka, "decode");
    expect(clientId).toBe(`chainsift-decode-tools-${h.id}`);
    const group = pipeline.bus.groupId("decode");
    // The member appears once the consumer has joined the group (right after start it may still be joining).
    const row = await waitFor(
      async () => {
        const out = await kafkaTool("consumer-groups", "--describe", "--group", group);
        return out.split("\n").find((line) => line.includes(pipeline.bus.topic("logs")) && line.includes(clientId));
      },
      120_000,
      1000,
    );
    // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
    const columns = row.trim().split(/\s+/);
    expect(columns[0]).toBe(group);
    expect(columns.at(-1)).toBe(clientId);
    expect(columns.at(-3)?.startsWith(`${clientId}-`)).toBe(true); // kafkajs member ids are `<clientId>-<uuid>`
  }, 320_000);
});
