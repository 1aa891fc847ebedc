/**
 * The alert checks of the chaos and fault-matrix e2e tests: given every alert published on the
 * alerts topic for one "every Transfer of a token" rule, and the node's canonical chain, each
 * canonical Transfer past the confirmation threshold has exactly one distinct `confirmed` alert id
 * (on its canonical block), no `confirmed` alert is on a block that is not canonical, every
 * `pending` alert of a block that left the chain has its `removed` alert, and no `removed` alert is
 * on a canonical block (pipeline/match/confirmations/decide.ts).
 * @module
 */
import { id as eventTopic, toQuantity } from "ethers";
import { rpcCall } from "../../cli/devchain/rpc.js";
import { alertId } from "../../lib/alerting/alert.js";
import type { AlertAvro } from "../../lib/alerting/avro.js";

/** keccak of `Transfer(address,address,uint256)`: topic 0 of ERC-20 and ERC-721 Transfer logs. */
export const TRANSFER_TOPIC = eventTopic("Transfer(address,address,uint256)");

/** What {@link alertProblems} checks against. */
export interface AlertCheck {
  /** The node (its canonical chain is the truth). */
  rpcUrl: string;
  ruleId: string;
  /** The token whose Transfer events the rule matches. */
  token: string;
  /** Highest height whose Transfers must be confirmed by now (head - maxConfirmationCount + 1). */
  confirmedUpTo: number;
  /** Every alert read from the alerts topic (any rule; other rules are ignored). */
  published: readonly AlertAvro[];
  /** Block hashes the test orphaned (never canonical). */
  orphaned: ReadonlySet<string>;
}

/** What {@link alertProblems} found. */
export interface AlertCheckResult {
  /** Differences (at most 50), empty when the alerts are exact. */
  problems: string[];
  /** Canonical Transfers up to `confirmedUpTo` (each needs one confirmed alert). */
  transfers: number;
}

/**
 * Checks the published alerts of one rule against the node's canonical chain (module doc). Reads
 * the Transfers with `eth_getLogs` and block hashes with `eth_getBlockByNumber`.
 * @throws when the node fails.
 */
export async function alertProblems(c: AlertCheck): Promise<AlertCheckResult> {
  const rpc = (method: string, params: unknown[]) => rpcCall(c.rpcUrl, method, params);
  const logs = (await rpc("eth_getLogs", [
    { address: c.token, fromBlock: "0x0", toBlock: toQuantity(Math.max(0, c.confirmedUpTo)), topics: [TRANSFER_TOPIC] },
  ])) as { transactionHash: string; logIndex: string; blockHash: string }[];
  const expected = new Map<string, string>(); // entity id → confirmed alert id
  for (const l of logs) {
    const entityId = `${l.transactionHash}_e_${Number(l.logIndex)}`;
    expected.set(entityId, alertId(c.ruleId, entityId, l.blockHash.toLowerCase(), "confirmed"));
  }
  const canonicalAt = new Map<number, string | undefined>();
  const isCanonical = async (n: number, hash: string) => {
    if (!canonicalAt.has(n))
      canonicalAt.set(n, ((await rpc("eth_getBlockByNumber", [toQuantity(n), false])) as { hash: string } | null)?.hash.toLowerCase());
    return !c.orphaned.has(hash) && canonicalAt.get(n) === hash.toLowerCase();
  };

  const problems: string[] = [];
  const byStatus = {
    pending: new Map<string, AlertAvro>(),
    confirmed: new Map<string, AlertAvro>(),
    removed: new Map<string, AlertAvro>(),
  };
  for (const a of c.published) if (a.ruleId === c.ruleId) byStatus[a.status].set(a.id, a);
  const confirmedIdsOf = new Map<string, Set<string>>();
  for (const a of byStatus.confirmed.values()) {
    const s = confirmedIdsOf.get(a.entityId) ?? new Set<string>();
    s.add(a.id);
    confirmedIdsOf.set(a.entityId, s);
    if (!(await isCanonical(a.blockNumber, a.blockHash)))
      problems.push(`confirmed alert ${a.id} of ${a.entityId} is on block ${a.blockNumber} ${a.blockHash}, not canonical`);
  }
  for (const [entityId, id] of expected) {
    const got = [...(confirmedIdsOf.get(entityId) ?? [])];
    if (got.length !== 1 || got[0] !== id) problems.push(`${entityId}: confirmed alert ids ${JSON.stringify(got)}, expected [${id}]`);
  }
  for (const a of byStatus.pending.values()) {
    if (await isCanonical(a.blockNumber, a.blockHash)) continue;
    if (!byStatus.removed.has(alertId(c.ruleId, a.entityId, a.blockHash, "removed")))
      problems.push(`pending alert of ${a.entityId} on orphaned block ${a.blockNumber} ${a.blockHash}: no removed alert`);
  }
  for (const a of byStatus.removed.values())
    if (await isCanonical(a.blockNumber, a.blockHash))
      problems.push(`removed alert ${a.id} of ${a.entityId} is on canonical block ${a.blockNumber} ${a.blockHash}`);
  return { problems: problems.slice(0, 50), transfers: expected.size };
}
