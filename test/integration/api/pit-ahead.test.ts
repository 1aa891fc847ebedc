/**
 * Read-ahead of point-in-time pages (api/search/read-ahead.ts) when the next request is not the
 * predicted one on the instance that read ahead, against the real Elasticsearch and Redis with two
 * API instances sharing them: pages alternating between the instances return every document exactly
 * once, in order (the page one instance read ahead is never served for a later request); a client that
 * repeats a page (the same `search_after` again, as after a timeout) or starts over gets the page it
 * asked for, not the one read ahead; each such page read ahead counts a miss.
 */
import type { Client, estypes } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/index.js";
import { type ApiInstances, readAheadOutcomes, startApiInstances } from "./api-instances.js";
import { isolatedApi, searchStackUp, txs } from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const iso = isolatedApi(base, "pa");

/** The transactions' hashes in the order of the pages below. */
const expected = [...txs].sort((a, b) => a.blockNumber.num - b.blockNumber.num || (a.hash < b.hash ? -1 : 1)).map((t) => t.hash);
const sort: estypes.SortCombinations[] = [{ "blockNumber.num": "asc" }, { hash: "asc" }];
type Tx = { hash: string };

describe.skipIf(!up)("point-in-time read-ahead when the next request is not the predicted one", () => {
  let apps: FastifyInstance[] = [];
  let clients: Client[] = [];
  let instances: ApiInstances | undefined;
  const readAhead = (i: number) => readAheadOutcomes(apps[i] as FastifyInstance);

  /** One page of `size` of point in time `id` after `after`, through instance `i`: its hashes, the last sort values and the id. */
  const page = async (i: number, id: string, size: number, after?: unknown[]) => {
    const r = await (clients[i] as Client).search<Tx>({
      pit: { id, keep_alive: "1m" },
      size,
      sort,
      ...(after ? { search_after: after as never } : {}),
    });
    return {
      hashes: r.hits.hits.map((h) => h._source?.hash as string),
      after: r.hits.hits.at(-1)?.sort as unknown[] | undefined,
      id: r.pit_id as string,
    };
  };

  beforeAll(async () => {
    instances = await startApiInstances(base, iso, iso.config, 2);
    ({ apps, clients } = instances);
  });

  afterAll(async () => {
    await instances?.close();
  });

  it("pages alternating between two instances return every document once, in order; the page read ahead elsewhere is never served", async () => {
    const before = [await readAhead(0), await readAhead(1)];
    const pit = await (clients[0] as Client).openPointInTime({ index: "tx", keep_alive: "1m" });
    let id = pit.id;
    let after: unknown[] | undefined;
    const seen: string[] = [];
    let pages = 0;
    for (let n = 0; ; n++) {
      const p = await page(n % 2, id, 2, after);
      if (p.hashes.length === 0) break;
      pages++;
      seen.push(...p.hashes);
      ({ id, after } = p);
    }
    await (clients[1] as Client).closePointInTime({ id });
    expect(seen).toEqual(expected);
    expect(pages).toBeGreaterThan(3);
    // Each instance read ahead the page the other one was then asked for; its next request is two pages further.
    const [a, b] = [await readAhead(0), await readAhead(1)];
    expect(a.hit).toBe(before[0]?.hit);
    expect(b.hit).toBe(before[1]?.hit);
    expect((a.miss ?? 0) - (before[0]?.miss ?? 0) + (b.miss ?? 0) - (before[1]?.miss ?? 0)).toBeGreaterThan(0);
  });

  it("a repeated page (the same search_after again) and a new start get the page asked for, not the one read ahead", async () => {
    const pit = await (clients[0] as Client).openPointInTime({ index: "tx", keep_alive: "1m" });
    const before = await readAhead(0);
    const first = await page(0, pit.id, 3);
    expect(first.hashes).toEqual(expected.slice(0, 3));
    const second = await page(0, first.id, 3, first.after); // the predicted request: a hit
    expect(second.hashes).toEqual(expected.slice(3, 6));
    const again = await page(0, second.id, 3, first.after); // the client repeats the second page
    expect(again.hashes).toEqual(expected.slice(3, 6));
    const restart = await page(0, again.id, 3); // and starts over
    expect(restart.hashes).toEqual(expected.slice(0, 3));
    const next = await page(0, restart.id, 3, restart.after); // predicted again: a hit
    expect(next.hashes).toEqual(expected.slice(3, 6));
    expect(await readAhead(0)).toMatchObject({ hit: (before.hit ?? 0) + 2, miss: (before.miss ?? 0) + 2 });
    await (clients[0] as Client).closePointInTime({ id: next.id });
  });
});
