import { describe, expect, it } from "vitest";
import { parseSearchBacktestRequest } from "../../../api/backtest/request.js";
import { createSearchSequenceBacktester, isSequenceSearch, searchBacktestKinds } from "../../../api/backtest/search-sequence.js";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";
import type { IndexedRecord } from "../../../lib/match/backtest.js";
import { createSequenceBacktester, type SequenceBacktester } from "../../../lib/match/sequence-backtest.js";
import { isSearchSequence } from "../../../lib/searches/sequence.js";
import { transferThenApprovalRule } from "../../support/rules.js";

const chain = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
const alerts = [{ type: "Webhook (POST)", parameters: { url: "https://example.com/hook" } }];
const search = { name: "s", maxConfirmationCount: 0, ...chain, kind: "event", query: { term: { event: "Transfer" } }, alerts };
const sequence = {
  followedBy: { kind: "event", query: { term: { event: "Approval" } } },
  within: { blocks: 5 },
  correlate: { first: "args.to", followedBy: "args.owner" },
};

const codes = (body: Record<string, unknown>, mode: "create" | "update" = "create", stored?: unknown) => {
  const checked = validateSearchInput(mode === "create" ? { ...search, ...body } : body, mode, [chain], stored as never);
  return checked.ok ? [] : checked.errors.map((e) => [e.code, e.path]);
};

describe("sequence on saved searches: the second step is a second search query", () => {
  it("is accepted and stored with the followedBy query compiled (an esQuery sent is replaced)", () => {
    const checked = validateSearchInput(
      { ...search, sequence: { ...sequence, maxPending: 10, followedBy: { ...sequence.followedBy, esQuery: { bogus: 1 } } } },
      "create",
      [chain],
    );
    if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
    const stored = checked.value.sequence as Record<string, unknown> & { followedBy: Record<string, unknown> };
    expect(stored).toMatchObject({ within: { blocks: 5 }, correlate: sequence.correlate, maxPending: 10 });
    expect(stored.followedBy.query).toEqual(sequence.followedBy.query);
    expect(stored.followedBy.esQuery).not.toEqual({ bogus: 1 });
    expect(JSON.stringify(stored.followedBy.esQuery)).toContain("Approval");
    expect(isSearchSequence(stored)).toBe(true);
    expect(isSearchSequence({ followedBy: { targetType: "Event", targetMap: [] } })).toBe(false);
  });
  it("null is kept (a PUT removes it); a fetched search with its esQuery can be PUT back", () => {
    const created = validateSearchInput({ ...search, sequence }, "create", [chain]);
    if (!created.ok) throw new Error("fixture refused");
    const stored = { ...created.value, id: "s1", accountId: "a", version: 1 } as never;
    const removed = validateSearchInput({ sequence: null }, "update", [chain], stored);
    expect(removed.ok ? removed.value : removed.errors).toEqual({ sequence: null });
    const again = validateSearchInput({ sequence: created.value.sequence }, "update", [chain], stored);
    expect(again.ok ? again.value : again.errors).toEqual({ sequence: created.value.sequence });
  });
  it("refuses a malformed member with the rules' codes, the second query with the search codes, at sequence paths", () => {
    expect(codes({ sequence: { ...sequence, within: { blocks: 10_001 } } })).toEqual([
      ["CS_RULE_WINDOW_TOO_LARGE", "sequence.within.blocks"],
    ]);
    expect(codes({ sequence: { ...sequence, within: { blocks: 3, seconds: 3 } } })).toEqual([["CS_RULE_INVALID", "sequence.within"]]);
    expect(codes({ sequence: { ...sequence, maxPending: 10_001 } })).toEqual([["CS_RULE_SEQUENCE_PENDING_CAP", "sequence.maxPending"]]);
    expect(codes({ sequence: { ...sequence, extra: {} } })).toEqual([["CS_RULE_INVALID", "sequence.extra"]]);
    expect(codes({ sequence: { ...sequence, correlate: { first: "args.to" } } })).toEqual([
      ["CS_RULE_INVALID", "sequence.correlate.followedBy"],
    ]);
    expect(codes({ sequence: { ...sequence, followedBy: { ...sequence.followedBy, kind: "token" } } })).toEqual([
      ["CS_SEARCH_KIND", "sequence.followedBy.kind"],
    ]);
    expect(codes({ sequence: { ...sequence, followedBy: { kind: "event", query: [] } } })).toEqual([
      ["CS_QUERY_INVALID", "sequence.followedBy.query"],
    ]);
    const bad = codes({ sequence: { ...sequence, followedBy: { kind: "event", query: { script: { source: "1" } } } } });
    expect(bad.length).toBeGreaterThan(0);
    for (const [code, path] of bad) {
      expect(code).toMatch(/^CS_QUERY_|^CS_SEARCH_INEXACT$/);
      expect(path).toMatch(/^sequence\.followedBy\.query/);
    }
  });
  it("is one of window, absence and sequence, also when an update adds the other", () => {
    expect(codes({ sequence, absence: { blocks: 3 } })).toEqual([["CS_RULE_INVALID", "sequence"]]);
    const created = validateSearchInput({ ...search, sequence }, "create", [chain]);
    if (!created.ok) throw new Error("fixture refused");
    const stored = { ...created.value, id: "s1", accountId: "a", version: 1 };
    expect(codes({ absence: { blocks: 3 } }, "update", stored)).toEqual([["CS_RULE_INVALID", "absence"]]);
    expect(codes({ absence: { blocks: 3 }, sequence: null }, "update", stored)).toEqual([]);
  });
  it("a saved-search backtest takes it, reading both kinds; a sequence pairing blocks with another kind is refused", () => {
    const parse = (body: Record<string, unknown>) =>
      parseSearchBacktestRequest({ search: { ...search, ...body }, from: 1, to: 2 }, [chain], 10);
    const ok = parse({ sequence: { ...sequence, followedBy: { kind: "tx", query: { match_all: {} } } } });
    if (!ok.ok) throw new Error(JSON.stringify(ok.errors));
    expect(isSequenceSearch(ok.value.search)).toBe(true);
    expect(searchBacktestKinds(ok.value.search)).toEqual(["event", "tx"]);
    const same = parse({ sequence });
    expect(same.ok && searchBacktestKinds(same.value.search)).toEqual(["event"]);
    const plain = parse({});
    expect(plain.ok && [isSequenceSearch(plain.value.search), searchBacktestKinds(plain.value.search)]).toEqual([false, ["event"]]);
    const mixed = parse({ sequence: { ...sequence, followedBy: { kind: "block", query: { match_all: {} } } } });
    expect(mixed.ok ? [] : mixed.errors.map((e) => [e.code, e.path])).toEqual([
      ["CS_BACKTEST_TARGET_UNSUPPORTED", "search.sequence.followedBy.kind"],
    ]);
    const blocks = parse({
      kind: "block",
      query: { match_all: {} },
      sequence: { ...sequence, followedBy: { kind: "block", query: { match_all: {} } } },
    });
    expect(blocks.ok, JSON.stringify(blocks)).toBe(true);
  });

  it("its backtest pairs the query's records with the second query's as the rule with the same conditions does", () => {
    const arg = (name: string, hex: string) => ({ name, value: { hex, num: null, scaled: null, type: "address" } });
    const ev = (event: "Transfer" | "Approval", n: number, i: number, who: string): IndexedRecord => ({
      kind: "event",
      record: {
        event,
        signature: `${event}(address,address)`,
        args: event === "Transfer" ? [arg("from", "0x09"), arg("to", who)] : [arg("owner", who), arg("spender", "0x08")],
        logIndex: { num: i, raw: `0x${i}` },
        transactionIndex: { num: i, raw: `0x${i}` },
        transactionHash: `0x${"ab".repeat(31)}${n}${i}`,
        address: "0x01",
        blockHash: `0xb${n}`,
        blockNumber: { num: n, raw: `0x${n}` },
        timestamp: new Date((1_700_000_000 + 12 * n) * 1000).toISOString().slice(0, 19),
      },
    });
    // A → approves 2 blocks later (pairs); B approves 7 blocks later (outside 5); C never transfers.
    const records: Record<number, IndexedRecord[]> = {
      10: [ev("Transfer", 10, 0, "0xaa"), ev("Transfer", 10, 1, "0xbb")],
      11: [ev("Approval", 11, 0, "0xcc")],
      12: [ev("Approval", 12, 0, "0xaa")],
      17: [ev("Approval", 17, 0, "0xbb")],
    };
    const blocks = Array.from({ length: 8 }, (_, k): [number, IndexedRecord[]] => [10 + k, records[10 + k] ?? []]);
    const checked = parseSearchBacktestRequest({ search: { ...search, sequence }, from: 10, to: 17 }, [chain], 10);
    if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
    const options = { accountId: "acct", chain, head: 100, decode: { chainId: 1 }, now: () => new Date(0) };
    const feed = (tester: SequenceBacktester) =>
      blocks.flatMap(([n, records]) => tester.block({ number: n, hash: `0xb${n}`, timestamp: 1_700_000_000 + 12 * n }, records).matches);
    const searched = feed(createSearchSequenceBacktester({ ...options, search: checked.value.search }));
    expect(searched.map((m) => [m.blockNumber, m.targetType, m.entityId])).toEqual([
      [12, "Event", `sequence:0x${"ab".repeat(31)}100_e_0:0x${"ab".repeat(31)}120_e_0`],
    ]);
    expect(searched[0]?.entity.sequenceMatch).toMatchObject({ key: "0xaa", first: { blockNumber: 10 }, followedBy: { blockNumber: 12 } });
    const ruled = feed(createSequenceBacktester({ ...options, rule: transferThenApprovalRule(chain, { blocks: 5 }) }));
    expect(ruled.map((m) => [m.entityId, m.entity.sequenceMatch])).toEqual(searched.map((m) => [m.entityId, m.entity.sequenceMatch]));
  });
});
