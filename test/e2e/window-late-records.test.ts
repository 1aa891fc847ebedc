/**
 * The settled height on anvil (issue 33; docs/design/windows.md, "The settled height"): the match
 * stage reads block records long before their events when decode lags (here: decode stopped while
 * six blocks with a transfer each are mined). An absence rule (no transfer to one address for 3
 * blocks) must not fire for those blocks: their windows are judged only once decode has produced
 * their events and the stage has consumed them. Without the settled height the absence fired at
 * the third block of the gap and was confirmed before the events arrived. Once decode is back, the
 * windows are evaluated over those blocks (the state's head moves past them), and the rule still
 * fires, once, when the transfers really stop.
 */
import { createClient, type RedisClientType } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consumerGroupLag } from "../../lib/kafka/lag.js";
import type { WindowState } from "../../lib/match/windows.js";
import { startDecodeStage } from "../../pipeline/decode/stage.js";
import type { RunningConsumer } from "../../pipeline/kafka/consumer.js";
import { windowKeys } from "../../pipeline/match/windows/scripts.js";
import { absenceRuleOn } from "../support/anvil-api.js";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!up.ok)("window evaluation waits for late records (anvil)", () => {
  let env: AnvilEnv;
  let redis: RedisClientType;
  let decode: RunningConsumer | undefined;
  const alertsOf = (ruleId: string) => env.alertsAt("late").filter((a) => a.ruleId === ruleId);
  const keysOf = () => windowKeys(env.config.redisKeyPrefix, env.config.chain);
  const recordsSeen = async (ruleId: string, blockHash: string) => {
    const key = keysOf().records(`${ruleId}:1`, blockHash.toLowerCase());
    await waitFor(async () => (await redis.hLen(key)) >= 1, 30_000, 50);
  };

  beforeAll(async () => {
    env = await startAnvilEnv({ traces: false, match: () => ({ reloadIntervalMs: 500 }) });
    redis = createClient({ url: env.config.redisUrl }) as RedisClientType;
    await redis.connect();
    // The rule's window starts at the first block the stage evaluates after it: let the stage read
    // the deployment's blocks first (its committed offset on blocks reaches the topic's end).
    const admin = env.pipeline.bus.transport.admin();
    await admin.connect();
    try {
      await waitFor(
        async () => {
          const rows = await consumerGroupLag(admin, env.pipeline.bus.groupId("match"), [env.pipeline.bus.topic("blocks")]);
          return rows.length > 0 && rows.every((r) => r.lag === 0 && r.committed !== null);
        },
        30_000,
        100,
      );
    } finally {
      await admin.disconnect();
    }
  }, 180_000);

  afterAll(async () => {
    await decode?.stop();
    await redis?.close();
    await env?.stop();
  });

  it("an absence rule does not fire for blocks whose events arrive after their block records", async () => {
    const { rule, to } = await absenceRuleOn(env, "late");
    for (let i = 0; i < 2; i++) {
      const tx = await env.transfer(to, 1_000n + BigInt(i));
      await env.mine(1);
      await recordsSeen(rule.id, (await env.eventOf(tx)).blockHash);
    }

    // Decode stops: ingest keeps producing blocks and logs, the match stage reads the blocks, no events.
    const [decode0] = env.pipeline.consumers;
    await decode0?.stop();
    let last = { entityId: "", blockHash: "", blockNumber: 0 };
    for (let i = 0; i < 6; i++) {
      const tx = await env.transfer(to, 2_000n + BigInt(i));
      await env.mine(1);
      last = await env.eventOf(tx);
    }
    await sleep(3000); // the match stage reads the six block records meanwhile
    expect(alertsOf(rule.id)).toEqual([]);

    decode = await startDecodeStage({ bus: env.pipeline.bus, decoder: env.decoder, chainId: env.anvil.chainId, logger: env.logger });
    await recordsSeen(rule.id, last.blockHash);
    const state = keysOf().state(`${rule.id}:1`);
    // The windows are judged over those blocks once their events are in: the state's head passes the last one.
    await waitFor(
      async () => {
        const json = await redis.hGet(state, "s");
        return json !== null && json !== undefined && (JSON.parse(json) as WindowState).maxHead >= last.blockNumber;
      },
      30_000,
      100,
    );
    await sleep(1500);
    expect(alertsOf(rule.id)).toEqual([]); // every window of 3 blocks held a transfer

    await env.mine(4); // last+1 … last+3 silent: fires at last+3, confirmed at last+4 or later
    await waitFor(async () => alertsOf(rule.id).length >= 1, 30_000);
    await env.mine(2);
    await sleep(1500);
    expect(alertsOf(rule.id).map((a) => [a.status, a.entityId])).toEqual([["confirmed", `absence:${last.blockNumber + 3}`]]);
  }, 120_000);
});
