/**
 * Per-stage metrics on the real stack: ingest (in this process, with its own registry and metrics
 * server, as `npm run stage -- ingest` has) produces the mainnet fixture blocks from the replay
 * JSON-RPC server; decode and index run as real processes (`cli/stage.ts`). Then each stage's
 * `/metrics` is scraped over HTTP and its counts must EQUAL what was ingested: blocks,
 * transactions and logs produced; records consumed by decode and index; events decoded; documents
 * indexed (and found in Elasticsearch); consumer lag 0 once caught up. `/healthz` and `/readyz`
 * answer on each.
 */
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexName } from "../../../es/mappings.js";
import { type MetricsServer, startMetricsServer } from "../../../lib/metrics.js";
import type { RecordKind } from "../../../lib/records.js";
import { createDecoder } from "../../../pipeline/decode/decoder.js";
import { toBlockBundle } from "../../../pipeline/ingest/transform.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { type ChainFixture, chainFixture } from "../../support/chain-fixture.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../support/fixtures.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { type Scrape, scrape } from "../../support/prometheus.js";
import { type RpcReplay, startRpcReplay } from "../../support/rpc-replay.js";
import { configEnv, type StageProcess, spawnStage } from "../../support/stage-process.js";

const up = await probeStack();
const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

const get = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as { status: string; checks?: Record<string, boolean> } };
};

describe.skipIf(!up.ok || !fixtures)("per-stage /metrics after ingesting the mainnet fixtures (real stack, stages as processes)", () => {
  const blocks = fixtures ? loadCompleteBlocks() : [];
  const expected = {
    blocks: blocks.length,
    transactions: blocks.reduce((n, b) => n + (b.block.transactions as unknown[]).length, 0),
    logs: blocks.reduce((n, b) => n + (b.receipts ?? []).reduce((m, r) => m + (r.logs as unknown[]).length, 0), 0),
  };
  let h: Harness;
  let replay: RpcReplay;
  let pipeline: Pipeline;
  let ingestServer: MetricsServer;
  const stages = new Map<string, StageProcess>();
  const registry = new Registry();
  let chain: ChainFixture | undefined;

  beforeAll(async () => {
    h = createHarness();
    replay = await startRpcReplay({ blocks });
    h.config.ingest = { ...h.config.ingest, rpcUrl: replay.url, rpcUrls: [replay.url], traces: false };
    chain = chainFixture(h.config, h.logger, registry);
    ingestServer = await startMetricsServer({ registry, host: "127.0.0.1", port: 0 });
    // Topics, schemas and indices exist before the stage processes start.
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, stages: [], chain: chain.context });
    const env = configEnv(h.config, { CHAINSIFT_METRICS_PORT: "0" });
    const started = await Promise.all((["decode", "index"] as const).map((s) => spawnStage(s, env)));
    for (const p of started) stages.set(p.ready.stage, p);
  });

  afterAll(async () => {
    const codes = await Promise.all([...stages.values()].map((p) => p.stop()));
    if (codes.some((c) => c !== 0)) console.error([...stages.values()].map((p) => p.output.join("\n")).join("\n---\n"));
    await pipeline?.stop();
    chain?.close();
    await ingestServer?.close();
    await replay?.close();
    await h?.cleanup();
  });

  const url = (stage: string) => {
    const u = stage === "ingest" ? ingestServer.url : stages.get(stage)?.ready.metrics;
    if (!u) throw new Error(`no metrics URL for ${stage}`);
    return u;
  };

  it("counts equal what was ingested, on every stage's /metrics", { timeout: 240_000 }, async () => {
    expect(expected.blocks).toBeGreaterThan(5);
    expect(expected.logs).toBeGreaterThan(1000);

    // The stage processes: alive, and ready once their consumers joined their groups.
    for (const stage of ["decode", "index"]) {
      expect(await get(`${url(stage)}/healthz`)).toEqual({ status: 200, body: { status: "ok" } });
      const ready = await waitFor(async () => {
        const r = await get(`${url(stage)}/readyz`);
        return r.status === 200 ? r : undefined;
      });
      expect(ready.body).toEqual({ status: "ready", checks: { [stage]: true } });
    }

    const { ingester, close } = await pipeline.createIngester(replay.url, { traces: false });
    for (const check of pipeline.readiness) ingestServer.addReadiness(check);
    // Nothing read from the node yet: not ready.
    expect((await get(`${ingestServer.url}/readyz`)).status).toBe(503);
    const stats = await ingester.ingestBlocks(blocks.map((b) => b.number));
    await close();
    expect(stats).toMatchObject({ blocks: expected.blocks, transactions: expected.transactions, logs: expected.logs, deadLettered: 0 });
    expect(await get(`${ingestServer.url}/readyz`)).toEqual({ status: 200, body: { status: "ready", checks: { ingest: true } } });
    expect(await get(`${ingestServer.url}/healthz`)).toEqual({ status: 200, body: { status: "ok" } });

    const ingest = await scrape(url("ingest"));
    const produced = (s: Scrape, stage: string, topic: string) => s.sum("chainsift_records_produced_total", { stage, topic });
    expect(produced(ingest, "ingest", "blocks")).toBe(expected.blocks);
    expect(produced(ingest, "ingest", "transactions")).toBe(expected.transactions);
    expect(produced(ingest, "ingest", "logs")).toBe(expected.logs);
    expect(produced(ingest, "ingest", "dead-letter")).toBe(0);
    const last = Math.max(...blocks.map((b) => b.number));
    expect(ingest.sum("chainsift_ingest_last_block")).toBe(last);
    // The replay server's head is its highest block: ingest is at the head.
    expect(ingest.sum("chainsift_ingest_head_block")).toBe(last);
    expect(ingest.sum("chainsift_ingest_head_lag_blocks")).toBe(0);
    // One eth_getBlockByNumber and one eth_getBlockReceipts per block, all answered.
    expect(ingest.sum("chainsift_ingest_rpc_requests_total", { method: "eth_getBlockByNumber", outcome: "ok" })).toBe(expected.blocks);
    expect(ingest.sum("chainsift_ingest_rpc_requests_total", { method: "eth_getBlockReceipts", outcome: "ok" })).toBe(expected.blocks);
    expect(ingest.sum("chainsift_ingest_rpc_duration_seconds_count", { method: "eth_getBlockByNumber" })).toBe(expected.blocks);
    expect(ingest.sum("chainsift_ingest_retries_total")).toBe(0);

    // Index caught up: it consumed every block, transaction and log (events are counted below).
    const indexed = await waitFor(
      async () => {
        const s = await scrape(url("index"));
        const consumed = (topic: string) => s.sum("chainsift_consumer_records_consumed_total", { stage: "index", topic });
        return consumed("blocks") === expected.blocks &&
          consumed("transactions") === expected.transactions &&
          consumed("logs") === expected.logs
          ? s
          : undefined;
      },
      180_000,
      500,
    );
    const decode = await waitFor(async () => {
      const s = await scrape(url("decode"));
      return s.sum("chainsift_consumer_records_consumed_total", { stage: "decode", topic: "logs" }) === expected.logs ? s : undefined;
    });
    const events = produced(decode, "decode", "events");
    expect(events).toBeGreaterThan(expected.logs / 2); // most mainnet logs are known events (Transfer, Swap, ...)
    // By decoding source: the same split as the decoder gives in this process (no user ABIs registered).
    const local = blocks
      .flatMap((b) => toBlockBundle(b.block, b.receipts).logs)
      .map((l) => createDecoder({ chainId: 1 }).decode(l))
      .filter((e) => e !== null);
    expect(local.length).toBe(events);
    for (const source of ["standard", "signature"] as const)
      for (const outcome of ["decoded", "error"] as const) {
        const n = local.filter((e) => e.source === source && (e.error === null) === (outcome === "decoded")).length;
        expect(decode.sum("chainsift_decode_events_total", { source, outcome }), `${source} ${outcome}`).toBe(n);
      }
    expect(decode.sum("chainsift_decode_events_total", { source: "signature" })).toBeGreaterThan(0);
    expect(decode.sum("chainsift_decode_events_total")).toBe(events);
    expect(decode.sum("chainsift_consumer_dead_letters_total")).toBe(0);
    expect(decode.sum("chainsift_consumer_handler_duration_seconds_count", { stage: "decode" })).toBeGreaterThan(0);

    // Every decoded event reaches index too; then its documents equal the records, and ES holds them.
    const index = await waitFor(async () => {
      const s = await scrape(url("index"));
      return s.sum("chainsift_consumer_records_consumed_total", { stage: "index", topic: "events" }) === events ? s : undefined;
    });
    expect(indexed.sum("chainsift_consumer_records_consumed_total", { stage: "index", topic: "blocks" })).toBe(expected.blocks);
    const written = (kind: RecordKind) => index.sum("chainsift_index_documents_total", { kind, result: "written" });
    const want: Array<[RecordKind, number]> = [
      ["block", expected.blocks],
      ["tx", expected.transactions],
      ["log", expected.logs],
      ["event", events],
    ];
    await h.es.indices.refresh({ index: `${h.config.elasticsearch.indexPrefix}*` });
    for (const [kind, n] of want) {
      expect({ kind, written: written(kind) }).toEqual({ kind, written: n });
      const count = await h.es.count({ index: indexName(h.config.chain, kind, h.config.elasticsearch.indexPrefix) });
      expect({ kind, inEs: count.count }).toEqual({ kind, inEs: n });
    }
    expect(index.sum("chainsift_index_rejections_total")).toBe(0);
    expect(index.sum("chainsift_consumer_dead_letters_total")).toBe(0);
    expect(index.sum("chainsift_index_bulk_requests_total", { outcome: "ok" })).toBe(
      index.sum("chainsift_index_bulk_duration_seconds_count"),
    );
    expect(index.sum("chainsift_index_bulk_requests_total", { outcome: "ok" })).toBeGreaterThan(0);

    // Lag 0 on every partition once the offsets are committed (each stage reports its own groups).
    for (const [stage, group, topics] of [
      ["decode", "decode", ["logs"]],
      ["index", "index", ["blocks", "transactions", "logs", "events"]],
    ] as const) {
      const groupId = pipeline.bus.groupId(group);
      const lag = await waitFor(async () => {
        const s = await scrape(url(stage));
        const rows = s.find("chainsift_consumer_lag_records", { group: groupId });
        const covered = topics.every((t) => rows.some((r) => r.labels.topic === pipeline.bus.topic(t)));
        return covered && rows.every((r) => r.value === 0) ? rows : undefined;
      });
      expect(lag.length).toBeGreaterThan(0);
    }

    // The scrapes after catch-up, for the record (histogram buckets left out).
    for (const stage of ["ingest", "decode", "index"]) {
      const lines = (await scrape(url(stage))).chainsiftLines().filter((l) => !l.includes("_bucket{"));
      console.log(`--- ${stage} /metrics (chainsift_*, no buckets) ---\n${lines.join("\n")}`);
    }
  });
});
