/**
 * Backtest = live for state rules (issue 34 part 3): on anvil (which keeps the state of every block),
 * a wallet's balance is moved across a threshold and back over a dozen blocks; the rule is then
 * backtested by `POST /alerting/rules/test/` over those blocks and evaluated live by the match stage's
 * state evaluator (pipeline/match/state/evaluator.ts, real Redis) fed the same blocks. Both must fire
 * at the same blocks with the same entities (block hash, reading); `chainsift rules test` answers the same. A node answering a pruned-state
 * error (test/support/scripted-rpc.ts) makes the backtest a 422 `CS_BACKTEST_NO_ARCHIVE_STATE`;
 * a range reading more blocks than the read budget is refused. Skips when Elasticsearch or Redis is down.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Contract, ContractFactory, getAddress, JsonRpcProvider, JsonRpcSigner } from "ethers";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import type { BacktestLine } from "../../../api/backtest/run.js";
import { startStateBacktest } from "../../../api/backtest/state-scan.js";
import { runCli } from "../../../cli/chainsift.js";
import { type AnvilHandle, startAnvil } from "../../../cli/devchain/anvil.js";
import { compileDevContracts } from "../../../cli/devchain/contracts.js";
import { type Config, loadConfig } from "../../../lib/config/index.js";
import { createLogger } from "../../../lib/logger.js";
import { backtestRule } from "../../../lib/match/backtest.js";
import { createRuleIndex } from "../../../lib/match/rule-index.js";
import { type ConnectedRedis, connectRedisClient } from "../../../lib/redis.js";
import { createRpcClient, type RpcClient } from "../../../lib/rpc/client.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import type { MatchInput } from "../../../pipeline/match/confirmations/decide.js";
import { createStateEvaluator } from "../../../pipeline/match/state/evaluator.js";
import { type ScriptedRpc, startScriptedRpc } from "../../support/scripted-rpc.js";
import { deletePrefix } from "../accounts/redis.js";
import { searchStackUp } from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const ANVIL = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
const TOKEN = `test-${randomBytes(8).toString("hex")}`;
const PREFIX = `sb-${randomBytes(4).toString("hex")}-`;
const REDIS_PREFIX = PREFIX.replace(/-$/, ":");
const AUTH = { authorization: `Bearer ${TOKEN}` };
const WALLET = "0x00000000000000000000000000000000000000a7";
const ETH = 10n ** 18n;
/** Balances in ETH, one per mined block: 4 crosses below 5, 3 stays below, 7 is not past reset 8, 9 re-arms, 2 crosses again. */
const BALANCES = [10, 4, 3, 7, 9, 2];

/** An API on anvil's chain whose state backtests read through `rpcUrl`, with a read budget of `maxReads`. */
function apiConfig(rpcUrl: string, maxReads: number): Config {
  return {
    ...base,
    chain: ANVIL,
    chainId: 31337,
    chainsFile: undefined,
    ingest: { ...base.ingest, rpcUrl, rpcUrls: [rpcUrl] },
    elasticsearch: { ...base.elasticsearch, indexPrefix: PREFIX },
    redisKeyPrefix: REDIS_PREFIX,
    api: { ...base.api, tokens: [TOKEN], rateLimitMax: 100_000 },
    backtest: { maxBlocks: 1000, timeoutMs: 60_000 },
    stateReads: { ...base.stateReads, backtestMaxReads: maxReads },
  };
}

function stateRule(stateCondition: Record<string, unknown>): RuleInput {
  return {
    name: "hot wallet low",
    maxConfirmationCount: 0,
    sendPendingAlerts: false,
    state: "enabled",
    ...ANVIL,
    config: {
      targetType: "Event",
      targetMap: [{ name: "event", operator: "Equals", value: "Transfer" }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/s" } }],
    },
    stateCondition,
  } as RuleInput;
}

const THRESHOLD = {
  subject: { type: "balance", address: WALLET },
  decimals: 18,
  comparison: { operator: "Less", threshold: "5", reset: "8" },
};
const CHANGE = { subject: { type: "balance", address: WALLET }, decimals: 18, every: { blocks: 2 }, comparison: { percent: "50" } };

describe.skipIf(!up)("state-rule backtests", () => {
  let anvil: AnvilHandle;
  let rpc: RpcClient;
  let redis: ConnectedRedis;
  let app: FastifyInstance;
  let from = 0;
  let to = 0;
  type Header = { number: number; hash: string; parentHash: string; logsBloom: string };
  const blocks = new Map<number, Header>();
  /** Reads the headers of blocks `a`–`b` into {@link blocks}. */
  const loadBlocks = async (a: number, b: number) => {
    for (let n = a; n <= b; n++) {
      const h = await rpc.request<Header>("eth_getBlockByNumber", [`0x${n.toString(16)}`, false]);
      blocks.set(n, { number: n, hash: h.hash, parentHash: h.parentHash, logsBloom: h.logsBloom });
    }
  };

  beforeAll(async () => {
    anvil = await startAnvil({ blockTimeSec: 0 });
    rpc = createRpcClient({ urls: [anvil.rpcUrl] });
    redis = await connectRedisClient(base.redisUrl);
    for (const eth of BALANCES) {
      await rpc.request("anvil_setBalance", [WALLET, `0x${(BigInt(eth) * ETH).toString(16)}`]);
      // A cheat code changes the newest block's state in place: mine the block, then one above it.
      await rpc.request("evm_mine", []);
      await rpc.request("evm_mine", []);
    }
    to = Number(await rpc.request<string>("eth_blockNumber", []));
    from = to - 2 * BALANCES.length + 1;
    await loadBlocks(from, to);
    app = await buildApi({ config: apiConfig(anvil.rpcUrl, 50), logger: false });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    rpc?.destroy();
    await redis?.close();
    await deletePrefix(base.redisUrl, REDIS_PREFIX);
    await anvil?.stop();
  });

  async function backtest(rule: RuleInput, range = { from, to }) {
    const res = await app.inject({ method: "POST", url: "/alerting/rules/test/", headers: AUTH, payload: { rule, ...range } });
    expect(res.statusCode, res.body).toBe(200);
    const lines = res.body
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.at(-1)).toMatchObject({ type: "end", complete: true, nextFrom: null });
    return lines;
  }

  /** The live evaluator's firings over the same blocks (the rule as the backtest evaluates it). */
  async function live(input: RuleInput, space: string, range = { from, to }): Promise<MatchInput[]> {
    const fired: MatchInput[] = [];
    const ev = createStateEvaluator({
      redis: redis.client,
      keyPrefix: `${REDIS_PREFIX}${space}:`,
      chain: ANVIL,
      logger: createLogger("silent"),
      rpc,
      settings: { ...base.stateReads, readAttempts: 2, readRetryMs: 1 },
      fire: async (m) => {
        fired.push(...m);
      },
    });
    ev.watch(createRuleIndex({ chain: ANVIL })).upsert(backtestRule({ rule: input, accountId: "acct" }, () => new Date()));
    for (let n = range.from; n <= range.to; n++) await ev.onBlock(blocks.get(n) as Header, range.to, (k) => blocks.get(k)?.hash);
    return fired;
  }

  it.each([
    ["threshold with reset", THRESHOLD, "threshold"],
    ["relative change every 2 blocks", CHANGE, "change"],
  ])("%s: the backtest fires where the live evaluator does, with the same entities", async (_name, condition, space) => {
    const rule = stateRule(condition);
    const lines = await backtest(rule);
    const matches = lines.filter((l) => l.type === "match");
    const liveFired = await live(rule, space);
    expect(liveFired.length).toBeGreaterThan(0);
    expect(matches.map((m) => m.entity)).toEqual(liveFired.map((m) => m.entity));
    // Each match names the reading before it, which is the previous block line's reading.
    const reads = lines.filter((l) => l.type === "block");
    for (const m of matches) {
      const i = reads.findIndex((b) => b.blockNumber === m.blockNumber);
      expect(m.previous).toBe(i === 0 ? null : reads[i - 1]?.reading);
    }
    const every = (condition as { every?: { blocks: number } }).every?.blocks ?? 1;
    expect(reads.map((b) => b.blockNumber)).toEqual([...blocks.keys()].filter((n) => n % every === 0));
  });

  it("threshold: fires at the blocks holding 4 and 2 ETH, with confirmed alerts", async () => {
    const matches = (await backtest(stateRule(THRESHOLD))).filter((l) => l.type === "match");
    expect(matches.map((m) => (m.entity as { state: { reading: string } }).state.reading)).toEqual([
      (4n * ETH).toString(),
      (2n * ETH).toString(),
    ]);
    expect(matches.map((m) => (m.alerts as Array<{ alert: { status: string } }>).map((a) => a.alert.status))).toEqual([
      ["confirmed"],
      ["confirmed"],
    ]);
  });

  it("the CLI reads the configured node and answers the API's lines", async () => {
    const dir = await mkdtemp(join(tmpdir(), "state-bt-"));
    try {
      const file = join(dir, "rule.json");
      const rule = stateRule(THRESHOLD);
      await writeFile(file, JSON.stringify(rule));
      const out: string[] = [];
      const err: string[] = [];
      const args = ["rules", "test", file, "--from", String(from), "--to", String(to), "--json"];
      const code = await runCli(args, {
        config: apiConfig(anvil.rpcUrl, 50),
        output: { out: (l) => out.push(l), err: (l) => err.push(l) },
      });
      expect(code, err.join("\n")).toBe(0);
      const cli = out.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.type === "match");
      const api = (await backtest(rule)).filter((l) => l.type === "match");
      expect(cli.map((l) => l.entity)).toEqual(api.map((l) => l.entity));
      expect(cli.length).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("stops at the time cap between batches, at a block boundary, with nextFrom", async () => {
    let now = 0;
    const deps = { timeoutMs: 10, clock: () => (now += 4), state: { rpc, maxReads: 50, batchSize: 2 } };
    const run = { rule: stateRule(THRESHOLD), accountId: "acct", from, to, head: to };
    const lines: BacktestLine[] = [];
    for await (const l of await startStateBacktest(deps, ANVIL, run, false)) lines.push(l);
    const reads = lines.flatMap((l) => (l.type === "block" ? [l.blockNumber] : []));
    expect(reads.length).toBeGreaterThan(0);
    expect(reads.length).toBeLessThan(to - from + 1);
    expect(reads).toEqual([...blocks.keys()].slice(0, reads.length));
    expect(lines.at(-1)).toMatchObject({
      type: "end",
      complete: false,
      reason: "CS_BACKTEST_TIME_CAP",
      nextFrom: (reads.at(-1) as number) + 1,
    });
  });

  it("refuses a range whose due blocks exceed the read budget, naming to", async () => {
    const res = await app.inject({
      method: "POST",
      url: "/alerting/rules/test/",
      headers: AUTH,
      payload: { rule: stateRule(THRESHOLD), from: 0, to: 60 },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatchObject({ code: "CS_BACKTEST_RANGE_TOO_LARGE", path: "to" });
  });

  describe('a token balance read on logs only (every: "log"), its function from the registered ABI', () => {
    const holder = "0x00000000000000000000000000000000000000b9";
    const range = { from: 0, to: 0 };
    let balanceOf: Record<string, unknown>;
    let token = "";
    let transfers: number[] = [];

    beforeAll(async () => {
      const provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
      try {
        const [account] = await rpc.request<string[]>("eth_accounts", []);
        const signer = new JsonRpcSigner(provider, getAddress(account as string));
        const { token: compiled } = await compileDevContracts();
        const contract = (await (
          await new ContractFactory(compiled.abi, compiled.bytecode, signer).deploy(signer.address)
        ).waitForDeployment()) as unknown as Contract;
        token = getAddress(await contract.getAddress());
        await (await contract.getFunction("mint")(signer.address, 10n ** 12n)).wait();
        range.from = Number(await rpc.request<string>("eth_blockNumber", [])) + 1;
        const send = async (amount: bigint) =>
          (await (await contract.getFunction("transfer")(holder, amount)).wait())?.blockNumber as number;
        await rpc.request("evm_mine", []);
        transfers = [await send(3_000_000n)];
        await rpc.request("evm_mine", []);
        await rpc.request("evm_mine", []);
        transfers.push(await send(3_000_000n));
        await rpc.request("evm_mine", []);
        range.to = Number(await rpc.request<string>("eth_blockNumber", []));
        await loadBlocks(range.from, range.to);
        balanceOf = (compiled.abi as Array<Record<string, unknown>>).find((e) => e.type === "function" && e.name === "balanceOf") as Record<
          string,
          unknown
        >;
        const put = await app.inject({ method: "PUT", url: `/abis/${token}`, headers: AUTH, payload: { abi: compiled.abi } });
        expect(put.statusCode, put.body).toBe(201);
      } finally {
        provider.destroy();
      }
    }, 60_000);

    const condition = (comparison: Record<string, unknown>, abi?: unknown[]) => ({
      subject: { type: "call", to: token, function: "balanceOf", args: [holder], ...(abi ? { abi } : {}) },
      decimals: 6,
      every: "log",
      comparison,
    });

    it.each([
      ["a threshold", { operator: "Greater or Equal", threshold: "5" }, "log-threshold"],
      ["changed", { changed: true }, "log-changed"],
    ])("%s: reads the blocks with a log of the token only, and fires where the live evaluator does", async (_name, comparison, space) => {
      const lines = await backtest(stateRule(condition(comparison)), range);
      expect(lines.filter((l) => l.type === "block").map((l) => l.blockNumber)).toEqual(transfers);
      const matches = lines.filter((l) => l.type === "match");
      const liveFired = await live(stateRule(condition(comparison, [balanceOf])), space, range);
      expect(matches.length).toBeGreaterThan(0);
      expect(matches.map((m) => m.entity)).toEqual(liveFired.map((m) => m.entity));
    });

    it("refuses a function no registration has, at rule.stateCondition.subject.function", async () => {
      const rule = stateRule({
        ...condition({ changed: true }),
        subject: { type: "call", to: holder, function: "balanceOf", args: [holder] },
      });
      const res = await app.inject({ method: "POST", url: "/alerting/rules/test/", headers: AUTH, payload: { rule, ...range } });
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().error).toMatchObject({ code: "CS_RULE_STATE_ABI_UNKNOWN", path: "rule.stateCondition.subject.function" });
    });
  });

  describe("a node that loses the state midway, and a subject it cannot read at one block", () => {
    let flaky: ScriptedRpc;
    let flakyApi: FastifyInstance;
    const header = (n: string) => ({
      number: n,
      hash: `0x${Number(n).toString(16).padStart(64, "0")}`,
      parentHash: `0x${"cd".repeat(32)}`,
    });
    /** The block number a call reads at (its EIP-1898 block hash holds the number). */
    const at = (params: unknown[]) => Number((params.at(-1) as { blockHash: string }).blockHash);
    beforeAll(async () => {
      flaky = await startScriptedRpc({
        error: (c) => {
          if (c.method !== "eth_getBalance" || c.params[0] !== WALLET) return undefined;
          if (at(c.params) === 101) return { code: -32000, message: "some other node error" };
          return at(c.params) === 103 ? { code: -32000, message: "missing trie node 9c1d… (path )" } : undefined;
        },
        answer: (c) =>
          c.method === "eth_getBlockByNumber"
            ? header(c.params[0] as string)
            : c.method === "eth_getBalance"
              ? `0x${(at(c.params) === 102 ? 4n * ETH : 9n * ETH).toString(16)}`
              : undefined,
      });
      flakyApi = await buildApi({ config: apiConfig(flaky.url, 50), logger: false });
    });
    afterAll(async () => {
      await flakyApi?.close();
      await flaky?.close();
    });

    it("reports the unread block, fires across it, and ends at the block without state with nextFrom", async () => {
      const rule = stateRule(THRESHOLD);
      const res = await flakyApi.inject({
        method: "POST",
        url: "/alerting/rules/test/",
        headers: AUTH,
        payload: { rule, from: 100, to: 110 },
      });
      expect(res.statusCode, res.body).toBe(200);
      const lines = res.body
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const reads = lines.filter((l) => l.type === "block").map((l) => [l.blockNumber, l.reading ?? l.unread]);
      expect(reads).toEqual([
        [100, (9n * ETH).toString()],
        [101, "some other node error"],
        [102, (4n * ETH).toString()],
      ]);
      expect(lines.filter((l) => l.type === "match").map((l) => [l.blockNumber, l.previous])).toEqual([[102, (9n * ETH).toString()]]);
      expect(lines.at(-2)).toMatchObject({ type: "error", error: { code: "CS_BACKTEST_NO_ARCHIVE_STATE" } });
      expect(lines.at(-1)).toMatchObject({ type: "end", complete: false, reason: "CS_BACKTEST_NO_ARCHIVE_STATE", nextFrom: 103 });
    });
  });

  describe("a node without the range's state", () => {
    let pruned: ScriptedRpc;
    let prunedApi: FastifyInstance;
    beforeAll(async () => {
      pruned = await startScriptedRpc({
        error: (c) => (c.method === "eth_getBalance" ? { code: -32000, message: "missing trie node 5a3f… (path )" } : undefined),
        answer: (c) =>
          c.method === "eth_getBlockByNumber"
            ? { number: c.params[0], hash: `0x${"ab".repeat(32)}`, parentHash: `0x${"cd".repeat(32)}` }
            : c.method === "eth_blockNumber"
              ? "0x100000"
              : undefined,
      });
      prunedApi = await buildApi({ config: apiConfig(pruned.url, 50), logger: false });
    });
    afterAll(async () => {
      await prunedApi?.close();
      await pruned?.close();
    });

    it("answers 422 CS_BACKTEST_NO_ARCHIVE_STATE at the range, before reading the rule's subject", async () => {
      const rule = stateRule(THRESHOLD);
      const res = await prunedApi.inject({
        method: "POST",
        url: "/alerting/rules/test/",
        headers: AUTH,
        payload: { rule, from: 100, to: 120 },
      });
      expect(res.statusCode, res.body).toBe(422);
      expect(res.json().error).toMatchObject({ code: "CS_BACKTEST_NO_ARCHIVE_STATE", path: "from" });
      expect(res.json().error.message).toMatch(/missing trie node/);
      const balanceReads = pruned.requests.flat().filter((c) => c.method === "eth_getBalance");
      expect(balanceReads.map((c) => c.params[0])).toEqual(["0x0000000000000000000000000000000000000000"]);
    });
  });
});
