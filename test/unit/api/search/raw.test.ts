/**
 * The fast path of a search answer (api/search/raw.ts) against the parse path
 * (`shapeEnvelope(JSON.parse(text))`, api/search/envelope.ts), on hand-written `_search` response
 * texts laid out exactly as Elasticsearch 8 writes them (no whitespace; hit keys `_index`, `_id`,
 * `_score`, [`_ignored`], `_source`, [`fields`], [`sort`]). Every accepted text must give the same
 * envelope, with the same key order (envelope, hits, each hit and inside `_source`); every text
 * whose layout is not the expected one must give `undefined`.
 */
import type { estypes } from "@elastic/elasticsearch";
import { describe, expect, it } from "vitest";
import { type HitsEnvelope, type ShapeOptions, shapeEnvelope } from "../../../../api/search/envelope.js";
import { type RawEnvelope, shapeRawEnvelope } from "../../../../api/search/raw.js";
import { BLOCK_HASH, block, OTHER_BLOCK, TX_HASH, tx } from "./records.js";

const PREFIX = "ethereum-ethereum-mainnet";
const SHARDS = '"_shards":{"total":1,"successful":1,"skipped":0,"failed":0}';
const log = {
  address: "0xdAC17F958D2ee523a2206206994597C13D831ec7",
  topics: ["0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"],
  data: "0x000000000000000000000000000000000000000000000000000000003b9aca00",
  blockHash: BLOCK_HASH,
  blockNumber: { num: 17000000, raw: "0x1036640" },
  transactionHash: TX_HASH,
  logIndex: { num: 9, raw: "0x9" },
  removed: false,
};
const event = {
  event: "Transfer",
  args: [
    { name: "from", pos: 0, value: { hex: "0xd8da6bf26964af9d7eed9e03e53415d37aa96045", num: null, scaled: null, type: "address" } },
    { name: "value", pos: 2, value: { hex: "0x3b9aca00", num: 1e9, scaled: 1000, type: "uint256" } },
  ],
  transactionHash: TX_HASH,
  blockHash: BLOCK_HASH,
  str: "Transfer(from=0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045, value=1000 USDT)",
};

/** One hit as ES 8 writes it; `score` and `sort` are raw JSON text (e.g. `0.0`, `[9223372036854775807]`). */
function hitText(kind: string, id: string, score: string, source: unknown, fields?: Record<string, string[]>, sort?: string): string {
  const f = fields ? `,"fields":${JSON.stringify(fields)}` : "";
  const s = sort ? `,"sort":${sort}` : "";
  return `{"_index":"${PREFIX}-${kind}","_id":${JSON.stringify(id)},"_score":${score},"_source":${JSON.stringify(source)}${f}${s}}`;
}

/** A whole `_search` response text; `total` and `maxScore` are raw JSON text. */
function responseText(hits: string[], maxScore: string, total = `{"value":${hits.length},"relation":"eq"}`): string {
  return `{"took":3,"timed_out":false,${SHARDS},"hits":{"total":${total},"max_score":${maxScore},"hits":[${hits.join(",")}]}}`;
}

/** The fast path's body as text (it may be UTF-8 bytes); "null" when there is none. */
function bodyText(raw: RawEnvelope | undefined): string {
  if (raw === undefined) return "null";
  return typeof raw.body === "string" ? raw.body : raw.body.toString("utf8");
}

/**
 * Asserts that the fast path accepts `text` and gives the parse path's envelope: same values, same
 * key order everywhere (JSON.stringify of both parsed bodies is the same text), same counts.
 * @returns the envelope.
 */
function expectSame(text: string, opts: Pick<ShapeOptions, "source" | "sortValues"> = {}): HitsEnvelope {
  const raw = shapeRawEnvelope(text);
  expect(raw, "the fast path refused the text").toBeDefined();
  const body = bodyText(raw);
  // The same answer whether ES's body is given as text or as its UTF-8 bytes.
  expect(bodyText(shapeRawEnvelope(Buffer.from(text, "utf8")))).toBe(body);
  const fast = JSON.parse(body) as HitsEnvelope;
  const slow = shapeEnvelope(JSON.parse(text) as estypes.SearchResponse<unknown>, opts);
  expect(fast).toStrictEqual(slow);
  expect(Object.keys(fast)).toEqual(Object.keys(slow));
  expect(Object.keys(fast.hits)).toEqual(Object.keys(slow.hits));
  fast.hits.hits.forEach((h, i) => {
    expect(Object.keys(h), `keys of hit ${i}`).toEqual(Object.keys(slow.hits.hits[i] ?? {}));
  });
  expect(JSON.stringify(fast)).toBe(JSON.stringify(slow));
  expect(raw?.total).toBe(slow.hits.total);
  expect(raw?.hits).toBe(slow.hits.hits.length);
  return fast;
}

const TX_FIELDS = { blockHash: [BLOCK_HASH] };

describe("shapeRawEnvelope: the same envelope as the parse path", () => {
  it("filter-only scores: max_score 0.0 and _score 0.0 become 1 (literal ES text)", () => {
    const text =
      '{"took":3,"timed_out":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},"hits":{"total":{"value":2,"relation":"eq"},' +
      `"max_score":0.0,"hits":[{"_index":"ethereum-ethereum-mainnet-tx","_id":"${TX_HASH}","_score":0.0,"_source":{"hash":"${TX_HASH}",` +
      `"blockHash":"${BLOCK_HASH}","blockNumber":{"num":17000000,"raw":"0x1036640"}},"fields":{"blockHash":["${BLOCK_HASH}"]}},` +
      `{"_index":"ethereum-ethereum-mainnet-tx","_id":"0x01","_score":0.0,"_source":{"hash":"0x01","blockHash":"${OTHER_BLOCK}",` +
      `"blockNumber":{"num":17000001,"raw":"0x1036641"}},"fields":{"blockHash":["${OTHER_BLOCK}"]}}]}}`;
    const env = expectSame(text);
    expect(env.hits.max_score).toBe(1);
    expect(env.hits.total).toBe(2);
    expect(env.hits.hits.map((h) => [h._score, h._routing, h._parent])).toEqual([
      [1, BLOCK_HASH, BLOCK_HASH],
      [1, OTHER_BLOCK, OTHER_BLOCK],
    ]);
    expect(Object.keys(env.hits.hits[0] ?? {})).toEqual(["_index", "_type", "_id", "_score", "_routing", "_parent", "_source"]);
  });

  it("sorted: null scores become 1, sort values kept (Long.MAX_VALUE, Long.MIN_VALUE, doubles, Infinity, strings)", () => {
    const text =
      '{"took":5,"timed_out":false,"_shards":{"total":2,"successful":2,"skipped":1,"failed":0},"hits":{"total":{"value":3,"relation":"eq"},' +
      `"max_score":null,"hits":[{"_index":"ethereum-ethereum-mainnet-tx","_id":"${TX_HASH}","_score":null,"_source":{"hash":"${TX_HASH}"},` +
      `"fields":{"blockHash":["${BLOCK_HASH}"]},"sort":[17000000,1681375151000,"${TX_HASH}"]},` +
      `{"_index":"ethereum-ethereum-mainnet-block","_id":"${BLOCK_HASH}","_score":null,"_source":{"hash":"${BLOCK_HASH}"},` +
      `"sort":[9223372036854775807,-9223372036854775808,"${BLOCK_HASH}"]},` +
      `{"_index":"ethereum-ethereum-mainnet-tx","_id":"0x02","_score":null,"_source":{"hash":"0x02"},` +
      `"fields":{"blockHash":["${OTHER_BLOCK}"]},"sort":[9.7E16,"Infinity",1.5E-7]}]}}`;
    const env = expectSame(text, { source: ["hash"], sortValues: true });
    expect(env.hits.max_score).toBe(1);
    expect(env.hits.hits.map((h) => h._score)).toEqual([1, 1, 1]);
    expect(env.hits.hits[1]?.sort).toEqual([2 ** 63, -(2 ** 63), BLOCK_HASH]);
    expect(Object.keys(env.hits.hits[0] ?? {})).toEqual(["_index", "_type", "_id", "_score", "_routing", "_parent", "_source", "sort"]);
    expect(Object.keys(env.hits.hits[1] ?? {})).toEqual(["_index", "_type", "_id", "_score", "_source", "sort"]);
    // The sort values are ES's own text: Long.MAX_VALUE stays exact for search_after.
    expect(bodyText(shapeRawEnvelope(text))).toContain('"sort":[9223372036854775807,-9223372036854775808,');
  });

  it("sorted filter-only search on _score: 0.0 scores become 1, the 0.0 sort value is kept", () => {
    const text = responseText([hitText("tx", TX_HASH, "0.0", tx, TX_FIELDS, `[0.0,"${TX_HASH}"]`)], "0.0");
    const env = expectSame(text, { sortValues: true });
    expect(env.hits.hits[0]?._score).toBe(1);
    expect(env.hits.hits[0]?.sort).toEqual([0, TX_HASH]);
  });

  it("real relevance scores are passed through (match), also in exponent form", () => {
    const id = (n: number): string => `${TX_HASH}_e_${n}`;
    const text = responseText(
      [
        hitText("event", id(1), "1.3862942", event, { transactionHash: [TX_HASH] }),
        hitText("event", id(2), "0.06738462", event, { transactionHash: [TX_HASH] }),
        hitText("event", id(3), "1.0E-4", event, { transactionHash: [TX_HASH] }),
      ],
      "1.3862942",
    );
    const env = expectSame(text);
    expect(env.hits.max_score).toBe(1.3862942);
    expect(env.hits.hits.map((h) => h._score)).toEqual([1.3862942, 0.06738462, 1e-4]);
  });

  it("match_all without filter: ES's 1.0 scores stay 1", () => {
    const env = expectSame(responseText([hitText("block", BLOCK_HASH, "1.0", block)], "1.0"));
    expect([env.hits.max_score, env.hits.hits[0]?._score]).toEqual([1, 1]);
  });

  it("sorted on _score after match: real scores and the score sort value", () => {
    const text = responseText(
      [hitText("event", `${TX_HASH}_e_1`, "0.87546873", event, { transactionHash: [TX_HASH] }, "[0.87546873]")],
      "0.87546873",
    );
    expect(expectSame(text, { sortValues: true }).hits.hits[0]?._score).toBe(0.87546873);
  });

  it("zero hits: max_score null, total kept (as {value, relation: eq} and as an integer)", () => {
    for (const total of ['{"value":0,"relation":"eq"}', "0"]) {
      const env = expectSame(responseText([], "null", total));
      expect(env.hits).toEqual({ total: 0, max_score: null, hits: [] });
    }
    // size 0: no hits but a total.
    expect(expectSame(responseText([], "null", '{"value":42,"relation":"eq"}')).hits.total).toBe(42);
    expect(expectSame(responseText([], "null", "42")).hits.total).toBe(42);
    expect(shapeRawEnvelope(responseText([], "null", "42"))).toMatchObject({ total: 42, hits: 0 });
  });

  it("total as an integer (rest_total_hits_as_int) with hits", () => {
    const text = responseText([hitText("tx", TX_HASH, "0.0", tx, TX_FIELDS)], "0.0", "17");
    expect(expectSame(text).hits.total).toBe(17);
    expect(shapeRawEnvelope(text)).toMatchObject({ total: 17, hits: 1 });
  });

  it("block: no _routing/_parent, whole record kept (empty array, null)", () => {
    const env = expectSame(responseText([hitText("block", BLOCK_HASH, "0.0", block)], "0.0"));
    const h = env.hits.hits[0];
    expect(h?._type).toBe("block");
    expect(h && ("_routing" in h || "_parent" in h)).toBe(false);
    expect(h?._source).toEqual(block);
  });

  it("tx: _routing/_parent is the blockHash of fields", () => {
    const env = expectSame(responseText([hitText("tx", TX_HASH, "0.0", tx, TX_FIELDS)], "0.0"));
    expect(env.hits.hits[0]).toMatchObject({ _type: "tx", _routing: BLOCK_HASH, _parent: BLOCK_HASH, _source: tx });
  });

  it("log, event, call with blockHash and transactionHash in fields: transactionHash wins", () => {
    const fields = { blockHash: [BLOCK_HASH], transactionHash: [TX_HASH] };
    const reversed = { transactionHash: [TX_HASH], blockHash: [BLOCK_HASH] };
    const call = { type: "CALL", from: tx.from, to: tx.to, transactionHash: TX_HASH, blockHash: BLOCK_HASH, traceAddress: [0, 1] };
    const text = responseText(
      [
        hitText("log", `${TX_HASH}_l_9`, "0.0", log, fields),
        hitText("event", `${TX_HASH}_e_9`, "0.0", event, reversed),
        hitText("call", `${TX_HASH}_c_0_1`, "0.0", call, fields),
      ],
      "0.0",
    );
    const env = expectSame(text);
    expect(env.hits.hits.map((h) => [h._type, h._routing, h._parent])).toEqual([
      ["log", TX_HASH, TX_HASH],
      ["event", TX_HASH, TX_HASH],
      ["call", TX_HASH, TX_HASH],
    ]);
  });

  it("a parent field with several values, or with a value that has escapes: the first value, as the parse path", () => {
    const several = expectSame(
      responseText([hitText("event", `${TX_HASH}_e_1`, "0.0", event, { transactionHash: [TX_HASH, BLOCK_HASH] })], "0.0"),
    );
    expect(several.hits.hits[0]?._parent).toBe(TX_HASH);
    const text = responseText([hitText("event", `${TX_HASH}_e_2`, "0.0", event, { transactionHash: [`${TX_HASH}"x`] })], "0.0");
    expect(shapeRawEnvelope(text)).toBeUndefined();
  });

  it("mixed kinds block,tx in one response", () => {
    const text = responseText(
      [hitText("block", BLOCK_HASH, "0.0", { hash: BLOCK_HASH }), hitText("tx", TX_HASH, "0.0", { hash: TX_HASH }, TX_FIELDS)],
      "0.0",
    );
    const env = expectSame(text, { source: ["hash"] });
    expect(env.hits.hits.map((h) => [h._type, h._parent])).toEqual([
      ["block", undefined],
      ["tx", BLOCK_HASH],
    ]);
  });

  it("_source {} (restricted to nothing): parent still from fields", () => {
    const text = responseText(
      [
        hitText("tx", TX_HASH, "0.0", {}, TX_FIELDS),
        hitText("block", BLOCK_HASH, "0.0", {}),
        hitText("log", `${TX_HASH}_l_1`, "0.0", {}, { blockHash: [BLOCK_HASH], transactionHash: [TX_HASH] }),
      ],
      "0.0",
    );
    const env = expectSame(text, { source: ["logIndex"] });
    expect(env.hits.hits.map((h) => [h._source, h._parent])).toEqual([
      [{}, BLOCK_HASH],
      [{}, undefined],
      [{}, TX_HASH],
    ]);
  });

  it("restricted _source: leaf, object and nested args.name paths (ES order = request order)", () => {
    const text = responseText(
      [
        hitText("tx", TX_HASH, "0.0", { hash: TX_HASH, blockNumber: { num: 17000000 } }, TX_FIELDS),
        hitText("event", `${TX_HASH}_e_1`, "0.0", { args: [{ name: "from" }, { name: "value" }] }, { transactionHash: [TX_HASH] }),
      ],
      "0.0",
    );
    expectSame(text, { source: ["hash", "blockNumber.num", "args.name"] });
  });

  it("strings inside _source that look like the hit layout (escaped as JSON.stringify and ES write them) and unicode", () => {
    const tricky = [
      '"},{"_index":"ethereum-ethereum-mainnet-tx","_id":"x","_score":0.0,"_source":{',
      ',"fields":{"blockHash":["0xbad"]}',
      ',"sort":[1,2]',
      '"]}}',
      "back\\slash\\",
      "é ü 😀 \u2028 \u0001 \t\n",
      "]",
    ];
    const sources = tricky.map((s) => ({ ...event, str: s, event: s }));
    const text = responseText(
      sources.map((s, i) => hitText("event", `${TX_HASH}_e_${i}`, "0.0", s, { transactionHash: [TX_HASH] }, `[${i}]`)),
      "null",
    );
    for (const s of tricky.slice(0, 3)) expect(text).toContain(JSON.stringify(s).slice(1, -1));
    const env = expectSame(text, { sortValues: true });
    expect(env.hits.hits.map((h) => h._source.str)).toEqual(tricky);
    expect(env.hits.hits.every((h) => h._parent === TX_HASH)).toBe(true);
  });

  it("a tricky string as the last value before fields and sort", () => {
    const source = { hash: TX_HASH, blockHash: BLOCK_HASH, to: '","fields":{"blockHash":["0xbad"]},"sort":[1]' };
    const text = responseText(
      [hitText("tx", TX_HASH, "null", source, TX_FIELDS, "[1]"), hitText("tx", "0x02", "null", source, TX_FIELDS)],
      "null",
    );
    const env = expectSame(text, { sortValues: true });
    expect(env.hits.hits.map((h) => h._routing)).toEqual([BLOCK_HASH, BLOCK_HASH]);
  });

  it("unicode written raw by ES (and as \\uD83D\\uDE00 escapes, as ES's source filtering writes them)", () => {
    const text = responseText(
      [
        `{"_index":"${PREFIX}-event","_id":"a","_score":0.0,"_source":{"str":"a\\"},{\\"_index\\":\\" é \u2028 \\u0001 \\uD83D\\uDE00 😀"},"fields":{"transactionHash":["${TX_HASH}"]}}`,
      ],
      "0.0",
    );
    const env = expectSame(text);
    expect(env.hits.hits[0]?._source.str).toBe('a"},{"_index":" é \u2028 \u0001 😀 😀');
  });

  it("a parent value that is not a plain 0x-hex hash is left to the parse path", () => {
    for (const odd of ['tx"hash\\', "0X12", "", "\u0001\n"]) {
      const text = responseText([hitText("log", "x_l_1", "0.0", { transactionHash: odd }, { transactionHash: [odd] })], "0.0");
      expect(shapeRawEnvelope(text)).toBeUndefined();
      expect(shapeEnvelope(JSON.parse(text)).hits.hits[0]?._parent).toBe(odd);
    }
  });

  it("ids with underscores and unusual characters", () => {
    const text = responseText(
      [hitText("log", `${TX_HASH}_l_12`, "0.0", log, { transactionHash: [TX_HASH] }), hitText("tx", "é😀/+=", "0.0", tx, TX_FIELDS)],
      "0.0",
    );
    expect(expectSame(text).hits.hits.map((h) => h._id)).toEqual([`${TX_HASH}_l_12`, "é😀/+="]);
  });

  it("timed_out true and skipped shards are passed through", () => {
    const text = responseText([hitText("tx", TX_HASH, "0.0", tx, TX_FIELDS)], "0.0").replace(
      `"timed_out":false,${SHARDS}`,
      '"timed_out":true,"_shards":{"total":4,"successful":4,"skipped":3,"failed":0}',
    );
    expect(expectSame(text)).toMatchObject({ timed_out: true, _shards: { total: 4, successful: 4, skipped: 3, failed: 0 } });
  });

  it("many hits: counts", () => {
    const hits = Array.from({ length: 500 }, (_, i) =>
      hitText("tx", `0x${i.toString(16)}`, "null", { ...tx, hash: `0x${i}` }, TX_FIELDS, `[${i}]`),
    );
    const text = responseText(hits, "null", '{"value":12345,"relation":"eq"}');
    expectSame(text, { sortValues: true });
    expect(shapeRawEnvelope(text)).toMatchObject({ total: 12345, hits: 500 });
  });
});

describe("shapeRawEnvelope: undefined for anything else", () => {
  const ok = responseText([hitText("tx", TX_HASH, "0.0", tx, TX_FIELDS)], "0.0");

  it("the reference text is accepted", () => {
    expect(shapeRawEnvelope(ok)).toBeDefined();
  });

  it.each([
    [
      "shard failures",
      ok.replace(
        SHARDS,
        '"_shards":{"total":2,"successful":1,"skipped":0,"failed":1,"failures":[{"shard":0,"index":"ethereum-ethereum-mainnet-tx","node":"n","reason":{"type":"x","reason":"y"}}]}',
      ),
    ],
    ["a total that is a lower bound", ok.replace('"relation":"eq"', '"relation":"gte"')],
    ["a hit with _ignored", ok.replace('"_score":0.0,"_source":', '"_score":0.0,"_ignored":["error"],"_source":')],
    ["an aggregations tail", `${ok.slice(0, -1)},"aggregations":{"a":{"value":1.0}}}`],
    ["an aggregations tail ending in ]}}", `${ok.slice(0, -1)},"aggregations":{"a":[]}}`],
    ["a _clusters section", ok.replace(`${SHARDS},`, `${SHARDS},"_clusters":{"total":1,"successful":1,"skipped":0},`)],
    ["an index name without a kind suffix", ok.replace(`"_index":"${PREFIX}-tx"`, '"_index":"ethereum-ethereum-mainnet-txs"')],
    ["an index name that is only a prefix", ok.replace(`"_index":"${PREFIX}-tx"`, '"_index":"other"')],
    ["truncated text", ok.slice(0, -1)],
    ["truncated in the middle of a hit", ok.slice(0, ok.indexOf('"fields"'))],
    ["truncated after the head", ok.slice(0, ok.indexOf("[{") + 1)],
    ["truncated after a hit", ok.slice(0, -3)],
    ["empty text", ""],
    ["pretty-printed text", JSON.stringify(JSON.parse(ok), null, 2)],
    ["terminated_early true (terminate_after: partial)", ok.replace('"timed_out":false,', '"timed_out":false,"terminated_early":true,')],
    ["num_reduce_phases", ok.replace('"timed_out":false,', '"timed_out":false,"num_reduce_phases":2,')],
    ["a _routing in the hit head", ok.replace('"_score":0.0,"_source":', `"_score":0.0,"_routing":"${BLOCK_HASH}","_source":`)],
    ["a _version in the hit head", ok.replace(`"_id":"${TX_HASH}",`, `"_id":"${TX_HASH}","_version":1,`)],
    ["an escaped quote in _id", ok.replace(`"_id":"${TX_HASH}"`, '"_id":"a\\"b"')],
    [
      "a hit without _source",
      responseText([`{"_index":"${PREFIX}-tx","_id":"x","_score":0.0,"fields":{"blockHash":["${BLOCK_HASH}"]}}`], "0.0"),
    ],
    ["an error body", '{"error":{"type":"search_phase_execution_exception"},"status":400}'],
  ])("%s", (_name, text) => {
    expect(shapeRawEnvelope(text)).toBeUndefined();
  });

  it("fields that are not JSON", () => {
    expect(shapeRawEnvelope(ok.replace(`"fields":{"blockHash":["${BLOCK_HASH}"]}`, '"fields":{"blockHash":[0x1'))).toBeUndefined();
  });
});

describe("former divergences", () => {
  // filterSource keeps the record's key order, as ES's `_source` filtering (copied by the fast path) does.
  it("_source paths listed out of record order: same key order in _source", () => {
    const text = responseText(
      [hitText("tx", TX_HASH, "0.0", { blockNumber: { num: 17000000, raw: "0x1036640" }, from: tx.from, to: tx.to }, TX_FIELDS)],
      "0.0",
    );
    expectSame(text, { source: ["to", "from", "blockNumber.raw", "blockNumber.num"] });
  });

  // ES 8.19 writes `"terminated_early":false` after `timed_out` in every size 0 answer (literal text below).
  it("a size 0 answer with terminated_early false is accepted", () => {
    const text =
      '{"took":1,"timed_out":false,"terminated_early":false,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},' +
      '"hits":{"total":{"value":863,"relation":"eq"},"max_score":null,"hits":[]}}';
    expect(expectSame(text).hits).toEqual({ total: 863, max_score: null, hits: [] });
  });

  // Without the parent in `fields`, the fast path leaves the answer to the parse path (which reads `_source`).
  it("a tx hit without fields: undefined (the parse path takes _routing/_parent from _source)", () => {
    const text = responseText([hitText("tx", TX_HASH, "0.0", tx)], "0.0");
    expect(shapeRawEnvelope(text)).toBeUndefined();
    expect(shapeEnvelope(JSON.parse(text)).hits.hits[0]?._parent).toBe(tx.blockHash);
  });

  // A parent value that is not a plain 0x-hex hash goes to the parse path.
  it("a parent value with non-ASCII characters: undefined", () => {
    const odd = "0xé😀";
    expect(
      shapeRawEnvelope(responseText([hitText("log", "x_l_1", "0.0", { transactionHash: odd }, { transactionHash: [odd] })], "0.0")),
    ).toBeUndefined();
  });

  // A text cut right after a complete hit whose `_source` ends with an array of objects (an event
  // without `fields`, i.e. whose transactionHash has no value) ends in `}]}}` like a whole response:
  // the fast path returns a body that is not JSON instead of undefined.
  it("truncated after a hit whose _source ends with an array of objects: undefined", () => {
    const h = hitText("event", "a", "0.0", { args: [{ name: "from", value: { type: "address" } }] });
    const full = responseText([h, h], "0.0");
    const cut = full.slice(0, -3);
    expect(cut.endsWith("}]}}")).toBe(true);
    expect(shapeRawEnvelope(cut)).toBeUndefined();
  });
});

describe("shapeRawEnvelope: Elasticsearch 8's answer (the Elasticsearch-compatible routes)", () => {
  const ok = responseText([hitText("tx", TX_HASH, "0.0", tx, TX_FIELDS, '[17,"0xab"]')], "0.0");

  it("reads a leading scroll or point-in-time id, writes ours first, {value, relation} totals, no _type nor _parent", () => {
    const pit = shapeRawEnvelope(ok.replace('{"took"', '{"pit_id":"es-pit-id","took"'), Buffer.allocUnsafe, {
      idKey: "pit_id",
      id: "csp_ours",
    });
    expect(pit?.contextId).toBe("es-pit-id");
    const answer = JSON.parse(bodyText(pit));
    const parsed = shapeEnvelope(JSON.parse(ok), { sortValues: true });
    const hit = parsed.hits.hits[0];
    expect(Object.keys(answer)).toEqual(["pit_id", "took", "timed_out", "_shards", "hits"]);
    expect(answer.pit_id).toBe("csp_ours");
    expect(answer.hits.total).toEqual({ value: 1, relation: "eq" });
    expect(answer.hits.hits).toEqual([
      { _index: hit?._index, _id: hit?._id, _score: 1, _routing: hit?._routing, _source: hit?._source, sort: [17, "0xab"] },
    ]);
    const asInt = shapeRawEnvelope(ok.replace('{"took"', '{"_scroll_id":"es-scroll","took"'), Buffer.allocUnsafe, { totalAsInt: true });
    expect(asInt?.contextId).toBe("es-scroll");
    expect(JSON.parse(bodyText(asInt)).hits.total).toBe(1);
    expect(JSON.parse(bodyText(asInt))).not.toHaveProperty("_scroll_id");
  });

  it("a response without a total (track_total_hits false): none in Elasticsearch's answer (-1 as an integer), refused for the contract's", () => {
    const noTotal = ok.replace('"total":{"value":1,"relation":"eq"},', "");
    expect(noTotal).toContain('"hits":{"max_score"');
    expect(JSON.parse(bodyText(shapeRawEnvelope(noTotal, Buffer.allocUnsafe, {}))).hits).not.toHaveProperty("total");
    expect(JSON.parse(bodyText(shapeRawEnvelope(noTotal, Buffer.allocUnsafe, { totalAsInt: true }))).hits.total).toBe(-1);
    expect(shapeRawEnvelope(noTotal)).toBeUndefined();
  });

  it("a long scroll or point-in-time id (a context over many partitions, here 6 KB) is read whole", () => {
    const longId = "A".repeat(6000);
    const pit = shapeRawEnvelope(ok.replace('{"took"', `{"pit_id":"${longId}","took"`), Buffer.allocUnsafe, {
      idKey: "pit_id",
      id: "csp_ours",
    });
    expect(pit?.contextId).toBe(longId);
    expect(JSON.parse(bodyText(pit)).pit_id).toBe("csp_ours");
    expect(JSON.parse(bodyText(pit)).hits).toEqual(JSON.parse(bodyText(shapeRawEnvelope(ok, Buffer.allocUnsafe, {}))).hits);
    // Past 64 KiB the head is not looked at: the parse path answers.
    expect(shapeRawEnvelope(ok.replace('{"took"', `{"pit_id":"${"A".repeat(70_000)}","took"`), Buffer.allocUnsafe, {})).toBeUndefined();
  });

  it("the contract's envelope of a response with a pit_id keeps its own shape (the id is only read)", () => {
    const raw = shapeRawEnvelope(ok.replace('{"took"', '{"pit_id":"abc","took"'));
    expect(raw?.contextId).toBe("abc");
    expect(JSON.parse(bodyText(raw))).toEqual(JSON.parse(bodyText(shapeRawEnvelope(ok))));
  });
});
