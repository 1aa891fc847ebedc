import { Kafka } from "kafkajs";
import { describe, expect, it } from "vitest";
import { ConfigError, KAFKA_CLIENTS, loadConfig } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import { transportMaker } from "../../../pipeline/kafka/select.js";

describe("CHAINSIFT_KAFKA_CLIENT (lib/config/kafka-client.ts)", () => {
  it("is platformatic by default, kafkajs when asked (any case), and nothing else", () => {
    expect(loadConfig({}).kafka.client).toBe("platformatic");
    expect(loadConfig({ CHAINSIFT_KAFKA_CLIENT: "" }).kafka.client).toBe("platformatic");
    expect(loadConfig({ CHAINSIFT_KAFKA_CLIENT: "kafkajs" }).kafka.client).toBe("kafkajs");
    expect(loadConfig({ CHAINSIFT_KAFKA_CLIENT: "KafkaJS" }).kafka.client).toBe("kafkajs");
    expect(loadConfig({ CHAINSIFT_KAFKA_CLIENT: "platformatic" }).kafka.client).toBe("platformatic");
    expect(() => loadConfig({ CHAINSIFT_KAFKA_CLIENT: "rdkafka" })).toThrow(ConfigError);
    expect(() => loadConfig({ CHAINSIFT_KAFKA_CLIENT: "rdkafka" })).toThrow(/CHAINSIFT_KAFKA_CLIENT/);
    expect(KAFKA_CLIENTS).toEqual(["kafkajs", "platformatic"]);
  });

  it("keeps the other Kafka settings where they were (config.kafka)", () => {
    const c = loadConfig({ KAFKA_CLIENT_ID: "cs", CHAINSIFT_INSTANCE_ID: "i1", CHAINSIFT_TOPIC_PREFIX: "p.", CHAINSIFT_GROUP_PREFIX: "g" });
    expect(c.kafka).toEqual({
      brokers: ["127.0.0.1:9092"],
      clientId: "cs",
      instanceId: "i1",
      topicPrefix: "p.",
      groupPrefix: "g",
      client: "platformatic",
    });
  });

  it("selects the transport of the configured library (pipeline/kafka/select.ts; nothing connects)", async () => {
    const logger = createLogger("silent", "test");
    const newKafka = (clientId: string) => new Kafka({ clientId, brokers: ["127.0.0.1:1"] });
    for (const client of KAFKA_CLIENTS) {
      const make = await transportMaker({ client, brokers: ["127.0.0.1:1"] }, newKafka, logger);
      expect(make("c").name).toBe(client);
    }
  });
});
