import { randomBytes, randomUUID } from "node:crypto";
import { createClient } from "redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RULE_STORE_ERROR_HTTP_STATUS } from "../../../api/routes/rules/errors.js";
import { loadConfig } from "../../../lib/config/index.js";
import type { Rule, RuleInput } from "../../../lib/rules/model.js";
import {
  type ConnectedRuleStore,
  connectRuleStore,
  DEFAULT_MAX_RULES_PER_ACCOUNT,
  isRuleStoreError,
  type RuleChange,
  type RuleStoreErrorCode,
  ruleKeys,
} from "../../../lib/rules/store.js";
import { deletePrefix, keysOf, redisSkipMessage, redisUp } from "../accounts/redis.js";

const url = loadConfig().redisUrl;
const prefix = `rt${randomBytes(4).toString("hex")}:`;
const config = { redisUrl: url, redisKeyPrefix: prefix };
const up = await redisUp(url);
if (!up) console.warn(redisSkipMessage(url));

const k = ruleKeys(prefix);
const alice = randomUUID();
const bob = randomUUID();

function input(name: string, extra: Record<string, unknown> = {}): RuleInput {
  return {
    name,
    maxConfirmationCount: 3,
    technology: "ethereum",
    blockchain: "ethereum",
    network: "mainnet",
    config: {
      targetType: "Transaction",
      targetMap: [{ name: "to", operator: "Equals (ignore case)", value: "0xdAC17F958D2ee523a2206206994597C13D831ec7" }],
      alerts: [{ type: "Webhook (POST)", parameters: { url: "https://hooks.example.com/{transactionHash}" } }],
    },
    ...extra,
  };
}

async function code(p: Promise<unknown>): Promise<RuleStoreErrorCode> {
  try {
    await p;
  } catch (err) {
    if (isRuleStoreError(err)) return err.code;
    throw err;
  }
  throw new Error("did not throw");
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!up)("rule store (real Redis)", () => {
  let conn: ConnectedRuleStore;
  let clock = Date.parse("2026-01-01T00:00:00.000Z");
  const now = () => new Date(clock);
  const raw = createClient({ url });
  raw.on("error", () => {});

  beforeAll(async () => {
    conn = await connectRuleStore(config, { now });
    await raw.connect();
  });

  afterAll(async () => {
    await conn?.close();
    if (raw.isOpen) await raw.close();
    if (up) {
      await deletePrefix(url, prefix);
      expect(await keysOf(url, prefix)).toEqual([]);
    }
  });

  it("creates, reads, updates and deletes a rule; keeps extra properties; maintains the indexes", async () => {
    const { store } = conn;
    const created = await store.create(alice, {
      ...input("crud", { labels: { team: "risk" }, version: 42 }),
      id: "not-mine",
      createdAt: "1999",
    } as RuleInput);
    expect(created).toMatchObject({
      accountId: alice,
      name: "crud",
      version: 1,
      state: "enabled",
      sendPendingAlerts: false,
      description: null,
      labels: { team: "risk" },
      createdAt: "2026-01-01T00:00:00.000Z",
      updatedAt: "2026-01-01T00:00:00.000Z",
    });
    expect(created.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await store.get(alice, created.id)).toEqual(created);
    expect(JSON.parse((await raw.get(k.rule(created.id)))!)).toEqual(created);
    expect(await raw.sIsMember(k.rules, created.id)).toBeTruthy();
    expect(await raw.zRange(k.accountRules(alice), 0, -1)).toContain(`${created.createdAt}|${created.id}`);

    clock += 1000;
    const updated = await store.update(alice, created.id, {
      name: "crud 2",
      state: "disabled",
      config: input("x").config,
      id: "x",
    } as never);
    expect(updated).toMatchObject({ id: created.id, name: "crud 2", state: "disabled", version: 2, labels: { team: "risk" } });
    expect(updated.createdAt).toBe(created.createdAt);
    expect(updated.updatedAt).toBe("2026-01-01T00:00:01.000Z");
    expect(await store.get(alice, created.id)).toEqual(updated);

    expect(await store.delete(alice, created.id)).toBe(true);
    expect(await store.get(alice, created.id)).toBeNull();
    expect(await store.delete(alice, created.id)).toBe(false);
    expect(await raw.exists(k.rule(created.id))).toBe(0);
    expect(await raw.sIsMember(k.rules, created.id)).toBeFalsy();
    expect(await raw.zRange(k.accountRules(alice), 0, -1)).not.toContain(`${created.createdAt}|${created.id}`);
    expect(await code(store.update(alice, created.id, { name: "gone" }))).toBe("CS_RULE_NOT_FOUND");
  });

  it("isolates accounts: another account's rule is not found", async () => {
    const { store } = conn;
    const rule = await store.create(alice, input("alice's"));
    expect(await store.get(bob, rule.id)).toBeNull();
    expect(await store.getById(rule.id)).toEqual(rule); // internal consumers (match stage) only
    expect(await store.getById("not-a-uuid")).toBeNull();
    expect(await code(store.update(bob, rule.id, { name: "stolen" }))).toBe("CS_RULE_NOT_FOUND");
    expect(RULE_STORE_ERROR_HTTP_STATUS.CS_RULE_NOT_FOUND).toBe(404);
    expect(await store.delete(bob, rule.id)).toBe(false);
    expect((await store.list(bob)).rules.map((r) => r.id)).not.toContain(rule.id);
    expect(await store.get(alice, rule.id)).toEqual(rule);
    expect(await store.get(alice, "not-a-uuid")).toBeNull();
    expect(await store.delete(alice, "../x")).toBe(false);
    expect(await code(store.update(alice, "nope", {}))).toBe("CS_RULE_NOT_FOUND");
  });

  it("refuses a stale version (409) and a change of chain; optimistic concurrency across connections", async () => {
    const { store } = conn;
    const rule = await store.create(alice, input("versioned"));
    const v2 = await store.update(alice, rule.id, { name: "v2" }, 1);
    expect(v2.version).toBe(2);
    expect(await code(store.update(alice, rule.id, { name: "stale" }, 1))).toBe("CS_RULE_VERSION_CONFLICT");
    expect(await code(store.update(alice, rule.id, { name: "stale", version: 1 }))).toBe("CS_RULE_VERSION_CONFLICT");
    expect(RULE_STORE_ERROR_HTTP_STATUS.CS_RULE_VERSION_CONFLICT).toBe(409);
    try {
      await store.update(alice, rule.id, {}, 7);
    } catch (err) {
      expect(isRuleStoreError(err) && err.details.currentVersion).toBe(2);
    }
    const v3 = await store.update(alice, rule.id, { name: "v3", version: 2 });
    expect(v3).toMatchObject({ name: "v3", version: 3 });
    expect(v3).not.toHaveProperty("version", 2);

    expect(await code(store.update(alice, rule.id, { network: "sepolia" }))).toBe("CS_RULE_IMMUTABLE_FIELD");
    expect((await store.update(alice, rule.id, { technology: "ethereum", blockchain: "ethereum", network: "mainnet" })).version).toBe(4);

    // Two processes (two connections) racing with the same expected version: exactly one wins.
    const other = await connectRuleStore(config, { now });
    try {
      const results = await Promise.allSettled([
        store.update(alice, rule.id, { name: "mine" }, 4),
        other.store.update(alice, rule.id, { name: "theirs" }, 4),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const rejected = results.filter((r) => r.status === "rejected");
      expect(rejected).toHaveLength(1);
      expect(isRuleStoreError((rejected[0] as PromiseRejectedResult).reason, "CS_RULE_VERSION_CONFLICT")).toBe(true);
      expect((await store.get(alice, rule.id))!.version).toBe(5);

      // Without a version, concurrent writers never lose an increment.
      await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? store : other.store).update(alice, rule.id, { [`field${i}`]: i })));
      const final = (await store.get(alice, rule.id))!;
      expect(final.version).toBe(15);
      for (let i = 0; i < 10; i++) expect(final[`field${i}`]).toBe(i);
    } finally {
      await other.close();
    }
  });

  it("lists an account's rules page by page, oldest first, with a stable cursor", async () => {
    const { store } = conn;
    const account = randomUUID();
    const made: Rule[] = [];
    for (let i = 0; i < 7; i++) {
      if (i % 2 === 0) clock += 1000; // pairs share a createdAt: ties are ordered by id
      made.push(await store.create(account, input(`page ${i}`)));
    }
    const expected = [...made].sort((a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1));

    const seen: Rule[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const page: Awaited<ReturnType<typeof store.list>> = await store.list(account, { limit: 3, cursor });
      sizes.push(page.rules.length);
      seen.push(...page.rules);
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(sizes).toEqual([3, 3, 1]);
    expect(seen.map((r) => r.id)).toEqual(expected.map((r) => r.id));

    const all = await store.list(account);
    expect(all.rules.map((r) => r.id)).toEqual(expected.map((r) => r.id));
    expect(all.nextCursor).toBeNull();
    const exact = await store.list(account, { limit: 7 });
    expect(exact.nextCursor).toBeNull();

    // A cursor stays valid when its rule is deleted meanwhile.
    const first = await store.list(account, { limit: 2 });
    await store.delete(account, first.rules[1]!.id);
    const rest = await store.list(account, { limit: 10, cursor: first.nextCursor });
    expect(rest.rules.map((r) => r.id)).toEqual(expected.slice(2).map((r) => r.id));

    expect(await code(store.list(account, { limit: 0 }))).toBe("CS_RULE_INVALID_PAGE");
    expect(await code(store.list(account, { limit: 501 }))).toBe("CS_RULE_INVALID_PAGE");
    expect(await code(store.list(account, { cursor: "garbage" }))).toBe("CS_RULE_INVALID_PAGE");
    expect((await store.list(account, { limit: 500 })).rules).toHaveLength(6);
    expect(await store.list(randomUUID())).toEqual({ rules: [], nextCursor: null });
  });

  it("publishes a change for every create, update and delete", async () => {
    const { store } = conn;
    const changes: RuleChange[] = [];
    const unsubscribe = await store.subscribe((c) => changes.push(c));
    const rule = await store.create(alice, input("watched"));
    await store.update(alice, rule.id, { description: "now described" });
    await store.delete(alice, rule.id);
    await raw.publish(k.changes, "not json");
    await raw.publish(k.changes, JSON.stringify({ op: "explode", id: rule.id, version: 1 }));
    await until(() => changes.length >= 3);
    expect(changes).toEqual([
      { op: "upsert", id: rule.id, version: 1 },
      { op: "upsert", id: rule.id, version: 2 },
      { op: "delete", id: rule.id, version: 2 },
    ]);
    // A refused write publishes nothing.
    await code(store.update(bob, rule.id, { name: "x" }));
    await unsubscribe();
    await unsubscribe();
    await store.create(alice, input("after unsubscribe"));
    await new Promise((r) => setTimeout(r, 200));
    expect(changes).toHaveLength(3);
  });

  it("limits rules per account (CS_RULE_LIMIT_REACHED, 409), atomically across connections", async () => {
    const carol = randomUUID();
    const limited = [await connectRuleStore(config, { maxRulesPerAccount: 5 }), await connectRuleStore(config, { maxRulesPerAccount: 5 })];
    try {
      // 12 concurrent creates through two connections: exactly 5 succeed.
      const results = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => limited[i % 2]!.store.create(carol, input(`c${i}`))));
      const made = results.filter((r) => r.status === "fulfilled");
      expect(made).toHaveLength(5);
      for (const r of results) {
        if (r.status === "rejected") {
          expect(isRuleStoreError(r.reason, "CS_RULE_LIMIT_REACHED")).toBe(true);
          expect(r.reason.details).toEqual({ limit: 5 });
        }
      }
      expect(await raw.zCard(k.accountRules(carol))).toBe(5);
      expect((await conn.store.list(carol, { limit: 500 })).rules).toHaveLength(5);
      // Other accounts are not affected; deleting one makes room again.
      await limited[0]!.store.create(bob, input("bob's, unaffected"));
      const first = (made[0] as PromiseFulfilledResult<Rule>).value;
      expect(await limited[0]!.store.delete(carol, first.id)).toBe(true);
      await limited[1]!.store.create(carol, input("room again"));
      expect(await code(limited[0]!.store.create(carol, input("one too many")))).toBe("CS_RULE_LIMIT_REACHED");
      expect(RULE_STORE_ERROR_HTTP_STATUS.CS_RULE_LIMIT_REACHED).toBe(409);
    } finally {
      for (const c of limited) await c.close();
    }
    expect(DEFAULT_MAX_RULES_PER_ACCOUNT).toBe(1000);
    await expect(connectRuleStore(config, { maxRulesPerAccount: 0 })).rejects.toThrow(RangeError);
  });

  it("refuses an update that would leave more than 20 additional properties (CS_RULE_EXTRA_PROPERTIES, path)", async () => {
    const { store } = conn;
    const extras = (from: number, n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`x${from + i}`, from + i]));
    const rule = await store.create(alice, input("extras", extras(0, 15)));
    const v2 = await store.update(alice, rule.id, extras(10, 10)); // x10..x19: 5 new ones, 20 in all
    expect(Object.keys(v2).filter((key) => key.startsWith("x"))).toHaveLength(20);
    try {
      await store.update(alice, rule.id, { x20: 1 });
      throw new Error("accepted");
    } catch (err) {
      expect(isRuleStoreError(err, "CS_RULE_EXTRA_PROPERTIES")).toBe(true);
      expect((err as { details: unknown }).details).toEqual({ field: "x20" });
    }
    expect(RULE_STORE_ERROR_HTTP_STATUS.CS_RULE_EXTRA_PROPERTIES).toBe(400);
    expect(await store.get(alice, rule.id)).toEqual(v2);
    // Replacing an existing one is fine.
    expect((await store.update(alice, rule.id, { x0: "replaced" })).x0).toBe("replaced");

    // A rule stored before the limits (the store does not validate input) stays editable: a patch
    // without additional properties passes, one with any is held to the limits.
    const legacy = await store.create(alice, input("legacy", extras(0, 25)));
    expect((await store.update(alice, legacy.id, { name: "renamed", state: "disabled" })).version).toBe(2);
    expect(await code(store.update(alice, legacy.id, { x0: "changed" }))).toBe("CS_RULE_EXTRA_PROPERTIES");
  });

  it("survives a restart: a new store instance sees every rule", async () => {
    const before = await conn.store.all();
    expect(before.length).toBeGreaterThan(0);
    const mine = await conn.store.list(alice, { limit: 500 });
    await conn.close();
    await conn.close();

    conn = await connectRuleStore(config, { now });
    expect(await conn.store.all()).toEqual(before);
    expect(await conn.store.list(alice, { limit: 500 })).toEqual(mine);
    for (const r of before) expect(await conn.store.get(r.accountId, r.id)).toEqual(r);
    const accounts = new Set(before.map((r) => r.accountId));
    expect(accounts.size).toBeGreaterThan(1);
    const sorted = [...before].sort((a, b) => (`${a.createdAt}|${a.id}` < `${b.createdAt}|${b.id}` ? -1 : 1));
    expect(before).toEqual(sorted);
  });
});
