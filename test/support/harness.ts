/**
 * The one harness integration and e2e tests start from: each test run gets its own topic names,
 * index prefix, consumer group prefix and Redis key prefix, against the real services the stack
 * script starts (`npm run stack -- up`). Tests skip with a clear message when a service is down.
 * @module
 */
import { randomBytes } from "node:crypto";
import { Client } from "@elastic/elasticsearch";
import { Kafka, logLevel } from "kafkajs";
import { createClient } from "redis";
import { type Config, loadConfig } from "../../lib/config/index.js";
import { createLogger, type Logger } from "../../lib/logger.js";

/** An isolated test environment. */
export interface Harness {
  /** Config with unique prefixes; services from the environment (stack defaults). */
  config: Config;
  /** Unique id of this run, e.g. `t1a2b3c4d`. */
  id: string;
  logger: Logger;
  es: Client;
  /** Redis key prefix of this run. */
  redisPrefix: string;
  /** Deletes this run's topics and indices and closes clients. */
  cleanup(): Promise<void>;
}

/** Creates an isolated environment (no network calls). */
export function createHarness(overrides: Partial<Config> = {}): Harness {
  const id = `t${randomBytes(4).toString("hex")}`;
  const base = loadConfig();
  const config: Config = {
    ...base,
    ...overrides,
    kafka: { ...base.kafka, topicPrefix: `${id}.`, groupPrefix: `chainsift-test-${id}` },
    elasticsearch: { ...base.elasticsearch, indexPrefix: `${id}-` },
    api: { ...base.api, port: 0, tokens: [`test-token-${id}`], adminToken: `test-admin-${id}` },
    redisKeyPrefix: `${id}:`,
    // Off unless a test asks for it: most tests run the decode stage without a node that answers eth_call.
    decode: { ...base.decode, tokenCalls: false, ...overrides.decode },
    logLevel: process.env.LOG_LEVEL ?? "warn",
  };
  const logger = createLogger(config.logLevel, `test-${id}`);
  const es = new Client({ node: config.elasticsearch.url, requestTimeout: config.elasticsearch.requestTimeoutMs });
  return {
    config,
    id,
    logger,
    es,
    redisPrefix: config.redisKeyPrefix,
    async cleanup() {
      await es.indices.delete({ index: `${id}-*`, ignore_unavailable: true, allow_no_indices: true }).catch(() => {});
      await es.close();
      const kafka = new Kafka({ brokers: config.kafka.brokers, logLevel: logLevel.NOTHING });
      const admin = kafka.admin();
      try {
        await admin.connect();
        const topics = (await admin.listTopics()).filter((t) => t.startsWith(config.kafka.topicPrefix));
        if (topics.length > 0) await admin.deleteTopics({ topics });
      } catch {
        // best effort
      } finally {
        await admin.disconnect();
      }
    },
  };
}

/** Which real services answer right now (each check has a short timeout). */
export async function servicesUp(config: Config = loadConfig()): Promise<{ ok: boolean; missing: string[] }> {
  const missing: string[] = [];
  const probe = async (name: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch {
      missing.push(name);
    }
  };
  const timeout = () => AbortSignal.timeout(3000);
  await probe("elasticsearch", async () => {
    const r = await fetch(`${config.elasticsearch.url}/_cluster/health`, { signal: timeout() });
    if (!r.ok) throw new Error(String(r.status));
  });
  await probe("schema-registry", async () => {
    const r = await fetch(`${config.schemaRegistryUrl}/subjects`, { signal: timeout() });
    if (!r.ok) throw new Error(String(r.status));
  });
  await probe("redis", async () => {
    const client = createClient({ url: config.redisUrl, socket: { connectTimeout: 3000, reconnectStrategy: false } });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.ping();
    } finally {
      if (client.isOpen) await client.close();
    }
  });
  await probe("kafka", async () => {
    const admin = new Kafka({
      brokers: config.kafka.brokers,
      logLevel: logLevel.NOTHING,
      connectionTimeout: 3000,
      retry: { retries: 0 },
    }).admin();
    await admin.connect();
    await admin.listTopics();
    await admin.disconnect();
  });
  return { ok: missing.length === 0, missing };
}

/** Message for tests skipped because services are down. */
export function skipMessage(missing: string[]): string {
  return `skipped: services not reachable (${missing.join(", ")}); start them with \`npm run stack -- up\``;
}

/**
 * {@link servicesUp}, and a warning with the {@link skipMessage} when something is missing: how a
 * test file on the real stack starts (`describe.skipIf(!up.ok)` then skips it).
 */
export async function probeStack(config: Config = loadConfig()): Promise<{ ok: boolean; missing: string[] }> {
  const up = await servicesUp(config);
  if (!up.ok) console.warn(skipMessage(up.missing));
  return up;
}

/** Polls `fn` until it returns a truthy value or the timeout passes. @throws the last error / a timeout error. */
export async function waitFor<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 60_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > deadline) throw new Error(`waitFor timed out after ${timeoutMs} ms${lastErr ? `: ${String(lastErr)}` : ""}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
