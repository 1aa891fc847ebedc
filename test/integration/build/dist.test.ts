/**
 * The production build (`npm run build` → `dist/`) runs with plain `node`, no tsx: the decode and
 * index stages (`dist/cli/stage.js`) and the API (`dist/cli/api.js`, with the `api:prod` script's
 * flags) start as child processes of the `node` binary running this test (Node 24, the `node`
 * devDependency) on this run's harness prefixes; a log produced to Kafka is decoded and indexed by
 * them, and the API finds the event; the API serves the web console from dist/console. `.ci/run` builds before `npm test`; without a build, or with
 * one older than the sources, this test skips and says why.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiChild, type JsonReadyChild, spawnApi, spawnJsonReadyChild } from "../../../bench/support/api-child.js";
import { eventId } from "../../../lib/records.js";
import { createBus, createRecordProducer } from "../../../pipeline/kafka/bus.js";
import { childEnv } from "../../support/child-env.js";
import { createHarness, type Harness, probeStack, waitFor } from "../../support/harness.js";
import { usdtLog } from "../../support/sample-records.js";

const ROOT = join(import.meta.dirname, "../../..");
const SOURCE_DIRS = ["lib", "pipeline", "api", "topics", "es", "cli"];

/** Newest modification time (ms) of the `.ts` files under `dir`. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".ts")) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Why the build cannot be tested, or undefined when dist/ is there and newer than every source file. */
function buildProblem(): string | undefined {
  const marker = join(ROOT, "dist/cli/stage.js");
  if (!existsSync(marker)) return "skipped: dist/ is absent; run `npm run build` first (.ci/run does)";
  const built = statSync(marker).mtimeMs;
  const stale = SOURCE_DIRS.some((d) => newestSource(join(ROOT, d)) > built);
  return stale ? "skipped: dist/ is older than the sources; run `npm run build` again" : undefined;
}

const up = await probeStack();
const problem = buildProblem();
if (problem) console.warn(problem);

describe.skipIf(!up.ok || problem !== undefined)("the build runs with plain node (dist/, real stack)", () => {
  let h: Harness;
  const stages: JsonReadyChild[] = [];
  let api: ApiChild | undefined;

  beforeAll(async () => {
    h = createHarness();
    const env = childEnv(h.config, { CHAINSIFT_INSTANCE_ID: `dist-${h.id}` });
    const stage = (name: string) =>
      spawnJsonReadyChild({ label: `${name} stage (dist)`, script: "dist/cli/stage.js", args: [name], env }, (line) => line.ready === true);
    // One after the other: both would create the run's topics at once otherwise.
    stages.push(await stage("decode"));
    stages.push(await stage("index"));
    api = await spawnApi({
      script: "dist/cli/api.js",
      indexPrefix: h.config.elasticsearch.indexPrefix,
      token: `dist-token-${h.id}`,
      env: { ...childEnv(h.config), CHAINSIFT_REDIS_PREFIX: h.config.redisKeyPrefix },
    });
  }, 180_000);

  afterAll(async () => {
    await Promise.all([api?.stop(), ...stages.map((s) => s.stop())]);
    await h?.cleanup();
  });

  it("the stages consume from dist: a produced log is decoded, indexed and found through the API from dist", async () => {
    expect(stages.map((s) => s.line.stage)).toEqual(["decode", "index"]);
    const bus = await createBus({ config: h.config, logger: h.logger, setup: false });
    const producer = await createRecordProducer(bus);
    await producer.send([{ kind: "logs", key: "k", record: usdtLog }]);
    await producer.disconnect();

    const child = api as ApiChild;
    const health = await fetch(`${child.url}/healthz`);
    expect(health.status).toBe(200);
    const { technology, blockchain, network } = h.config.chain;
    const hit = await waitFor(
      async () => {
        const res = await fetch(`${child.url}/${technology}/${blockchain}/${network}/es/event/search/`, {
          method: "POST",
          headers: { authorization: `Bearer ${child.token}`, "content-type": "application/json" },
          body: JSON.stringify({ size: 10 }),
        });
        if (res.status !== 200) return undefined;
        const body = (await res.json()) as { hits: { hits: Array<{ _id: string; _source: Record<string, unknown> }> } };
        return body.hits.hits[0];
      },
      60_000,
      500,
    );
    expect(hit._id).toBe(eventId(usdtLog));
    expect(hit._source.event).toBe("Transfer");
  }, 90_000);

  it("the API from dist serves the web console built into dist/console (docs/console.md), with its CSP", async () => {
    const child = api as ApiChild;
    const page = await fetch(`${child.url}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    const html = await page.text();
    expect(html).toContain('src="/console/app.js"');
    const script = await fetch(`${child.url}/console/app.js`);
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/javascript/);
    expect((await script.arrayBuffer()).byteLength).toBeGreaterThan(1000);
  });
});
