/**
 * Pure parts of the introspection routes: index patterns (api/routes/es/indices.ts), the public
 * mapping, field caps and `_cat` tables (api/routes/es/introspect-shapes.ts). The field caps
 * expectations are Elasticsearch 8.19.4's answers for indices with the same mappings (the
 * integration test es-introspect.test.ts compares every kind with the real Elasticsearch).
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../../../api/errors.js";
import { kindsOfIndexExpression, resolveIndexTarget, wildcardMatcher } from "../../../../api/routes/es/indices.js";
import { catTable, fieldCaps, formatBytes, kindFieldCaps, publicMapping } from "../../../../api/routes/es/introspect-shapes.js";
import { MAPPINGS } from "../../../../es/mappings.js";
import type { ChainId } from "../../../../lib/config/index.js";
import { RECORD_KINDS } from "../../../../lib/records.js";

const MAINNET: ChainId = { technology: "ethereum", blockchain: "ethereum", network: "mainnet" };
/** Expects `fn` to throw the ApiError `expected`. */
function throwsCode(fn: () => unknown, expected: string, label?: string): void {
  expect(fn, label).toThrowError(expect.objectContaining({ code: expected }));
  expect(fn, label).toThrowError(ApiError);
}

describe("index patterns", () => {
  const kinds = (expr: string) => kindsOfIndexExpression(MAINNET, "p-", expr);

  it("wildcards match kinds, index-style names and prefixed names, case-insensitively", () => {
    expect(kinds("*-tx")).toEqual(["tx"]);
    expect(kinds("eth*")).toEqual([...RECORD_KINDS]);
    expect(kinds("p-*-log")).toEqual(["log"]);
    expect(kinds("t*")).toEqual(["tx"]);
    expect(kinds("ETHEREUM-ethereum-MAINNET-*")).toEqual([...RECORD_KINDS]);
    expect(kinds("*-event,*-tx,log")).toEqual(["event", "tx", "log"]);
    expect(kinds("*-b*")).toEqual(["block"]);
  });

  it("exclusions after an earlier item; a pattern matching nothing is no kind, not an error", () => {
    expect(kinds("*,-tx,-*-log")).toEqual(RECORD_KINDS.filter((k) => k !== "tx" && k !== "log"));
    expect(kinds("tx,log,-log")).toEqual(["tx"]);
    expect(kinds("ethereum-ethereum-sepolia-*")).toEqual([]);
    expect(kinds("nothing*,tx")).toEqual(["tx"]);
  });

  it("a concrete name of no kind is 404 CS_UNKNOWN_KIND at params.index; no kind at all too, unless allowNoIndices", () => {
    for (const bad of ["ethereum-ethereum-mainnet-tx-p000001", "-tx", "txs", "nothing*,nope"])
      throwsCode(() => kinds(bad), "CS_UNKNOWN_KIND", bad);
    const params = { ...MAINNET, index: "nothing*" };
    throwsCode(() => resolveIndexTarget([MAINNET], "p-", params), "CS_UNKNOWN_KIND");
    expect(resolveIndexTarget([MAINNET], "p-", params, { allowNoIndices: true })).toEqual({ chain: MAINNET, kinds: [], indices: [] });
    expect(resolveIndexTarget([MAINNET], "p-", { ...MAINNET, index: "*-tx" }).indices).toEqual(["p-ethereum-ethereum-mainnet-tx"]);
  });

  it("wildcardMatcher: * is any characters, everything else literal", () => {
    const m = wildcardMatcher("a.b*c");
    expect(["a.bc", "a.bXYc", "A.Bc"].map(m)).toEqual([true, true, true]);
    expect(["aXbc", "a.bcd", "xa.bc"].map(m)).toEqual([false, false, false]);
    expect(wildcardMatcher("(x)+")("(x)+")).toBe(true);
  });
});

describe("publicMapping", () => {
  it("is the explicit mapping with properties sorted by name, for every kind", () => {
    for (const kind of RECORD_KINDS) {
      const m = publicMapping(kind);
      expect(m).toEqual(MAPPINGS[kind]);
      const names = Object.keys(m.properties as object);
      expect(names).toEqual([...names].sort());
      expect(m.dynamic).toBe("strict");
    }
    const event = publicMapping("event").properties as Record<string, { properties?: object }>;
    expect(Object.keys(event.args?.properties ?? {})).toEqual(["name", "pos", "value"]);
  });
});

describe("field caps", () => {
  it("objects, nested objects, leaves, multi-fields and metadata fields of a kind", () => {
    const tx = kindFieldCaps("tx");
    expect(tx.get("blockNumber")).toEqual({ type: "object", metadata_field: false, searchable: false, aggregatable: false });
    expect(tx.get("blockNumber.num")).toEqual({ type: "long", metadata_field: false, searchable: true, aggregatable: true });
    expect(tx.get("from.raw")).toEqual({ type: "keyword", metadata_field: false, searchable: true, aggregatable: true });
    expect(tx.get("input")).toEqual({ type: "keyword", metadata_field: false, searchable: false, aggregatable: false });
    expect(tx.get("_id")).toEqual({ type: "_id", metadata_field: true, searchable: true, aggregatable: false });
    expect(kindFieldCaps("event").get("args")).toEqual({ type: "nested", metadata_field: false, searchable: false, aggregatable: false });
    expect(kindFieldCaps("event").get("event")).toEqual({ type: "text", metadata_field: false, searchable: true, aggregatable: false });
  });

  it("patterns add the enclosing objects; several types list their indices; include_unmapped", () => {
    const block = { name: "b", kind: "block" as const };
    const tx = { name: "t", kind: "tx" as const };
    const res = fieldCaps([tx, block], ["nonce.n*", "miner"]);
    expect(res.indices).toEqual(["b", "t"]);
    expect(res.fields).toEqual({
      miner: { keyword: { type: "keyword", metadata_field: false, searchable: true, aggregatable: true } },
      nonce: {
        keyword: { type: "keyword", metadata_field: false, searchable: true, aggregatable: true, indices: ["b"] },
        object: { type: "object", metadata_field: false, searchable: false, aggregatable: false, indices: ["t"] },
      },
      "nonce.num": { long: { type: "long", metadata_field: false, searchable: true, aggregatable: true } },
    });
    const unmapped = fieldCaps([tx, block], ["miner"], true).fields.miner;
    expect(unmapped).toEqual({
      keyword: { type: "keyword", metadata_field: false, searchable: true, aggregatable: true, indices: ["b"] },
      unmapped: { type: "unmapped", metadata_field: false, searchable: false, aggregatable: false, indices: ["t"] },
    });
    // input: not searchable in tx (index: false), searchable nowhere else either: no index list.
    expect(fieldCaps([tx, { name: "c", kind: "call" }], ["input"]).fields.input?.keyword).toEqual({
      type: "keyword",
      metadata_field: false,
      searchable: false,
      aggregatable: false,
    });
    expect(Object.keys(fieldCaps([tx], ["_*"]).fields)).toEqual(["_id", "_index", "_source"]);
    expect(fieldCaps([], ["*"])).toEqual({ indices: [], fields: {} });
  });
});

describe("_cat tables", () => {
  const columns = [
    { name: "index", aliases: ["i"], default: true },
    { name: "docs.count", aliases: ["dc"], right: true, numeric: true, default: true },
    { name: "store.size", right: true, bytes: true, default: true },
    { name: "uuid" },
  ];
  const rows = [
    { index: "b-long-name", "docs.count": 7, "store.size": 1536, uuid: "u1" },
    { index: "a", "docs.count": 12345, "store.size": 227, uuid: "u2" },
  ];

  it("JSON: default columns, values as strings, sizes human-readable or in the unit asked", () => {
    expect(catTable(columns, rows, { format: "json" }).body).toEqual([
      { index: "b-long-name", "docs.count": "7", "store.size": "1.5kb" },
      { index: "a", "docs.count": "12345", "store.size": "227b" },
    ]);
    expect(catTable(columns, rows, { format: "json", h: "i,uuid", s: "dc:desc" }).body).toEqual([
      { index: "a", uuid: "u2" },
      { index: "b-long-name", uuid: "u1" },
    ]);
    expect(catTable(columns, rows, { format: "json", h: "store*", bytes: "b", s: "store.size" }).body).toEqual([
      { "store.size": "227" },
      { "store.size": "1536" },
    ]);
  });

  it("text: padded columns, numbers right-aligned, no trailing padding on a left-aligned last column, header with v", () => {
    const { body, type } = catTable(columns, rows, { v: "", s: "index", h: "index,dc,uuid" });
    expect(type).toMatch(/^text\/plain/);
    expect(body).toBe("index       docs.count uuid\na                12345 u2\nb-long-name          7 u1\n");
    expect(catTable(columns, [], { v: "true" }).body).toBe("index docs.count store.size\n");
  });

  it("refuses unknown columns, bad sort orders, bad units and formats", () => {
    for (const opts of [{ h: "nope" }, { s: "index:up" }, { s: "nope" }, { bytes: "kib" }, { format: "yaml" }])
      throwsCode(() => catTable(columns, rows, opts), "CS_BAD_REQUEST", JSON.stringify(opts));
  });

  it("formatBytes: Elasticsearch's one-decimal sizes", () => {
    expect([0, 227, 1024, 1536, 10 * 1024 ** 2, 1.25 * 1024 ** 3].map((n) => formatBytes(n))).toEqual([
      "0b",
      "227b",
      "1kb",
      "1.5kb",
      "10mb",
      "1.3gb",
    ]);
    expect(formatBytes(5000, "kb")).toBe("4");
  });
});
