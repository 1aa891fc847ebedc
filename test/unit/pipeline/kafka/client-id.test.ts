import { hostname } from "node:os";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../../lib/config/index.js";
import { kafkaClientId } from "../../../../pipeline/kafka/bus.js";

describe("Kafka client ids (one per process and stage)", () => {
  it("defaults the instance id to <hostname>-<pid> and takes CHAINSIFT_INSTANCE_ID when set", () => {
    expect(loadConfig({}).kafka.instanceId).toBe(`${hostname()}-${process.pid}`);
    expect(loadConfig({ CHAINSIFT_INSTANCE_ID: "decode-1" }).kafka.instanceId).toBe("decode-1");
  });

  it("is <KAFKA_CLIENT_ID>-<role>-<instance>, or <KAFKA_CLIENT_ID>-<instance> without a role", () => {
    const kafka = loadConfig({ KAFKA_CLIENT_ID: "cs", CHAINSIFT_INSTANCE_ID: "host1-42" }).kafka;
    expect(kafkaClientId(kafka, "decode")).toBe("cs-decode-host1-42");
    expect(kafkaClientId(kafka)).toBe("cs-host1-42");
    expect(kafkaClientId(loadConfig({ CHAINSIFT_INSTANCE_ID: "x" }).kafka, "index")).toBe("chainsift-index-x");
  });
});
