/**
 * Backtests of state rules (a rule with `stateCondition`; issue 34 part 3, docs/alerting.md "Backtests
 * of state rules"): instead of scanning indexed records, the rule's watched subject is read at every
 * due block of the range (as the live evaluator reads: every N blocks, or with `every: "log"` the blocks
 * whose header's `logsBloom` may hold a log of the subject's contract; lib/match/state-backtest.ts
 * `stateDue`) through the chain's JSON-RPC client, at the block's hash (EIP-1898, lib/chain/state-reads.ts
 * `stateCall`), and the readings go through the live path's crossing arithmetic. A `call` subject
 * without `abi` takes its function from the ABI registry as `POST /alerting/rules/` does
 * (api/routes/rules/state-abi.ts; `CS_RULE_STATE_ABI_UNKNOWN` at `rule.stateCondition.subject.function`).
 *
 * Reads: per batch of up to {@link STATE_BACKTEST_BATCH} candidate blocks (every N-th; every block for
 * `"log"`), one JSON-RPC batch of `eth_getBlockByNumber` (hashes and blooms) and one of the subject's
 * reads at the due ones. Bounds: `maxReads` candidate blocks per backtest (config
 * `stateReads.backtestMaxReads`): a range with more is refused up front (`CS_BACKTEST_RANGE_TOO_LARGE`);
 * and the backtest's time cap, checked before every batch.
 *
 * Archive state: before the first read the node is asked for a state it can only answer with the
 * block's state (`eth_getBalance` of the zero address at the first due block's hash). A node that
 * answers with a pruned-state error (`missing trie node`, `header not found`, … lib/chain/state-reads.ts
 * `errorKind`), or does not know the block, refuses the backtest with 422 `CS_BACKTEST_NO_ARCHIVE_STATE`
 * (path `from`, or `last`): no reading is guessed. Should a later block's state be missing all the
 * same (a load balancer over mixed nodes), the answer ends there with an `error` line of that code.
 *
 * Lines: those of every backtest (api/backtest/run.ts): `start` (`kinds` empty), one `match` per
 * firing (entity `state:<block>`, `entity.state.reading`, and `previous`: the reading before it),
 * one `block` per due block read (`entities` 1, `reading`, or `unread` when the node answered an error
 * for this subject, e.g. a call to a contract not deployed yet: skipped, the next reading continues
 * from the last one read), `error`, `end` (`blocks`: blocks read).
 * @module
 */
import { errorKind, readingOf, stateCall } from "../../lib/chain/state-reads.js";
import type { ChainId } from "../../lib/config/index.js";
import { RetryableError } from "../../lib/errors.js";
import { createStateBacktester } from "../../lib/match/state-backtest.js";
import type { RpcClient } from "../../lib/rpc/client.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { ApiError, apiError } from "../errors.js";
import { type AbiLookup, resolveStateAbi } from "../routes/rules/state-abi.js";
import { endLineOf } from "./end-line.js";
import type { BacktestLine, BacktestRun, BacktestScanDeps } from "./run.js";

/** Due blocks read per JSON-RPC batch. */
export const STATE_BACKTEST_BATCH = 100;

/** What a state-rule backtest reads through ({@link BacktestScanDeps.state}). */
export interface StateScanDeps {
  /** The rule's chain's JSON-RPC client; undefined when the API has no endpoint for it (refused, `CS_BACKTEST_TARGET_UNSUPPORTED`). */
  rpc: RpcClient | undefined;
  /** Most readings per backtest (config `stateReads.backtestMaxReads`, env `CHAINSIFT_STATE_BACKTEST_MAX_READS`, default 10000). */
  maxReads: number;
  /** Due blocks per JSON-RPC batch; default {@link STATE_BACKTEST_BATCH}. */
  batchSize?: number;
  /** The ABI registry a `call` subject without `abi` is resolved in (the caller's, then global); absent: such a rule is refused. */
  abis?: AbiLookup;
}

const NO_ABIS: AbiLookup = { get: async () => null };

const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000";
const hex = (n: number) => `0x${n.toString(16)}`;

/** The due blocks of `[from, to]` for a rule read every `every` blocks: the first and how many. */
export function dueBlocks(from: number, to: number, every: number): { first: number; count: number } {
  const first = Math.ceil(from / every) * every;
  return { first, count: first > to ? 0 : Math.floor((to - first) / every) + 1 };
}

/** A block header as `eth_getBlockByNumber` answers it (the fields read). */
interface Header {
  number: string;
  hash: string;
  logsBloom?: string | null;
}

/** The headers of blocks `numbers` (null for a block the node does not know). @throws {RetryableError} when no endpoint answered. */
async function headers(rpc: RpcClient, numbers: readonly number[]): Promise<Array<Header | null>> {
  const replies = await rpc.batch(numbers.map((n) => ({ method: "eth_getBlockByNumber", params: [hex(n), false] })));
  return replies.map((r) => {
    const h = r.error === undefined ? (r.result as Header | null) : null;
    return h !== null && typeof h === "object" && typeof h.hash === "string" ? h : null;
  });
}

/** Why the node cannot give the state at `block`: a pruned-state error or an unknown block; null when it can. */
async function missingState(rpc: RpcClient, block: number): Promise<string | null> {
  const [header] = await headers(rpc, [block]);
  if (!header) return `the node does not serve block ${block}`;
  const [reply] = await rpc.batch([{ method: "eth_getBalance", params: [ZERO_ADDRESS, { blockHash: header.hash }] }]);
  if (reply?.error === undefined) return null;
  if (errorKind(reply.error) === "unavailable") return `the node does not hold the state of block ${block}: ${reply.error.message}`;
  throw apiError("CS_BACKEND_UNAVAILABLE", `the chain's node answered eth_getBalance at block ${block} with: ${reply.error.message}`);
}

/**
 * Starts a state-rule backtest (module doc). Refusals are thrown before the first line.
 * @param byLast - whether the range was given as `last` (refusals then name `last`, else `from`/`to`).
 * @throws `ApiError` 400 `CS_BACKTEST_TARGET_UNSUPPORTED` (no JSON-RPC client for the chain), 400
 *   `CS_BACKTEST_RANGE_TOO_LARGE` (more due blocks than `maxReads`), 422 `CS_BACKTEST_NO_ARCHIVE_STATE`,
 *   503 `CS_BACKEND_UNAVAILABLE` (the node unreachable or answering the probe with another error), 400
 *   `CS_RULE_STATE_ABI_UNKNOWN` (path `rule.stateCondition.subject.function`: a `call` subject without `abi`
 *   whose function no registered ABI has).
 */
export async function startStateBacktest(
  deps: Pick<BacktestScanDeps, "timeoutMs" | "clock" | "now" | "explorers" | "log" | "state">,
  chain: ChainId,
  run: BacktestRun & { rule: RuleInput },
  byLast: boolean,
): Promise<AsyncGenerator<BacktestLine>> {
  const clock = deps.clock ?? (() => performance.now());
  const started = clock();
  const client = deps.state?.rpc;
  if (!deps.state || !client)
    throw apiError("CS_BACKTEST_TARGET_UNSUPPORTED", "no JSON-RPC endpoint of this chain is configured in the API", "rule.stateCondition");
  const rpc: RpcClient = client;
  const { maxReads } = deps.state;
  await resolveStateAbi(deps.state.abis ?? NO_ABIS, run.accountId, run.rule).catch((err: unknown) => {
    if (!(err instanceof ApiError)) throw err;
    throw new ApiError(err.details.map((d) => ({ ...d, path: d.path === null ? "rule" : `rule.${d.path}` })));
  });
  const batchSize = Math.max(1, deps.state.batchSize ?? STATE_BACKTEST_BATCH);
  const tester = createStateBacktester({
    rule: run.rule,
    accountId: run.accountId,
    chain,
    head: run.head ?? run.to,
    ...(deps.explorers ? { explorers: deps.explorers } : {}),
    ...(deps.now ? { now: deps.now } : {}),
  });
  const cadence = tester.condition.every ?? { blocks: 1 };
  const every = cadence === "log" ? 1 : Math.max(1, cadence.blocks);
  const { first, count } = dueBlocks(run.from, run.to, every);
  if (count > maxReads) {
    throw apiError(
      "CS_BACKTEST_RANGE_TOO_LARGE",
      `the state rule reads ${count} blocks of this range (every ${cadence === "log" ? "block's header, for every: log" : every}); at most ${maxReads} per backtest (CHAINSIFT_STATE_BACKTEST_MAX_READS; split the range)`,
      byLast ? "last" : "to",
    );
  }
  if (count > 0) {
    const missing = await missingState(rpc, first).catch((err: unknown) => {
      if (err instanceof RetryableError) throw apiError("CS_BACKEND_UNAVAILABLE", `the chain's node did not answer: ${err.message}`);
      throw err;
    });
    if (missing !== null)
      throw apiError("CS_BACKTEST_NO_ARCHIVE_STATE", `${missing}; a backtest needs an archive node`, byLast ? "last" : "from");
  }

  async function* lines(): AsyncGenerator<BacktestLine> {
    const totals = { blocks: 0, records: 0, entities: 0, matches: 0, alerts: 0 };
    const end = endLineOf(totals, () => clock() - started);
    const { rule, condition } = tester;
    yield {
      type: "start",
      from: run.from,
      to: run.to,
      head: run.head,
      kinds: [],
      rule: {
        name: rule.name,
        targetType: rule.config.targetType,
        maxConfirmationCount: rule.maxConfirmationCount,
        sendPendingAlerts: rule.sendPendingAlerts,
      },
      limits: { timeoutMs: deps.timeoutMs },
    };
    for (let i = 0; i < count; i += batchSize) {
      const numbers = Array.from({ length: Math.min(batchSize, count - i) }, (_, j) => first + (i + j) * every);
      const nextFrom = numbers[0] as number;
      if (clock() - started > deps.timeoutMs) {
        yield end("CS_BACKTEST_TIME_CAP", nextFrom);
        return;
      }
      let read: Array<{ header: Header | null; due: boolean; reply: Awaited<ReturnType<RpcClient["batch"]>>[number] | undefined }>;
      try {
        const hs = await headers(rpc, numbers);
        const due = hs.map((h, j) => h !== null && tester.due({ number: numbers[j] as number, logsBloom: h.logsBloom ?? null }));
        const calls = hs.flatMap((h, j) => (h !== null && due[j] ? [stateCall(condition.subject, h.hash)] : []));
        const replies = calls.length === 0 ? [] : await rpc.batch(calls);
        let k = 0;
        read = hs.map((header, j) => ({ header, due: due[j] === true, reply: due[j] ? replies[k++] : undefined }));
      } catch (err) {
        deps.log?.warn({ err }, "state backtest reads failed; the answer ends with an error line");
        const code = err instanceof RetryableError ? "CS_BACKEND_UNAVAILABLE" : "CS_INTERNAL";
        yield { type: "error", error: { code, message: `the backtest stopped: ${(err as Error).message}` } };
        yield end(code, nextFrom);
        return;
      }
      for (const [j, { header, due, reply }] of read.entries()) {
        const n = numbers[j] as number;
        if (header !== null && !due) continue; // every: "log", and the bloom says no log of the contract
        const reading = header === null ? null : readingOf(condition.subject, reply);
        if (header === null || (reading !== null && !reading.ok && reading.kind === "unavailable")) {
          const why = header === null ? "the node does not serve this block" : (reading as { message: string }).message;
          const code = "CS_BACKTEST_NO_ARCHIVE_STATE";
          yield { type: "error", error: { code, message: `the backtest stopped at block ${n}: ${why}` } };
          yield end(code, n);
          return;
        }
        const r = reading as NonNullable<typeof reading>;
        const step = tester.block({ number: n, hash: header.hash }, r);
        if (step.match) yield { type: "match", ...step.match };
        totals.blocks++;
        totals.entities++;
        totals.matches += step.match ? 1 : 0;
        totals.alerts += step.alerts;
        yield {
          type: "block",
          blockNumber: n,
          blockHash: header.hash,
          records: 0,
          entities: 1,
          matches: step.match ? 1 : 0,
          alerts: step.alerts,
          ...(r.ok ? { reading: r.value.toString() } : { unread: r.message }),
        };
      }
    }
    yield end(null, null);
  }
  return lines();
}
