import { describe, expect, it } from "vitest";
import { validateSearchInput } from "../../../api/routes/searches/validate.js";
import { sequenceBacktestRefusal } from "../../../api/routes/searches/validate-sequence.js";
import { isSearchSequence } from "../../../lib/searches/sequence.js";

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
  it("a saved-search backtest refuses it with CS_RULE_NOT_SUPPORTED at search.sequence", () => {
    expect(sequenceBacktestRefusal({ ...search, sequence }).map((e) => [e.code, e.path])).toEqual([
      ["CS_RULE_NOT_SUPPORTED", "search.sequence"],
    ]);
    expect(sequenceBacktestRefusal({ ...search, sequence: null })).toEqual([]);
  });
});
