/**
 * The `Kafka` channel (issue 35): one record per alert produced to a topic on the user's
 * cluster, named by the action (`brokers`, `topic`, `ssl`/`sslCa`, `sasl`; lib/rules/model.ts
 * `KafkaParameters`). What is produced is `renderAction`'s (lib/alerting/rendered.ts): the key is
 * the rule id or the entity id (`kafkaRecordKey`), the value the `Webhook (POST)` JSON
 * (`webhookJson`) or, with `avro`, the alert's Avro record (`kafkaAvroRecord`: the alerts
 * topic's schema, registered in the action's schema registry under `<topic>-value`, Confluent wire
 * format), with headers `chainsift-alert-id` and `chainsift-status`. A `removed` alert is a new
 * record with the key of its `pending` one.
 *
 * **Producers.** One kafkajs producer per distinct cluster configuration (brokers, TLS, SASL user
 * and a hash of the password), created on first use and kept (at most {@link KafkaChannelOptions.maxProducers},
 * the least recently used closed first) until {@link Channel.close} (the notify stage's shutdown).
 * Each is idempotent (`idempotent: true`, `maxInFlightRequests: 1`, acks=all,
 * https://kafka.js.org/docs/producing#options), so a retry inside an attempt never duplicates nor
 * reorders a record; an attempt that fails drops its producer (a fresh one next time).
 *
 * **Guarantees** (docs/alerting.md "Kafka"): at least once — an attempt is bounded by the
 * deliverer's timeout, and one that timed out may still have written its record, which the next
 * attempt writes again (the alert `id` is in the value and the `chainsift-alert-id` header:
 * deduplicate by it); in order per key — the scheduler works a rule's action as one FIFO lane
 * (pipeline/notify/scheduler.ts) and the producer keeps the order of what it is given. While the
 * cluster is down or the topic is missing, attempts fail as retryable (`CS_KAFKA_UNAVAILABLE`) and
 * the lane waits: the scheduler's retries, destination health and dead letters apply as to a webhook.
 *
 * **SSRF.** The bootstrap brokers are checked before an attempt (`checkHost` of ssrf.ts, the
 * webhook policy and allowlist); every connection the client opens — also to the brokers the
 * cluster advertises in its metadata — goes through a socket factory that refuses forbidden
 * literal addresses and resolves names through `guardedLookup`. A refusal is final
 * (`CS_DESTINATION_FORBIDDEN`).
 *
 * **Secrets.** The SASL password reaches only kafkajs: it is in no log line (kafkajs logs at error
 * level only, through a logger that never sees the configuration), no error text, no delivery-log
 * destination (`kafka topic <t> at <brokers>`) and no produced record.
 * @module
 */
import { createHash } from "node:crypto";
import net from "node:net";
import tls from "node:tls";
import avro from "avsc";
import { type ISocketFactory, Kafka, type KafkaConfig, logLevel, type Producer, type SASLOptions } from "kafkajs";
import { kafkaTarget } from "../../../lib/alerting/channels.js";
import { type RenderedKafka, renderAction } from "../../../lib/alerting/rendered.js";
import { digestWebhookJson } from "../../../lib/alerting/storm.js";
import type { NonRetryableError } from "../../../lib/errors.js";
import { subjectOf, TOPICS } from "../../../topics/index.js";
import { compileToWire } from "../../../topics/wire.js";
import type { SecretSource } from "../deliver.js";
import { type AttemptOutcome, errText, invalid, nonRetryableIn, oneLine } from "../outcome.js";
import { CS_DESTINATION_FORBIDDEN, checkHost, type DestinationPolicy, guardedLookup, literalAddressRefusal } from "../ssrf.js";
import type { Attempt, Channel } from "./channel.js";
import type { HttpSender } from "./http.js";

/** The user's cluster could not take the record now (unreachable, no leader, topic missing, SASL refused, timeout). Retryable. */
export const CS_KAFKA_UNAVAILABLE = "CS_KAFKA_UNAVAILABLE";
/** The cluster refused the record for good (invalid topic name, record too large, unsupported version). Non-retryable. */
export const CS_KAFKA_REJECTED = "CS_KAFKA_REJECTED";

/** Kafka protocol errors that another attempt cannot fix (https://kafka.apache.org/protocol#protocol_error_codes). */
const FINAL_KAFKA_ERRORS = new Set([
  "INVALID_TOPIC_EXCEPTION",
  "MESSAGE_TOO_LARGE",
  "RECORD_LIST_TOO_LARGE",
  "INVALID_RECORD",
  "UNSUPPORTED_VERSION",
  "UNSUPPORTED_FOR_MESSAGE_FORMAT",
]);

/** Options of {@link createKafkaChannel}. */
export interface KafkaChannelOptions {
  /** The webhook SSRF policy (refused ranges, allowlist, resolver), applied to every broker connection. */
  policy: DestinationPolicy;
  /** Longest attempt (connect, metadata, produce), in ms: the deliverer's `fetchTimeoutMs`. */
  timeoutMs: number;
  /** Most producers kept open at once (distinct clusters); the least recently used is closed first. Default 64. */
  maxProducers?: number;
  /** The kafkajs client id the user's brokers see. Default `chainsift-notify`. */
  clientId?: string;
  /** The HTTP sender of the webhook channels (SSRF-guarded, timeouts): schema registrations of `avro` actions. */
  send: HttpSender;
  /** Per-account signing secrets (the registration request is signed like a webhook; registries ignore it). */
  secrets: SecretSource;
}

/** The alerts topic's Avro type and wire transform: the value schema of `avro` actions. */
const ALERT_TYPE = avro.Type.forSchema(TOPICS.alerts.schema as avro.Schema);
const ALERT_TO_WIRE = compileToWire(TOPICS.alerts.schema);

/** Confluent wire format: magic byte 0, the 4-byte big-endian schema id, the Avro body. */
export function avroFramed(id: number, record: unknown): Buffer {
  const head = Buffer.alloc(5);
  head.writeInt32BE(id, 1);
  return Buffer.concat([head, ALERT_TYPE.toBuffer(ALERT_TO_WIRE(record))]);
}

/** A cached producer: connected (or connecting), and the refusal its socket factory met, if any. */
interface CachedProducer {
  producer: Producer;
  connected: Promise<void>;
  /** Set when a connection was refused by the SSRF policy (a forbidden advertised broker). */
  refusal?: NonRetryableError;
}

/** The cache key of a cluster configuration: brokers (sorted), TLS, SASL mechanism, user and a hash of the password. */
export function kafkaClusterKey(parameters: Record<string, unknown>): string {
  const { brokers, ssl, sasl } = kafkaTarget(parameters);
  const ca = typeof parameters.sslCa === "string" ? createHash("sha256").update(parameters.sslCa).digest("hex") : null;
  const auth = sasl ? [sasl.mechanism, sasl.username, createHash("sha256").update(sasl.password).digest("hex")] : null;
  return JSON.stringify([[...brokers].sort(), ssl, ca, auth]);
}

/** `host:port` → its host (IPv6 brackets kept). */
function hostOf(broker: string): string {
  return broker.slice(0, broker.lastIndexOf(":"));
}

/**
 * A kafkajs socket factory that connects only where the SSRF policy allows: a forbidden literal
 * address fails the connection at once (and is remembered in `cached.refusal`), a name is resolved
 * through {@link guardedLookup}. Otherwise as kafkajs's default (TLS with SNI for names, keep-alive).
 */
function guardedSocketFactory(policy: DestinationPolicy, cached: { refusal?: NonRetryableError }): ISocketFactory {
  const lookup = guardedLookup(policy);
  return ({ host, port, ssl, onConnect }) => {
    const refusal = literalAddressRefusal(host, policy);
    if (refusal) {
      cached.refusal = refusal;
      const socket = new net.Socket();
      process.nextTick(() => socket.destroy(refusal));
      return socket;
    }
    const at = { host, port, lookup: lookup as net.LookupFunction };
    const socket = ssl
      ? tls.connect({ ...at, ...(net.isIP(host) ? {} : { servername: host }), ...ssl }, onConnect)
      : net.connect(at, onConnect);
    socket.on("error", (err) => {
      const nr = nonRetryableIn(err);
      if (nr?.code === CS_DESTINATION_FORBIDDEN) cached.refusal = nr;
    });
    socket.setKeepAlive(true, 60_000);
    return socket;
  };
}

/** The outcome of a failed produce: final for an SSRF refusal or a record the cluster can never take, else retryable. */
export function classifyKafkaError(err: unknown, refusal?: NonRetryableError): AttemptOutcome {
  const nr = refusal ?? nonRetryableIn(err);
  if (nr) return { ok: false, retryable: false, code: nr.code, error: nr.message };
  const type = (err as { type?: unknown })?.type;
  const text = oneLine(errText(err), 300);
  if (typeof type === "string" && FINAL_KAFKA_ERRORS.has(type))
    return { ok: false, retryable: false, code: CS_KAFKA_REJECTED, error: text };
  return { ok: false, retryable: true, code: CS_KAFKA_UNAVAILABLE, error: text };
}

/** Rejects with a timeout error after `ms` unless `work` settles first. */
function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`no answer from the Kafka cluster within ${ms} ms`), { name: "TimeoutError" })),
      ms,
    );
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** One record to produce. */
interface KafkaRecord {
  key: string;
  value: string | Buffer;
  headers: Record<string, string>;
}

/** The Kafka channel (see the module comment). */
export function createKafkaChannel(options: KafkaChannelOptions): Channel {
  const { policy, timeoutMs, send, secrets } = options;
  const maxProducers = options.maxProducers ?? 64;
  const producers = new Map<string, CachedProducer>();

  const drop = (key: string, cached: CachedProducer) => {
    if (producers.get(key) === cached) producers.delete(key);
    void cached.producer.disconnect().catch(() => {});
  };

  /** The producer of a cluster configuration, created and connected on first use (most recently used last). */
  function producerFor(parameters: Record<string, unknown>): { key: string; cached: CachedProducer } {
    const key = kafkaClusterKey(parameters);
    let cached = producers.get(key);
    if (cached) {
      producers.delete(key);
      producers.set(key, cached);
      return { key, cached };
    }
    const { brokers, ssl, sasl } = kafkaTarget(parameters);
    const holder: { refusal?: NonRetryableError } = {};
    const tlsOptions = typeof parameters.sslCa === "string" ? { ca: parameters.sslCa } : {};
    const config: KafkaConfig = {
      clientId: options.clientId ?? "chainsift-notify",
      brokers,
      ...(ssl ? { ssl: { ...tlsOptions } } : {}),
      ...(sasl ? { sasl: sasl as SASLOptions } : {}),
      connectionTimeout: Math.min(timeoutMs, 10_000),
      authenticationTimeout: Math.min(timeoutMs, 10_000),
      requestTimeout: timeoutMs,
      socketFactory: guardedSocketFactory(policy, holder),
      // Errors reach the delivery log through the attempt's outcome; kafkajs's own lines are not logged.
      logLevel: logLevel.NOTHING,
      retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1_000 },
    };
    const producer = new Kafka(config).producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      retry: { retries: 2, initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    cached = {
      producer,
      connected: producer.connect(),
      get refusal() {
        return holder.refusal;
      },
    };
    cached.connected.catch(() => {}); // awaited by the attempt
    producers.set(key, cached);
    while (producers.size > maxProducers) {
      const [oldKey, oldest] = producers.entries().next().value as [string, CachedProducer];
      drop(oldKey, oldest);
    }
    return { key, cached };
  }

  /** The attempt of producing `record` to the action's cluster and topic. */
  function prepareRecord(parameters: Record<string, unknown>, topic: string, record: KafkaRecord): Attempt {
    const { brokers } = kafkaTarget(parameters);
    return async (): Promise<AttemptOutcome> => {
      try {
        // The bootstrap brokers first: a forbidden one is final before any connection.
        for (const broker of brokers) await checkHost(hostOf(broker), policy);
      } catch (err) {
        return classifyKafkaError(err);
      }
      const { key, cached } = producerFor(parameters);
      try {
        await within(
          (async () => {
            await cached.connected;
            await cached.producer.send({ topic, acks: -1, messages: [record] });
          })(),
          timeoutMs,
        );
        return { ok: true };
      } catch (err) {
        drop(key, cached);
        return classifyKafkaError(err, cached.refusal);
      }
    };
  }

  /** Registered schema ids by registry, subject and credentials (a failed registration is forgotten). */
  const schemaIds = new Map<string, Promise<number>>();

  /**
   * The id of the alerts schema in the action's registry, registering it under `<topic>-value`
   * (`POST /subjects/<subject>/versions`, https://docs.confluent.io/platform/current/schema-registry/develop/api.html#post--subjects-(string-%20subject)-versions;
   * an identical schema answers its existing id), or the failed request's outcome.
   */
  async function schemaIdFor(
    p: Record<string, unknown>,
    topic: string,
    accountId: string,
    alertId: string,
  ): Promise<number | AttemptOutcome> {
    const avroParameters = p.avro as { schemaRegistryUrl: string; auth?: { username?: unknown; password?: unknown } };
    const registry = avroParameters.schemaRegistryUrl.replace(/\/+$/, "");
    const auth = avroParameters.auth;
    const basic =
      typeof auth?.username === "string" && typeof auth.password === "string"
        ? { authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString("base64")}` }
        : undefined;
    const cacheKey = JSON.stringify([registry, topic, basic ? createHash("sha256").update(basic.authorization).digest("hex") : null]);
    let id = schemaIds.get(cacheKey);
    if (!id) {
      const url = `${registry}/subjects/${encodeURIComponent(subjectOf(topic))}/versions`;
      const body = JSON.stringify({ schema: JSON.stringify(TOPICS.alerts.schema) });
      id = (async () => {
        const out = await send("POST", url, await secrets.getOrCreate(accountId), alertId, body, {
          keepBody: true,
          ...(basic ? { headers: basic } : {}),
        });
        if (!out.ok) throw Object.assign(new Error(out.error), { outcome: out });
        const n = (JSON.parse(out.responseBody ?? "{}") as { id?: unknown }).id;
        if (!Number.isSafeInteger(n)) throw new Error("the schema registry answered no schema id");
        return n as number;
      })();
      schemaIds.set(cacheKey, id);
      id.catch(() => schemaIds.delete(cacheKey));
    }
    try {
      return await id;
    } catch (err) {
      const outcome = (err as { outcome?: AttemptOutcome }).outcome;
      // A request error (network, timeout) or an answer without an id: retryable, unless an SSRF refusal.
      return outcome ?? classifyKafkaError(err);
    }
  }

  return {
    async prepare(alert, action) {
      const r = renderAction(alert, action) as RenderedKafka;
      const p = action.parameters as unknown as Record<string, unknown>;
      const headers = { "chainsift-alert-id": alert.id, "chainsift-status": alert.status };
      if (r.format === "json") return prepareRecord(p, r.topic, { key: r.key, value: r.value, headers });
      return async (n) => {
        const id = await schemaIdFor(p, r.topic, alert.accountId, alert.id);
        if (typeof id !== "number") return id;
        return prepareRecord(p, r.topic, { key: r.key, value: avroFramed(id, JSON.parse(r.value)), headers })(n);
      };
    },
    async prepareDigest(digest) {
      const p = digest.action.parameters as unknown as Record<string, unknown>;
      const { topic } = kafkaTarget(p);
      // A JSON digest in a topic of Avro records would break its consumers' deserializer.
      if (p.avro !== undefined) throw invalid("a Kafka action with avro sends no storm-control digest (leave throttle and digest off)");
      const headers = { "chainsift-alert-id": digest.id, "chainsift-status": "digest" };
      return prepareRecord(p, topic, { key: digest.ruleId, value: digestWebhookJson(digest), headers });
    },
    async close() {
      const all = [...producers.values()];
      producers.clear();
      await Promise.all(all.map((c) => c.producer.disconnect().catch(() => {})));
    },
  };
}
