/**
 * `In watchlist` rules end to end on anvil (rules and watchlists through the real API; ingest →
 * Kafka → match → notify): a transaction from a listed sender alerts, one from an unlisted sender in
 * the same block does not; after the second sender is added to the list by API, its next
 * transaction alerts, without re-saving the rule.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Watchlist } from "../../lib/watchlists/store.js";
import { type AlertingEnv, probeServices, startAlertingEnv } from "./alerting-api/support.js";

const services = await probeServices();
if (!services.ok) console.warn(`watchlist alerts: ${services.message}`);

describe.skipIf(!services.ok)("In watchlist rules end to end (anvil)", () => {
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
  });
});
