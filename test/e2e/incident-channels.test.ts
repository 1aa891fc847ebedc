/**
 * The incident-tool and Teams channels end to end on anvil (issue 35): a rule with a PagerDuty, an
 * Opsgenie and a Teams action (local receivers of the Events API v2, the Alert API and a Teams webhook,
 * test/support/incident-receivers.ts, as `CHAINSIFT_PAGERDUTY_API_URL` and
 * `CHAINSIFT_OPSGENIE_API_URL`) matches transfers. A transfer whose block is reorganised away
 * (`anvil_reorg`) before confirmation opens an incident in each tool with its pending alert and
 * the `removed` alert resolves the PagerDuty incident and closes the Opsgenie alert, and posts a
 * Teams follow-up card naming the replaced block; a transfer that stays is paged once, its
 * confirmed alert grouped into the same incident.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilEnv, startAnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";
import { type IncidentReceivers, startIncidentReceivers } from "../support/incident-receivers.js";
import { tokenTransferRule } from "../support/rules.js";

const up = await probeStack();
const ROUTING_KEY = "E2eR0ut1ngKeyE2eR0ut1ngKeyE2e123";
const API_KEY = "0b6b7c0e-7d3c-4f5e-9a1b-2c3d4e5f6a7b";

describe.skipIf(!up.ok)("PagerDuty, Opsgenie and Teams: pages per match, resolved by a reorg (anvil)", () => {
  let env: AnvilEnv;
  let rx: IncidentReceivers;

  beforeAll(async () => {
    env = await startAnvilEnv({
      traces: false,
      match: () => ({ reloadIntervalMs: 500 }),
      prepare: async (h, onStop) => {
        rx = await startIncidentReceivers([API_KEY]);
        onStop(() => rx.close());
        h.config.notify = { ...h.config.notify, pagerdutyApiUrl: rx.base, opsgenieApiUrl: rx.base };
      },
    });
  }, 180_000);

  afterAll(async () => {
    await env?.stop();
  });

  it("a reorg resolves the PagerDuty incident, closes the Opsgenie alert and posts a Teams follow-up; a confirmed match pages once", async () => {
    const to = env.devAccounts[6]!;
    const input = tokenTransferRule({
      name: "paged transfers",
      chain: env.config.chain,
      token: await env.token.getAddress(),
      maxConfirmationCount: 3,
      url: env.hook("unused"),
      to,
    });
    input.config.alerts = [
      { type: "PagerDuty", parameters: { routingKey: ROUTING_KEY, severity: "warning" } },
      { type: "Opsgenie", parameters: { apiKey: API_KEY, priority: "P2" } },
      { type: "Teams", parameters: { url: rx.teamsUrl }, throttle: false },
    ];
    const rule = await env.rules.create("acc-e2e", input);
    await waitFor(async () => env.match.index.get(rule.id), 10_000, 50);
    const open = (service: "pagerduty" | "opsgenie") => rx.incidents.filter((i) => i.service === service && i.status === "open");

    // 1. pending, then the block is reorganised away
    await env.transfer(to, 5_000_000n);
    await env.mine(1);
    await waitFor(async () => open("pagerduty").length === 1 && open("opsgenie").length === 1, 30_000);
    const [paged] = open("pagerduty");
    const [created] = open("opsgenie");
    expect(paged!.key).toBe(created!.key); // one key per match: dedup_key and alias
    expect((paged!.opened.payload as { severity: string; class: string }).class).toBe("pending");
    expect(created!.opened.priority).toBe("P2");

    const height = Number(((await env.rpc("eth_getBlockByNumber", ["latest", false])) as { number: string }).number);
    await env.rpc("anvil_reorg", [1, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(3);
    await waitFor(async () => paged!.status === "resolved" && created!.status === "resolved", 30_000);
    expect(paged!.updates.at(-1)).toEqual({ routing_key: ROUTING_KEY, event_action: "resolve", dedup_key: paged!.key });
    const now = ((await env.rpc("eth_getBlockByNumber", [`0x${height.toString(16)}`, false])) as { hash: string }).hash.toLowerCase();
    expect(String(created!.updates.at(-1)!.note)).toContain(`replaced by block ${height} (${now.slice(0, 6)}…${now.slice(-4)})`);
    expect(paged!.count).toBe(1); // never confirmed
    await waitFor(async () => rx.cards.length >= 2, 30_000);
    expect(rx.cards.map((c) => c.card.body[0]!.text?.slice(0, 10))).toEqual([expect.stringMatching(/^paged tran/), "RETRACTED:"]);
    expect(rx.cards[1]!.card.body[0]!.text).toContain(`replaced by block ${height} (${now.slice(0, 6)}…${now.slice(-4)})`);

    // 2. a transfer that stays: pending pages, confirmed is grouped into the same incident
    await env.transfer(to, 6_000_000n);
    await env.mine(1);
    await waitFor(async () => open("pagerduty").length === 1 && open("opsgenie").length === 1, 30_000);
    await env.mine(3);
    await waitFor(async () => open("pagerduty")[0]!.count === 2 && open("opsgenie")[0]!.count === 2, 30_000);
    const [again] = open("pagerduty");
    expect((again!.updates[0]!.payload as { class: string }).class).toBe("confirmed");
    expect(rx.incidents.filter((i) => i.service === "pagerduty")).toHaveLength(2); // one per match, never two for one
    expect(again!.key).not.toBe(paged!.key);
    expect(again!.key).toMatch(/^chainsift-[0-9a-f]{64}$/);
    // every request the receivers got was accepted (no 4xx from a malformed body)
    expect(rx.requests.filter((q) => q.status !== 202)).toEqual([]);
  }, 120_000);
});
