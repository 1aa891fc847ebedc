/**
 * The environment of the e2e tests that follow a chain the test mines, through a faulty node, and
 * check the index and the alerts (test/e2e/fault-matrix.test.ts, test/e2e/follow-pace.test.ts):
 * anvil with ERC-20 traffic and interval mining off (the test mines with `evm_mine`), an "every
 * Transfer of the token" rule with confirmations, the decode, index and match stages, the API, and
 * a watcher collecting the `alerts` and `reorgs` topics. The ingester is the test's own.
 * @module
 */
import type { FastifyInstance } from "fastify";
import type { Consumer } from "kafkajs";
import { buildApi } from "../../api/app.js";
import { type AnvilHandle, startAnvil } from "../../cli/devchain/anvil.js";
import { rpcCall } from "../../cli/devchain/rpc.js";
import { startTraffic, type TrafficHandle } from "../../cli/devchain/traffic.js";
import type { AlertAvro } from "../../lib/alerting/avro.js";
import type { ReorgRecord } from "../../lib/records.js";
import { connectRuleStore } from "../../lib/rules/store.js";
import type { Decoder } from "../../pipeline/decode/decoder.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { createHarness, type Harness } from "./harness.js";
import { tokenTransferRule } from "./rules.js";
import { stopChainTest } from "./teardown.js";

/** Options of {@link startRuleChain}. */
export interface RuleChainOptions {
  /** Names the rule (`<name>: every Transfer of the traffic token`), its account (`acc-e2e-<name>`) and the watcher's group. */
  name: string;
  /** The decoder of the decode stage (chain id 31337). */
  decoder: Decoder;
  /** The rule's maxConfirmationCount. */
  confirmations: number;
  /** The traffic's round interval, ms. */
  trafficIntervalMs: number;
  /** CST transfers per traffic round. Default the traffic's (3). */
  transfersPerRound?: number;
}

/** A running {@link startRuleChain} environment. */
export interface RuleChain {
  h: Harness;
  anvil: AnvilHandle;
  traffic: TrafficHandle;
  pipeline: Pipeline;
  app: FastifyInstance;
  ruleId: string;
  /** Every alert read from the alerts topic so far. */
  published: AlertAvro[];
  /** Every record read from the reorgs topic so far. */
  announced: ReorgRecord[];
  /** Stops the traffic, the watcher, the API, the rule store, the pipeline and anvil, and removes the test's topics, indices and keys. */
  stop(): Promise<void>;
}

/**
 * Starts the environment (module doc): anvil (0.25 s blocks until the traffic has deployed its
 * contracts, then interval mining off), traffic, the rule, the stages, the API and the watcher.
 */
export async function startRuleChain(opts: RuleChainOptions): Promise<RuleChain> {
  const h = createHarness({ chain: { technology: "ethereum", blockchain: "ethereum", network: "anvil" } });
  h.config.api.rateLimitMax = 1_000_000;
  const anvil = await startAnvil({ blockTimeSec: 0.25 });
  const traffic = await startTraffic({
    rpcUrl: anvil.rpcUrl,
    intervalMs: opts.trafficIntervalMs,
    nft: false,
    transfersPerRound: opts.transfersPerRound,
  });
  // From here on the test mines.
  await rpcCall(anvil.rpcUrl, "evm_setIntervalMining", [0]);
  const connected = await connectRuleStore(h.config);
  const ruleId = (
    await connected.store.create(
      `acc-e2e-${opts.name}`,
      tokenTransferRule({
        name: `${opts.name}: every Transfer of the traffic token`,
        chain: h.config.chain,
        token: traffic.token,
        maxConfirmationCount: opts.confirmations,
        url: `http://127.0.0.1:9/${opts.name}`,
      }),
    )
  ).id;
  const pipeline = await startPipeline({
    config: h.config,
    logger: h.logger,
    es: h.es,
    decoder: opts.decoder,
    stages: ["decode", "index", "match"],
  });
  const app = await buildApi({ config: h.config, es: h.es, logger: false });
  const published: AlertAvro[] = [];
  const announced: ReorgRecord[] = [];
  const watcher: Consumer = pipeline.bus.kafka.consumer({ groupId: `chainsift-test-${h.id}-${opts.name}-watch` });
  await watcher.connect();
  await watcher.subscribe({ topics: [pipeline.bus.topic("alerts"), pipeline.bus.topic("reorgs")], fromBeginning: true });
  const alertsTopic = pipeline.bus.topic("alerts");
  await watcher.run({
    eachMessage: async ({ topic, message }) => {
      const value = await pipeline.bus.decode(message.value);
      if (topic === alertsTopic) published.push(value as AlertAvro);
      else announced.push(value as ReorgRecord);
    },
  });
  return {
    h,
    anvil,
    traffic,
    pipeline,
    app,
    ruleId,
    published,
    announced,
    async stop() {
      await traffic.stop();
      await stopChainTest({ watcher, app, closeRules: () => connected.close(), pipeline, anvil, h });
    },
  };
}
