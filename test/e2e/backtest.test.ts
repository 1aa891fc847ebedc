/**
 * Rule backtests against a live run, on real mainnet data: the fixture blocks are replayed through
 * the whole pipeline (ingest → Kafka → decode → index, match, notify → a local webhook receiver)
 * with a rule created through the API ("USDT Transfers above 10,000 USDT", scaled), then
 * `POST /alerting/rules/test/` tests the same rule body over the fixture blocks' range. The backtest
 * must answer exactly the alerts the live run delivered, alert for alert: the same entities, the
 * same rendered URLs (GET and POST, templated) and the same POST bodies, except the fields that
 * name the stored rule or the moment of emission (id, ruleId, sequence, confirmations, emittedAt).
 * The number of matches is also checked against the fixtures' raw receipts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApi } from "../../api/server.js";
import { alertId } from "../../lib/alerting/alert.js";
import { BACKTEST_RULE_ID } from "../../lib/match/backtest.js";
import type { RuleInput } from "../../lib/rules/model.js";
import { type Pipeline, startPipeline } from "../../pipeline/runtime.js";
import { type Receiver, startReceiver } from "../support/anvil-env.js";
import { type FixtureBlock, hasMainnetFixtures, loadCompleteBlocks, type RpcObject, SKIP_NO_FIXTURES } from "../support/fixtures.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { type RpcReplay, startRpcReplay } from "../support/rpc-replay.js";
import { transferAbove } from "../support/rules.js";

const fixtures = hasMainnetFixtures();
const up = await probeStack();
if (!fixtures) console.warn(SKIP_NO_FIXTURES);

const USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7";
const TRANSFER = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
/** 10,000 USDT in base units (6 decimals). */
const THRESHOLD = 10_000n * 10n ** 6n;
/** Fields that name the stored rule or the moment of emission: they differ between a live run and a backtest. */
const VOLATILE = ["id", "ruleId", "sequence", "confirmations", "emittedAt"];

type Line = Record<string, unknown> & { type: string };
interface Action {
  index: number;
  type: string;
  method?: string;
  url?: string;
  body?: string;
  error?: { code: string };
}
interface MatchLine extends Line {
  entityId: string;
  blockNumber: number;
  alerts: Array<{ alert: Record<string, unknown>; actions: Action[] }>;
}

/** Requests the receiver answered 200 with this method under this path prefix. */
const delivered = (receiver: Receiver, method: string, prefix: string) =>
  receiver.requests.filter((r) => r.method === method && r.status === 200 && r.path.startsWith(prefix));
const stable = (body: Record<string, unknown>) => Object.fromEntries(Object.entries(body).filter(([k]) => !VOLATILE.includes(k)));

describe.skipIf(!fixtures || !up.ok)("rule backtest = live run on the mainnet fixtures", () => {
  let h: Harness;
  let pipeline: Pipeline;
  let replay: RpcReplay;
  let receiver: Receiver;
  let api: { app: { close(): Promise<unknown> }; url: string };
  let blocks: FixtureBlock[];
  let token: string;
  let rule: RuleInput;
  let callRule: RuleInput;
  let ruleId: string;
  let expected: RpcObject[];

  const post = (path: string, body: unknown) =>
    fetch(`${api.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const backtest = async (body: unknown): Promise<Line[]> => {
    const res = await post("/alerting/rules/test/", body);
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/x-ndjson/);
    return text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Line);
  };

  beforeAll(async () => {
    blocks = loadCompleteBlocks();
    expected = blocks
      .flatMap((b) => (b.receipts ?? []).flatMap((r) => r.logs as RpcObject[]))
      .filter(
        (l) =>
          String(l.address).toLowerCase() === USDT &&
          (l.topics as string[])[0] === TRANSFER &&
          (l.topics as string[]).length === 3 &&
          BigInt(String(l.data)) > THRESHOLD,
      );
    h = createHarness();
    h.config.notify = { ...h.config.notify, allowlist: ["127.0.0.1"], maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 100 };
    // The fixture blocks span blocks 47218 … 21925176: the range cap is raised for this run.
    h.config.backtest = { maxBlocks: 30_000_000, timeoutMs: 120_000 };
    token = h.config.api.tokens[0] as string;
    receiver = await startReceiver();
    api = await startApi({ config: h.config, logger: h.logger });
    rule = {
      name: "USDT Transfers above 10,000 USDT",
      maxConfirmationCount: 1,
      sendPendingAlerts: false,
      state: "enabled",
      ...h.config.chain,
      config: {
        targetType: "Event",
        targetMap: transferAbove(USDT, "10000"),
        alerts: [
          { type: "Webhook (POST)", parameters: { url: `${receiver.base}/post/{transactionHash}` } },
          { type: "Webhook (GET)", parameters: { url: `${receiver.base}/get/{entityId}?block={blockNumber.num}&by={address}` } },
        ],
      },
    };
    const created = await post("/alerting/rules/", rule);
    expect(created.status).toBe(201);
    ruleId = ((await created.json()) as { id: string }).id;
    callRule = {
      name: "USDT transfer() calls, internal ones included",
      maxConfirmationCount: 1,
      state: "enabled",
      ...h.config.chain,
      config: {
        targetType: "Call",
        targetMap: [
          { name: "name", operator: "Equals", value: "transfer" },
          { name: "to", operator: "Equals (ignore case)", value: USDT },
        ],
        alerts: [{ type: "Webhook (POST)", parameters: { url: `${receiver.base}/call/{entityId}` } }],
      },
    };
    expect((await post("/alerting/rules/", callRule)).status).toBe(201);

    replay = await startRpcReplay({ blocks, blockReceipts: true, traces: true });
    pipeline = await startPipeline({ config: h.config, logger: h.logger, es: h.es, stages: ["decode", "index", "match", "notify"] });
    const { ingester, close } = await pipeline.createIngester(replay.url, { traces: true });
    await ingester.ingestBlocks(blocks.map((b) => b.number));
    await close();
    // Live: every expected alert delivered to both webhooks.
    await waitFor(
      async () =>
        delivered(receiver, "POST", "/post/").length >= expected.length && delivered(receiver, "GET", "/get/").length >= expected.length,
      180_000,
      500,
    );
    // Indexed: the index stage consumes the events independently of the match stage, so wait until
    // every expected event is searchable and the event count has stopped moving.
    const eventIndex = `${h.config.elasticsearch.indexPrefix}*-event`;
    const ids = expected.map((l) => `${l.transactionHash}_e_${Number(l.logIndex)}`);
    await waitFor(
      async () => (await h.es.count({ index: eventIndex, query: { ids: { values: ids } } })).count === ids.length,
      120_000,
      500,
    );
    const records = `${h.config.elasticsearch.indexPrefix}*-event,${h.config.elasticsearch.indexPrefix}*-call`;
    const events = async () => {
      await h.es.indices.refresh({ index: records });
      return (await h.es.count({ index: records })).count;
    };
    await waitFor(
      async () => {
        const a = await events();
        await new Promise((r) => setTimeout(r, 3000));
        return a === (await events());
      },
      120_000,
      500,
    );
  }, 400_000);

  afterAll(async () => {
    await api?.app.close();
    await pipeline?.stop();
    await replay?.close();
    await receiver?.close();
    await h?.cleanup();
  });

  it("answers, alert for alert, what the live run delivered", async () => {
    const from = blocks[0]!.number;
    const to = blocks.at(-1)!.number;
    const lines = await backtest({ rule, from, to });
    expect(lines[0]).toMatchObject({ type: "start", from, to, kinds: ["event"], rule: { targetType: "Event" } });
    const end = lines.at(-1)!;
    expect(end).toMatchObject({
      type: "end",
      complete: true,
      reason: null,
      nextFrom: null,
      matches: expected.length,
      alerts: expected.length,
    });
    const matches = lines.filter((l): l is MatchLine => l.type === "match");
    console.log(`backtest: ${matches.length} matches over ${end.blocks} blocks with events; live: ${receiver.requests.length} requests`);

    // Every expected Transfer (from the raw receipts) matched, nothing else.
    expect(matches.map((m) => m.entityId).sort()).toEqual(expected.map((l) => `${l.transactionHash}_e_${Number(l.logIndex)}`).sort());

    const livePosts = delivered(receiver, "POST", "/post/");
    const liveGets = delivered(receiver, "GET", "/get/");
    // Receivers may see a retried delivery twice; they deduplicate by the alert id, and so does the comparison.
    const liveByEntity = new Map(livePosts.map((r) => [(JSON.parse(r.body) as { entityId: string }).entityId, r]));
    expect(liveByEntity.size).toBe(expected.length);
    expect(new Set(liveGets.map((r) => r.url)).size).toBe(expected.length);

    for (const m of matches) {
      expect(m.alerts).toHaveLength(1);
      const [post, get] = m.alerts[0]!.actions;
      const live = liveByEntity.get(m.entityId);
      expect(live, m.entityId).toBeDefined();
      const liveBody = JSON.parse(live!.body) as Record<string, unknown>;
      const testBody = JSON.parse(post!.body!) as Record<string, unknown>;
      expect(post).toMatchObject({ type: "Webhook (POST)", method: "POST" });
      expect(new URL(post!.url!).pathname).toBe(live!.path);
      expect(stable(testBody)).toEqual(stable(liveBody));
      expect(liveBody.status).toBe("confirmed");
      // Alert ids are derived the same way from each side's rule id.
      expect(liveBody.id).toBe(alertId(ruleId, m.entityId, String(liveBody.blockHash), "confirmed"));
      expect(testBody.id).toBe(alertId(BACKTEST_RULE_ID, m.entityId, String(testBody.blockHash), "confirmed"));
      expect(get).toMatchObject({ type: "Webhook (GET)", method: "GET" });
      const getTarget = new URL(get!.url!);
      expect(liveGets.map((r) => r.url)).toContain(getTarget.pathname + getTarget.search);
    }
  });

  it("answers for a Call rule what the live run delivered: call trees rebuilt from the indexed call records", async () => {
    const lines = await backtest({ rule: callRule, from: blocks[0]!.number, to: blocks.at(-1)!.number });
    expect(lines[0]).toMatchObject({ type: "start", kinds: ["call"] });
    expect(lines.at(-1)).toMatchObject({ type: "end", complete: true });
    const matches = lines.filter((l): l is MatchLine => l.type === "match");
    expect(matches.length).toBeGreaterThan(0);
    // Internal calls too: a transfer() reached through another contract has a non-empty traceAddress.
    expect(matches.some((m) => m.entityId.split("_").length > 2)).toBe(true);
    await waitFor(async () => delivered(receiver, "POST", "/call/").length >= matches.length, 60_000, 500);
    const live = new Map(delivered(receiver, "POST", "/call/").map((r) => [r.path, stable(JSON.parse(r.body) as Record<string, unknown>)]));
    const tested = new Map(
      matches.map((m) => {
        const action = m.alerts[0]!.actions[0]!;
        return [new URL(action.url!).pathname, stable(JSON.parse(action.body!) as Record<string, unknown>)];
      }),
    );
    expect(tested).toEqual(live);
  });

  it("counts per block, and `last` tests the newest indexed blocks", async () => {
    const lines = await backtest({ rule, last: 1 });
    const newest = blocks.at(-1)!;
    expect(lines[0]).toMatchObject({ type: "start", from: newest.number, to: newest.number, head: newest.number });
    const blockLines = lines.filter((l) => l.type === "block");
    const events = await h.es.count({
      index: `${h.config.elasticsearch.indexPrefix}*-event`,
      query: { term: { "blockNumber.num": newest.number } },
    });
    expect(blockLines).toEqual([
      expect.objectContaining({
        blockNumber: newest.number,
        blockHash: newest.hash,
        records: events.count,
        entities: events.count,
        matches: expected.filter((l) => Number(l.blockNumber) === newest.number).length,
      }),
    ]);
  });
});
