/**
 * The Kafka destination's pure parts (h-kdest, issue 35): what a `Kafka` action renders (record key
 * by parameter, the webhook JSON as value, a retraction keyed like its pending record), how its
 * cluster is checked, keyed and shown (never the SASL password), how produce errors are classified,
 * and that a forbidden broker is refused before any connection.
 */
import avro from "avsc";
import { describe, expect, it } from "vitest";
import { alertFromAvro } from "../../../../lib/alerting/avro.js";
import {
  CHANNELS,
  describeDestination,
  destinationKey,
  kafkaAvroRecord,
  kafkaRecordKey,
  kafkaTarget,
} from "../../../../lib/alerting/channels.js";
import { type RenderedKafka, renderAction } from "../../../../lib/alerting/rendered.js";
import { heldOf, makeDigest } from "../../../../lib/alerting/storm.js";
import { webhookJson } from "../../../../lib/alerting/webhook.js";
import { NonRetryableError } from "../../../../lib/errors.js";
import type { AlertDefinition } from "../../../../lib/rules/model.js";
import {
  avroFramed,
  CS_KAFKA_REJECTED,
  CS_KAFKA_UNAVAILABLE,
  classifyKafkaError,
  createKafkaChannel,
  kafkaClusterKey,
} from "../../../../pipeline/notify/channels/kafka.js";
import { CS_ACTION_INVALID } from "../../../../pipeline/notify/outcome.js";
import { CS_DESTINATION_FORBIDDEN, literalAddressRefusal } from "../../../../pipeline/notify/ssrf.js";
import { TOPICS } from "../../../../topics/index.js";
import { sampleAlert } from "./fixtures.js";

const SECRET = "s3cr3t-Pa55word";
const kafka = (parameters: Record<string, unknown>) => ({ type: "Kafka", parameters }) as unknown as AlertDefinition;
const base = { brokers: ["kafka-1.example.com:9093", "kafka-2.example.com:9093"], topic: "chainsift-alerts" };

describe("Kafka action rendering", () => {
  it("produces the webhook JSON as value, keyed by the rule id by default", () => {
    const alert = sampleAlert();
    const r = renderAction(alert, kafka(base)) as RenderedKafka;
    expect(r).toEqual({
      type: "Kafka",
      brokers: base.brokers,
      topic: base.topic,
      key: alert.ruleId,
      format: "json",
      value: webhookJson(alert),
    });
    expect(JSON.parse(r.value)).toMatchObject({ id: alert.id, status: "confirmed", entityId: alert.entityId });
  });

  it("keys by the entity id when asked, and a retraction has its pending record's key", () => {
    const pending = sampleAlert({ status: "pending" });
    const removed = sampleAlert({ status: "removed", confirmations: 0 });
    for (const key of ["ruleId", "entityId"] as const) {
      const [a, b] = [pending, removed].map((x) => (renderAction(x, kafka({ ...base, key })) as RenderedKafka).key);
      expect(a).toBe(key === "ruleId" ? pending.ruleId : pending.entityId);
      expect(b).toBe(a);
    }
    expect(kafkaRecordKey(pending, { key: "entityId" })).toBe(pending.entityId);
    expect(kafkaRecordKey(pending, {})).toBe(pending.ruleId);
  });

  it("avro: the alert's Avro record without the rule's actions, in the Confluent wire format", () => {
    const alert = sampleAlert({ actions: [kafka({ ...base, sasl: { mechanism: "plain", username: "u", password: SECRET } })] });
    const r = renderAction(alert, kafka({ ...base, avro: { schemaRegistryUrl: "https://sr.example.com/" } })) as RenderedKafka;
    expect(r).toMatchObject({ format: "avro", key: alert.ruleId, schemaRegistryUrl: "https://sr.example.com/" });
    expect(r.value).not.toContain(SECRET);
    const record = JSON.parse(r.value);
    expect(record).toEqual(JSON.parse(JSON.stringify(kafkaAvroRecord(alert))));
    expect(record.actionsJson).toBe("[]");
    const framed = avroFramed(7, record);
    expect([framed[0], framed.readInt32BE(1)]).toEqual([0, 7]);
    const decoded = avro.Type.forSchema(TOPICS.alerts.schema as avro.Schema).fromBuffer(framed.subarray(5));
    expect(JSON.parse(JSON.stringify(decoded))).toEqual(record);
    expect(alertFromAvro(decoded)).toMatchObject({ id: alert.id, status: alert.status, payload: alert.payload, actions: [] });
  });

  it("never renders the SASL credentials", () => {
    const r = renderAction(
      sampleAlert(),
      kafka({ ...base, ssl: true, sasl: { mechanism: "scram-sha-512", username: "svc", password: SECRET } }),
    );
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect(JSON.stringify(r)).not.toContain("svc");
  });

  it("refuses, as CS_ACTION_INVALID, an action without brokers, topic or complete SASL", () => {
    for (const p of [
      { topic: "t" },
      { brokers: ["no-port"], topic: "t" },
      { brokers: ["h:1"] },
      { brokers: ["h:1"], topic: "t", sasl: { mechanism: "plain", username: "u" } },
      { brokers: ["h:1"], topic: "t", avro: {} },
      { brokers: ["h:1"], topic: "t", avro: null },
    ]) {
      let err: unknown;
      try {
        renderAction(sampleAlert(), kafka(p));
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(p)).toBeInstanceOf(NonRetryableError);
      expect((err as NonRetryableError).code).toBe(CS_ACTION_INVALID);
    }
    expect(kafkaTarget({ brokers: ["h:1"], topic: "t", ssl: true })).toEqual({ brokers: ["h:1"], topic: "t", ssl: true });
  });
});

describe("Kafka destination: health key, log text, producer cache key", () => {
  it("keys destination health by the cluster (brokers, case and order ignored)", () => {
    const a = destinationKey(kafka(base));
    expect(a).toBe("kafka://kafka-1.example.com:9093,kafka-2.example.com:9093");
    expect(destinationKey(kafka({ ...base, brokers: ["KAFKA-2.example.com:9093", "kafka-1.example.com:9093"] }))).toBe(a);
    expect(destinationKey(kafka({ topic: "t" }))).toBe("invalid");
  });

  it("shows topic and brokers in the delivery log, never the SASL user or password", () => {
    const d = describeDestination(kafka({ ...base, sasl: { mechanism: "plain", username: "svc-user", password: SECRET } }));
    expect(d).toBe("kafka topic chainsift-alerts at kafka-1.example.com:9093,kafka-2.example.com:9093");
    expect(CHANNELS.Kafka.chat).toBe(false);
    expect(CHANNELS.Kafka.editsOnRetraction).toBe(false);
  });

  it("caches one producer per cluster configuration, without the password in clear", () => {
    const sasl = (password: string) => ({ mechanism: "scram-sha-256", username: "u", password });
    const k1 = kafkaClusterKey({ ...base, sasl: sasl(SECRET) });
    expect(k1).not.toContain(SECRET);
    expect(kafkaClusterKey({ ...base, brokers: [...base.brokers].reverse(), sasl: sasl(SECRET), topic: "other" })).toBe(k1);
    expect(kafkaClusterKey({ ...base, sasl: sasl("another") })).not.toBe(k1);
    expect(kafkaClusterKey({ ...base, sasl: sasl(SECRET), ssl: true })).not.toBe(k1);
    expect(kafkaClusterKey(base)).not.toBe(k1);
  });
});

describe("Kafka destination: outcomes", () => {
  it("retries what the cluster may fix, gives up on what it cannot, keeps SSRF refusals final", () => {
    const unknownTopic = Object.assign(new Error("This server does not host this topic-partition"), { type: "UNKNOWN_TOPIC_OR_PARTITION" });
    expect(classifyKafkaError(unknownTopic)).toMatchObject({ ok: false, retryable: true, code: CS_KAFKA_UNAVAILABLE });
    expect(classifyKafkaError(new Error("Connection error: connect ECONNREFUSED"))).toMatchObject({
      retryable: true,
      code: CS_KAFKA_UNAVAILABLE,
    });
    const tooLarge = Object.assign(new Error("The request included a message larger than the max message size"), {
      type: "MESSAGE_TOO_LARGE",
    });
    expect(classifyKafkaError(tooLarge)).toMatchObject({ retryable: false, code: CS_KAFKA_REJECTED });
    const refusal = new NonRetryableError(CS_DESTINATION_FORBIDDEN, "destination 10.0.0.5 is a private address");
    expect(classifyKafkaError(new Error("Connection error"), refusal)).toMatchObject({ retryable: false, code: CS_DESTINATION_FORBIDDEN });
  });

  it("refuses forbidden literal broker addresses unless allowlisted", () => {
    expect(literalAddressRefusal("10.0.0.5")?.code).toBe(CS_DESTINATION_FORBIDDEN);
    expect(literalAddressRefusal("[::1]")?.code).toBe(CS_DESTINATION_FORBIDDEN);
    expect(literalAddressRefusal("127.0.0.1", { allowlist: ["127.0.0.1"] })).toBeNull();
    expect(literalAddressRefusal("8.8.8.8")).toBeNull();
    expect(literalAddressRefusal("kafka.example.com")).toBeNull(); // names: judged by the guarded lookup
  });

  it("sends no JSON digest into a topic of Avro records", async () => {
    const channel = createKafkaChannel({
      policy: {},
      timeoutMs: 1000,
      send: async () => ({ ok: true }),
      secrets: { getOrCreate: async () => "s" },
    });
    const alert = sampleAlert();
    const ctx = (parameters: Record<string, unknown>) =>
      makeDigest(
        {
          ruleId: alert.ruleId,
          accountId: alert.accountId,
          chain: alert.chain,
          targetType: "Event",
          actionIndex: 0,
          action: kafka(parameters),
          policy: { max: 0, windowMs: 60_000, maxEntities: 10, source: "digest" },
          windowStartMs: 0,
          windowEndMs: 60_000,
          entity: alert.entity ?? {},
        },
        [heldOf(alert)],
      );
    await expect(channel.prepareDigest!(ctx({ ...base, avro: { schemaRegistryUrl: "https://sr.example" } }))).rejects.toMatchObject({
      code: CS_ACTION_INVALID,
    });
    expect(typeof (await channel.prepareDigest!(ctx(base)))).toBe("function"); // JSON: a digest record
    await channel.close?.();
  });

  it("fails a forbidden bootstrap broker for good before connecting", async () => {
    const send = async () => {
      throw new Error("no registry in this test");
    };
    const channel = createKafkaChannel({ policy: {}, timeoutMs: 1000, send, secrets: { getOrCreate: async () => "s" } });
    try {
      for (const broker of ["127.0.0.1:9092", "169.254.169.254:9092", "[fd00::1]:9092"]) {
        const attempt = await channel.prepare(sampleAlert(), kafka({ brokers: [broker], topic: "t" }), 0);
        expect(typeof attempt).toBe("function");
        const out = await (attempt as (n: number) => Promise<unknown>)(1);
        expect(out, broker).toMatchObject({ ok: false, retryable: false, code: CS_DESTINATION_FORBIDDEN });
      }
    } finally {
      await channel.close?.();
    }
  });
});
