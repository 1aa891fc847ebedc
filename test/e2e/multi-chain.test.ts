/**
 * Two chains, one deployment: two anvil nodes with different chain ids (`ethereum/ethereum/anvil`,
 * 31337, and `ethereum/ethereum/anvil-l2`, 31338), each with its own ingest → decode → index → match
 * → notify (test/support/anvil-env.ts, traces on), all in one Kafka/Elasticsearch/Redis namespace
 * (one harness), and one API serving both. Both nodes deploy the same token at the same address
 * from the same account, so only the chain tells their records apart.
 *
 * - every search kind (block, tx, log, event, call) of each chain equals that node's canonical chain
 *   (`compareWithChain`: no document of the other chain), and the Elasticsearch-client routes
 *   (`_search`, `_msearch`, `_count`) of each chain answer only its own records;
 * - a rule on B (transfers to an address) never fires on A's transfer to that address, and fires on B's;
 * - a reorg on A (`anvil_reorg`) leaves B's index and alerts untouched: B's documents are the same
 *   before and after, B's webhook got nothing more, and both chains still equal their nodes;
 * - `GET /chains/` reports both chains' heads and ingested blocks.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../api/app.js";
import type { ChainId } from "../../lib/config/index.js";
import { deletePrefix } from "../integration/accounts/redis.js";
import { type AnvilEnv, startAnvilEnv, type WebhookAlert } from "../support/anvil-env.js";
import { compareWithChain, waitForChain } from "../support/canonical.js";
import { createHarness, type Harness, probeStack, waitFor } from "../support/harness.js";
import { tokenTransferRule } from "../support/rules.js";

const up = await probeStack();
const A: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "anvil" };
const B: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "anvil-l2" };
const path = (c: ChainId) => `/${c.technology}/${c.blockchain}/${c.network}/es`;

type Hit = { _id: string; _index: string; _source: { hash?: string; blockHash?: string } };

describe.skipIf(!up.ok)("two chains on one API and one Kafka/Elasticsearch/Redis", () => {
  let h: Harness;
  let a: AnvilEnv;
  let b: AnvilEnv;
  let app: FastifyInstance;
  let auth: { authorization: string };
  const startedAt = Date.now();

  const compare = (env: AnvilEnv, orphaned: string[] = []) =>
    compareWithChain({ rpcUrl: env.anvil.rpcUrl, app, config: env.config, decoder: env.decoder, calls: true, orphaned });
  const settle = (env: AnvilEnv, orphaned: string[] = []) =>
    waitForChain({ rpcUrl: env.anvil.rpcUrl, app, config: env.config, decoder: env.decoder, calls: true, orphaned }, 60_000);
  /** Canonical block hashes of a node from 0 to its head. */
  const blockHashes = async (env: AnvilEnv): Promise<Set<string>> => {
    const head = await env.provider.getBlockNumber();
    const blocks = await Promise.all(Array.from({ length: head + 1 }, (_, n) => env.provider.getBlock(n)));
    return new Set(blocks.map((blk) => blk?.hash ?? ""));
  };
  const post = (url: string, payload: unknown, contentType = "application/json") =>
    app.inject({ method: "POST", url, headers: { ...auth, "content-type": contentType }, payload: payload as string });
  /** Every document of chain `c` through the Elasticsearch-compatible `_search` (all kinds). */
  const esSearchAll = async (c: ChainId): Promise<Hit[]> => {
    const res = await post(`${path(c)}/_search`, { query: { match_all: {} }, size: 10_000 });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().hits.hits as Hit[];
  };
  const blockOf = (hit: Hit) => (hit._source.blockHash ?? hit._source.hash) as string;
  /**
   * The alerts at `label` once the confirmed one arrived (the pending one comes first unless the match stage
   * saw the transfer's block after the confirming blocks: then only `confirmed`, which seen in loaded runs);
   * on a timeout, what both receivers got is printed first.
   */
  const waitAlerts = (env: AnvilEnv, label: string, tx: string) =>
    waitFor(async () => {
      const got = env.alertsAt(label);
      return got.some((x) => x.status === "confirmed") ? got : undefined;
    }, 60_000).catch((err: unknown) => {
      const seen = (e: AnvilEnv) => e.http.requests.map((r) => [r.path, r.status, r.body.slice(0, 200)]);
      console.log(`no confirmed alert at ${label} for ${tx}; received: ${JSON.stringify({ a: seen(a), b: seen(b) })}`);
      throw err;
    });
  /** `[status, network, transaction]` of each alert, the pending one (if any) dropped: it may or may not come. */
  const confirmedOnly = (alerts: WebhookAlert[]) =>
    alerts.filter((x) => x.status !== "pending").map((x) => [x.status, x.chain.network, x.entityId.split("_")[0]]);

  beforeAll(async () => {
    h = createHarness();
    const options = { traces: true, index: true, harness: h, match: () => ({ reloadIntervalMs: 200 }) };
    // One after the other: the chains share the harness's topics that are not per chain.
    a = await startAnvilEnv({ ...options, chain: A, chainId: 31337 });
    b = await startAnvilEnv({ ...options, chain: B, chainId: 31338 });
    expect(a.tokenAddress).toBe(b.tokenAddress); // same deployer, same nonce: only the chain differs
    app = await buildApi({ config: a.config, chains: [A, B], es: h.es, logger: false });
    auth = { authorization: `Bearer ${h.config.api.tokens[0]}` };
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await Promise.allSettled([a?.stop(), b?.stop()]);
    await h?.cleanup();
    if (h) await deletePrefix(h.config.redisUrl, h.redisPrefix).catch(() => 0);
    console.log(`multi-chain e2e: ${((Date.now() - startedAt) / 1000).toFixed(1)} s`);
  });

  it("a rule on B never fires on A's traffic; every search of each chain holds only its own records", { timeout: 240_000 }, async () => {
    const to = a.newAddress();
    const rule = (env: AnvilEnv, label: string) =>
      env.rules.create(
        "acc-multi",
        tokenTransferRule({
          name: label,
          chain: env.config.chain,
          token: env.tokenAddress,
          maxConfirmationCount: 2,
          url: env.hook(label),
          to,
        }),
      );
    const [ruleA, ruleB] = await Promise.all([rule(a, "on-a"), rule(b, "on-b")]);
    await Promise.all([a.waitActive([ruleA.id]), b.waitActive([ruleB.id])]);
    expect(a.match.index.get(ruleB.id)).toBeUndefined(); // A's match stage holds only A's rules
    expect(b.match.index.get(ruleA.id)).toBeUndefined();

    // A's transfer to `to`: A's rule fires (pending, then confirmed); B's stays silent.
    const txA = await a.transfer(to, 1_000_000n);
    await a.mine(3);
    const alertsA = await waitAlerts(a, "on-a", txA);
    expect(confirmedOnly(alertsA)).toEqual([["confirmed", "anvil", txA]]);
    expect(alertsA.every((x) => x.chain.network === "anvil" && x.entityId.startsWith(txA))).toBe(true);
    const countA = alertsA.length;
    // B then transfers too (a different transaction hash): B's rule fires on it, and only on it.
    const txB = await b.transfer(to, 2_000_000n);
    await b.mine(3);
    const alertsB = await waitAlerts(b, "on-b", txB);
    expect(txB).not.toBe(txA);
    expect(confirmedOnly(alertsB)).toEqual([["confirmed", "anvil-l2", txB]]);
    expect(alertsB.every((x) => x.chain.network === "anvil-l2" && x.entityId.startsWith(txB))).toBe(true);
    expect(a.alertsAt("on-a")).toHaveLength(countA); // B's transfer sent nothing to A's receiver

    // Contract search routes, every kind (calls too): each chain equals its own node.
    const [cmpA, cmpB] = await Promise.all([settle(a), settle(b)]);
    expect(cmpA.problems).toEqual([]);
    expect(cmpB.problems).toEqual([]);
    expect(cmpA.documents).toBeGreaterThan(0);
    expect(cmpB.documents).toBeGreaterThan(0);

    // Elasticsearch-client routes: _search, _count and _msearch of one chain name only its blocks.
    const hashes = { anvil: await blockHashes(a), "anvil-l2": await blockHashes(b) };
    for (const [c, own, other] of [
      [A, hashes.anvil, hashes["anvil-l2"]],
      [B, hashes["anvil-l2"], hashes.anvil],
    ] as const) {
      const hits = await esSearchAll(c);
      expect(hits.length).toBe(c === A ? cmpA.documents : cmpB.documents);
      expect(hits.filter((x) => !own.has(blockOf(x))).map((x) => x._id)).toEqual([]);
      expect(hits.filter((x) => other.has(blockOf(x))).map((x) => x._id)).toEqual([]);
      const ownIndex = new RegExp(`-${c.network}-(block|tx|log|event|call)`);
      expect(hits.filter((x) => !ownIndex.test(x._index)).map((x) => x._index)).toEqual([]);
      const count = await post(`${path(c)}/_count`, { query: { match_all: {} } });
      expect(count.json().count).toBe(hits.length);
      const ndjson = `${["tx", "event", "call"].map((k) => `{"index":"${k}"}\n{"size":10000}`).join("\n")}\n`;
      const multi = await post(`${path(c)}/_msearch`, ndjson, "application/x-ndjson");
      expect(multi.statusCode, multi.body).toBe(200);
      const responses = multi.json().responses as Array<{ hits: { hits: Hit[] } }>;
      expect(responses).toHaveLength(3);
      const msHits = responses.flatMap((r) => r.hits.hits);
      expect(msHits.length).toBeGreaterThan(0);
      expect(msHits.filter((x) => !own.has(blockOf(x))).map((x) => x._id)).toEqual([]);
    }
    // The same transaction hash is searchable on its own chain only.
    const byHash = async (c: ChainId, hash: string) =>
      (await post(`${path(c)}/tx/search/`, { query: { term: { hash } } })).json().hits.hits.length as number;
    expect([await byHash(A, txA), await byHash(B, txA), await byHash(B, txB), await byHash(A, txB)]).toEqual([1, 0, 1, 0]);
  });

  it("a reorg on A leaves B's index and alerts untouched", { timeout: 120_000 }, async () => {
    const before = (await esSearchAll(B)).map((x) => x._id).sort();
    const alertsB = b.alertsAt("on-b").length;
    const orphanedA = (await a.provider.getBlock("latest"))?.hash as string;
    await a.rpc("anvil_reorg", [2, []]);
    await a.mine(2);
    const [cmpA, cmpB] = await Promise.all([settle(a, [orphanedA]), compare(b)]);
    expect(cmpA.problems).toEqual([]);
    expect(cmpA.stillCanonical).toEqual([]);
    expect(cmpB.problems).toEqual([]);
    expect((await esSearchAll(B)).map((x) => x._id).sort()).toEqual(before);
    expect(b.alertsAt("on-b")).toHaveLength(alertsB);

    // GET /chains/: both chains, each at its node's head (ingest publishes about once a second).
    const heads = { anvil: await a.provider.getBlockNumber(), "anvil-l2": await b.provider.getBlockNumber() };
    const chains = await waitFor(async () => {
      const res = await app.inject({ method: "GET", url: "/chains/", headers: auth });
      const list = res.json().chains as Array<{
        network: "anvil" | "anvil-l2";
        head: number;
        ingested: { number: number } | null;
        lagBlocks: number;
      }>;
      return list.every((c) => c.head === heads[c.network] && c.ingested?.number === heads[c.network]) ? list : undefined;
    }, 20_000);
    expect(chains.map((c) => [c.network, c.lagBlocks])).toEqual([
      ["anvil", 0],
      ["anvil-l2", 0],
    ]);
  });
});
