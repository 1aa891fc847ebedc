/**
 * A backfill without a terminal reports its progress in log lines: `npm run stage -- ingest --from
 * N --to M` as a child process with stdout on a pipe, against the JSON-RPC replay server over the
 * mainnet fixtures, on the real stack. Its stdout must be JSON lines (LOG_FORMAT unset = auto = JSON
 * without a TTY) with `backfill progress` lines whose done / total / records counts are right, and
 * a normal run must print no error-level line and no Node warning.
 */
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../../support/fixtures.js";
import { createHarness, type Harness, probeStack } from "../../support/harness.js";
import { type RpcReplay, startRpcReplay } from "../../support/rpc-replay.js";

const up = await probeStack();
const fixtures = hasMainnetFixtures();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

const ROOT = resolve(import.meta.dirname, "../../..");

describe.skipIf(!up.ok || !fixtures)("backfill progress without a terminal (real stack, replayed mainnet blocks)", () => {
  let h: Harness;
  let replay: RpcReplay;

  beforeAll(async () => {
    h = createHarness();
    replay = await startRpcReplay({ blocks: loadCompleteBlocks() });
  });

  afterAll(async () => {
    await replay?.close();
    await h?.cleanup();
  });

  it("logs progress lines with blocks done / total and the records produced, and no error or warning", async () => {
    const block = loadCompleteBlocks().find((b) => b.number === 17_000_000);
    if (!block) throw new Error("fixture block 17000000 is missing from ../shared/data/mainnet");
    const txs = (block.block.transactions as unknown[]).length;
    const logs = (block.receipts ?? []).reduce((n, r) => n + (r.logs as unknown[]).length, 0);
    // 16999991..17000000: ten blocks, nine of them not on the replay node (missing), one produced.
    const from = 16_999_991;
    const to = 17_000_000;
    const c = h.config;
    const child = spawn(process.execPath, ["--import", "tsx", "cli/stage.ts", "ingest", "--from", String(from), "--to", String(to)], {
      cwd: ROOT,
      env: {
        ...process.env,
        KAFKA_BROKERS: c.kafka.brokers.join(","),
        CHAINSIFT_TOPIC_PREFIX: c.kafka.topicPrefix,
        CHAINSIFT_GROUP_PREFIX: c.kafka.groupPrefix,
        CHAINSIFT_INDEX_PREFIX: c.elasticsearch.indexPrefix,
        CHAINSIFT_REDIS_PREFIX: c.redisKeyPrefix,
        CHAINSIFT_RPC_URL: replay.url,
        CHAINSIFT_INGEST_CONCURRENCY: "3",
        CHAINSIFT_PROGRESS_INTERVAL_MS: "200",
        LOG_LEVEL: "info",
        LOG_FORMAT: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((done) => child.once("exit", (c) => done(c)));
    const context = `exit ${code}\nstdout:\n${stdout}\nstderr:\n${stderr}`;
    expect(code, context).toBe(0);

    // Every line but the ready line is a pino JSON line.
    const lines = stdout.split("\n").filter((l) => l.trim() !== "");
    const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const progress = entries.filter((e) => typeof e.msg === "string" && e.msg.startsWith("backfill progress"));
    expect(progress.length, context).toBeGreaterThanOrEqual(2);
    expect(progress[0]).toMatchObject({ from, to, done: 0, total: 10, records: 0 });
    expect(progress.at(-1)).toMatchObject({ from, to, done: 10, total: 10, records: 1 + txs + logs, etaMs: 0 });
    expect(progress.at(-1)?.msg).toMatch(/^backfill progress: 10\/10 blocks \(100\.0%\), [\d.]+ blocks\/s, [\d.]+ records\/s, ETA 0s$/);
    const dones = progress.map((p) => p.done as number);
    expect(dones).toEqual([...dones].sort((a, b) => a - b));

    // The ingester's own summary agrees.
    expect(entries.find((e) => e.msg === "backfill done")).toMatchObject({ blocks: 1, transactions: txs, logs, missing: 9 });
    // A normal run: no error-level line (pino 50 and above) and no Node warning.
    expect(entries.filter((e) => (e.level as number) >= 50)).toEqual([]);
    expect(stderr).not.toMatch(/Warning/);
  });
});
