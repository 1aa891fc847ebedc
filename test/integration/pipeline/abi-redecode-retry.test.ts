/**
 * Issue 19 §3 g: an ABI re-decode that fails is retried, not swallowed behind its 24 h lock.
 * The decode stage runs against real Kafka and Redis (the ABI store, its change feed, the lock and
 * the re-decode status); its Elasticsearch client goes through a local HTTP proxy in front of the
 * real Elasticsearch that answers the first search with 503 (a real failing answer, no mock).
 * After that failure the stage must release the lock, count and record the failure, and re-decode
 * again after a backoff; the re-decode status then says `done` with the failure it recovered from.
 * A re-decode left unfinished by a decode process that crashed (status `running`, its lock's lease
 * run out) is resumed by the next decode process at start.
 */
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@elastic/elasticsearch";
import { Registry } from "prom-client";
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexName } from "../../../es/mappings.js";
import { createRedecodeStatusStore, type RedecodeStatusStore } from "../../../lib/abis/redecode-status.js";
import { createAbiStore } from "../../../lib/abis/store.js";
import { createDecoder } from "../../../pipeline/decode/decoder.js";
import { startDecodeStage } from "../../../pipeline/decode/stage.js";
import { type Bus, createBus } from "../../../pipeline/kafka/bus.js";
import type { RunningConsumer } from "../../../pipeline/kafka/consumer.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";

const up = await probeStack();

const ABI = [
  {
    type: "event",
    name: "Ping",
    anonymous: false,
    inputs: [{ name: "who", type: "address", indexed: true, internalType: "address" }],
  },
];

/** Waits for the re-decode status of an address to say `done`, and returns it. */
const doneStatus = (status: RedecodeStatusStore, namespace: string, address: string) =>
  waitFor(
    async () => {
      const st = await status.get(namespace, address);
      return st?.state === "done" ? st : undefined;
    },
    20_000,
    50,
  );

describe.skipIf(!up.ok)("ABI re-decode: a failed re-decode is retried, counted and visible (real Kafka, Redis, Elasticsearch)", () => {
  let h: Harness;
  let bus: Bus;
  let redis: RedisClientType;
  let stage: RunningConsumer | undefined;
  let proxy: Server;
  let es: Client;
  const seen = { searches: 0 };
  let failSearches = 1;
  const registry = new Registry();

  beforeAll(async () => {
    h = createHarness();
    const target = new URL(h.config.elasticsearch.url);
    // The proxy answers the first `failSearches` searches 503 and forwards everything else to ES.
    proxy = createServer((req, res) => {
      const isSearch = (req.url ?? "").includes("/_search");
      if (isSearch) seen.searches++;
      if (isSearch && failSearches > 0) {
        failSearches--;
        req.resume();
        res.writeHead(503, { "content-type": "application/json" }).end('{"error":"test: unavailable","status":503}');
        return;
      }
      const upstream = httpRequest(
        { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      upstream.on("error", () => res.writeHead(502).end());
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    es = new Client({ node: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, maxRetries: 0 });
    redis = createClient({ url: h.config.redisUrl }) as RedisClientType;
    await redis.connect();
    bus = await createBus({ config: h.config, logger: h.logger });
  });

  afterAll(async () => {
    await stage?.stop();
    await es?.close();
    if (redis?.isOpen) await redis.quit();
    await new Promise((r) => proxy?.close(r));
    await h?.cleanup();
  });

  it("releases the lock, logs and counts the failure, and re-decodes after a backoff", async () => {
    const prefix = h.redisPrefix;
    const store = createAbiStore({ redis, keyPrefix: prefix, maxPerAccount: 10 });
    const status = createRedecodeStatusStore({ redis, keyPrefix: prefix });
    // Built as a variable: the same object serves the stage before and after issue 19 §3 g (`lock` then).
    const redecode = {
      es,
      logIndex: indexName(h.config.chain, "log", h.config.elasticsearch.indexPrefix),
      maxLogs: 1000,
      lock: async (key: string) => (await redis.set(`${prefix}abis:redecode:${key}`, "1", { NX: true, PX: 86_400_000 })) === "OK",
      status,
      retry: { baseDelayMs: 200, maxDelayMs: 1000, maxAttempts: 5 },
    };
    stage = await startDecodeStage({
      bus,
      decoder: createDecoder({ chainId: 1 }),
      chainId: h.config.chainId,
      logger: h.logger,
      registry,
      abis: { store, subscriber: () => redis.duplicate(), proxyTtlMs: 60_000, reloadIntervalMs: 60_000, redecode },
    });
    const address = "0x00000000000000000000000000000000000000a1";
    await store.put("acct-1", address, { name: "pinger", abi: ABI } as never);
    // The first re-decode fails (503); the stage must try again.
    await waitFor(async () => seen.searches >= 2, 20_000, 50);
    const s = await doneStatus(status, "acct-1", address);
    expect(s).toMatchObject({ state: "done", attempts: 2, logs: 0, events: 0, truncated: false });
    expect(s.lastError).toMatch(/503|unavailable/);
    const failures = await registry.getSingleMetric("chainsift_decode_redecode_failures_total")!.get();
    expect(failures.values.reduce((n, v) => n + v.value, 0)).toBe(1);
    // Done: the lock stays, so no other decode process repeats it.
    expect(await redis.keys(`${prefix}abis:redecode:acct-1:${address}:*`)).toHaveLength(1);
    await stage.stop();
    stage = undefined;
  });

  it("resumes at start a re-decode that a crashed decode process left running", async () => {
    const prefix = h.redisPrefix;
    const store = createAbiStore({ redis, keyPrefix: prefix, maxPerAccount: 10 });
    const status = createRedecodeStatusStore({ redis, keyPrefix: prefix });
    const address = "0x00000000000000000000000000000000000000a2";
    // No decode stage is running: the registration's change is not applied by anyone now.
    const { registration } = await store.put("acct-2", address, { name: "crashed", abi: ABI } as never);
    // A decode process claimed its re-decode and died: status `running`, and its lock's lease ran out.
    expect(await status.claim("acct-2", address, registration.updatedAt, 1)).toBe(true);
    await redis.del(`${prefix}abis:redecode:acct-2:${address}:${registration.updatedAt}`);
    const before = seen.searches;
    stage = await startDecodeStage({
      bus,
      decoder: createDecoder({ chainId: 1 }),
      chainId: h.config.chainId,
      logger: h.logger,
      abis: {
        store,
        subscriber: () => redis.duplicate(),
        proxyTtlMs: 60_000,
        reloadIntervalMs: 60_000,
        redecode: { es, logIndex: indexName(h.config.chain, "log", h.config.elasticsearch.indexPrefix), maxLogs: 1000, status },
      },
    });
    const s = await doneStatus(status, "acct-2", address);
    expect(s).toMatchObject({ state: "done", attempts: 2, registrationAt: registration.updatedAt });
    expect(seen.searches).toBe(before + 1);
  });
});
