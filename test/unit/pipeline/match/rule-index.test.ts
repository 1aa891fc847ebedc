/**
 * Unit tests of the rule index (lib/match/rule-index.ts): candidates never miss a matching rule
 * (property-style against brute force over random rules and entities, seeded PRNG), respect state,
 * chain and target type, and stay small when many rules are bucketed.
 */
import { getAddress } from "ethers";
import { describe, expect, it } from "vitest";
import { prng } from "../../../../bench/support/prng.js";
import { benchRule } from "../../../../bench/support/rules.js";
import type { ChainId } from "../../../../lib/config/index.js";
import { evaluate } from "../../../../lib/match/evaluate.js";
import { createRuleIndex } from "../../../../lib/match/rule-index.js";
import type { Rule, TargetDefinition, TargetType } from "../../../../lib/rules/model.js";
import { argIs, isTransfer } from "../../../support/rules.js";

const CHAIN: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };

const makeRule = (id: string, targetType: TargetType, targetMap: TargetDefinition[], extra: Partial<Rule> = {}): Rule =>
  benchRule(id, targetType, targetMap, { accountId: "acc", maxConfirmationCount: 1, ...CHAIN, ...extra });

function world(seed: number) {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const hex = (bytes: number) =>
    `0x${Array.from({ length: bytes }, () =>
      Math.floor(rnd() * 256)
        .toString(16)
        .padStart(2, "0"),
    ).join("")}`;
  const addrs = Array.from({ length: 8 }, () => hex(20));
  const events = ["Transfer", "Approval", "Swap", "Deposit"];
  const argNames = ["from", "to", "value", "src"];
  const methods = [
    { name: "transfer", methodId: "0xa9059cbb" },
    { name: "approve", methodId: "0x095ea7b3" },
    { name: "deposit", methodId: "0xd0e30db0" },
  ];
  const numbers = ["0", "16", "255", "1000", String(1n << 70n)];
  /** A rule-side rendering of an address: lower, checksummed, upper, or (rarely) with leading zeros stripped. */
  const addrVariant = (a: string) => pick([a, getAddress(a), `0x${a.slice(2).toUpperCase()}`, a]);
  const caseVariant = (s: string) => pick([s, s.toLowerCase(), s.toUpperCase(), s]);
  const numVariant = (n: string) => pick([n, `0x${BigInt(n).toString(16)}`, `0x00${BigInt(n).toString(16).toUpperCase()}`]);
  const eqOp = () => pick(["Equals", "Equals (ignore case)", "Equals any", "Equals any (ignore case)"] as const);
  const eqDef = (name: string, values: () => string): TargetDefinition => {
    const op = eqOp();
    return op.startsWith("Equals any") ? { name, operator: op, value: [values(), values()] } : { name, operator: op, value: values() };
  };
  const anyValue = () => (rnd() < 0.5 ? addrVariant(pick(addrs)) : numVariant(pick(numbers)));

  const argsDef = (): TargetDefinition => {
    const nested: NonNullable<TargetDefinition["operatorParameters"]> = [];
    if (rnd() < 0.7)
      nested.push({ name: "name", operator: pick(["Equals", "Equals (ignore case)"] as const), value: caseVariant(pick(argNames)) });
    const r = rnd();
    if (r < 0.6) {
      const eq = eqDef("value", anyValue);
      nested.push({ name: eq.name, operator: eq.operator, value: eq.value, useScaledValue: rnd() < 0.1 });
    } else if (r < 0.85)
      nested.push({ name: "value", operator: pick(["Greater", "Less or Equal"] as const), value: numVariant(pick(numbers)) });
    return { name: "args", operator: "Inspect", operatorParameters: nested };
  };

  const defFor = (t: TargetType): TargetDefinition => {
    const r = rnd();
    switch (t) {
      case "Event":
        if (r < 0.35) return eqDef("address", () => addrVariant(pick(addrs)));
        if (r < 0.6) return eqDef("event", () => caseVariant(pick(events)));
        if (r < 0.85) return argsDef();
        return { name: "blockNumber", operator: pick(["Greater", "Less"] as const), value: String(Math.floor(rnd() * 20)) };
      case "Transaction":
        if (r < 0.3) return eqDef("to", () => addrVariant(pick(addrs)));
        if (r < 0.5) return eqDef("from", () => addrVariant(pick(addrs)));
        if (r < 0.7) return eqDef("methodId", () => caseVariant(pick(methods).methodId));
        return { name: "value", operator: pick(["Greater", "Less or Equal", "Equals"] as const), value: numVariant(pick(numbers)) };
      default:
        if (r < 0.3) return eqDef("to", () => addrVariant(pick(addrs)));
        if (r < 0.5) return eqDef("name", () => caseVariant(pick(methods).name));
        if (r < 0.7) return eqDef("methodId", () => pick(methods).methodId);
        return argsDef();
    }
  };
  const types: TargetType[] = ["Event", "Transaction", "Method"];
  const randomRule = (id: string): Rule => {
    const t = pick(types);
    const n = 1 + Math.floor(rnd() * 3);
    return makeRule(
      id,
      t,
      Array.from({ length: n }, () => defFor(t)),
      {
        state: rnd() < 0.85 ? "enabled" : "disabled",
        network: rnd() < 0.9 ? pick(["mainnet", "Mainnet", " mainnet "]) : "sepolia",
      },
    );
  };
  const arg = (name: string, pos: number) =>
    rnd() < 0.5
      ? { name, pos, value: { hex: pick(addrs), num: null, scaled: null, type: "address" } }
      : (() => {
          const n = BigInt(pick(numbers));
          return {
            name,
            pos,
            value: { hex: `0x${n.toString(16)}`, num: Number(n), scaled: rnd() < 0.5 ? Number(n) / 1e6 : null, type: "uint256" },
          };
        })();
  const randomEntity = (t: TargetType, i: number): Record<string, unknown> => {
    const base = { entityId: `e${i}`, blockHash: `0x${i}`, blockNumber: { num: Math.floor(rnd() * 20), raw: "0x0" } };
    if (t === "Event") {
      return {
        ...base,
        event: pick(events),
        address: rnd() < 0.5 ? getAddress(pick(addrs)) : pick(addrs),
        args: [0, 1, 2].map((p) => arg(pick(argNames), p)),
      };
    }
    if (t === "Transaction") {
      const m = pick(methods);
      const v = BigInt(pick(numbers));
      return {
        ...base,
        hash: hex(32),
        to: rnd() < 0.1 ? null : getAddress(pick(addrs)),
        from: getAddress(pick(addrs)),
        methodId: m.methodId,
        value: { num: Number(v), raw: `0x${v.toString(16)}` },
      };
    }
    const m = pick(methods);
    const to = getAddress(pick(addrs));
    return { ...base, ...m, to, address: to, from: getAddress(pick(addrs)), args: [0, 1].map((p) => arg(pick(argNames), p)) };
  };
  return { rnd, pick, types, randomRule, randomEntity };
}

function bruteForce(rules: Map<string, Rule>, t: TargetType, entity: object): Set<string> {
  const out = new Set<string>();
  for (const r of rules.values()) {
    if (r.state !== "enabled" || r.network.trim().toLowerCase() !== "mainnet" || r.config.targetType !== t) continue;
    if (evaluate(r.config.targetMap, entity)) out.add(r.id);
  }
  return out;
}

/** The ids of `rules`, sorted (the index gives no order). */
const sortedIds = (rules: readonly Rule[]): string[] => rules.map((r) => r.id).sort();

describe("rule index", () => {
  for (const seed of [1, 2, 3, 42, 1337]) {
    it(`candidates ⊇ brute-force matches and match() = brute force (seed ${seed})`, () => {
      const w = world(seed);
      const index = createRuleIndex({ chain: CHAIN });
      const rules = new Map<string, Rule>();
      for (let i = 0; i < 400; i++) {
        const r = w.randomRule(`r${i}`);
        rules.set(r.id, r);
        index.upsert(r);
      }
      let matched = 0;
      let candidates = 0;
      const check = (round: number) => {
        for (let i = 0; i < 300; i++) {
          const t = w.pick(w.types);
          const e = w.randomEntity(t, round * 1000 + i);
          const expected = bruteForce(rules, t, e);
          const cands = index.candidates(t, e);
          const ids = cands.map((r) => r.id);
          expect(new Set(ids).size).toBe(ids.length); // no duplicates
          for (const id of expected) expect(ids, `rule ${id} missing for ${JSON.stringify(e)}`).toContain(id);
          for (const r of cands) {
            expect(r.config.targetType).toBe(t);
            expect(r.state).toBe("enabled");
            expect(r.network.trim().toLowerCase()).toBe("mainnet");
          }
          expect(new Set(index.match(t, e).map((r) => r.id))).toEqual(expected);
          matched += expected.size;
          candidates += cands.length;
        }
      };
      check(0);
      // mutate: replace, disable, remove some rules, then check again
      for (let i = 0; i < 150; i++) {
        const id = `r${Math.floor(w.rnd() * 400)}`;
        const op = w.rnd();
        if (op < 0.4) {
          const r = w.randomRule(id);
          rules.set(id, r);
          index.upsert(r);
        } else if (op < 0.7) {
          const r = { ...(rules.get(id) as Rule), state: "disabled" as const };
          rules.set(id, r);
          index.upsert(r);
        } else {
          rules.delete(id);
          index.remove(id);
        }
      }
      check(1);
      expect(matched).toBeGreaterThan(50); // the random world does produce matches
      expect(candidates).toBeGreaterThan(matched);
      const held = [...rules.values()].filter((r) => r.state === "enabled" && r.network.trim().toLowerCase() === "mainnet").length;
      expect(index.stats().rules).toBe(held);
    });
  }

  it("with 10,000 rules on distinct addresses an entity meets only its bucket plus the unbucketed rules", () => {
    const index = createRuleIndex({ chain: CHAIN });
    const addr = (i: number) => `0x${i.toString(16).padStart(40, "0")}`;
    for (let i = 0; i < 10_000; i++) {
      index.upsert(
        makeRule(`a${i}`, "Event", [
          { name: "event", operator: "Equals", value: "Transfer" },
          { name: "address", operator: i % 2 ? "Equals" : "Equals (ignore case)", value: getAddress(addr(i)) },
        ]),
      );
    }
    index.upsert(makeRule("global", "Event", [{ name: "blockNumber", operator: "Greater", value: "0" }]));
    const e = { entityId: "x", blockHash: "0x1", blockNumber: { num: 5, raw: "0x5" }, event: "Transfer", address: addr(1234), args: [] };
    const c = index.candidates("Event", e).map((r) => r.id);
    expect(c.sort()).toEqual(["a1234", "global"]);
    expect(sortedIds(index.match("Event", e))).toEqual(["a1234", "global"]);
    expect(index.stats()).toMatchObject({ rules: 10_001, bucketed: 10_000, unbucketed: 1 });
  });

  it("files a rule under its least-loaded bucket (many rules on one token, distinct wallets)", () => {
    const index = createRuleIndex();
    const usdt = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
    const wallet = (i: number) => `0x${"b".repeat(20)}${(i + 1).toString(16).padStart(20, "0")}`;
    for (let i = 0; i < 1000; i++) {
      index.upsert(
        makeRule(`w${i}`, "Event", [{ name: "address", operator: "Equals", value: usdt }, isTransfer(), argIs("to", "Equals", wallet(i))]),
      );
    }
    const e = {
      entityId: "x",
      blockHash: "0x1",
      blockNumber: { num: 5, raw: "0x5" },
      event: "Transfer",
      address: usdt,
      args: [
        { name: "from", pos: 0, value: { hex: wallet(1), num: null, scaled: null, type: "address" } },
        { name: "to", pos: 1, value: { hex: wallet(6), num: null, scaled: null, type: "address" } },
        { name: "value", pos: 2, value: { hex: "0x1", num: 1, scaled: null, type: "uint256" } },
      ],
    };
    const c = index.candidates("Event", e);
    // one rule went to the USDT address bucket (first, when every bucket was empty); the others to (to, wallet)
    expect(sortedIds(c)).toEqual(["w0", "w6"]);
    expect(index.match("Event", e).map((r) => r.id)).toEqual(["w6"]);
    expect(index.stats()).toMatchObject({ rules: 1000, unbucketed: 0, largestBucket: 1 });
  });

  it("filters by state, chain and target type; upsert replaces; remove forgets", () => {
    const index = createRuleIndex({ chain: CHAIN });
    const def: TargetDefinition[] = [{ name: "event", operator: "Equals", value: "Transfer" }];
    const e = { event: "Transfer" };
    index.upsert(makeRule("ok", "Event", def));
    index.upsert(makeRule("ci", "Event", def, { technology: "Ethereum", network: "MAINNET" }));
    index.upsert(makeRule("off", "Event", def, { state: "disabled" }));
    index.upsert(makeRule("other", "Event", def, { network: "sepolia" }));
    index.upsert(makeRule("log", "Log", def));
    expect(sortedIds(index.candidates("Event", e))).toEqual(["ci", "ok"]);
    expect(index.candidates("Log", e).map((r) => r.id)).toEqual(["log"]);
    index.upsert(makeRule("ok", "Event", [{ name: "event", operator: "Equals", value: "Approval" }], { version: 2 }));
    expect(index.match("Event", e).map((r) => r.id)).toEqual(["ci"]);
    expect(index.get("ok")?.version).toBe(2);
    index.upsert(makeRule("ci", "Event", def, { state: "disabled" }));
    expect(index.candidates("Event", e)).toEqual([]);
    expect(index.remove("ok")).toBe(true);
    expect(index.remove("ok")).toBe(false);
    expect(index.stats().rules).toBe(1);
    expect(() => index.upsert(makeRule("bad", "Event", [{ name: "event", operator: "Nope" as never, value: "x" }]))).toThrow();
    expect(index.get("bad")).toBeUndefined();
  });

  it("buckets numbers by value: 0x10 and 16 meet", () => {
    const index = createRuleIndex();
    index.upsert(makeRule("hex", "Transaction", [{ name: "to", operator: "Equals", value: "0x0010" }]));
    index.upsert(makeRule("dec", "Transaction", [{ name: "to", operator: "Equals any", value: ["16", "17"] }]));
    expect(sortedIds(index.match("Transaction", { to: "0x10" }))).toEqual(["dec", "hex"]);
    expect(index.match("Transaction", { to: "17" }).map((r) => r.id)).toEqual(["dec"]);
  });
});
