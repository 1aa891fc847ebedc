/**
 * `In watchlist` conditions in the match stage's matching path (lib/match/watchlist-membership.ts) against
 * the real Redis: the rule index compiled with the prefetcher's lookup, memberships read from the
 * watchlist store (lib/watchlists/store.ts) per batch. A listed sender matches (in any letter case),
 * an unlisted one does not; a member added or removed applies to the next batch; a deleted list
 * matches nothing. Its own key prefix, deleted afterwards.
 */
import { randomBytes } from "node:crypto";
import { getAddress } from "ethers";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { benchRule } from "../../../bench/support/rules.js";
import { loadConfig } from "../../../lib/config/index.js";
import type { TypedEntity } from "../../../lib/match/entities.js";
import { createRuleIndex, type RuleIndex } from "../../../lib/match/rule-index.js";
import { createWatchlistMembership, matchEntities, type WatchlistMembership } from "../../../lib/match/watchlist-membership.js";
import type { Rule } from "../../../lib/rules/model.js";
import { createWatchlistStore, type WatchlistStore } from "../../../lib/watchlists/store.js";
import { deleteRedisKeys, redisReachable } from "../api/fixtures.js";

const base = loadConfig();
const up = await redisReachable(base.redisUrl);
const ID = `t${randomBytes(4).toString("hex")}`;
const addr = (n: number) => `0x${n.toString(16).padStart(40, "a")}`;

const rule = (id: string, watchlistId: string): Rule =>
  benchRule(id, "Transaction", [{ name: "from", operator: "In watchlist", value: watchlistId }], { accountId: "acc" });

const tx = (from: string): TypedEntity => ({ type: "Transaction", entity: { from, to: addr(99) } }) as unknown as TypedEntity;

describe.skipIf(!up)("In watchlist rules (real Redis)", () => {
  const redis = createClient({ url: base.redisUrl });
  let store: WatchlistStore;
  let membership: WatchlistMembership;
  let index: RuleIndex;
  const ids = async (entities: TypedEntity[]) => (await matchEntities(index, membership, entities)).map((rs) => rs.map((r) => r.id));

  beforeAll(async () => {
    await redis.connect();
    store = createWatchlistStore({ redis, keyPrefix: `${ID}:`, limits: { maxPerAccount: 10, maxMembers: 1000 } });
    membership = createWatchlistMembership(store);
    index = createRuleIndex({ watchlists: membership.lookup });
  });

  afterAll(async () => {
    await redis.quit();
    await deleteRedisKeys(base.redisUrl, ID);
  });

  it("matches listed senders only; an added member applies to the next batch, a removed one stops", async () => {
    const w = await store.create("acc", { name: "hot wallets", kind: "address" });
    await store.add("acc", w.id, [addr(1), addr(2)]);
    index.upsert(rule("r1", w.id));
    expect(index.watchlistRules()).toBe(1);
    // A checksummed sender is the lowercased member.
    expect(await ids([tx(getAddress(addr(1))), tx(addr(3)), tx(addr(2))])).toEqual([["r1"], [], ["r1"]]);
    await store.add("acc", w.id, [addr(3)]);
    await store.remove("acc", w.id, [addr(1)]);
    expect(await ids([tx(addr(1)), tx(addr(3))])).toEqual([[], ["r1"]]);
  });

  it("a rule of another account does not see the list; a deleted list matches nothing", async () => {
    const w = await store.create("acc", { name: "l", kind: "address" });
    await store.add("acc", w.id, [addr(5)]);
    index.upsert({ ...rule("r2", w.id), accountId: "other" });
    index.upsert(rule("r3", w.id));
    expect(await ids([tx(addr(5))])).toEqual([["r3"]]);
    await store.delete("acc", w.id);
    expect(await ids([tx(addr(5))])).toEqual([[]]);
    index.remove("r2");
    index.remove("r3");
  });

  it("a string watchlist matches event names inside an Inspect", async () => {
    const w = await store.create("acc", { name: "names", kind: "string" });
    await store.add("acc", w.id, ["Transfer"]);
    const r = rule("r4", w.id);
    r.config = {
      ...r.config,
      targetType: "Event",
      targetMap: [{ name: "args", operator: "Inspect", operatorParameters: [{ name: "name", operator: "In watchlist", value: w.id }] }],
    } as Rule["config"];
    index.upsert(r);
    const ev = (name: string) => ({ type: "Event", entity: { args: [{ name: "x" }, { name }] } }) as unknown as TypedEntity;
    expect(await ids([ev("Transfer"), ev("Approval")])).toEqual([["r4"], []]);
  });
});
