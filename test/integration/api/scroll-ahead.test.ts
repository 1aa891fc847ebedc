/**
 * Read-ahead of scroll pages (api/search/scroll-ahead.ts) against the real Elasticsearch and Redis,
 * with two API instances sharing them: a scroll paged on one instance is answered from its
 * read-ahead; a scroll whose pages alternate between the two instances returns every document
 * exactly once, in order, the pages read ahead by one handed over to the other through Redis; a
 * page claimed by an instance that never hands it over is 404 `CS_CONTEXT_NOT_FOUND`, never a
 * silently missing page, and the scroll is closed with it (asked again, 404 too); an instance that
 * closes hands over the page it holds; concurrent requests on one scroll lose no page; clearing a
 * scroll drops its claim.
 */
import type { AddressInfo } from "node:net";
import { Client, errors } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApi } from "../../../api/app.js";
import { loadConfig } from "../../../lib/config/index.js";
import { waitFor } from "../../support/harness.js";
import { type ApiInstances, readAheadOutcomes, startApiInstances } from "./api-instances.js";
import { isolatedApi, searchStackUp, txs } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const iso = isolatedApi(base, "sa");
/** A short wait for another instance's page, so that the lost-page case answers quickly. */
const config = { ...iso.config, elasticsearch: { ...iso.config.elasticsearch, requestTimeoutMs: 1500 } };

/** The transactions' hashes in the order of the scrolls below. */
const expected = [...txs].sort((a, b) => a.blockNumber.num - b.blockNumber.num || (a.hash < b.hash ? -1 : 1)).map((t) => t.hash);
const sort = ["blockNumber.num", { hash: "asc" as const }];

describe.skipIf(!up)("scroll read-ahead across two API instances", () => {
  let es: Client;
  let apps: FastifyInstance[] = [];
  let clients: Client[] = [];
  let instances: ApiInstances | undefined;

  beforeAll(async () => {
    instances = await startApiInstances(base, iso, config, 2);
    ({ es, apps, clients } = instances);
    // The hand-over channel is subscribed in the background: no scroll is read ahead before.
    await waitFor(async () => apps.every((a) => a.scrollAhead?.isReady), 10_000, 20);
  });

  afterAll(async () => {
    await instances?.close();
  });

  /** Pages a scroll of `size`, page n through instance `via(n)`; the hashes seen. */
  async function scrollAll(size: number, via: (n: number) => number): Promise<string[]> {
    const first = await (clients[via(0)] as Client).search<{ hash: string }>({ index: "tx", scroll: "1m", size, sort });
    const seen = first.hits.hits.map((h) => h._source?.hash as string);
    let id = first._scroll_id as string;
    for (let n = 1; ; n++) {
      const page = await (clients[via(n)] as Client).scroll<{ hash: string }>({ scroll_id: id, scroll: "1m" });
      if (page.hits.hits.length === 0) break;
      seen.push(...page.hits.hits.map((h) => h._source?.hash as string));
      id = page._scroll_id as string;
    }
    await (clients[0] as Client).clearScroll({ scroll_id: id });
    return seen;
  }

  it("pages on one instance come from its read-ahead, every transaction once, in order", async () => {
    const before = await readAheadOutcomes(apps[0] as FastifyInstance);
    expect(await scrollAll(2, () => 0)).toEqual(expected);
    const after = await readAheadOutcomes(apps[0] as FastifyInstance);
    // Every page after the first, and the empty one that ends the scroll, was read ahead.
    expect((after.hit ?? 0) - (before.hit ?? 0)).toBe(Math.ceil(txs.length / 2));
  });

  it("pages alternating between the instances: every transaction once, in order, the pages handed over through Redis", async () => {
    const before = await Promise.all(apps.map(readAheadOutcomes));
    expect(await scrollAll(2, (n) => n % 2)).toEqual(expected);
    const after = await Promise.all(apps.map(readAheadOutcomes));
    const handoffs = (after[0]?.handoff ?? 0) + (after[1]?.handoff ?? 0) - (before[0]?.handoff ?? 0) - (before[1]?.handoff ?? 0);
    expect(handoffs).toBe(Math.ceil(txs.length / 2));
  });

  it("a page claimed by an instance that never hands it over is 404 CS_CONTEXT_NOT_FOUND, not a missing page", async () => {
    const first = await (clients[0] as Client).search({ index: "tx", scroll: "1m", size: 2, sort });
    const id = first._scroll_id as string;
    // Instance 0 claimed page 2; replace its claim by one of an instance that is gone.
    const redis = createClient({ url: base.redisUrl });
    await redis.connect();
    try {
      const key = `${iso.id}:ctx:${id}:ahead`;
      expect(await redis.get(key)).toContain('"owner"');
      await redis.set(key, JSON.stringify({ owner: "gone", token: "never-written" }), { PX: 60_000 });
    } finally {
      await redis.quit();
    }
    const err = await (clients[1] as Client).scroll({ scroll_id: id, scroll: "1m" }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(errors.ResponseError);
    const body = (err as InstanceType<typeof errors.ResponseError>).body as { error: { type: string; reason: string } };
    expect((err as InstanceType<typeof errors.ResponseError>).statusCode).toBe(404);
    expect(body.error.type).toBe("CS_CONTEXT_NOT_FOUND");
    expect(body.error.reason).toContain("read ahead by an API instance that stopped");
    // The scroll is closed with it: asked again, on either instance, it is 404 too, never the page after the lost one.
    for (const c of clients) {
      const again = await c.scroll({ scroll_id: id, scroll: "1m" }).then(
        (page) => page.hits.hits.length,
        (e: unknown) => e,
      );
      expect(again).toBeInstanceOf(errors.ResponseError);
      expect((again as InstanceType<typeof errors.ResponseError>).statusCode).toBe(404);
    }
  });

  it("concurrent requests on one scroll lose no transaction: a page read ahead and not yet taken is never replaced", async () => {
    const first = await (clients[0] as Client).search<{ hash: string }>({ index: "tx", scroll: "1m", size: 2, sort });
    const id = first._scroll_id as string;
    const seen = first.hits.hits.map((h) => h._source?.hash as string);
    for (let round = 0; round < 20; round++) {
      const pages = await Promise.all([0, 1].map(() => (clients[0] as Client).scroll<{ hash: string }>({ scroll_id: id, scroll: "1m" })));
      const hashes = pages.flatMap((p) => p.hits.hits.map((h) => h._source?.hash as string));
      if (hashes.length === 0) break;
      seen.push(...hashes);
    }
    // Every transaction at least once. Not exactly once: Elasticsearch itself may answer concurrent
    // calls on one scroll with the same page (5 of 30 runs of this pattern straight against 8.19).
    expect([...new Set(seen)].sort()).toEqual([...expected].sort());
    await (clients[0] as Client).clearScroll({ scroll_id: id });
  });

  it("an instance that closes hands over the page it read ahead of another instance's scroll: nothing missing", async () => {
    // (An instance closes the scrolls it opened when it closes, as documented; here instance 0 opened it.)
    const first = await (clients[0] as Client).search<{ hash: string }>({ index: "tx", scroll: "1m", size: 2, sort });
    const seen = first.hits.hits.map((h) => h._source?.hash as string);
    const other = await buildApi({ config, es, logger: false });
    await other.listen({ host: "127.0.0.1", port: 0 });
    await waitFor(async () => other.scrollAhead?.isReady, 10_000, 20);
    const node = `http://127.0.0.1:${(other.server.address() as AddressInfo).port}/ethereum/ethereum/mainnet/es`;
    const otherClient = new Client({ node, auth: { bearer: iso.token } });
    const second = await otherClient.scroll<{ hash: string }>({ scroll_id: first._scroll_id as string, scroll: "5m" });
    seen.push(...second.hits.hits.map((h) => h._source?.hash as string));
    await otherClient.close();
    expect(await readAheadOutcomes(other)).toMatchObject({ handoff: 1 }); // page 2 came from instance 0's read-ahead
    await other.close(); // it held page 3, read ahead
    // Written to Redis for as long as its claim lives (the 5m keep-alive), not the 60 s read-ahead TTL: a client may pause that long.
    const redis = createClient({ url: base.redisUrl });
    await redis.connect();
    try {
      const keys = await redis.keys(`${iso.id}:ctx:${first._scroll_id}:page:*`);
      expect(keys).toHaveLength(1);
      expect(await redis.pTTL(keys[0] as string)).toBeGreaterThan(299_000);
    } finally {
      await redis.quit();
    }
    let id = second._scroll_id as string;
    for (;;) {
      const page = await (clients[0] as Client).scroll<{ hash: string }>({ scroll_id: id, scroll: "1m" });
      if (page.hits.hits.length === 0) break;
      seen.push(...page.hits.hits.map((h) => h._source?.hash as string));
      id = page._scroll_id as string;
    }
    expect(seen).toEqual(expected);
    await (clients[0] as Client).clearScroll({ scroll_id: id });
  });

  it("the claim lives as long as the scroll's keep-alive, not the read-ahead TTL: a client may wait between pages", async () => {
    const first = await (clients[0] as Client).search({ index: "tx", scroll: "5m", size: 2, sort });
    const id = first._scroll_id as string;
    const redis = createClient({ url: base.redisUrl });
    await redis.connect();
    try {
      const ttl = await redis.pTTL(`${iso.id}:ctx:${id}:ahead`);
      expect(ttl).toBeGreaterThan(config.api.readAhead.ttlMs);
      expect(ttl).toBeGreaterThan(299_000);
    } finally {
      await redis.quit();
    }
    await (clients[0] as Client).clearScroll({ scroll_id: id });
  });

  it("clearing a scroll drops its claim, and the owner's page when another instance clears it", async () => {
    const owner = (apps[0] as FastifyInstance).scrollAhead;
    const held = owner?.heldBytes ?? 0;
    const first = await (clients[0] as Client).search({ index: "tx", scroll: "1m", size: 2, sort });
    const id = first._scroll_id as string;
    await waitFor(async () => (owner?.heldBytes ?? 0) > held, 10_000, 10);
    await (clients[1] as Client).clearScroll({ scroll_id: id });
    await waitFor(async () => owner?.heldBytes === held, 10_000, 10);
    const redis = createClient({ url: base.redisUrl });
    await redis.connect();
    try {
      expect(await redis.keys(`${iso.id}:ctx:${id}:*`)).toEqual([]);
    } finally {
      await redis.quit();
    }
  });
});
