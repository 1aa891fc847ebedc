/**
 * Rule backtests (`POST /alerting/rules/test/`, `chainsift rules test`) over the API's hand-written
 * records (test/integration/api/fixtures.ts) indexed in the real Elasticsearch under a unique
 * prefix: the NDJSON answer (matches, rendered actions of every type, counts per block, totals),
 * the refusals with their codes and JSON paths, the time cap (a stepped clock, so no timing is
 * asserted) and the CLI over the same indices. Skips when Elasticsearch or Redis is down.
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { type BacktestLine, startBacktest } from "../../../api/backtest/run.js";
import { runCli } from "../../../cli/chainsift.js";
import { loadConfig } from "../../../lib/config/index.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import { transferAbove } from "../../support/rules.js";
import {
  blocks,
  events,
  FIRST_BLOCK,
  type FixtureApi,
  MAINNET,
  mainnetApiConfig,
  searchStackUp,
  startFixtureApi,
  USDT,
} from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const TOKEN = `test-${randomBytes(8).toString("hex")}`;
const PREFIX = `t-${randomBytes(4).toString("hex")}-`;
const config = {
  ...mainnetApiConfig(base, {
    indexPrefix: PREFIX,
    redisKeyPrefix: PREFIX.replace(/-$/, ":"),
    api: { tokens: [TOKEN], rateLimitMax: 100_000 },
  }),
  backtest: { maxBlocks: 10, timeoutMs: 60_000 },
};
const AUTH = { authorization: `Bearer ${TOKEN}` };
const LAST = FIRST_BLOCK + blocks.length - 1;

/** Every USDT Transfer of the fixtures (each 1000 USDT): what a "USDT Transfer above 500" rule matches. */
const usdtTransfers = events.filter((e) => e.event === "Transfer" && e.address === USDT);
const idOf = (e: (typeof events)[number]) => `${e.transactionHash}_e_${e.logIndex.num}`;

const rule: RuleInput = {
  name: "USDT Transfers above 500 USDT",
  maxConfirmationCount: 2,
  sendPendingAlerts: true,
  state: "enabled",
  ...MAINNET,
  config: {
    targetType: "Event",
    targetMap: transferAbove(USDT, "500"),
    alerts: [
      { type: "Webhook (GET)", parameters: { url: "https://hooks.example.com/usdt/{transactionHash}?n={blockNumber.num}" } },
      { type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/usdt" } },
      {
        type: "Slack",
        parameters: { url: "https://hooks.slack.com/services/T/B/x", text: ":whale: big USDT", channel: "#alerts", username: "cs" },
      },
      { type: "Email", parameters: { recipients: ["ops@example.com"] } },
      { type: "Webhook (GET)", parameters: { url: "https://hooks.example.com/{noSuchField}" } },
    ],
  },
};

type Line = BacktestLine & Record<string, unknown>;
const parseLines = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Line);

describe.skipIf(!up)("rule backtests over indexed records", () => {
  let api: FixtureApi;
  let es: Client;
  let app: FastifyInstance;

  const test = (payload: unknown) =>
    app.inject({ method: "POST", url: "/alerting/rules/test/", headers: AUTH, payload: payload as object });

  beforeAll(async () => {
    api = await startFixtureApi(config);
    ({ es, app } = api);
  });

  afterAll(async () => {
    await api?.close();
  });

  it("streams the matches with every action rendered, counts per block and the totals", async () => {
    const res = await test({ rule, from: FIRST_BLOCK, to: LAST });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/x-ndjson/);
    const lines = parseLines(res.body);
    expect(lines[0]).toMatchObject({ type: "start", from: FIRST_BLOCK, to: LAST, head: LAST, kinds: ["event"] });
    const matches = lines.filter((l) => l.type === "match") as Array<Extract<Line, { type: "match" }>>;
    expect(matches.map((m) => m.entityId)).toEqual(usdtTransfers.map(idOf));

    // maxConfirmationCount 2 with pending alerts: pending, then confirmed once a block is on top (not for the newest block).
    for (const m of matches) {
      const statuses = m.alerts.map((a) => [a.alert.status, a.alert.confirmations]);
      expect(statuses).toEqual(
        m.blockNumber < LAST
          ? [
              ["pending", 1],
              ["confirmed", 2],
            ]
          : [["pending", 1]],
      );
    }
    const first = matches[0]!;
    const tx = first.entity.transactionHash as string;
    const [get, post, slack, email, broken] = first.alerts[0]!.actions as Array<Record<string, unknown>>;
    expect(get).toEqual({
      index: 0,
      type: "Webhook (GET)",
      method: "GET",
      url: `https://hooks.example.com/usdt/${tx}?n=${first.blockNumber}`,
    });
    expect(post).toMatchObject({ index: 1, type: "Webhook (POST)", method: "POST", url: "https://hooks.example.com/usdt" });
    const body = JSON.parse(post!.body as string) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: "pending",
      entityId: first.entityId,
      targetType: "Event",
      ruleId: "00000000-0000-0000-0000-000000000000",
    });
    expect(body.payload).toMatchObject({ event: "Transfer", transactionHash: tx });
    expect(slack).toMatchObject({ type: "Slack", method: "POST", url: "https://hooks.slack.com/services/T/B/x" });
    expect(JSON.parse(slack!.body as string)).toMatchObject({
      channel: "#alerts",
      username: "cs",
      text: expect.stringMatching(/^:whale: big USDT\n\*pending: Transfer in block/),
    });
    expect(email).toMatchObject({
      type: "Email",
      recipients: ["ops@example.com"],
      subject: `[chainsift] pending: USDT Transfers above 500 USDT — Transfer in block ${first.blockNumber}`,
    });
    expect(broken).toMatchObject({ index: 4, type: "Webhook (GET)", error: { code: "CS_TEMPLATE_UNKNOWN_FIELD" } });

    const blockLines = lines.filter((l) => l.type === "block");
    expect(blockLines.map((b) => [b.blockNumber, b.entities, b.matches])).toEqual(
      blocks.map((b) => [
        b.number.num,
        events.filter((e) => e.blockNumber.num === b.number.num).length,
        usdtTransfers.filter((e) => e.blockNumber.num === b.number.num).length,
      ]),
    );
    const alerts = matches.reduce((n, m) => n + m.alerts.length, 0);
    expect(lines.at(-1)).toMatchObject({
      type: "end",
      complete: true,
      reason: null,
      nextFrom: null,
      matches: usdtTransfers.length,
      alerts,
      entities: events.length,
    });
  });

  it("tests the newest blocks with `last`", async () => {
    const lines = parseLines((await test({ rule, last: 1 })).body);
    expect(lines[0]).toMatchObject({ type: "start", from: LAST, to: LAST });
    expect(lines.filter((l) => l.type === "match").map((l) => l.entityId)).toEqual(
      usdtTransfers.filter((e) => e.blockNumber.num === LAST).map(idOf),
    );
  });

  it.each([
    ["from after to", { rule, from: LAST, to: FIRST_BLOCK }, "CS_BACKTEST_INVALID", "to"],
    ["a range over the cap", { rule, from: 0, to: 10 }, "CS_BACKTEST_RANGE_TOO_LARGE", "to"],
    ["last over the cap", { rule, last: 11 }, "CS_BACKTEST_RANGE_TOO_LARGE", "last"],
    ["no range", { rule }, "CS_BACKTEST_INVALID", "from"],
    ["a negative from", { rule, from: -1, to: 3 }, "CS_BACKTEST_INVALID", "from"],
    ["a fractional to", { rule, from: 1, to: 2.5 }, "CS_BACKTEST_INVALID", "to"],
    ["a block number as a string", { rule, from: "1", to: 2 }, "CS_BACKTEST_INVALID", "from"],
    ["a range and last", { rule, from: 1, to: 2, last: 2 }, "CS_BACKTEST_INVALID", "last"],
    ["last 0", { rule, last: 0 }, "CS_BACKTEST_INVALID", "last"],
    ["an unknown key", { rule, form: 1, to: 2 }, "CS_BACKTEST_INVALID", "form"],
    ["no rule", { from: 1, to: 2 }, "CS_BACKTEST_INVALID", "rule"],
    ["an invalid rule", { rule: { ...rule, maxConfirmationCount: "2" }, from: 1, to: 2 }, "CS_RULE_INVALID", "rule.maxConfirmationCount"],
    ["a rule of another chain", { rule: { ...rule, network: "sepolia" }, from: 1, to: 2 }, "CS_RULE_UNKNOWN_CHAIN", "rule.network"],
    [
      "a Token rule",
      {
        rule: { ...rule, config: { ...rule.config, targetType: "Token", targetMap: [{ name: "symbol", operator: "Equals", value: "X" }] } },
        from: 1,
        to: 2,
      },
      "CS_BACKTEST_TARGET_UNSUPPORTED",
      "rule.config.targetType",
    ],
  ])("refuses %s: 400 with code and path", async (_what, payload, code, path) => {
    const res = await test(payload);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error).toMatchObject({ code, path });
  });

  it("answers 401 without a token and 409 for `last` when nothing is indexed", async () => {
    const anonymous = await app.inject({ method: "POST", url: "/alerting/rules/test/", payload: { rule, last: 1 } });
    expect(anonymous.statusCode).toBe(401);
    const empty = await buildApi({
      config: { ...config, elasticsearch: { ...config.elasticsearch, indexPrefix: `${PREFIX}none-` } },
      es,
      logger: false,
    });
    try {
      const res = await empty.inject({ method: "POST", url: "/alerting/rules/test/", headers: AUTH, payload: { rule, last: 3 } });
      expect(res.statusCode).toBe(409);
      expect(res.json().error).toMatchObject({ code: "CS_BACKTEST_NOTHING_INDEXED", path: "last" });
    } finally {
      await empty.close();
    }
  });

  it("stops at a block boundary at the time cap and continues from nextFrom to the same matches", async () => {
    const deps = { es, indexPrefix: PREFIX, requestTimeoutMs: 10_000, timeoutMs: 3_500, pageSize: 2, decode: { chainId: 1 } };
    const collect = async (from: number, clock: () => number) => {
      const out: Line[] = [];
      for await (const l of await startBacktest({ ...deps, clock }, MAINNET, { rule, accountId: "a", from, to: LAST, head: LAST }))
        out.push(l as Line);
      return out;
    };
    let t = 0;
    const stepped = await collect(FIRST_BLOCK, () => (t += 1_000)); // every clock reading is 1 s later
    const end = stepped.at(-1)!;
    expect(end).toMatchObject({ type: "end", complete: false, reason: "CS_BACKTEST_TIME_CAP" });
    const nextFrom = end.nextFrom as number;
    expect(nextFrom).toBeGreaterThan(FIRST_BLOCK);
    expect(nextFrom).toBeLessThanOrEqual(LAST);
    // Whole blocks only: every reported block lies before nextFrom.
    expect(stepped.filter((l) => l.type === "block").every((b) => (b.blockNumber as number) < nextFrom)).toBe(true);
    const rest = await collect(nextFrom, () => 0);
    expect(rest.at(-1)).toMatchObject({ complete: true });
    const ids = [...stepped, ...rest].filter((l) => l.type === "match").map((l) => l.entityId);
    expect(ids).toEqual(usdtTransfers.map(idOf));
  });

  it("chainsift rules test prints the same matches, and exits 2 with the code for a bad range", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cs-rules-test-"));
    try {
      const file = join(dir, "rule.json");
      await writeFile(file, JSON.stringify(rule));
      const out: string[] = [];
      const err: string[] = [];
      const output = { out: (s: string) => out.push(s), err: (s: string) => err.push(s) };
      const code = await runCli(["rules", "test", file, "--from", String(FIRST_BLOCK), "--to", String(LAST), "--json"], { config, output });
      expect(code, err.join("\n")).toBe(0);
      const lines = out.map((l) => JSON.parse(l) as Line);
      expect(lines.filter((l) => l.type === "match").map((l) => l.entityId)).toEqual(usdtTransfers.map(idOf));
      const text: string[] = [];
      expect(await runCli(["rules", "test", file, "--last", "3"], { config, output: { out: (s) => text.push(s), err: () => {} } })).toBe(0);
      expect(text.at(-1)).toMatch(
        new RegExp(
          `^done: 3 block\\(s\\) with records, ${events.length} records, ${events.length} entities, ${usdtTransfers.length} match\\(es\\)`,
        ),
      );
      const bad: string[] = [];
      expect(
        await runCli(["rules", "test", file, "--from", "5", "--to", "1"], { config, output: { out: () => {}, err: (s) => bad.push(s) } }),
      ).toBe(2);
      expect(bad.join("\n")).toContain("CS_BACKTEST_INVALID at to");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
