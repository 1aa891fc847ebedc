/**
 * Two chains in one process through the one wiring function (pipeline/wiring.ts `startStages`):
 * each chain's decode stage gets its own chain context (chain id, token list), its own consumer
 * group (named after the chain) and its own metrics registry, and the process's /metrics text shows
 * both chains' series told apart by the `chain` label. Ingest for both in one stage process is refused.
 * Real Kafka, schema registry, Elasticsearch and Redis (the harness's prefixes).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Common, createCommon } from "../../../lib/common.js";
import { createChainContexts, type PipelineChainContext } from "../../../pipeline/chain-context.js";
import { type RunningStages, startStages } from "../../../pipeline/wiring.js";
import { createHarness, type Harness, servicesUp } from "../../support/harness.js";
import { serviceEnv } from "../../support/stage-process.js";

const up = await servicesUp();
const dir = mkdtempSync(join(tmpdir(), "chainsift-two-chains-"));
const file = join(dir, "chains.yaml");
writeFileSync(
  file,
  `chains:
  - { technology: ethereum, blockchain: ethereum, network: mainnet, chainId: 1, rpcUrls: ["http://127.0.0.1:9"], tokenDecimals: [tokenList] }
  - { technology: ethereum, blockchain: base, network: mainnet, chainId: 8453, rpcUrls: ["http://127.0.0.1:9"], tokenDecimals: [tokenList] }
`,
);
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const MAINNET = "ethereum/ethereum/mainnet";
const BASE = "ethereum/base/mainnet";

/** A process context like `npm run stage -- … --chains <file>` makes, on the harness's prefixes. */
function commonOf(h: Harness, extra: NodeJS.ProcessEnv = {}): Common<PipelineChainContext> {
  const { config } = h;
  return createCommon({
    env: {
      ...serviceEnv(config),
      LOG_LEVEL: config.logLevel,
      CHAINSIFT_CHAINS_FILE: file,
      ...extra,
    },
    signals: false,
    exit: () => {},
    chains: createChainContexts,
  });
}

describe.skipIf(!up.ok)("two chains in one startStages process", () => {
  const h = createHarness();
  let common: Common<PipelineChainContext>;
  let running: RunningStages;

  beforeAll(async () => {
    common = commonOf(h);
    running = await startStages(common, { stages: ["decode"], abis: false });
  }, 180_000);
  afterAll(async () => {
    await common?.shutdown.run("test done");
    await h.cleanup();
  }, 120_000);

  it("resolves one context per chain, with its chain id and token list", () => {
    expect(common.chains.map((c) => [c.key, c.chainId, c.decode.chainId])).toEqual([
      [MAINNET, 1, 1],
      [BASE, 8453, 8453],
    ]);
    // Base's USDC is on the bundled list for chain 8453 only.
    const usdc = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
    expect(common.chains[1]?.tokens(usdc, 8453)?.decimals).toBe(6);
    expect(common.chains[0]?.tokens(usdc, 1)).toBeUndefined();
  });

  it("gives each chain's stage its own consumer group, named after the chain", () => {
    const groups = running.chains.map((c) => c.pipeline.bus.groupId("decode"));
    expect(groups).toEqual([
      `${h.config.kafka.groupPrefix}.${h.config.kafka.topicPrefix}ethereum.ethereum.mainnet.decode`,
      `${h.config.kafka.groupPrefix}.${h.config.kafka.topicPrefix}ethereum.base.mainnet.decode`,
    ]);
    expect(running.readiness.map((r) => r.name)).toEqual([`decode ${MAINNET}`, `decode ${BASE}`]);
  });

  it("serves both chains' series of one stage family in the process's /metrics, told apart by chain", async () => {
    // A decode stage family each chain's stage creates when it starts (in its chain's registry).
    const family = "chainsift_decode_redecode_failures_total";
    const text = await common.metrics.metrics();
    const series = text.split("\n").filter((l) => l.startsWith(`${family}{`) || l.startsWith(`${family} `));
    expect(series.map((l) => /chain="([^"]+)"/.exec(l)?.[1]).sort()).toEqual([BASE, MAINNET]);
    // One family: one HELP and one TYPE line for both chains (a valid exposition).
    expect(text.match(new RegExp(`^# HELP ${family} `, "gm"))).toHaveLength(1);
    expect(text.match(new RegExp(`^# TYPE ${family} `, "gm"))).toHaveLength(1);
  });
});

describe("startStages refuses", () => {
  it("ingest for two chains in one stage process, with the exact message", async () => {
    const h = createHarness();
    const common = commonOf(h);
    await expect(startStages(common, { stages: ["ingest", "decode"] })).rejects.toThrow(
      `CHAINSIFT_CHAIN: CS_INGEST_ONE_CHAIN: ingest serves one chain per process, but 2 chains are served (${MAINNET}, ${BASE}); set CHAINSIFT_CHAIN to one of them`,
    );
    // CHAINSIFT_CHAIN narrows the file to one chain: then ingest is that chain's.
    expect(commonOf(h, { CHAINSIFT_CHAIN: BASE }).chains.map((c) => c.key)).toEqual([BASE]);
    expect(() => commonOf(h, { CHAINSIFT_CHAIN: "ethereum/op/mainnet" })).toThrow(
      `CHAINSIFT_CHAIN: "ethereum/op/mainnet" is not in ${file} (it lists ${MAINNET}, ${BASE})`,
    );
  });
});
