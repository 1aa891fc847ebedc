/**
 * One API serving two chains of a chains file (mainnet, chain id 1, and `ethereum/ethereum/othernet`,
 * chain id 10) over the real Elasticsearch and Redis: `GET /chains/` (ingest status per chain), one
 * account token searching both chains (contract and Elasticsearch-compatible routes), rules and
 * backtests per chain (a rule of an unserved chain refused with `CS_RULE_UNKNOWN_CHAIN`; a backtest
 * decodes with its own chain's id), and the OpenAPI document naming both chains. The same
 * hand-written records (test/integration/api/fixtures.ts) are indexed under both chains.
 * Skips when Elasticsearch or Redis is down.
 */
import { Client } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { startIngestStatusWriter } from "../../../lib/chain/ingest-status.js";
import { createRedisChainState } from "../../../lib/chain/state.js";
import type { ChainEntry } from "../../../lib/config/chains-file.js";
import { type ChainId, loadConfig } from "../../../lib/config/index.js";
import { connectRedisClient } from "../../../lib/redis.js";
import type { RuleInput } from "../../../lib/rules/model.js";
import { argIs } from "../../support/rules.js";
import { deleteRedisKeys, FIRST_BLOCK, indexFixtures, isolatedApi, MAINNET, searchStackUp, txs, USDT } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const iso = isolatedApi(base, "mc");
const OTHER: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "othernet" };
const entry = (c: ChainId, chainId: number): ChainEntry => ({ ...c, chainId, rpcUrls: ["http://127.0.0.1:1/"] });
const config = {
  ...iso.config,
  chainId: 1,
  chainsFile: { path: "multi-chain.test.yaml", chains: [entry(MAINNET, 1), entry(OTHER, 10)] },
  backtest: { maxBlocks: 10, timeoutMs: 60_000 },
};
const ADMIN = { authorization: `Bearer ${config.api.adminToken}` };
const seg = (c: ChainId) => `/${c.technology}/${c.blockchain}/${c.network}`;

/** A Method rule: USDT transfer() calls of more than 500 tokens (the `scaled` value, from the chain's token list). */
const methodRule = (chain: ChainId): RuleInput => ({
  name: "USDT transfer() above 500",
  maxConfirmationCount: 1,
  ...chain,
  config: {
    targetType: "Method",
    targetMap: [
      { name: "name", operator: "Equals", value: "transfer" },
      { name: "to", operator: "Equals (ignore case)", value: USDT },
      argIs("value", "Greater", "500", { useScaledValue: true }),
    ],
    alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/x" } }],
  },
});

describe.skipIf(!up)("one API, two chains", () => {
  let es: Client;
  let app: FastifyInstance;
  let auth: { authorization: string };
  const indices: string[] = [];

  beforeAll(async () => {
    es = new Client({ node: config.elasticsearch.url });
    for (const c of [MAINNET, OTHER]) indices.push(...(await indexFixtures(es, c, iso.indexPrefix)));
    app = await buildApi({ config, es, logger: false });
    // An account token (the shared account store), not a static one.
    const account = await app.inject({ method: "POST", url: "/admin/accounts/", headers: ADMIN, payload: { name: "two chains" } });
    expect(account.statusCode, account.body).toBe(201);
    const issued = await app.inject({ method: "POST", url: `/admin/accounts/${account.json().id}/tokens/`, headers: ADMIN, payload: {} });
    expect(issued.statusCode, issued.body).toBe(201);
    auth = { authorization: `Bearer ${issued.json().token}` };
  });

  afterAll(async () => {
    await app?.close();
    if (es) {
      await es.indices.delete({ index: indices, ignore_unavailable: true }).catch(() => {});
      await es.close();
    }
    await deleteRedisKeys(config.redisUrl, config.redisKeyPrefix).catch(() => {});
  });

  it("GET /chains/ lists both chains with what each one's ingest published, and needs a token", async () => {
    const before = await app.inject({ method: "GET", url: "/chains/", headers: auth });
    expect(before.statusCode, before.body).toBe(200);
    const nulls = { head: null, headAt: null, ingested: null, lagBlocks: null, lagSeconds: null };
    expect(before.json()).toEqual({
      chains: [
        { ...MAINNET, chainId: 1, searchPath: "/ethereum/ethereum/mainnet/es/", ...nulls },
        { ...OTHER, chainId: 10, searchPath: "/ethereum/ethereum/othernet/es/", ...nulls },
      ],
    });

    // What ingest of `othernet` writes: its tip (lib/chain/state.ts) and its status (the position gauges).
    const redis = await connectRedisClient(config.redisUrl);
    try {
      await createRedisChainState(redis.client, config.redisKeyPrefix, OTHER).markProduced({ number: 100, hash: `0x${"cd".repeat(32)}` });
      const blockTimeMs = Date.now() - 30_000;
      const position = { head: 110, activeAtMs: Date.now(), last: 100, lastTimestampMs: blockTimeMs };
      await startIngestStatusWriter({ redis: redis.client, keyPrefix: config.redisKeyPrefix, chain: OTHER, position }).stop();
    } finally {
      await redis.close();
    }
    const after = (await app.inject({ method: "GET", url: "/chains", headers: auth })).json();
    expect(after.chains[0]).toMatchObject({ ...MAINNET, ...nulls });
    expect(after.chains[1]).toMatchObject({
      ...OTHER,
      chainId: 10,
      head: 110,
      ingested: { number: 100, hash: `0x${"cd".repeat(32)}` },
      lagBlocks: 10,
    });
    expect(after.chains[1].lagSeconds).toBeGreaterThanOrEqual(30);
    expect(typeof after.chains[1].headAt).toBe("string");

    const anonymous = await app.inject({ method: "GET", url: "/chains/" });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error.code).toBe("CS_AUTH_REQUIRED");
  });

  it("one account token searches both chains, contract and Elasticsearch-compatible routes", async () => {
    for (const c of [MAINNET, OTHER]) {
      const search = await app.inject({ method: "POST", url: `${seg(c)}/es/tx/search/`, headers: auth, payload: { size: 100 } });
      expect(search.statusCode, search.body).toBe(200);
      expect(search.json().hits.hits.map((h: { _index: string }) => h._index)).toEqual(
        txs.map(() => expect.stringContaining(`-${c.network}-`)),
      );
      const count = await app.inject({ method: "POST", url: `${seg(c)}/es/tx/_count`, headers: auth, payload: {} });
      expect(count.statusCode, count.body).toBe(200);
      expect(count.json().count).toBe(txs.length);
    }
    const unknown = await app.inject({ method: "POST", url: "/ethereum/ethereum/sepolia/es/tx/search/", headers: auth, payload: {} });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error).toEqual({
      code: "CS_UNKNOWN_CHAIN",
      message: "unknown chain ethereum/ethereum/sepolia; this service serves ethereum/ethereum/mainnet, ethereum/ethereum/othernet",
      path: null,
    });
  });

  it("stores a rule of either served chain and refuses one of an unserved chain (CS_RULE_UNKNOWN_CHAIN)", async () => {
    const created = await app.inject({ method: "POST", url: "/alerting/rules/", headers: auth, payload: methodRule(OTHER) });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject(OTHER);
    const refused = await app.inject({
      method: "POST",
      url: "/alerting/rules/",
      headers: auth,
      payload: methodRule({ ...OTHER, network: "sepolia" }),
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toEqual({
      code: "CS_RULE_UNKNOWN_CHAIN",
      message:
        'network: "sepolia" does not name a chain this deployment serves (technology/blockchain/network served: ethereum/ethereum/mainnet, ethereum/ethereum/othernet)',
      path: "network",
    });
    const backtest = await app.inject({
      method: "POST",
      url: "/alerting/rules/test/",
      headers: auth,
      payload: { rule: methodRule({ ...OTHER, network: "sepolia" }), from: FIRST_BLOCK, to: FIRST_BLOCK },
    });
    expect(backtest.statusCode).toBe(400);
    expect(backtest.json().error).toMatchObject({ code: "CS_RULE_UNKNOWN_CHAIN", path: "rule.network" });
  });

  it("a backtest decodes with its chain's id: mainnet's USDT has decimals on chain 1, none on chain 10", async () => {
    const matchesOn = async (c: ChainId) => {
      const res = await app.inject({
        method: "POST",
        url: "/alerting/rules/test/",
        headers: auth,
        payload: { rule: methodRule(c), from: FIRST_BLOCK, to: FIRST_BLOCK + 2 },
      });
      expect(res.statusCode, res.body).toBe(200);
      const lines = res.body
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { type: string; entityId?: string });
      expect(lines.at(-1)?.type).toBe("end");
      return lines.filter((l) => l.type === "match").map((l) => l.entityId);
    };
    const usdtCalls = txs.filter((t) => t.to === USDT).map((t) => `${t.hash}_m`);
    expect(usdtCalls.length).toBeGreaterThan(0);
    expect(await matchesOn(MAINNET)).toEqual(usdtCalls);
    expect(await matchesOn(OTHER)).toEqual([]);
  });

  it("the OpenAPI document names both chains: path parameter examples, rule enumerations, description", async () => {
    const doc = (await app.inject({ method: "GET", url: "/docs/json" })).json();
    expect(doc.info.description).toContain("ethereum/ethereum/mainnet, ethereum/ethereum/othernet");
    const search = doc.paths["/{technology}/{blockchain}/{network}/es/{kinds}/search/"].post;
    const network = search.parameters.find((p: { name: string }) => p.name === "network");
    expect(network.schema.examples).toEqual(["mainnet", "othernet"]);
    const count = doc.paths["/{technology}/{blockchain}/{network}/es/_count"].post;
    expect(count.parameters.find((p: { name: string }) => p.name === "network").schema.examples).toEqual(["mainnet", "othernet"]);
    expect(doc.components.schemas.RuleCreate.properties.network.enum).toEqual(["mainnet", "othernet"]);
    expect(doc.paths["/chains/"].get.operationId).toBe("listChains");
  });
});
