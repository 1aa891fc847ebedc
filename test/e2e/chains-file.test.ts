/**
 * The chains file end to end, with stage processes started as the compose services start them
 * (`npm run stage -- <stage> --chains <file>`, cli/stage.ts):
 * - `decode` with a file naming Base (chain id 8453, the bundled token list only) decodes with
 *   Base's id: it logs the decode options it built, and a Transfer of Base's USDC (6 decimals on
 *   Base's entries of the token list, absent from mainnet's) is scaled, while mainnet's USDT
 *   contract (on mainnet's list only) is not;
 * - `ingest` with a file whose chain id is not the node's (anvil answers 31337) refuses to start
 *   with `CS_CHAIN_ID_MISMATCH`, both ids and the endpoint; with the node's id it starts;
 * - `npm start -- --chains <file>` (cli/start.ts) refuses the same mismatch before any stage starts;
 * - `ingest` with `traces: on` refuses a node that has no trace method (the JSON-RPC replay server
 *   of the mainnet fixtures, without traces; skipped without the fixtures).
 * Real Kafka, schema registry, Redis and anvil.
 */

import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { PER_CHAIN_VARIABLES } from "../../lib/config/index.js";
import type { EventRecord, LogRecord } from "../../lib/records.js";
import { createBus, createRecordProducer } from "../../pipeline/kafka/bus.js";
import { hasMainnetFixtures, loadCompleteBlocks, SKIP_NO_FIXTURES } from "../support/fixtures.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { type RpcReplay, startRpcReplay } from "../support/rpc-replay.js";
import { usdtLog } from "../support/sample-records.js";
import { configEnv, type StageProcess, spawnStage } from "../support/stage-process.js";

const up = await probeStack();
const fixtures = hasMainnetFixtures();

/** Base's USDC (the bundled token list's entry for chain 8453, 6 decimals). */
const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const BASE = { technology: "ethereum", blockchain: "base", network: "mainnet" };

describe.skipIf(!up.ok)("a chains file for stage processes (npm run stage -- <stage> --chains <file>)", () => {
  let h: Harness;
  const dir = mkdtempSync(join(tmpdir(), "chainsift-chains-e2e-"));
  const stages: StageProcess[] = [];
  let anvil: AnvilHandle | undefined;
  let replay: RpcReplay | undefined;

  /** The harness's environment for a child, without the per-chain variables a chains file replaces. */
  const childEnv = (extra: NodeJS.ProcessEnv = {}) => {
    const env = configEnv(h.config, { LOG_LEVEL: "info", CHAINSIFT_METRICS_PORT: "-1", ...extra });
    for (const name of PER_CHAIN_VARIABLES) delete env[name];
    return env;
  };
  /** Writes a one-chain file and returns its path. */
  const chainsFile = (name: string, entry: Record<string, unknown>) => {
    const path = join(dir, name);
    writeFileSync(path, JSON.stringify({ chains: [entry] }, null, 2));
    return path;
  };

  /** Starts `ingest --chains <file>`: `started`, or the message of a process that exited before its ready line (with its output). */
  const ingestOrRefusal = (file: string): Promise<string> =>
    spawnStage("ingest", childEnv(), ["--chains", file], 90_000).then(
      (s) => {
        stages.push(s);
        return "started";
      },
      (err: unknown) => (err as Error).message,
    );

  beforeAll(() => {
    h = createHarness({ chain: BASE });
  });
  afterAll(async () => {
    await Promise.allSettled(stages.map((s) => s.stop()));
    await anvil?.stop();
    await replay?.close();
    await h?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it("decode decodes with the file's chain id: the options it built, and a scaled amount that depends on it", async () => {
    const file = chainsFile("base.json", {
      ...BASE,
      chainId: 8453,
      rpcUrls: ["http://127.0.0.1:9"],
      tokenDecimals: ["tokenList"],
    });
    const lines: string[] = [];
    const decode = await spawnStage("decode", childEnv(), ["--chains", file], 90_000, (l) => lines.push(l));
    stages.push(decode);
    const options = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === "decode options");
    expect(options).toMatchObject({ chain: BASE, chainId: 8453, chainIdFrom: "file", tokenList: true, tokenCalls: false });

    // The same Transfer layout from Base's USDC and from mainnet's USDT (5 000 000 base units each).
    const usdc: LogRecord = { ...usdtLog, address: BASE_USDC, logIndex: { num: 8, raw: "0x8" } };
    const bus = await createBus({ config: h.config, logger: h.logger, setup: false });
    const producer = await createRecordProducer(bus);
    await producer.send([
      { kind: "logs", key: "usdc", record: usdc },
      { kind: "logs", key: "usdt", record: usdtLog },
    ]);
    await producer.disconnect();

    const consumer = bus.kafka.consumer({ groupId: `${h.config.kafka.groupPrefix}.events-reader` });
    const events: EventRecord[] = [];
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: bus.topic("events"), fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => void events.push((await bus.decode(message.value)) as EventRecord) });
      await waitFor(async () => events.length >= 2, 60_000);
    } finally {
      await consumer.disconnect();
    }
    const value = (address: string) =>
      events.find((e) => e.address.toLowerCase() === address.toLowerCase())?.args.find((a) => a.name === "value")?.value;
    // Base's list knows its USDC (mainnet's would not): scaled with 6 decimals.
    expect(value(BASE_USDC)).toMatchObject({ num: 5_000_000, scaled: 5 });
    // Mainnet's USDT is not on Base's list: unscaled (with mainnet's list it would be 5).
    expect(value(usdtLog.address)).toMatchObject({ num: 5_000_000, scaled: null });
  }, 180_000);

  it("ingest refuses a node whose eth_chainId is not the file's chain id, and starts on the node's", async () => {
    anvil ??= await startAnvil({ blockTimeSec: 0 });
    const wrong = chainsFile("wrong.json", { ...BASE, chainId: 8453, rpcUrls: [anvil.rpcUrl], traces: "off" });
    const refused = await ingestOrRefusal(wrong);
    expect(refused).toContain(
      `CS_CHAIN_ID_MISMATCH: ethereum/base/mainnet is configured as chain id 8453 (chains file ${wrong}) but ${anvil.rpcUrl.replace(/\/$/, "")} answers eth_chainId 31337; refusing to start`,
    );

    const right = chainsFile("right.json", { ...BASE, network: "anvil", chainId: 31337, rpcUrls: [anvil.rpcUrl], traces: "off" });
    const ingest = await spawnStage("ingest", childEnv(), ["--chains", right], 90_000);
    stages.push(ingest);
    expect(ingest.ready).toMatchObject({ stage: "ingest", ready: true });
  }, 180_000);

  it.skipIf(!fixtures)(
    "ingest with traces: on refuses a node without a trace method",
    async () => {
      replay = await startRpcReplay({ blocks: loadCompleteBlocks().slice(0, 2) });
      const file = chainsFile("traces-on.json", { ...BASE, network: "replay", chainId: 1, rpcUrls: [replay.url], traces: "on" });
      const refused = await ingestOrRefusal(file);
      expect(refused).toContain(
        "CHAINSIFT_CHAINS_FILE: ethereum/base/replay has traces: on, but the node has neither debug_traceBlockByNumber nor trace_block (use traces: auto to go on without)",
      );
    },
    120_000,
  );

  it("npm start -- --chains <file> refuses a node of another chain before starting any stage", async () => {
    anvil ??= await startAnvil({ blockTimeSec: 0 });
    const file = chainsFile("start-wrong.json", { ...BASE, chainId: 8453, rpcUrls: [anvil.rpcUrl], traces: "off" });
    const child = spawn(process.execPath, ["--import", "tsx", "cli/start.ts", "--chains", file, "--no-stack", "--no-api"], {
      cwd: join(import.meta.dirname, "../.."),
      env: childEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const chunks: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => chunks.push(d));
    child.stderr.on("data", (d: Buffer) => chunks.push(d));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code).toBe(1);
    const output = Buffer.concat(chunks).toString();
    // Refused before the pipeline: no stage logged its start (the decode stage logs its options at info).
    expect(output).not.toContain('"decode options"');
    expect(output).toContain(
      `CS_CHAIN_ID_MISMATCH: ethereum/base/mainnet is configured as chain id 8453 (chains file ${file}) but ${anvil.rpcUrl.replace(/\/$/, "")} answers eth_chainId 31337; refusing to start`,
    );
  }, 120_000);

  it("npm start -- --chains <file of two chains> --rpc-url <url> is refused (exit 2): the endpoints would belong to no chain in particular", async () => {
    const file = join(dir, "two.json");
    writeFileSync(
      file,
      JSON.stringify({
        chains: [
          { ...BASE, chainId: 8453, rpcUrls: ["http://127.0.0.1:1"], traces: "off" },
          {
            technology: "ethereum",
            blockchain: "ethereum",
            network: "mainnet",
            chainId: 1,
            rpcUrls: ["http://127.0.0.1:1"],
            traces: "off",
          },
        ],
      }),
    );
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "cli/start.ts", "--chains", file, "--rpc-url", "http://127.0.0.1:2", "--no-stack", "--no-api"],
      { cwd: join(import.meta.dirname, "../.."), env: childEnv(), stdio: ["ignore", "pipe", "pipe"] },
    );
    const chunks: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => chunks.push(d));
    child.stderr.on("data", (d: Buffer) => chunks.push(d));
    const [code] = (await once(child, "exit")) as [number | null];
    const output = Buffer.concat(chunks).toString();
    expect(code, output).toBe(2);
    expect(output).toContain("--rpc-url names the endpoints of one chain, but 2 chains are configured");
    expect(output).not.toContain('"decode options"');
  }, 120_000);
});
if (!fixtures) console.warn(SKIP_NO_FIXTURES);
