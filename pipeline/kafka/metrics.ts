/**
 * The metric families of the Kafka shell every stage shares (docs/metrics.md): records consumed
 * and produced per topic, handler latency, batch retries, dead letters per error code, and the
 * consumer groups' lag. Label `stage` is the consumer's stage (`decode`, `index`, `index-reorgs`,
 * `match`, `notify`, or `ingest` for what ingest produces); label `topic` is the topic kind
 * (`blocks`, `events`, …, topics/index.ts), not the full name: one process serves one chain.
 * @module
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { consumerGroupLag } from "../../lib/kafka/lag.js";
import { memoPerRegistry } from "../../lib/metrics.js";
import type { Bus } from "./bus.js";
import type { TransportAdmin } from "./transport.js";

/** How long a lag reading is reused by later scrapes: at most one round of admin requests per this many ms. */
export const LAG_CACHE_MS = 5_000;
/** A lag reading that takes longer is abandoned (the scrape shows the previous one). */
const LAG_TIMEOUT_MS = 3_000;

/** One consumer group whose lag a registry reports. */
interface LagSource {
  bus: Bus;
  group: string;
}

/** The shell's metric families in one registry (see the module notes). */
export interface KafkaMetrics {
  /** `chainsift_consumer_records_consumed_total{stage,topic}`: records handed to the stage (dead-lettered ones included). */
  consumed: Counter<"stage" | "topic">;
  /** `chainsift_records_produced_total{stage,topic}`: records a stage's producer sent (acknowledged by Kafka). */
  produced: Counter<"stage" | "topic">;
  /** `chainsift_consumer_handler_duration_seconds{stage,topic}`: one batch through the stage's handler (retries included). */
  handlerSeconds: Histogram<"stage" | "topic">;
  /** `chainsift_consumer_batch_retries_total{stage}`: batches retried after a transient failure. */
  retries: Counter<"stage">;
  /** `chainsift_consumer_dead_letters_total{stage,code}`: records sent to the dead-letter topic, by error code. */
  deadLetters: Counter<"stage" | "code">;
  /** Adds a consumer group to `chainsift_consumer_lag_records`; returns the function that removes it. */
  trackLag(bus: Bus, group: string): () => Promise<void>;
}

/** The Kafka shell's families of a registry, created on the first call (see lib/metrics.ts). */
export const kafkaMetricsOf = memoPerRegistry((registry: Registry): KafkaMetrics => {
  const registers = [registry];
  const sources = new Set<LagSource>();
  let admin: { bus: Bus; client: TransportAdmin; connected: Promise<void> } | undefined;
  let last: { atMs: number; rows: Awaited<ReturnType<typeof consumerGroupLag>> } | undefined;

  const read = async () => {
    const first = [...sources][0];
    if (!first) return [];
    if (!admin) {
      const client = first.bus.transport.admin();
      admin = { bus: first.bus, client, connected: client.connect() };
    }
    const { client, connected } = admin;
    await connected.catch((err: unknown) => {
      admin = undefined; // connect again on the next scrape
      throw err;
    });
    const rows = await Promise.all([...sources].map((s) => consumerGroupLag(client, s.group)));
    return rows.flat();
  };

  new Gauge({
    name: "chainsift_consumer_lag_records",
    help: `Records written to a topic-partition and not yet committed by the consumer group (high watermark - committed offset), read from Kafka at most every ${LAG_CACHE_MS} ms`,
    labelNames: ["group", "topic", "partition"] as const,
    registers,
    async collect() {
      if (!last || Date.now() - last.atMs >= LAG_CACHE_MS) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), LAG_TIMEOUT_MS);
        });
        const rows = await Promise.race([read().catch(() => undefined), timeout]);
        clearTimeout(timer);
        if (rows) last = { atMs: Date.now(), rows };
      }
      this.reset();
      for (const r of last?.rows ?? []) this.set({ group: r.group, topic: r.topic, partition: String(r.partition) }, r.lag);
    },
  });

  return {
    consumed: new Counter({
      name: "chainsift_consumer_records_consumed_total",
      help: "Records consumed by a stage, by topic kind (dead-lettered ones included)",
      labelNames: ["stage", "topic"] as const,
      registers,
    }),
    produced: new Counter({
      name: "chainsift_records_produced_total",
      help: "Records a stage produced to Kafka (acknowledged), by topic kind",
      labelNames: ["stage", "topic"] as const,
      registers,
    }),
    handlerSeconds: new Histogram({
      name: "chainsift_consumer_handler_duration_seconds",
      help: "Time one batch spent in the stage's handler, retries of transient failures included",
      labelNames: ["stage", "topic"] as const,
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
    retries: new Counter({
      name: "chainsift_consumer_batch_retries_total",
      help: "Batches retried after a transient failure (Elasticsearch, Redis, registry unavailable, ...)",
      labelNames: ["stage"] as const,
      registers,
    }),
    deadLetters: new Counter({
      name: "chainsift_consumer_dead_letters_total",
      help: "Records a stage sent to the dead-letter topic, by error code",
      labelNames: ["stage", "code"] as const,
      registers,
    }),
    trackLag(bus, group) {
      const source = { bus, group };
      sources.add(source);
      last = undefined;
      return async () => {
        sources.delete(source);
        last = undefined;
        // The admin client lives on the bus that created it: close it with that bus's last group.
        if (admin && ![...sources].some((s) => s.bus === admin?.bus)) {
          const closing = admin;
          admin = undefined;
          await closing.connected.then(() => closing.client.disconnect()).catch(() => {});
        }
      };
    },
  };
});
