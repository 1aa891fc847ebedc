/**
 * `npm start` as users run it, with no chain arguments: two embedded anvil chains
 * (`ethereum/ethereum/anvil`, chain id 31337, and `ethereum/ethereum/anvil-l2`, 31338), each with its
 * own traffic, every stage and one API (cli/start.ts). Spawned as `npm start -- --no-stack` with this
 * run's topic/index/Redis prefixes (the harness's), an API port of its own (0: a free one, read from
 * the banner) and its own token; stopped at the end by SIGINT to its process group (npm, tsx, node
 * and the anvils it started), then SIGKILL after a bound.
 * Asserts on the one API: both chains' event searches answer hits of their own traffic (no block hash
 * of one chain appears in the other's hits), `GET /chains/` lists both with chain ids 31337 and 31338
 * and a head, and `/metrics` has series labelled with each chain.
 * Real Kafka, schema registry, Elasticsearch, Redis and anvil.
 */

import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PER_CHAIN_VARIABLES } from "../../lib/config/index.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { configEnv } from "../support/stage-process.js";

const up = await probeStack();

const CHAINS = [
  { key: "ethereum/ethereum/anvil", chainId: 31337 },
  { key: "ethereum/ethereum/anvil-l2", chainId: 31338 },
] as const;
const TOKEN = "start-two-chains-e2e-token";
/** Longest wait for the banner, and for both chains' first indexed events, in ms. */
const BANNER_TIMEOUT_MS = 120_000;
const HITS_TIMEOUT_MS = 90_000;
/** Longest wait for the process group to exit after SIGINT before SIGKILL, in ms. */
const STOP_TIMEOUT_MS = 30_000;

interface EventHit {
  _source: { blockHash: string; blockNumber: { num: number } };
}

describe.skipIf(!up.ok)("npm start with its two embedded chains", () => {
  let h: Harness;
  let child: ChildProcess | undefined;
  const output: string[] = [];
  let apiUrl = "";

  /** SIGINT to the process group, SIGKILL after {@link STOP_TIMEOUT_MS}; resolves once npm exited. */
  const stop = async (): Promise<void> => {
    const c = child;
    if (!c?.pid || c.exitCode !== null || c.signalCode !== null) return;
    const exited = once(c, "exit");
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-(c.pid as number), signal);
      } catch {
        // already gone
      }
    };
    group("SIGINT");
    const timer = setTimeout(() => {
      console.warn(`npm start did not exit ${STOP_TIMEOUT_MS} ms after SIGINT: SIGKILL to its process group`);
      group("SIGKILL");
    }, STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
    // The anvils and node are in the group too: make sure none outlives npm.
    group("SIGKILL");
  };

  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<Response> =>
    fetch(`${apiUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(() => {
    h = createHarness();
  });
  afterAll(async () => {
    await stop();
    await h?.cleanup();
  }, STOP_TIMEOUT_MS + 30_000);

  it("serves both chains' own records, GET /chains/ and per-chain metrics on one API", async () => {
    const env = configEnv(h.config, {
      LOG_LEVEL: "warn",
      LOG_FORMAT: "json",
      CHAINSIFT_API_PORT: "0",
      CHAINSIFT_API_TOKENS: TOKEN,
      CHAINSIFT_METRICS_PORT: "-1",
    });
    // No chain given: the embedded default (a CHAINSIFT_RPC_URL or chains file would replace it).
    for (const name of [...PER_CHAIN_VARIABLES, "CHAINSIFT_CHAINS_FILE", "CHAINSIFT_CHAIN"]) delete env[name];
    const started = Date.now();
    const proc = spawn("npm", ["start", "--", "--no-stack"], {
      cwd: join(import.meta.dirname, "../.."),
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, stopped as a whole (npm → tsx → node → anvil)
    });
    child = proc;
    const banner = new Promise<string>((resolve, reject) => {
      let text = "";
      const onData = (d: Buffer) => {
        const s = d.toString();
        output.push(s);
        if (output.length > 200) output.shift();
        text += s;
        const m = /chainsift is running\.\s+API:\s+(\S+)/.exec(text);
        if (m && text.includes("# ethereum/ethereum/anvil-l2")) resolve(m[1] as string);
      };
      proc.stdout?.on("data", onData);
      proc.stderr?.on("data", (d: Buffer) => {
        output.push(d.toString());
        if (output.length > 200) output.shift();
      });
      proc.once("exit", (code, signal) => reject(new Error(`npm start exited (${code ?? signal}) before its banner:\n${output.join("")}`)));
      setTimeout(() => reject(new Error(`no banner within ${BANNER_TIMEOUT_MS} ms:\n${output.join("")}`)), BANNER_TIMEOUT_MS).unref();
    });
    apiUrl = (await banner).replace(/\/$/, "");
    const bannerMs = Date.now() - started;

    // The banner comes once the stages and the API run; records follow as anvil mines (1 s blocks).
    const hashes = new Map<string, Set<string>>();
    for (const { key } of CHAINS) {
      const hits = await waitFor(async () => {
        const res = await api("POST", `/${key}/es/event/search/`, { size: 200 });
        if (res.status !== 200) throw new Error(`${key}: ${res.status} ${await res.text()}`);
        const body = (await res.json()) as { hits: { hits: EventHit[] } };
        return body.hits.hits.length > 0 ? body.hits.hits : undefined;
      }, HITS_TIMEOUT_MS);
      hashes.set(key, new Set(hits.map((hit) => hit._source.blockHash)));
    }
    const hitsMs = Date.now() - started;
    console.log(`npm start: banner after ${bannerMs} ms, both chains' first events searchable after ${hitsMs} ms`);

    const [a, b] = CHAINS.map(({ key }) => hashes.get(key) as Set<string>) as [Set<string>, Set<string>];
    expect(a.size).toBeGreaterThan(0);
    expect(b.size).toBeGreaterThan(0);
    // Each chain's own traffic: no block of one chain is among the other's hits.
    expect([...a].filter((hash) => b.has(hash))).toEqual([]);

    // GET /chains/: both chains with their chain ids, and a head once their ingest reported one.
    const listed = await waitFor(async () => {
      const res = await api("GET", "/chains/");
      if (res.status !== 200) throw new Error(`GET /chains/: ${res.status} ${await res.text()}`);
      const body = (await res.json()) as {
        chains: Array<{ technology: string; blockchain: string; network: string; chainId: number | null; head: number | null }>;
      };
      return body.chains.every((c) => c.head !== null) ? body.chains : undefined;
    }, 30_000);
    expect(listed.map((c) => ({ key: `${c.technology}/${c.blockchain}/${c.network}`, chainId: c.chainId }))).toEqual(
      CHAINS.map(({ key, chainId }) => ({ key, chainId })),
    );
    for (const c of listed) expect(c.head).toBeGreaterThan(0);

    // /metrics (the API's, merged with every chain's registry): series of each chain.
    const metrics = await fetch(`${apiUrl}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    for (const { key } of CHAINS) expect(text).toContain(`chain="${key}"`);
  }, 300_000);
});
