/**
 * A saved search with a sequence end to end on anvil (issue 33): the search is created through the
 * API (`POST /alerting/searches/`, kind `event`) — its query selects the token's Transfers,
 * `sequence.followedBy.query` the token's Approvals, correlated by the transfer's `args.to` and the
 * approval's `args.owner`, within 5 blocks. A transfer to A followed by an approval A signs fires
 * exactly once (an approval by another owner in the same block does not pair), and the webhook
 * JSON carries both records in `sequenceMatch`. The records are the queries', the firing the
 * sequence evaluator's, as for a sequence rule (test/e2e/sequence-alerts.test.ts, whose waiting
 * this follows: before mining the next block the test waits until the stage has written a block's
 * records to the sequence's record hash).
 */
import { describe, expect, it } from "vitest";
import { chainKeyPrefix } from "../../pipeline/match/keys.js";
import type { SequenceMatch } from "../../pipeline/match/sequences/evaluator.js";
import { anvilWithApi } from "../support/anvil-api.js";
import type { AnvilEnv } from "../support/anvil-env.js";
import { probeStack, waitFor } from "../support/harness.js";

const up = await probeStack();

describe.skipIf(!up.ok)("saved-search sequence alerts on anvil", () => {
  const running = anvilWithApi();

  it("a Transfer followed by an Approval whose owner is the transfer's recipient, within 5 blocks, fires once", async () => {
    const { env, url, redis } = running();
    const token = env.tokenAddress.toLowerCase();
    const ofToken = (event: string) => ({ bool: { filter: [{ term: { event } }, { term: { address: token } }] } });
    const res = await fetch(`${url}/alerting/searches/`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.config.api.tokens[0]}`, "content-type": "application/json" },
      body: JSON.stringify({
        ...env.config.chain,
        name: "transfer then an approval by its recipient",
        maxConfirmationCount: 6,
        sendPendingAlerts: true,
        alerts: [{ type: "Webhook (POST)", parameters: { url: env.hook("ssq") } }],
        kind: "event",
        query: ofToken("transfer"),
        sequence: {
          followedBy: { kind: "event", query: ofToken("approval") },
          within: { blocks: 5 },
          correlate: { first: "args.to", followedBy: "args.owner" },
        },
      }),
    });
    const search = (await res.json()) as { id: string; version: number };
    expect(res.status, JSON.stringify(search)).toBe(201);
    await waitFor(async () => env.match.searchIndex.get(search.id), 10_000, 50);
    const base = `${chainKeyPrefix(env.config.redisKeyPrefix, env.config.chain)}seq:${search.id}:${search.version}`;
    // The sequence starts at the first block the stage evaluates after the search (it saves its state then).
    await waitFor(
      async () => {
        await env.mine(1);
        return (await redis.exists(base)) === 1;
      },
      30_000,
      300,
    );
    const recordsSeen = async (blockHash: string, n: number) =>
      waitFor(async () => (await redis.hLen(`${base}:r:${blockHash.toLowerCase()}`)) >= n, 30_000, 50);
    const alerts = () => env.alertsAt("ssq").filter((a) => a.ruleId === search.id);

    const owner = await env.newSender();
    const a = (await owner.getAddress()).toLowerCase();
    const transfer = await env.transfer(a, 1_000n);
    await env.mine(1);
    const first = await env.eventOf(transfer);
    await recordsSeen(first.blockHash, 1);
    const approve = (signer: Awaited<ReturnType<AnvilEnv["newSender"]>>) =>
      (env.token.connect(signer) as typeof env.token)
        .getFunction("approve")(env.newAddress(), 5n)
        .then((tx) => tx.hash as string);
    const other = await approve(await env.newSender()); // an owner who received no transfer: a record, no pair
    const approval = await approve(owner);
    await env.mine(1);
    const second = await env.eventOf(approval);
    expect((await env.eventOf(other)).blockHash).toBe(second.blockHash);
    await recordsSeen(second.blockHash, 2);
    await env.mine(1); // records consumed after their block record are evaluated at the next head
    await waitFor(async () => alerts().length >= 1, 30_000);
    await env.mine(2);
    await new Promise((r) => setTimeout(r, 1500));

    const fired = alerts();
    expect(fired.map((x) => [x.status, x.entityId])).toEqual([["pending", `sequence:${first.entityId}:${second.entityId}`]]);
    expect(fired[0]).toMatchObject({ targetType: "Event", blockHash: second.blockHash, blockNumber: second.blockNumber });
    const m = (fired[0] as unknown as { sequenceMatch: SequenceMatch }).sequenceMatch;
    expect(m).toMatchObject({
      key: a,
      first: { id: first.entityId, blockNumber: first.blockNumber, blockHash: first.blockHash },
      followedBy: { id: second.entityId, blockNumber: second.blockNumber, blockHash: second.blockHash },
    });
    expect(m.search.query.ids.values).toEqual([first.entityId, second.entityId]);
  }, 120_000);
});
