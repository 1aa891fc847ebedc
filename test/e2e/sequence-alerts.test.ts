/**
 * Sequence alerts end to end on anvil (issue 33): a rule whose own conditions select the token's
 * Transfers to an address and whose `sequence.followedBy` selects the token's Approvals, correlated
 * by that address (`args.to` of the Transfer, `args.spender` of the Approval), within 5 blocks.
 * A transfer to A followed by an approval for A fires exactly once (an approval for another
 * address does not), the webhook JSON carries both records in `sequenceMatch`, and a reorg that
 * removes the approval's block retracts the alert with `removed`.
 *
 * The events reach the match stage through decode, after their block record; before mining the
 * next block the test waits until the stage has written a block's records (its Redis record hash).
 */
import { describe, expect, it } from "vitest";
import { chainKeyPrefix } from "../../pipeline/match/keys.js";
import type { SequenceMatch } from "../../pipeline/match/sequences/evaluator.js";
import { anvilWithRedis } from "../support/anvil-api.js";
import { probeStack, waitFor } from "../support/harness.js";
import { argIs, tokenTransferRule } from "../support/rules.js";

const up = await probeStack();

describe.skipIf(!up.ok)("sequence alerts on anvil", () => {
  const running = anvilWithRedis();
  const alertsOf = (ruleId: string) =>
    running()
      .env.alertsAt("seq")
      .filter((a) => a.ruleId === ruleId);
  /** Waits until the match stage holds `n` sequence records of a rule (version 1) in a block. */
  const recordsSeen = async (ruleId: string, blockHash: string, n: number) => {
    const { env, redis } = running();
    const key = `${chainKeyPrefix(env.config.redisKeyPrefix, env.config.chain)}seq:${ruleId}:1:r:${blockHash.toLowerCase()}`;
    await waitFor(async () => (await redis.hLen(key)) >= n, 30_000, 50);
  };

  it("a transfer followed by an approval for the same address fires once; a reorg removing the approval retracts it", async () => {
    const { env } = running();
    const a = env.newAddress();
    const token = await env.token.getAddress();
    const input = tokenTransferRule({
      name: "transfer then approval",
      chain: env.config.chain,
      token,
      maxConfirmationCount: 6,
      url: env.hook("seq"),
    });
    const rule = await env.rules.create("acc-e2e", {
      ...input,
      sequence: {
        followedBy: {
          targetType: "Event",
          targetMap: [
            { name: "event", operator: "Equals", value: "Approval", operatorParameters: null },
            { name: "address", operator: "Equals (ignore case)", value: token, operatorParameters: null },
            argIs("owner", "Equals (ignore case)", await env.deployer.getAddress(), { explicitNulls: true }),
          ],
        },
        within: { blocks: 5 },
        correlate: { first: "args.to", followedBy: "args.spender" },
      },
    });
    await waitFor(async () => env.match.index.get(rule.id), 10_000, 50);
    await env.mine(1);
    await new Promise((r) => setTimeout(r, 500));

    const approve = (spender: string) =>
      env.token
        .getFunction("approve")(spender, 5n)
        .then((tx) => tx.hash as string);
    const transfer = await env.transfer(a, 1_000n);
    await env.mine(1);
    const first = await env.eventOf(transfer);
    await recordsSeen(rule.id, first.blockHash, 1);
    const other = await approve(env.newAddress()); // an approval for another address: a record, no pair
    const approval = await approve(a);
    await env.mine(1);
    const second = await env.eventOf(approval);
    expect((await env.eventOf(other)).blockHash).toBe(second.blockHash);
    await recordsSeen(rule.id, second.blockHash, 2);
    await env.mine(1); // records consumed after their block record are evaluated at the next head
    await waitFor(async () => alertsOf(rule.id).length >= 1, 30_000);
    await env.mine(1);
    await new Promise((r) => setTimeout(r, 1500));

    const fired = alertsOf(rule.id);
    expect(fired.map((x) => x.status)).toEqual(["pending"]);
    const pending = fired[0]!;
    expect(pending).toMatchObject({
      entityId: `sequence:${first.entityId}:${second.entityId}`,
      blockHash: second.blockHash,
      blockNumber: second.blockNumber,
    });
    const m = (pending as unknown as { sequenceMatch: SequenceMatch }).sequenceMatch;
    expect(m).toMatchObject({
      key: a.toLowerCase(),
      first: { id: first.entityId, blockNumber: first.blockNumber, blockHash: first.blockHash },
      followedBy: { id: second.entityId, blockNumber: second.blockNumber, blockHash: second.blockHash },
    });
    expect(m.search.query.ids.values).toEqual([first.entityId, second.entityId]);

    // Replace the approval's block and the two above it with empty blocks: the pair never was.
    await env.rpc("anvil_reorg", [3, []]);
    await env.rpc("anvil_dropAllTransactions", []).catch(() => {});
    await env.mine(4);
    await waitFor(async () => alertsOf(rule.id).some((x) => x.status === "removed"), 30_000);
    await env.mine(2);
    await new Promise((r) => setTimeout(r, 1500));
    const all = alertsOf(rule.id);
    expect(all.map((x) => x.status)).toEqual(["pending", "removed"]);
    expect(all[1]).toMatchObject({ entityId: pending.entityId, blockHash: pending.blockHash });
  }, 90_000);
});
