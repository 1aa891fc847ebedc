/**
 * `In watchlist` rules end to end on anvil (rules and watchlists through the real API; ingest →
 * Kafka → match → notify): a transaction from a listed sender alerts, one from an unlisted sender in
 * the same block does not; after the second sender is added to the list by API, its next
 * transaction alerts, without re-saving the rule, and a removed one stops. A saved search with a
 * `terms` lookup by watchlist does the same (the match stage's search index matches through the same
 * per-batch membership prefetch as `In watchlist` rules). With a list of 1,000,000 addresses (issue 34): transfers
 * from listed and unlisted senders in the same blocks alert exactly for the listed ones, and the
 * search `terms` lookup by the list's id over those blocks returns the same transactions as the rule
 * matched (the index stage runs here).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Watchlist } from "../../lib/watchlists/store.js";
import { waitFor } from "../support/harness.js";
import { type AlertingEnv, probeServices, startAlertingEnv } from "./alerting-api/support.js";

const services = await probeServices();
if (!services.ok) console.warn(`watchlist alerts: ${services.message}`);

describe.skipIf(!services.ok)("In watchlist rules end to end (anvil)", () => {
  let env: AlertingEnv;

  beforeAll(async () => {
    env = await startAlertingEnv({ index: true });
  }, 120_000);

  afterAll(async () => {
    await env?.stop();
  }, 60_000);

  /** A new address list of the account holding `address`, and its members path. */
  const hotWallets = async (token: string, address: string) => {
    const created = await env.request<Watchlist>("POST", "/alerting/watchlists/", token, { name: "hot wallets", kind: "address" });
    expect(created.status).toBe(201);
    const members = `/alerting/watchlists/${created.body.id}/members/`;
    expect((await env.request("POST", members, token, [address])).body).toEqual({ added: 1, count: 1 });
    return { created, members };
  };

  it("alerts for listed senders only; a sender added by API alerts from its next transaction, a removed one stops", async () => {
    const token = env.accounts.a.token;
    const listed = await env.newSender();
    const unlisted = await env.newSender();
    const { created, members } = await hotWallets(token, listed.address);
    await env.createRule(token, {
      name: "from a hot wallet",
      targetType: "Transaction",
      targetMap: [{ name: "from", operator: "In watchlist", value: created.body.id }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("wl") }, payload: null }],
    });

    const sink = env.newAddress();
    const first = (await listed.sendTransaction({ to: sink, value: 1n })).hash;
    await unlisted.sendTransaction({ to: sink, value: 1n });
    await env.mine();
    expect((await env.waitAlerts("wl", 1)).map((a) => a.entityId)).toEqual([first]);

    expect((await env.request("POST", members, token, [unlisted.address])).body).toEqual({ added: 1, count: 2 });
    const third = (await unlisted.sendTransaction({ to: sink, value: 1n })).hash;
    await env.mine();
    await env.waitAlerts("wl", 2);
    // Give a wrong extra alert (the unlisted sender's first transaction) a moment to show up.
    await new Promise((r) => setTimeout(r, 1000));
    expect(env.alertsAt("wl").map((a) => [a.entityId, a.targetType, a.status])).toEqual([
      [first, "Transaction", "confirmed"],
      [third, "Transaction", "confirmed"],
    ]);

    // Removed by API: the match stage's copy of the list follows the remove (change log + feed) at the next block.
    expect((await env.request("POST", `${members}delete/`, token, [listed.address])).body).toEqual({ removed: 1, count: 1 });
    await listed.sendTransaction({ to: sink, value: 1n });
    const fifth = (await unlisted.sendTransaction({ to: sink, value: 1n })).hash;
    await env.mine();
    await env.waitAlerts("wl", 3);
    await new Promise((r) => setTimeout(r, 1000));
    expect(env.alertsAt("wl").map((a) => a.entityId)).toEqual([first, third, fifth]);
  });

  it("a saved search with a terms lookup by watchlist alerts for listed senders only; a sender added by API from its next transaction", async () => {
    const token = env.accounts.a.token;
    const listed = await env.newSender();
    const unlisted = await env.newSender();
    const { created, members } = await hotWallets(token, listed.address);
    const search = await env.request<{ id: string }>("POST", "/alerting/searches/", token, {
      name: "from a hot wallet",
      ...env.config.chain,
      maxConfirmationCount: 0,
      kind: "tx",
      query: { terms: { from: { watchlist: created.body.id } } },
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("wls") } }],
    });
    expect(search.status, JSON.stringify(search.body)).toBe(201);
    await waitFor(async () => env.match.searchIndex.get(search.body.id), 10_000, 50);

    const sink = env.newAddress();
    const first = (await listed.sendTransaction({ to: sink, value: 1n })).hash;
    await unlisted.sendTransaction({ to: sink, value: 1n });
    await env.mine();
    expect((await env.waitAlerts("wls", 1)).map((a) => a.entityId)).toEqual([first]);

    expect((await env.request("POST", members, token, [unlisted.address])).body).toEqual({ added: 1, count: 2 });
    const third = (await unlisted.sendTransaction({ to: sink, value: 1n })).hash;
    await env.mine();
    await env.waitAlerts("wls", 2);
    // Give a wrong extra alert (the unlisted sender's first transaction) a moment to show up.
    await new Promise((r) => setTimeout(r, 1000));
    expect(env.alertsAt("wls").map((a) => [a.entityId, a.targetType, a.ruleId])).toEqual([
      [first, "Transaction", search.body.id],
      [third, "Transaction", search.body.id],
    ]);
  });

  it("a list of 1,000,000 addresses: alerts exactly for listed senders; the terms lookup search finds the same transactions", async () => {
    const token = env.accounts.a.token;
    const listed = [await env.newSender(), await env.newSender()];
    const unlisted = [await env.newSender(), await env.newSender()];
    const created = await env.request<Watchlist>("POST", "/alerting/watchlists/", token, { name: "deposit addresses", kind: "address" });
    expect(created.status).toBe(201);
    const members = `/alerting/watchlists/${created.body.id}/members/`;
    const total = 1_000_000;
    // The listed senders sit among random filler, one in the first request and one in the last.
    const filler = Array.from({ length: total - listed.length }, () => `0x${randomBytes(20).toString("hex")}`);
    filler.splice(10, 0, listed[0]?.address as string);
    filler.push(listed[1]?.address as string);
    let count = 0;
    for (let i = 0; i < filler.length; i += 100_000) {
      const added = await env.request<{ added: number; count: number }>("POST", members, token, filler.slice(i, i + 100_000));
      expect(added.status).toBe(200);
      count = added.body.count;
    }
    expect(count).toBe(total);
    const rule = await env.createRule(token, {
      name: "from a deposit address",
      targetType: "Transaction",
      targetMap: [{ name: "from", operator: "In watchlist", value: created.body.id }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("wl1m") }, payload: null }],
    });

    const sink = env.newAddress();
    const sent: Array<{ hash: string; listed: boolean }> = [];
    for (let round = 0; round < 2; round++) {
      for (const [i, s] of [...listed, ...unlisted].entries())
        sent.push({ hash: (await s.sendTransaction({ to: sink, value: 1n })).hash, listed: i < listed.length });
      await env.mine();
    }
    const expected = sent
      .filter((t) => t.listed)
      .map((t) => t.hash)
      .sort();
    await env.waitAlerts("wl1m", expected.length);
    await new Promise((r) => setTimeout(r, 1000)); // room for a wrong extra alert
    const alerted = env.alertsAt("wl1m").filter((a) => a.ruleId === rule.id);
    expect(alerted.map((a) => a.entityId).sort()).toEqual(expected);

    const blocks = await Promise.all(sent.map(async (t) => (await env.provider.getTransactionReceipt(t.hash))?.blockNumber ?? -1));
    const { technology, blockchain, network } = env.config.chain;
    const search = async () =>
      env.request<{ hits: { hits: Array<{ _source: { hash: string } }> } }>(
        "POST",
        `/${technology}/${blockchain}/${network}/es/tx/search/`,
        token,
        {
          query: {
            bool: {
              filter: [
                { terms: { from: { watchlist: created.body.id } } },
                { range: { "blockNumber.num": { gte: Math.min(...blocks), lte: Math.max(...blocks) } } },
              ],
            },
          },
          size: 100,
        },
      );
    // The index stage runs beside match: wait until every sent transaction is searchable.
    await waitFor(async () => {
      const all = await env.request<{ hits: { total: number } }>("POST", `/${technology}/${blockchain}/${network}/es/tx/search/`, token, {
        query: { terms: { hash: sent.map((t) => t.hash) } },
        size: 0,
      });
      return all.body.hits?.total === sent.length; // the contract path's total is a number
    }, 30_000);
    const found = await search();
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.hits.hits.map((h) => h._source.hash).sort()).toEqual(expected);
  }, 300_000);
});
