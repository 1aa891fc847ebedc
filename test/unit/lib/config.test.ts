import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../../lib/config.js";

describe("loadConfig", () => {
  it("has working defaults for the local stack", () => {
    const c = loadConfig({});
    expect(c.kafka.brokers).toEqual(["127.0.0.1:9092"]);
    expect(c.elasticsearch.url).toBe("http://127.0.0.1:9200");
    expect(c.schemaRegistryUrl).toBe("http://127.0.0.1:8081/apis/ccompat/v7");
    expect(c.api.tokens).toEqual([]);
    expect(c.chain).toEqual({ technology: "ethereum", blockchain: "ethereum", network: "mainnet" });
  });
  it("reads lists and integers", () => {
    const c = loadConfig({ KAFKA_BROKERS: "a:1, b:2", CHAINSIFT_API_TOKENS: "x,,y", CHAINSIFT_API_PORT: "0" });
    expect(c.kafka.brokers).toEqual(["a:1", "b:2"]);
    expect(c.api.tokens).toEqual(["x", "y"]);
    expect(c.api.port).toBe(0);
  });
  it("names the variable holding a bad integer", () => {
    expect(() => loadConfig({ CHAINSIFT_MAX_SIZE: "ten" })).toThrow(ConfigError);
    expect(() => loadConfig({ CHAINSIFT_MAX_SIZE: "0" })).toThrow(/CHAINSIFT_MAX_SIZE/);
  });
});
