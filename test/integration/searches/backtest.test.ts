/**
 * Saved-search backtests (`POST /alerting/searches/test/`) over the API's hand-written records
 * (test/integration/api/fixtures.ts) indexed in the real Elasticsearch under a unique prefix: for
 * each query the `match` lines name exactly the `_id`s the search API answers for the same query
 * over the same blocks (events, transactions, blocks), the alerts are the saved search's
 * (targetType of its kind, actions rendered), and the refusals carry the saved-search codes with
 * paths under `search.`. A search with a count window replays to the one window that fired, whose
 * records are the search API's answer over the window's blocks; `window` and `absence` are stored
 * and refused with the rules' codes at top-level paths; a `sequence` is stored and replayed. Also the OpenAPI document of the saved-search routes: the bodies do not
 * require the server-assigned `id`. Skips when Elasticsearch or Redis is down.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../../../cli/chainsift.js";
import { loadConfig } from "../../../lib/config/index.js";
import type { WindowFiring } from "../../../lib/match/windows.js";
import {
  BINANCE,
  blocks,
  deleteRedisKeys,
  FIRST_BLOCK,
  type FixtureApi,
  isolatedApi,
  MAINNET,
  searchStackUp,
  startFixtureApi,
  TX_PER_BLOCK,
  USDT,
} from "../api/fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const isolated = isolatedApi(base, "sb");
const config = { ...isolated.config, backtest: { maxBlocks: 10, timeoutMs: 60_000 } };
const AUTH = { authorization: `Bearer ${isolated.token}` };
const LAST = FIRST_BLOCK + blocks.length - 1;

type Line = Record<string, unknown> & { type: string };
const parseLines = (text: string) =>
  text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Line);

const search = (kind: string, query: Record<string, unknown>) => ({
  name: `search ${kind}`,
  ...MAINNET,
  maxConfirmationCount: 2,
  sendPendingAlerts: true,
  kind,
  query,
  alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/found" } }],
});

describe.skipIf(!up)("saved-search backtests over indexed records", () => {
  let api: FixtureApi;
  let app: FastifyInstance;
  const post = (url: string, payload: unknown) => app.inject({ method: "POST", url, headers: AUTH, payload: payload as object });

  beforeAll(async () => {
    api = await startFixtureApi(config);
    ({ app } = api);
  });

  afterAll(async () => {
    await api?.close();
    await deleteRedisKeys(config.redisUrl, config.redisKeyPrefix);
  });

  /** The `_id`s the search API answers for the query over the fixture blocks. */
  const searchApiIds = async (kind: string, query: Record<string, unknown>): Promise<string[]> => {
    const field = kind === "block" ? "number.num" : "blockNumber.num";
    const res = await post(`/ethereum/ethereum/mainnet/es/${kind}/search/`, {
      size: 1000,
      query: { bool: { filter: [query, { range: { [field]: { gte: FIRST_BLOCK, lte: LAST } } }] } },
    });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().hits.hits as Array<{ _id: string }>).map((h) => h._id).sort();
  };

  it.each([
    [
      "USDT transfers to Binance (event, nested args)",
      "event",
      {
        bool: {
          filter: [
            { term: { event: "transfer" } },
            { term: { address: USDT } },
            {
              nested: {
                path: "args",
                query: { bool: { filter: [{ term: { "args.name": "to" } }, { term: { "args.value.hex": BINANCE.toLowerCase() } }] } },
              },
            },
          ],
        },
      },
      "Event",
    ],
    ["transactions to USDT (tx)", "tx", { term: { to: USDT } }, "Transaction"],
    ["busy blocks (block: its own number and hash)", "block", { range: { transactionCount: { gte: 4 } } }, "Block"],
  ])("%s: the match lines are exactly the search API's answer for the same query and blocks", async (_label, kind, query, targetType) => {
    const expected = await searchApiIds(kind, query);
    expect(expected.length, "the search API finds something").toBeGreaterThan(0);
    const res = await post("/alerting/searches/test/", { search: search(kind, query), from: FIRST_BLOCK, to: LAST });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/x-ndjson/);
    const lines = parseLines(res.body);
    expect(lines[0]).toMatchObject({ type: "start", from: FIRST_BLOCK, to: LAST, kinds: [kind], rule: { kind, targetType } });
    const matches = lines.filter((l) => l.type === "match") as Array<Line & { entityId: string; alerts: Array<Record<string, never>> }>;
    expect(matches.map((m) => m.entityId).sort()).toEqual(expected);
    // A search over blocks reads every block by its own number (the others: by their blockNumber).
    const blockLines = lines.filter((l) => l.type === "block").map((l) => l.blockNumber);
    if (kind === "block") expect(blockLines).toEqual(blocks.map((b) => b.number.num));
    else expect(blockLines.length).toBeGreaterThan(0);
    for (const m of matches) {
      // maxConfirmationCount 2 with pending alerts: pending, and confirmed below the newest block.
      const alerts = m.alerts as unknown as Array<{ alert: Record<string, unknown>; actions: Array<Record<string, unknown>> }>;
      expect(alerts.map((a) => a.alert.status)).toEqual(m.blockNumber === LAST ? ["pending"] : ["pending", "confirmed"]);
      expect(alerts[0]?.alert).toMatchObject({ targetType, entityId: m.entityId, ruleName: `search ${kind}` });
      expect(alerts[0]?.actions[0]).toMatchObject({ index: 0, type: "Webhook (POST)", method: "POST" });
    }
    expect(lines.at(-1)).toMatchObject({ type: "end", complete: true, matches: matches.length });
  });

  it("chainsift searches test prints the API's match lines, and exits 2 with the code and path of a bad search", async () => {
    const query = { term: { to: USDT } };
    const api = await post("/alerting/searches/test/", { search: search("tx", query), from: FIRST_BLOCK, to: LAST });
    expect(api.statusCode, api.body).toBe(200);
    const apiMatches = parseLines(api.body).filter((l) => l.type === "match");
    expect(apiMatches.length).toBeGreaterThan(0);
    const dir = await mkdtemp(join(tmpdir(), "cs-searches-test-"));
    try {
      const file = join(dir, "search.json");
      await writeFile(file, JSON.stringify(search("tx", query)));
      const out: string[] = [];
      const err: string[] = [];
      const code = await runCli(["searches", "test", file, "--from", String(FIRST_BLOCK), "--to", String(LAST), "--json"], {
        config,
        output: { out: (s) => out.push(s), err: (s) => err.push(s) },
      });
      expect(code, err.join("\n")).toBe(0);
      const cliMatches = out.map((l) => JSON.parse(l) as Line).filter((l) => l.type === "match");
      expect(cliMatches.map((l) => l.entityId)).toEqual(apiMatches.map((l) => l.entityId));
      const text: string[] = [];
      expect(
        await runCli(["searches", "test", file, "--from", String(FIRST_BLOCK), "--to", String(LAST)], {
          config,
          output: { out: (s) => text.push(s), err: () => {} },
        }),
      ).toBe(0);
      expect(text[0]).toMatch(/^saved search over tx "search tx" \(Transaction\) on blocks/);
      await writeFile(file, JSON.stringify(search("trace", { match_all: {} })));
      const bad: string[] = [];
      expect(await runCli(["searches", "test", file, "--last", "1"], { config, output: { out: () => {}, err: (s) => bad.push(s) } })).toBe(
        2,
      );
      expect(bad.join("\n")).toContain("CS_SEARCH_KIND at search.kind");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ["no search", { from: FIRST_BLOCK, to: LAST }, "CS_BACKTEST_INVALID", "search"],
    ["a rule in place of the search", { rule: {}, search: search("event", {}), last: 1 }, "CS_BACKTEST_INVALID", "rule"],
    ["an unknown kind", { search: search("trace", { match_all: {} }), last: 1 }, "CS_SEARCH_KIND", "search.kind"],
    [
      "a clause the evaluator cannot answer exactly",
      { search: search("event", { range: { timestamp: { gte: "now-1d" } } }), last: 1 },
      "CS_SEARCH_INEXACT",
      "search.query.range.timestamp.gte",
    ],
    [
      "a rule field of the search",
      { search: { ...search("event", {}), maxConfirmationCount: -1 }, last: 1 },
      "CS_RULE_INVALID",
      "search.maxConfirmationCount",
    ],
    ["a range over the cap", { search: search("event", {}), from: 0, to: 10 }, "CS_BACKTEST_RANGE_TOO_LARGE", "to"],
  ])("refuses %s: 400 with code and path", async (_what, payload, code, path) => {
    const res = await post("/alerting/searches/test/", payload);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().errors).toContainEqual(expect.objectContaining({ code, path }));
  });

  // Saved searches with `window` or `absence` (issue 33): stored beside the query, refused with the
  // rules' codes at top-level paths, replayed by the backtest; `sequence` (its second step a second
  // query) too (backtest = live: ./sequence-backtest.test.ts).
  describe("with a window, an absence or a sequence", () => {
    const windowed = (extension: Record<string, unknown>) => ({ ...search("tx", { match_all: {} }), ...extension });
    const sequence = {
      followedBy: { kind: "tx", query: { term: { to: USDT } } },
      within: { blocks: 5 },
      correlate: { first: "from", followedBy: "from" },
    };
    it("stores a sequence beside the query; its backtest replays it (block documents paired with another kind: refused)", async () => {
      const created = await post("/alerting/searches/", windowed({ sequence }));
      expect(created.statusCode, created.body).toBe(201);
      const got = await app.inject({ method: "GET", url: `/alerting/searches/${created.json().id}`, headers: AUTH });
      expect(got.json()).toMatchObject({ kind: "tx", sequence });
      expect(got.json().sequence.followedBy.esQuery).not.toBeNull();
      const test = await post("/alerting/searches/test/", { search: windowed({ sequence }), last: 1 });
      expect(test.statusCode, test.body).toBe(200);
      expect(parseLines(test.body)[0]).toMatchObject({ type: "start", kinds: ["tx"] });
      const mixed = { ...sequence, followedBy: { kind: "block", query: { match_all: {} } } };
      const refused = await post("/alerting/searches/test/", { search: windowed({ sequence: mixed }), last: 1 });
      expect(refused.statusCode, refused.body).toBe(400);
      expect(refused.json().errors).toEqual([
        expect.objectContaining({ code: "CS_BACKTEST_TARGET_UNSUPPORTED", path: "search.sequence.followedBy.kind" }),
      ]);
    });
    it("stores a window or an absence beside the query and answers it back", async () => {
      const window = { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: "9" };
      for (const extension of [{ window }, { absence: { seconds: 600 } }]) {
        const created = await post("/alerting/searches/", windowed(extension));
        expect(created.statusCode, created.body).toBe(201);
        const got = await app.inject({ method: "GET", url: `/alerting/searches/${created.json().id}`, headers: AUTH });
        expect(got.statusCode, got.body).toBe(200);
        expect(got.json()).toMatchObject({ kind: "tx", ...extension });
      }
    });

    it.each([
      [
        "a window over the cap",
        { window: { blocks: 10_001, aggregate: { fn: "count" }, operator: "Greater", threshold: "1" } },
        "CS_RULE_WINDOW_TOO_LARGE",
        "window.blocks",
      ],
      [
        "a sum over an address",
        { window: { blocks: 5, aggregate: { fn: "sum", field: "from" }, operator: "Greater", threshold: "1" } },
        "CS_RULE_AGGREGATE_NOT_NUMERIC",
        "window.aggregate.field",
      ],
      ["an absence with both spans", { absence: { blocks: 5, seconds: 5 } }, "CS_RULE_INVALID", "absence"],
      [
        "a sequence over the span cap",
        { sequence: { ...sequence, within: { blocks: 10_001 } } },
        "CS_RULE_WINDOW_TOO_LARGE",
        "sequence.within.blocks",
      ],
      [
        "a sequence whose second step is a rule's target map",
        {
          sequence: {
            ...sequence,
            followedBy: { targetType: "Transaction", targetMap: [{ name: "to", operator: "Equals", value: USDT }] },
          },
        },
        "CS_RULE_INVALID",
        "sequence.followedBy.targetType",
      ],
    ])("refuses %s with the rules' code at a top-level path, and in a backtest under search.", async (_what, extension, code, path) => {
      const res = await post("/alerting/searches/", windowed(extension));
      expect(res.statusCode, res.body).toBe(400);
      expect(res.json().errors).toContainEqual(expect.objectContaining({ code, path }));
      const test = await post("/alerting/searches/test/", { search: windowed(extension), last: 1 });
      expect(test.statusCode, test.body).toBe(400);
      expect(test.json().errors).toContainEqual(expect.objectContaining({ code, path: `search.${path}` }));
    });

    it("a backtest of a count window returns the one window that fired, with the search API's records", async () => {
      // The first two blocks hold the threshold's transactions; the window (2 blocks) ending at the third holds fewer.
      const threshold = (TX_PER_BLOCK[0] ?? 0) + (TX_PER_BLOCK[1] ?? 0);
      expect((TX_PER_BLOCK[1] ?? 0) + (TX_PER_BLOCK[2] ?? 0)).toBeLessThan(threshold);
      const window = { blocks: 2, aggregate: { fn: "count" }, operator: "Greater or Equal", threshold: String(threshold) };
      const res = await post("/alerting/searches/test/", { search: windowed({ window }), from: FIRST_BLOCK, to: LAST });
      expect(res.statusCode, res.body).toBe(200);
      const lines = res.body
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown> & { type: string });
      const matches = lines.filter((l) => l.type === "match");
      expect(matches.map((m) => m.entityId)).toEqual([`window:${FIRST_BLOCK + 1}`]);
      const fired = (matches[0]?.entity as { window: WindowFiring } | undefined)?.window;
      expect(fired).toMatchObject({
        group: null,
        aggregate: String(threshold),
        recordCount: threshold,
        window: { fromBlock: FIRST_BLOCK, toBlock: FIRST_BLOCK + 1 },
      });
      const found = await post("/ethereum/ethereum/mainnet/es/tx/search/", {
        size: 100,
        query: { range: { "blockNumber.num": { gte: FIRST_BLOCK, lte: FIRST_BLOCK + 1 } } },
      });
      expect(found.statusCode, found.body).toBe(200);
      const ids = (found.json().hits.hits as Array<{ _id: string }>).map((h) => h._id);
      expect([...(fired?.recordIds ?? [])].sort()).toEqual(ids.sort());
      // Every block entered the window with its selected records (the query selects all).
      const selected = lines.filter((l) => l.type === "block").map((l) => [l.blockNumber, l.selected]);
      expect(selected).toEqual(blocks.map((b, i) => [b.number.num, TX_PER_BLOCK[i]]));
      expect(lines.at(-1)).toMatchObject({ type: "end", complete: true, matches: 1 });
    });
  });

  it("OpenAPI: the saved-search bodies never require the server-assigned id; the answer has it", async () => {
    const res = await app.inject({ method: "GET", url: "/docs/json" });
    expect(res.statusCode).toBe(200);
    type Schema = { $ref?: string; required?: string[]; properties?: Record<string, unknown> };
    const doc = res.json<{
      paths: Record<
        string,
        Record<string, { requestBody?: { content: Record<string, { schema: Schema }> }; responses: Record<string, unknown> }>
      >;
      components: { schemas: Record<string, Schema> };
    }>();
    const resolve = (s: Schema | undefined): Schema =>
      s?.$ref ? (doc.components.schemas[s.$ref.split("/").at(-1) as string] ?? {}) : (s ?? {});
    const body = (path: string, method: string) => resolve(doc.paths[path]?.[method]?.requestBody?.content["application/json"]?.schema);

    const create = body("/alerting/searches/", "post");
    expect(create.required ?? []).not.toContain("id");
    expect(create.required ?? []).not.toContain("esQuery");
    expect([...(create.required ?? [])].sort()).toEqual(
      ["alerts", "blockchain", "kind", "maxConfirmationCount", "name", "network", "query", "technology"].sort(),
    );
    expect(create.properties).not.toHaveProperty("id");
    const update = body("/alerting/searches/{rule_id}/", "put");
    expect(update.required ?? []).toEqual([]);
    expect(update.properties).toHaveProperty("query");
    const created = doc.paths["/alerting/searches/"]?.post?.responses["201"] as { content: Record<string, { schema: Schema }> } | undefined;
    const answer = resolve(created?.content["application/json"]?.schema);
    expect(answer.required).toContain("id");
    const test = body("/alerting/searches/test/", "post");
    expect(Object.keys(test.properties ?? {}).sort()).toEqual(["from", "last", "search", "to"]);
    expect(resolve(test.properties?.search as Schema)).toEqual(create);
  });
});
