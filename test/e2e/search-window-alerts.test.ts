/**
 * A saved search with a count window end to end on anvil (issue 33): the search is created through
 * the API (`POST /alerting/searches/`, kind `event`, its query selects the token's Transfers to one
 * address) with `window: {blocks: 3, count ≥ 3}`; three transfers in one block make one alert — the
 * window that fired, naming the three transfers — and the blocks after it, still crossing, add none
 * (crossing, not flooding). A search over blocks with a one-block count window fires once, at that
 * block (its matches come with the block record). The records are the query's, the firing the window evaluator's, as for
 * a windowed rule (test/e2e/window-alerts.test.ts, whose waiting this follows: before mining the
 * next block the test waits until the stage has written a block's records to the window).
 */
import { describe, expect, it } from "vitest";
import type { WindowFiring } from "../../lib/match/windows.js";
import { windowKeys } from "../../pipeline/match/windows/scripts.js";
import { anvilWithApi } from "../support/anvil-api.js";
import { probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();

describe.skipIf(!up.ok)("saved-search window alerts on anvil", () => {
  const running = anvilWithApi();

  it("a count window on a saved search fires once, naming the records its query selected (events and blocks)", async () => {
    const { env, url, redis } = running();
    const to = env.newAddress();
    const create = async (body: Record<string, unknown>) => {
      const res = await fetch(`${url}/alerting/searches/`, {
        method: "POST",
        headers: { authorization: `Bearer ${env.config.api.tokens[0]}`, "content-type": "application/json" },
        body: JSON.stringify({
          ...env.config.chain,
          maxConfirmationCount: 6,
          sendPendingAlerts: true,
          alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("sw") } }],
          ...body,
        }),
      });
      const created = (await res.json()) as { id: string; version: number };
      expect(res.status, JSON.stringify(created)).toBe(201);
      await waitFor(async () => env.match.searchIndex.get(created.id), 10_000, 50);
      return created;
    };
    const search = await create({
      name: "≥ 3 transfers to one address within 3 blocks",
      kind: "event",
      query: {
        bool: {
          filter: [
            { term: { event: "transfer" } },
            { term: { address: env.tokenAddress.toLowerCase() } },
            {
              nested: {
                path: "args",
                query: { bool: { filter: [{ term: { "args.name": "to" } }, { term: { "args.value.hex": to.toLowerCase() } }] } },
              },
            },
          ],
        },
      },
      window: { blocks: 3, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "3" },
    });
    // A search over blocks: its matches come with the block record itself (the stage's blocks topic).
    const busy = await create({
      name: "a block with 3 or more transactions",
      kind: "block",
      query: { range: { transactionCount: { gte: 3 } } },
      window: { blocks: 1, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "1" },
    });
    const alerts = (of = search.id) => env.alertsAt("sw").filter((a) => a.ruleId === of);
    // The window starts at the first block the stage evaluates after the search (it saves its state then).
    const keys = windowKeys(env.config.redisKeyPrefix, env.config.chain);
    const id = `${search.id}:${search.version}`;
    await waitFor(
      async () => {
        await env.mine(1);
        return (await redis.exists(keys.state(id))) === 1;
      },
      30_000,
      300,
    );
    await env.mine(3); // the window is complete from here on

    const txs = [await env.transfer(to, 1_000_000n), await env.transfer(to, 2_000_000n), await env.transfer(to, 3_000_000n)];
    await env.mine(1); // block B holds the 3 transfers
    const b = await env.eventOf(txs[0]!);
    await waitFor(async () => (await redis.hLen(keys.records(id, b.blockHash.toLowerCase()))) >= 3, 30_000, 50);
    await env.mine(1); // B + 1: records consumed after B's block record are evaluated here
    await waitFor(async () => alerts().length >= 1 && alerts(busy.id).length >= 1, 30_000);
    await env.mine(1); // B + 2: still crossing, no second alert
    await new Promise((r) => setTimeout(r, 1500));

    const fired = alerts();
    expect(fired.map((a) => [a.status, a.entityId])).toEqual([["pending", `window:${b.blockNumber}`]]);
    expect(fired[0]).toMatchObject({ targetType: "Event", blockHash: b.blockHash, blockNumber: b.blockNumber });
    const w = (fired[0] as unknown as { window: WindowFiring }).window;
    expect(w).toMatchObject({
      group: null,
      aggregate: "3",
      recordCount: 3,
      window: { fromBlock: b.blockNumber - 2, toBlock: b.blockNumber },
    });
    const ids = await Promise.all(txs.map(async (t) => (await env.eventOf(t)).entityId));
    expect([...w.recordIds].sort()).toEqual([...ids].sort());
    // The search body lists every record of the window: the search endpoint of the search's kind finds them.
    expect((w as unknown as { search: { query: { ids: { values: string[] } } } }).search.query.ids.values.sort()).toEqual([...ids].sort());
    const blocks = alerts(busy.id);
    expect(blocks.map((a) => [a.status, a.entityId, a.targetType])).toEqual([["pending", `window:${b.blockNumber}`, "Block"]]);
    expect((blocks[0] as unknown as { window: WindowFiring }).window.recordIds).toEqual([b.blockHash]);
  }, 120_000);
});
