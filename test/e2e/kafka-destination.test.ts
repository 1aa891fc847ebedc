/**
 * The Kafka destination end to end on anvil (h-kdest, issue 35): a rule with two `Kafka` actions
 * (key = rule id, key = entity id) produces to a second topic on the stack's Kafka, standing in for
 * the user's cluster. The topic does not exist when the first alert goes out (the broker does not
 * auto-create topics), so its attempts fail and are retried by the scheduler until the test creates
 * the topic: nothing is lost. Then a match is confirmed, another is reorganised away (`anvil_reorg`)
 * before confirmation, and a consumer of the topic sees, per key, pending → confirmed and
 * pending → removed in emission order, the retraction on its pending record's key and partition.
 * A second rule produces Avro (the alerts topic's schema, registered in the stack's schema registry
 * under the destination topic's subject), which a consumer decodes with the registry.
 */
import { SchemaRegistry } from "@kafkajs/confluent-schema-registry";
import { Kafka, logLevel } from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilEnv, startAnvilEnv, type WebhookAlert } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";

const up = await probeStack();

/** One record read back from the destination topic. */
interface Seen {
  key: string;
  partition: number;
  offset: number;
  status: string;
  alert: WebhookAlert;
}

describe.skipIf(!up.ok)("Kafka destination: records per key in order, retractions, a missing topic loses nothing (anvil)", () => {
  let env: AnvilEnv;
  let kafka: Kafka;
  let topic: string;
  const seen: Seen[] = [];

  beforeAll(async () => {
    env = await startAnvilEnv({
      traces: false,
      match: () => ({ reloadIntervalMs: 500 }),
      // Retries enough to outlast the missing topic; probes of the unhealthy destination at most 1 s apart.
      notify: { maxAttempts: 200, baseDelayMs: 100, maxDelayMs: 1000, retryWindowMs: 120_000, timeoutMs: 5000 },
    });
    topic = `${env.config.kafka.topicPrefix}user-destination`;
    kafka = new Kafka({ clientId: `${env.h.id}-user`, brokers: env.config.kafka.brokers, logLevel: logLevel.NOTHING });
  }, 180_000);

  afterAll(async () => {
    await env?.stop(); // also deletes the destination topic (the run's prefix)
  });

  /** A rule on CST transfers to `to` with pending alerts (its actions are set by the test). */
  const transferRule = async (name: string, to: string, maxConfirmationCount: number) =>
    tokenTransferRule({
      name,
      chain: env.config.chain,
      token: await env.token.getAddress(),
      maxConfirmationCount,
      url: env.hook("unused"),
      to,
    });

  it("delivers pending/confirmed/removed in order per key, after the topic appears", async () => {
    const to = env.devAccounts[6]!;
    const input = await transferRule("to kafka", to, 3);
    const brokers = env.config.kafka.brokers;
    input.config.alerts = [
      { type: "Kafka", parameters: { brokers, topic } },
      { type: "Kafka", parameters: { brokers, topic, key: "entityId" } },
    ];
    const rule = await env.rules.create("acc-e2e", input);
    await env.waitActive([rule.id]);

    // 1. The first match while the topic does not exist: attempts fail and are retried.
    await env.transfer(to, 1_000_000n);
    await env.mine(1);
    await waitFor(async () => env.notify.scheduler.stats().retried >= 2, 30_000, 100);
    expect(env.notify.scheduler.stats().delivered).toBe(0);

    // 2. The user creates the topic; a consumer reads it from the beginning.
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const consumer = kafka.consumer({ groupId: `${env.h.id}-user-consumer` });
    env.onStop(() => consumer.disconnect());
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const alert = JSON.parse(message.value!.toString("utf8")) as WebhookAlert;
        expect(message.headers?.["chainsift-alert-id"]?.toString()).toBe(alert.id);
        seen.push({ key: message.key!.toString("utf8"), partition, offset: Number(message.offset), status: alert.status, alert });
      },
    });
    const ids = () => new Set(seen.map((s) => `${s.key}|${s.alert.id}`));
    await waitFor(async () => ids().size >= 2, 40_000, 100); // pending, under both keys

    // 3. Confirmed.
    await env.mine(3);
    await waitFor(async () => ids().size >= 4, 30_000, 100);

    // 4. A second match, reorganised away before confirmation: removed.
    await env.transfer(to, 2_000_000n);
    await env.mine(1);
    await waitFor(async () => ids().size >= 6, 30_000, 100);
    await env.rpc("anvil_reorg", [1, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(3);
    await waitFor(async () => ids().size >= 8, 30_000, 100);

    // At least once: a record may repeat (same alert id); order is judged on first occurrences.
    const byKey = new Map<string, Seen[]>();
    for (const s of [...seen].sort((a, b) => a.partition - b.partition || a.offset - b.offset)) {
      const list = byKey.get(s.key) ?? [];
      if (!list.some((x) => x.alert.id === s.alert.id)) list.push(s);
      byKey.set(s.key, list);
    }
    for (const list of byKey.values()) expect(new Set(list.map((s) => s.partition)).size).toBe(1); // one key, one partition

    // Key = rule id: the rule's four alerts in emission order.
    const byRule = byKey.get(rule.id)!;
    expect(byRule.map((s) => s.status)).toEqual(["pending", "confirmed", "pending", "removed"]);
    const sequences = byRule.map((s) => s.alert.sequence);
    expect([...sequences].sort((a, b) => a - b)).toEqual(sequences);
    const [first, , second, removed] = byRule;
    expect(first!.alert.entityId).not.toBe(second!.alert.entityId);
    expect(removed!.alert.entityId).toBe(second!.alert.entityId);
    expect(removed!.alert.replacedBy?.number).toBe(second!.alert.blockNumber);

    // Key = entity id: each match on its own key, its retraction on its pending record's key.
    expect(byKey.get(first!.alert.entityId)!.map((s) => s.status)).toEqual(["pending", "confirmed"]);
    expect(byKey.get(second!.alert.entityId)!.map((s) => s.status)).toEqual(["pending", "removed"]);
    expect([...byKey.keys()].sort()).toEqual([rule.id, first!.alert.entityId, second!.alert.entityId].sort());

    // The delivery log shows topic and brokers; the retried attempts of the first alert ended delivered.
    const log = await env.notify.deliveryLog.list(rule.id);
    expect(log.entries.length).toBeGreaterThanOrEqual(8);
    for (const e of log.entries) expect(e.destination).toBe(`kafka topic ${topic} at ${brokers.join(",")}`);
    expect(log.entries.filter((e) => !e.ok)).toEqual([]);
    expect(log.entries.find((e) => e.alertId === first!.alert.id && e.actionIndex === 0)!.attempts).toBeGreaterThan(1);
    expect(env.notify.scheduler.stats().deadLettered).toBe(0);
  }, 120_000);

  it("avro: the alert's record in the alerts topic's schema, registered in the user's registry", async () => {
    const avroTopic = `${env.config.kafka.topicPrefix}user-destination-avro`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: avroTopic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const to = env.devAccounts[7]!;
    const input = await transferRule("to kafka, avro", to, 1);
    const parameters = { brokers: env.config.kafka.brokers, topic: avroTopic, avro: { schemaRegistryUrl: env.config.schemaRegistryUrl } };
    input.config.alerts = [{ type: "Kafka", parameters } as unknown as (typeof input.config.alerts)[number]];
    const rule = await env.rules.create("acc-e2e", input);
    await env.waitActive([rule.id]);
    await env.transfer(to, 3_000_000n);
    await env.mine(1);

    const registry = new SchemaRegistry({ host: env.config.schemaRegistryUrl });
    const records: { key: string; record: Record<string, unknown> }[] = [];
    const consumer = kafka.consumer({ groupId: `${env.h.id}-user-avro` });
    env.onStop(() => consumer.disconnect());
    await consumer.connect();
    await consumer.subscribe({ topic: avroTopic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        expect(message.value![0]).toBe(0); // Confluent wire format
        records.push({ key: message.key!.toString("utf8"), record: (await registry.decode(message.value!)) as Record<string, unknown> });
      },
    });
    await waitFor(async () => records.length >= 1, 30_000, 100);
    const [{ key, record }] = records as [(typeof records)[number]];
    expect(key).toBe(rule.id);
    expect(record).toMatchObject({ ruleId: rule.id, status: "confirmed", actionsJson: "[]" });
    expect(JSON.parse(record.payloadJson as string)).toBeTypeOf("object");
    const log = await env.notify.deliveryLog.list(rule.id);
    expect(log.entries.map((e) => [e.ok, e.destination])).toEqual([
      [true, `kafka topic ${avroTopic} at ${env.config.kafka.brokers.join(",")}`],
    ]);
  }, 60_000);
});
