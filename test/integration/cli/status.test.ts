/**
 * `chainsift status` on the real stack: ingest's follower produces the last mainnet fixture block
 * from the replay JSON-RPC server, the decode stage consumes it (and dead-letters one garbage
 * message); the status screen then shows head = ingested, the decode group's lag 0 on its
 * partitions, one dead letter in the last hour and every service up (exit 0). A threshold it
 * exceeds, or an unreachable Elasticsearch, makes it exit 1.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_FAILURE, EXIT_OK, runCli } from "../../../cli/chainsift.js";
import type { Status } from "../../../cli/status.js";
import type { Config } from "../../../lib/config/index.js";
import { createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { type Pipeline, startPipeline } from "../../../pipeline/runtime.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../support/fixtures.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { type RpcReplay, startRpcReplay } from "../../support/rpc-replay.js";

const up = await probeStack();
const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

/** Runs the CLI in this process and captures what it prints. */
async function status(config: Config, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["status", ...args], { config, output: { out: (t) => out.push(t), err: (t) => err.push(t) } });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe.skipIf(!up.ok || !fixtures)("chainsift status (real stack)", () => {
  const blocks = fixtures ? loadCompleteBlocks() : [];
  const last = blocks.at(-1)?.number ?? 0;
  let h: Harness;
  let replay: RpcReplay;
  let pipeline: Pipeline;

  beforeAll(async () => {
    h = createHarness();
    replay = await startRpcReplay({ blocks });
    h.config.ingest = { ...h.config.ingest, rpcUrl: replay.url, rpcUrls: [replay.url], traces: false };
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, stages: ["decode"] });
    // The follower produces the head block (its durable position is what status reads), then stops.
    const { ingester, close } = await pipeline.createIngester(replay.url, { traces: false });
    const stop = new AbortController();
    await ingester.follow({ from: last, pollIntervalMs: 50, signal: stop.signal, onBlock: () => stop.abort() });
    await close();
    const producer = await createRecordProducer(pipeline.bus);
    await producer.producer.sendBatch([
      { topic: pipeline.bus.topic("logs"), messages: [{ key: "garbage", value: Buffer.from("not avro") }] },
    ]);
    await producer.disconnect();
  });

  afterAll(async () => {
    await pipeline?.stop();
    await replay?.close();
    await h?.cleanup();
  });

  it("shows head vs ingested, the decode group's lag 0, one dead letter, every service up; exit 0", { timeout: 120_000 }, async () => {
    const logs = blocks.at(-1)?.receipts?.reduce((n, r) => n + (r.logs as unknown[]).length, 0) ?? 0;
    expect(logs).toBeGreaterThan(0);
    // Caught up: decode consumed the block's logs and the garbage message, and committed.
    const json = await waitFor(async () => {
      const r = await status(h.config, "--json");
      const s = JSON.parse(r.out) as Status;
      const decode = s.groups.find((g) => g.stage === "decode");
      return decode?.lag === 0 && s.deadLettersLastHour === 1 ? { ...r, s } : undefined;
    });
    expect(json.code).toBe(EXIT_OK);
    expect(json.s).toMatchObject({ head: last, ingested: last, headLag: 0, healthy: true, problems: [] });
    expect(json.s.services.map((v) => [v.name, v.ok])).toEqual([
      ["kafka", true],
      ["elasticsearch", true],
      ["schema-registry", true],
      ["redis", true],
      ["rpc-node", true],
    ]);
    // decode committed on the logs topic's 3 partitions; the stages that never ran have no offsets.
    expect(json.s.groups.find((g) => g.stage === "decode")).toEqual({
      stage: "decode",
      group: pipeline.bus.groupId("decode"),
      lag: 0,
      partitions: 3,
    });
    expect(json.s.groups.find((g) => g.stage === "match")).toMatchObject({ lag: null, partitions: 0 });

    const text = await status(h.config);
    console.log(text.out);
    expect(text.code).toBe(EXIT_OK);
    expect(text.out).toContain(`head ${last}   ingested ${last}   behind 0 blocks`);
    expect(text.out).toMatch(/\n {2}decode +0 +3 +\S+decode\n/);
    expect(text.out).toContain("Dead letters in the last hour: 1");
    expect(text.out).toContain("Status: healthy");

    const strict = await status(h.config, "--max-dead-letters", "0");
    expect(strict.code).toBe(EXIT_FAILURE);
    expect(strict.out).toContain("Status: UNHEALTHY\n  - dead letters in the last hour 1 > 0");
  });

  it("exits 1 and names the service when Elasticsearch does not answer", { timeout: 60_000 }, async () => {
    const config = { ...h.config, elasticsearch: { ...h.config.elasticsearch, url: "http://127.0.0.1:1" } };
    const r = await status(config);
    expect(r.code).toBe(EXIT_FAILURE);
    expect(r.out).toMatch(/\n {2}elasticsearch +DOWN +unreachable: /);
    expect(r.out).toContain("Status: UNHEALTHY\n  - elasticsearch: unreachable");
  });

  it("shows each JSON-RPC endpoint, without credentials; the node is up while one endpoint answers", { timeout: 60_000 }, async () => {
    const dead = "http://127.0.0.1:1";
    const rpcUrls = [dead, `${replay.url}/?apikey=secret`];
    const config = { ...h.config, ingest: { ...h.config.ingest, rpcUrl: dead, rpcUrls } };
    const json = JSON.parse((await status(config, "--json")).out) as Status;
    expect(json.services.find((v) => v.name === "rpc-node")).toEqual({
      name: "rpc-node",
      ok: true,
      detail: `1/2 endpoints up, head ${last}`,
    });
    expect(json.endpoints.map((e) => [e.endpoint, e.ok, e.head])).toEqual([
      [dead, false, null],
      [`${replay.url}?***`, true, last],
    ]);
    const text = await status(config);
    expect(text.out).toMatch(/\nJSON-RPC endpoints\n {2}http:\/\/127\.0\.0\.1:1 +DOWN +eth_blockNumber: /);
    expect(text.out).not.toContain("secret");
  });

  it("refuses a threshold that is not a non-negative integer (usage error, exit 2)", async () => {
    const r = await status(h.config, "--max-lag", "1.5");
    expect(r.code).toBe(2);
    expect(r.err).toContain("--max-lag: expected a non-negative integer");
  });
});
