import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, rpcEndpoints } from "../../../lib/config/index.js";

describe("loadConfig", () => {
  it("has working defaults for the local stack", () => {
    const c = loadConfig({});
    expect(c.kafka.brokers).toEqual(["127.0.0.1:9092"]);
    expect(c.elasticsearch.url).toBe("http://127.0.0.1:9200");
    expect(c.schemaRegistryUrl).toBe("http://127.0.0.1:8081/apis/ccompat/v7");
    expect(c.api.tokens).toEqual([]);
    expect(c.chain).toEqual({ technology: "ethereum", blockchain: "ethereum", network: "mainnet" });
  });
  it("limits rules per account: CHAINSIFT_MAX_RULES_PER_ACCOUNT, default 1000, at least 1", () => {
    expect(loadConfig({}).rules.maxPerAccount).toBe(1000);
    expect(loadConfig({ CHAINSIFT_MAX_RULES_PER_ACCOUNT: "5" }).rules.maxPerAccount).toBe(5);
    expect(() => loadConfig({ CHAINSIFT_MAX_RULES_PER_ACCOUNT: "0" })).toThrow(ConfigError);
    expect(() => loadConfig({ CHAINSIFT_MAX_RULES_PER_ACCOUNT: "many" })).toThrow(/CHAINSIFT_MAX_RULES_PER_ACCOUNT/);
  });
  it("caps the match process's exact watchlist copies: CHAINSIFT_WATCHLIST_COPY_MAX_BYTES, default 512 MiB, 0 allowed", () => {
    expect(loadConfig({}).watchlistCopies.copyMaxBytes).toBe(536_870_912);
    expect(loadConfig({ CHAINSIFT_WATCHLIST_COPY_MAX_BYTES: "1073741824" }).watchlistCopies.copyMaxBytes).toBe(2 ** 30);
    // 0: no exact copies, every address list gets a Bloom filter.
    expect(loadConfig({ CHAINSIFT_WATCHLIST_COPY_MAX_BYTES: "0" }).watchlistCopies.copyMaxBytes).toBe(0);
    expect(() => loadConfig({ CHAINSIFT_WATCHLIST_COPY_MAX_BYTES: "-1" })).toThrow(/CHAINSIFT_WATCHLIST_COPY_MAX_BYTES/);
    expect(() => loadConfig({ CHAINSIFT_WATCHLIST_COPY_MAX_BYTES: "512MiB" })).toThrow(ConfigError);
  });

  it("reads lists and integers", () => {
    const c = loadConfig({ KAFKA_BROKERS: "a:1, b:2", CHAINSIFT_API_TOKENS: "x,,y", CHAINSIFT_API_PORT: "0" });
    expect(c.kafka.brokers).toEqual(["a:1", "b:2"]);
    expect(c.api.tokens).toEqual(["x", "y"]);
    expect(c.api.port).toBe(0);
  });
  it("bounds slow clients by default and reads the API timeouts", () => {
    expect(loadConfig({}).api).toMatchObject({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 72_000,
      connectionTimeoutMs: 120_000,
    });
    const c = loadConfig({
      CHAINSIFT_API_HEADERS_TIMEOUT_MS: "500",
      CHAINSIFT_API_REQUEST_TIMEOUT_MS: "700",
      CHAINSIFT_API_KEEP_ALIVE_TIMEOUT_MS: "800",
      CHAINSIFT_API_CONNECTION_TIMEOUT_MS: "900",
    });
    expect(c.api).toMatchObject({ headersTimeoutMs: 500, requestTimeoutMs: 700, keepAliveTimeoutMs: 800, connectionTimeoutMs: 900 });
  });
  it("refuses disabled (0) API timeouts and a headers timeout above the request timeout", () => {
    for (const name of [
      "CHAINSIFT_API_HEADERS_TIMEOUT_MS",
      "CHAINSIFT_API_REQUEST_TIMEOUT_MS",
      "CHAINSIFT_API_KEEP_ALIVE_TIMEOUT_MS",
      "CHAINSIFT_API_CONNECTION_TIMEOUT_MS",
    ]) {
      expect(() => loadConfig({ [name]: "0" }), name).toThrow(new RegExp(name));
    }
    expect(() => loadConfig({ CHAINSIFT_API_HEADERS_TIMEOUT_MS: "5000", CHAINSIFT_API_REQUEST_TIMEOUT_MS: "4000" })).toThrow(
      /CHAINSIFT_API_HEADERS_TIMEOUT_MS: must not exceed CHAINSIFT_API_REQUEST_TIMEOUT_MS/,
    );
  });
  it("reads the JSON-RPC endpoints: CHAINSIFT_RPC_URLS wins over the one-endpoint CHAINSIFT_RPC_URL", () => {
    expect(loadConfig({}).ingest).toMatchObject({ rpcUrl: "http://127.0.0.1:8545", rpcUrls: ["http://127.0.0.1:8545"] });
    expect(loadConfig({ CHAINSIFT_RPC_URL: "http://a:8545" }).ingest.rpcUrls).toEqual(["http://a:8545"]);
    const both = loadConfig({ CHAINSIFT_RPC_URL: "http://a:8545", CHAINSIFT_RPC_URLS: " https://b/v3/key , http://c:8545 " }).ingest;
    expect(both).toMatchObject({ rpcUrl: "https://b/v3/key", rpcUrls: ["https://b/v3/key", "http://c:8545"] });
    expect(rpcEndpoints(both)).toEqual(["https://b/v3/key", "http://c:8545"]);
    expect(rpcEndpoints({ ...both, rpcUrl: "http://replaced:1" })).toEqual(["http://replaced:1"]);
    expect(() => loadConfig({ CHAINSIFT_RPC_URLS: "http://a, ws://secret@b" })).toThrow(
      /CHAINSIFT_RPC_URLS: not an http\(s\) URL: item 2$/,
    );
    expect(loadConfig({}).ingest.rpc).toEqual({
      timeoutMs: 10_000,
      attempts: 4,
      retryBudgetMs: 30_000,
      retryAfterMaxMs: 30_000,
      cooldownMs: 2000,
      maxLagBlocks: 3,
      hedgeAfterMs: 2000,
    });
    expect(loadConfig({ CHAINSIFT_RPC_TIMEOUT_MS: "2000", CHAINSIFT_RPC_MAX_LAG_BLOCKS: "0" }).ingest.rpc).toMatchObject({
      timeoutMs: 2000,
      maxLagBlocks: 0,
    });
  });

  it("names the variable holding a bad integer", () => {
    expect(() => loadConfig({ CHAINSIFT_MAX_SIZE: "ten" })).toThrow(ConfigError);
    expect(() => loadConfig({ CHAINSIFT_MAX_SIZE: "0" })).toThrow(/CHAINSIFT_MAX_SIZE/);
  });
  it("reads LOG_FORMAT (auto, json, pretty; default auto) and the progress interval", () => {
    expect(loadConfig({}).logFormat).toBe("auto");
    expect(loadConfig({ LOG_FORMAT: "json" }).logFormat).toBe("json");
    expect(loadConfig({ LOG_FORMAT: "Pretty" }).logFormat).toBe("pretty");
    expect(() => loadConfig({ LOG_FORMAT: "yaml" })).toThrow(/LOG_FORMAT/);
    expect(loadConfig({}).ingest.progressIntervalMs).toBe(5000);
    expect(loadConfig({ CHAINSIFT_PROGRESS_INTERVAL_MS: "250" }).ingest.progressIntervalMs).toBe(250);
    expect(() => loadConfig({ CHAINSIFT_PROGRESS_INTERVAL_MS: "0" })).toThrow(ConfigError);
  });

  it("reads the ingest stage's test-only crash point (off by default), its percent and seed", () => {
    expect(loadConfig({}).ingest.testCrashPoint).toBeUndefined();
    const c = loadConfig({
      CHAINSIFT_TEST_CRASH_POINT: "announce-unwind",
      CHAINSIFT_TEST_CRASH_PERCENT: "30",
      CHAINSIFT_TEST_CRASH_SEED: "7",
    });
    expect(c.ingest).toMatchObject({ testCrashPoint: "announce-unwind", testCrashPercent: 30, testCrashSeed: 7 });
    expect(loadConfig({}).ingest.testCrashPercent).toBe(100);
    expect(() => loadConfig({ CHAINSIFT_TEST_CRASH_POINT: "somewhere" })).toThrow(ConfigError);
    expect(() => loadConfig({ CHAINSIFT_TEST_CRASH_PERCENT: "101" })).toThrow(ConfigError);
  });
});
