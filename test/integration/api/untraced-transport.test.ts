/**
 * The API's Elasticsearch client without OpenTelemetry spans (api/plugins/elasticsearch.ts,
 * config.elasticsearch.tracing false): every request reaches @elastic/transport with
 * `openTelemetry.enabled: false`, and still works against the real Elasticsearch.
 */
import { Client, SniffingTransport } from "@elastic/elasticsearch";
import { afterEach, describe, expect, it, vi } from "vitest";
import { UntracedTransport } from "../../../api/plugins/elasticsearch.js";
import { loadConfig } from "../../../lib/config/index.js";
import { esReachable } from "./fixtures.js";

const ES_URL = loadConfig().elasticsearch.url;
const up = await esReachable(ES_URL);
if (!up) console.warn(`skipped: Elasticsearch (${ES_URL}) is not reachable (npm run stack -- up)`);

describe.skipIf(!up)("UntracedTransport (real Elasticsearch)", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("turns the transport's OpenTelemetry instrumentation off per request, other options kept", async () => {
    const spy = vi.spyOn(SniffingTransport.prototype, "request");
    const es = new Client({ node: ES_URL, Transport: UntracedTransport });
    try {
      const health = await es.cluster.health({}, { requestTimeout: 5000 });
      expect(["green", "yellow"]).toContain(health.status);
      expect(spy).toHaveBeenCalledTimes(1);
      expect(spy.mock.calls[0]?.[1]).toMatchObject({ requestTimeout: 5000, openTelemetry: { enabled: false } });
    } finally {
      await es.close();
    }
  });

  it("the default client keeps it (no openTelemetry option added)", async () => {
    const spy = vi.spyOn(SniffingTransport.prototype, "request");
    const es = new Client({ node: ES_URL });
    try {
      await es.cluster.health();
      expect(spy.mock.calls[0]?.[1]?.openTelemetry).toBeUndefined();
    } finally {
      await es.close();
    }
  });
});
