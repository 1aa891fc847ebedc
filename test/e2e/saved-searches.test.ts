/**
 * Saved searches that alert, end to end on anvil: searches created through the API
 * (`POST /alerting/searches/`) over every record kind, with queries of different shapes (bool
 * filter/should/must_not with minimum_should_match, nested args, terms, ranges, match on text,
 * exists), then real traffic (ERC-20 transfers and mints over several blocks) through ingest → decode → index + match → notify → a local webhook receiver. The key
 * property: for each search, the entity ids that fired are exactly the `_id`s the search API
 * answers for the same query over the same blocks, and the saved-search backtest
 * (`POST /alerting/searches/test/`) of the same search over those blocks answers them too. Also:
 * the API refuses a clause the evaluator cannot answer exactly, naming it.
 */

import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApi } from "../../api/server.js";
import { finalizedKey, readFinalized } from "../../lib/chain/finality.js";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

describe.skipIf(!up.ok)("saved searches fire exactly on what the search API finds", () => {
  let env: AnvilEnv;
  let api: { app: { close(): Promise<unknown> }; url: string };
  let token: string;
  const request = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> };
  };

  beforeAll(async () => {
    env = await startAnvilEnv({ traces: true, index: true, match: () => ({ reloadIntervalMs: 500 }) });
    token = env.config.api.tokens[0] as string;
    api = await startApi({ config: env.config, logger: env.logger });
  }, 180_000);

  afterAll(async () => {
    await api?.app.close();
    await env?.stop();
  });

  it("refuses a clause the evaluator cannot answer exactly, naming it", async () => {
    const res = await request("POST", "/alerting/searches/", {
      name: "date math",
      ...env.config.chain,
      maxConfirmationCount: 1,
      kind: "event",
      query: { bool: { filter: [{ range: { timestamp: { gte: "now-1d" } } }] } },
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("never") } }],
    });
    expect(res.status).toBe(400);
    expect((res.body.error as { code: string; path: string }) ?? {}).toMatchObject({
      code: "CS_SEARCH_INEXACT",
      path: "query.bool.filter[0].range.timestamp.gte",
    });
  });

  it("fires on exactly the records the search API answers for the same query, for every kind", async () => {
    const start = Number(await env.rpc("eth_blockNumber")) + 1;
    const token20 = env.tokenAddress.toLowerCase();
    const [a, b, c] = [env.devAccounts[6]!, env.devAccounts[7]!, env.devAccounts[8]!];
    const from = { range: { "blockNumber.num": { gte: start } } };
    const queries: Record<string, { kind: string; query: Record<string, unknown> }> = {
      transfersToAorB: {
        kind: "event",
        query: {
          bool: {
            filter: [from, { term: { event: "transfer" } }],
            should: [a, b].map((to) => ({
              nested: { path: "args", query: { bool: { filter: [{ term: { "args.name": "to" } }, { term: { "args.value.hex": to } }] } } },
            })),
            minimum_should_match: 1,
          },
        },
      },
      bigTransfersText: {
        kind: "event",
        query: {
          bool: {
            filter: [from, { match: { str: "transfer cst" } }],
            must_not: [{ nested: { path: "args", query: { range: { "args.value.num": { lt: 3_000_000 } } } } }],
          },
        },
      },
      txsToToken: { kind: "tx", query: { bool: { filter: [from, { term: { to: token20 } }, { exists: { field: "gasUsed" } }] } } },
      transferLogs: {
        kind: "log",
        query: { bool: { filter: [from, { terms: { topics: [TRANSFER_TOPIC] } }, { term: { address: token20 } }] } },
      },
      mintOrTransferCalls: {
        kind: "call",
        query: {
          bool: { filter: [from], should: [{ term: { name: "mint" } }, { term: { name: "transfer" } }], minimum_should_match: "50%" },
        },
      },
      busyBlocks: {
        kind: "block",
        query: { bool: { filter: [{ range: { "number.num": { gte: start } } }, { range: { transactionCount: { gte: 2 } } }] } },
      },
    };
    const ids: Record<string, string> = {};
    for (const [label, { kind, query }] of Object.entries(queries)) {
      const res = await request("POST", "/alerting/searches/", {
        name: label,
        ...env.config.chain,
        maxConfirmationCount: 1,
        kind,
        query,
        alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook(label) } }],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body).toMatchObject({ kind, query, state: "enabled", version: 1 });
      ids[label] = res.body.id as string;
    }
    await waitFor(async () => Object.values(ids).every((id) => env.match.searchIndex.get(id)), 10_000, 50);

    // Traffic: 4 blocks of transfers (to a, b, c and fresh addresses, amounts 1–9 CST) and mints from several senders.
    for (let blk = 0; blk < 4; blk++) {
      for (const [i, to] of [a, b, c, env.newAddress()].entries()) {
        if ((blk + i) % 3 === 2) continue;
        await env.transfer(to, BigInt(1 + ((blk * 4 + i) % 9)) * 1_000_000n);
      }
      if (blk % 2 === 0) await env.mint(c, 2_000_000n);
      await env.mine(1);
    }
    await env.mine(1);
    const last = Number(await env.rpc("eth_blockNumber"));

    const searchIds = async (kind: string, query: Record<string, unknown>): Promise<string[]> => {
      const { technology, blockchain, network } = env.config.chain;
      const res = await request("POST", `/${technology}/${blockchain}/${network}/es/${kind}/search/`, {
        size: 1000,
        query: { bool: { filter: [query, { range: { [kind === "block" ? "number.num" : "blockNumber.num"]: { lte: last } } }] } },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return ((res.body.hits as { hits: Array<{ _id: string }> }).hits ?? []).map((h) => h._id).sort();
    };
    const fired = (label: string) =>
      env
        .alertsAt(label)
        .filter((x) => x.blockNumber <= last && x.status === "confirmed")
        .map((x) => x.entityId)
        .sort();

    // Every block up to the last one indexed, so both sides look at the same blocks.
    await waitFor(async () => (await searchIds("block", { term: { "number.num": last } })).length === 1, 60_000, 500);
    for (const [label, { kind, query }] of Object.entries(queries)) {
      let found: string[] = [];
      // Both sides converge (indexing and delivery run concurrently); then they must be equal.
      await waitFor(
        async () => {
          found = await searchIds(kind, query);
          return found.length > 0 && JSON.stringify(fired(label)) === JSON.stringify(found);
        },
        60_000,
        500,
      ).catch(() => {});
      expect(found.length, `${label}: the search API finds something`).toBeGreaterThan(0);
      expect(fired(label), `${label} (${kind}) ${JSON.stringify(query)}`).toEqual(found);
      for (const alert of env.alertsAt(label)) expect(alert.ruleId).toBe(ids[label]);

      // The backtest of the same search over the same blocks answers the same records (POST /alerting/searches/test/).
      const { technology, blockchain, network } = env.config.chain;
      const alerts = [{ type: "Webhook (POST)", parameters: { url: env.hook(label) } }];
      const search = { name: label, technology, blockchain, network, maxConfirmationCount: 1, kind, query, alerts };
      const res = await fetch(`${api.url}/alerting/searches/test/`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ search, from: start, to: last }),
      });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      const lines = text
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { type: string; entityId?: string });
      expect(lines.at(-1), label).toMatchObject({ type: "end", complete: true });
      const tested = lines.filter((l) => l.type === "match").map((l) => l.entityId as string);
      expect(tested.sort(), `${label}: backtest = search API = fired`).toEqual(found);
    }
    expect(new Set(env.alertsAt("bigTransfersText").map((x) => x.targetType))).toEqual(new Set(["Event"]));
    expect(new Set(env.alertsAt("busyBlocks").map((x) => x.targetType))).toEqual(new Set(["Block"]));
  }, 240_000);

  it("confirms a confirmOn finalized search only when its block is final (anvil: finalized = head - 64)", async () => {
    const to = env.newAddress();
    const res = await request("POST", "/alerting/searches/", {
      name: "final transfer",
      ...env.config.chain,
      maxConfirmationCount: 1,
      sendPendingAlerts: true,
      confirmOn: "finalized",
      kind: "event",
      query: {
        nested: { path: "args", query: { bool: { filter: [{ term: { "args.name": "to" } }, { term: { "args.value.hex": to } }] } } },
      },
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("final") } }],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.warnings).toBeUndefined(); // anvil answers the finalized tag
    const id = res.body.id as string;
    await waitFor(async () => env.match.searchIndex.get(id), 10_000, 50);
    const finalizedNow = async () => Number(((await env.rpc("eth_getBlockByNumber", ["finalized", false])) as { number: string }).number);
    // Past anvil's first 64 blocks, and ingest has published a finalized block above 0 (lib/chain/finality.ts).
    await env.mine(70);
    const redis = createClient({ url: env.config.redisUrl });
    await redis.connect();
    try {
      const key = finalizedKey(env.config.redisKeyPrefix, env.config.chain);
      await waitFor(async () => ((await readFinalized(redis, key)) ?? 0) > 0, 30_000, 200);
    } finally {
      await redis.quit();
    }

    await env.transfer(to, 4_000_000n);
    await env.mine(1);
    const block = Number(await env.rpc("eth_blockNumber"));
    // Without confirmOn, maxConfirmationCount 1 would send `confirmed` at once; here `pending` first.
    const [pending] = await env.waitAlerts("final", 1, 30_000);
    expect(pending).toMatchObject({ status: "pending", blockNumber: block, maxConfirmationCount: 1 });

    // Up to the block before: still not final. Ingest reads the tag every 30 polls (3 s here).
    await env.mine(block - 1 - (await finalizedNow()));
    expect(await finalizedNow()).toBe(block - 1);
    await new Promise((r) => setTimeout(r, 5_000));
    expect(env.alertsAt("final").map((a) => a.status)).toEqual(["pending"]);

    await env.mine(1);
    expect(await finalizedNow()).toBe(block);
    const alerts = await env.waitAlerts("final", 2, 30_000);
    expect(alerts[1]).toMatchObject({ status: "confirmed", entityId: pending?.entityId, blockHash: pending?.blockHash, confirmations: 1 });
    await env.mine(2);
    await new Promise((r) => setTimeout(r, 4_000));
    expect(env.alertsAt("final")).toHaveLength(2);
  }, 120_000);
});
