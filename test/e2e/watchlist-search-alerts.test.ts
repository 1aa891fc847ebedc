/**
 * A saved search with a `terms` lookup by watchlist end to end on anvil (saved searches and
 * watchlists through the real API; ingest → Kafka → match → notify): `{"terms": {"from":
 * {"watchlist": id}}}` over transactions alerts for a transaction from a listed sender and not for
 * one from an unlisted sender in the same block; after the second sender is added to the list by
 * API, its next transaction alerts, without saving the search again (the match stage's search index
 * matches through the same per-batch membership prefetch as `In watchlist` rules:
 * test/e2e/watchlist-alerts.test.ts, whose steps this follows).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Watchlist } from "../../lib/watchlists/store.js";
import { waitFor } from "../support/harness.js";
import { type AlertingEnv, probeServices, startAlertingEnv } from "./alerting-api/support.js";

const services = await probeServices();
if (!services.ok) console.warn(`watchlist search alerts: ${services.message}`);

describe.skipIf(!services.ok)("saved searches with a watchlist lookup end to end (anvil)", () => {
  let env: AlertingEnv;

  beforeAll(async () => {
    env = await startAlertingEnv();
  }, 120_000);

  afterAll(async () => {
    await env?.stop();
  }, 60_000);

  it("alerts for listed senders only; a sender added by API alerts from its next transaction", async () => {
    const token = env.accounts.a.token;
    const listed = await env.newSender();
    const unlisted = await env.newSender();
    const created = await env.request<Watchlist>("POST", "/alerting/watchlists/", token, { name: "hot wallets", kind: "address" });
    expect(created.status).toBe(201);
    const members = `/alerting/watchlists/${created.body.id}/members/`;
    expect((await env.request("POST", members, token, [listed.address])).body).toEqual({ added: 1, count: 1 });
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
});
