/**
 * Pages streamed as Elasticsearch's response arrives (api/search/raw-stream.ts) against the
 * buffered answer of the same response (api/search/search.ts `rawOrParsed`: the raw path, or the
 * parse path and api/search/es-shape.ts `toEsSearchResponse`). The response texts are laid out as
 * Elasticsearch 8 writes them and cut into chunks of every size from 1 byte (so every boundary: inside
 * the head, inside a hit separator, inside a multi-byte character); the streamed answer must be the
 * same text whatever the cut. Pure: `send` hands the chunks over as the client's `asStream` mode would.
 */
import type { estypes } from "@elastic/elasticsearch";
import { describe, expect, it } from "vitest";
import { shapeEnvelope } from "../../../../api/search/envelope.js";
import { toEsSearchResponse } from "../../../../api/search/es-shape.js";
import type { RawEsFormat } from "../../../../api/search/raw.js";
import { type EsPageStream, streamEsPage } from "../../../../api/search/raw-stream.js";
import { rawOrParsed } from "../../../../api/search/search.js";
import { BLOCK_HASH, block, esHitText, TX_HASH, tx } from "./records.js";

const PREFIX = "ethereum-ethereum-mainnet";
const SHARDS = '"_shards":{"total":2,"successful":2,"skipped":0,"failed":0}';
const TX_FIELDS = { blockHash: [BLOCK_HASH] };
const event = {
  event: "Transfer",
  transactionHash: TX_HASH,
  blockHash: BLOCK_HASH,
  str: 'Transfer(from=0xd8dA, value=1000 "USDT" — ünïcødé 😀, },{"_index":"x")',
};

/** One hit as ES 8 writes it, from a partition of the kind's index. */
function hitText(kind: string, id: string, score: string, source: unknown, fields?: Record<string, string[]>, sort?: string): string {
  return esHitText(`${PREFIX}-${kind}-p000001`, id, score, source, fields, sort);
}

/** A whole `_search` response text with a leading context id. */
function responseText(hits: string[], maxScore: string, head = '"pit_id":"es-pit",'): string {
  return `{${head}"took":3,"timed_out":false,${SHARDS},"hits":{"total":{"value":${hits.length},"relation":"eq"},"max_score":${maxScore},"hits":[${hits.join(",")}]}}`;
}

/** The client's `asStream` answer: `bytes` in chunks of `size`; `returned` counts the body's `return()` calls. */
function answer(bytes: Buffer, size: number, statusCode = 200) {
  const state = { returned: 0, read: 0 };
  const body: AsyncIterable<Buffer> = {
    [Symbol.asyncIterator]() {
      let at = 0;
      return {
        async next() {
          if (at >= bytes.length) return { done: true, value: undefined };
          const chunk = bytes.subarray(at, at + size);
          at += size;
          state.read++;
          return { done: false, value: Buffer.from(chunk) };
        },
        async return() {
          state.returned++;
          return { done: true, value: undefined };
        },
      };
    },
  };
  return { state, send: async () => ({ body, statusCode, headers: {}, meta: {}, warnings: null }) };
}

const FORMAT: RawEsFormat = { idKey: "pit_id", id: "csp_ours" };
const SHAPE = { sortValues: true };

/** Reads a whole stream into text. */
async function text(s: EsPageStream): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of s.body) parts.push(c as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

/** The buffered answer of the same response (raw path, else parse path), as text. */
function buffered(response: string): string {
  const out = rawOrParsed(Buffer.from(response, "utf8"), FORMAT, SHAPE);
  if ("raw" in out) return out.raw.body.toString();
  return JSON.stringify(toEsSearchResponse(out.parsed.envelope, { pitId: FORMAT.id }));
}

/** Streams `response` cut into chunks of every size in `sizes`; asserts the same answer each time; returns it. */
async function expectStreamedSame(response: string, sizes: Iterable<number>): Promise<string> {
  const want = buffered(response);
  const bytes = Buffer.from(response, "utf8");
  for (const size of sizes) {
    const { send } = answer(bytes, size);
    const out = await streamEsPage(send, FORMAT, SHAPE, () => {
      throw new Error("not streamed");
    });
    expect("stream" in out, `chunks of ${size}`).toBe(true);
    const s = (out as { stream: EsPageStream }).stream;
    expect(await text(s), `chunks of ${size}`).toBe(want);
    expect(s.contextId).toBe("es-pit");
    expect(s.hits()).toBe((JSON.parse(want) as { hits: { hits: unknown[] } }).hits.hits.length);
  }
  return want;
}

const sizes = (bytes: number): number[] => [...Array.from({ length: 40 }, (_, i) => i + 1), 97, 511, 512, 513, 4096, bytes];

describe("streamEsPage: the buffered answer, streamed", () => {
  it("hits of every kind with sort values, strings that look like the layout, unicode: same text at every cut", async () => {
    const response = responseText(
      [
        hitText("tx", TX_HASH, "null", tx, TX_FIELDS, '[17,"0xab"]'),
        hitText("event", `${TX_HASH}_e_1`, "null", event, { transactionHash: [TX_HASH] }, "[9223372036854775807]"),
        hitText("block", BLOCK_HASH, "null", block, undefined, "[-1.5e300]"),
        hitText("event", `${TX_HASH}_e_2`, "null", { ...event, str: "]}}" }, { transactionHash: [TX_HASH] }, "[3]"),
      ],
      "null",
    );
    const want = await expectStreamedSame(response, sizes(response.length));
    const answer = JSON.parse(want);
    expect(answer.pit_id).toBe("csp_ours");
    expect(answer.hits.hits.map((h: { _score: number }) => h._score)).toEqual([1, 1, 1, 1]);
    expect(answer.hits.hits[1]._source.str).toBe(event.str);
  });

  it("no hits, and one hit", async () => {
    const none = responseText([], "null");
    expect(JSON.parse(await expectStreamedSame(none, sizes(none.length))).hits).toEqual({
      total: { value: 0, relation: "eq" },
      max_score: null,
      hits: [],
    });
    const one = responseText([hitText("tx", TX_HASH, "2.5", tx, TX_FIELDS)], "2.5");
    expect(JSON.parse(await expectStreamedSame(one, sizes(one.length))).hits.hits[0]._score).toBe(2.5);
  });

  it("hits the raw path does not take (parent not a plain hash, _ignored, no fields) are shaped alone, as the parse path shapes them", async () => {
    const odd = hitText("event", `${TX_HASH}_e_3`, "null", { ...event, transactionHash: 'x"y' }, { transactionHash: ['x"y'] }, "[4]");
    const ignored = hitText("tx", `${TX_HASH}x`, "null", tx, TX_FIELDS, "[5]").replace(
      '"_score":null,',
      '"_score":null,"_ignored":["str"],',
    );
    const noFields = hitText("tx", `${TX_HASH}y`, "null", tx, undefined, "[6]");
    const response = responseText(
      [
        odd,
        hitText("tx", TX_HASH, "null", tx, TX_FIELDS, "[1]"),
        ignored,
        noFields,
        hitText("block", BLOCK_HASH, "null", block, undefined, "[7]"),
      ],
      "null",
    );
    // The buffered answer of this response is the parse path's.
    expect("parsed" in rawOrParsed(Buffer.from(response), FORMAT, SHAPE)).toBe(true);
    const want = await expectStreamedSame(response, sizes(response.length));
    const parsed = shapeEnvelope(JSON.parse(response) as estypes.SearchResponse<unknown>, SHAPE);
    expect(JSON.parse(want).hits.hits.map((h: { _routing?: string }) => h._routing)).toEqual(parsed.hits.hits.map((h) => h._routing));
  });
});

describe("streamEsPage: long heads", () => {
  it("a point-in-time id of 6 KB (a point in time over many partitions) is read whole: streamed, and the buffered answer takes the bytes path", async () => {
    const longId = "A".repeat(6000);
    const response = responseText([hitText("tx", TX_HASH, "null", tx, TX_FIELDS, "[1]")], "null", `"pit_id":"${longId}",`);
    expect("raw" in rawOrParsed(Buffer.from(response), FORMAT, SHAPE)).toBe(true);
    for (const size of [100, 4096, response.length]) {
      const { send } = answer(Buffer.from(response), size);
      const out = (await streamEsPage(send, FORMAT, SHAPE, () => undefined)) as { stream: EsPageStream };
      expect(await text(out.stream)).toBe(buffered(response));
      expect(out.stream.contextId).toBe(longId);
    }
  });
});

describe("streamEsPage: long pages", () => {
  it("a page of 1500 hits (more than one part of the answer), a few shaped alone: same text in chunks of 4 KiB, 64 KiB, whole", async () => {
    const hits = Array.from({ length: 1500 }, (_, i) =>
      i % 500 === 7
        ? hitText("event", `${TX_HASH}_e_${i}`, "null", { ...event, transactionHash: "odd" }, { transactionHash: ["odd"] }, `[${i}]`)
        : hitText("event", `${TX_HASH}_e_${i}`, "null", event, { transactionHash: [TX_HASH] }, `[${i}]`),
    );
    const response = responseText(hits, "null");
    expect(response.length).toBeGreaterThan(512 * 1024);
    const want = await expectStreamedSame(response, [4096, 65536, response.length]);
    expect(JSON.parse(want).hits.hits).toHaveLength(1500);
  });
});

describe("streamEsPage: what is not streamed, and failures", () => {
  const ok = responseText([hitText("tx", TX_HASH, "null", tx, TX_FIELDS, "[1]")], "null");

  it("a head without the expected layout (failed shards with details) goes to the fallback with the whole body", async () => {
    const failed = ok.replace(SHARDS, '"_shards":{"total":2,"successful":1,"skipped":0,"failed":1,"failures":[{"shard":1}]}');
    const { send } = answer(Buffer.from(failed), 5);
    const out = await streamEsPage(send, FORMAT, SHAPE, (bytes) => ({ whole: bytes.toString() }));
    expect(out).toEqual({ whole: failed });
  });

  it("an error status is thrown as the client's ResponseError, its body parsed", async () => {
    const error = '{"error":{"type":"search_context_missing_exception"},"status":404}';
    const { send } = answer(Buffer.from(error), 7, 404);
    await expect(streamEsPage(send, FORMAT, SHAPE, () => "no")).rejects.toMatchObject({
      name: "ResponseError",
      statusCode: 404,
      body: { status: 404 },
    });
  });

  it("a response cut short or not ending in ]}} destroys the stream after the hits before the cut", async () => {
    for (const broken of [ok.slice(0, -2), `${ok.slice(0, -1)},"aggregations":{}}`]) {
      const { send } = answer(Buffer.from(broken), 600);
      const out = (await streamEsPage(send, FORMAT, SHAPE, () => undefined)) as { stream: EsPageStream };
      await expect(text(out.stream)).rejects.toThrow(/does not end its hits/);
    }
  });

  it("a stream destroyed by its reader stops reading Elasticsearch's response", async () => {
    const many = responseText(
      Array.from({ length: 2000 }, (_, i) => hitText("tx", `${TX_HASH}${i}`, "null", tx, TX_FIELDS, `[${i}]`)),
      "null",
    );
    expect(many.length).toBeGreaterThan(1_000_000); // several parts of the answer
    const { send, state } = answer(Buffer.from(many), 4096);
    const out = (await streamEsPage(send, FORMAT, SHAPE, () => undefined)) as { stream: EsPageStream };
    const first = await out.stream.body[Symbol.asyncIterator]().next();
    expect(first.done).toBe(false);
    out.stream.body.destroy();
    await new Promise((r) => setImmediate(r));
    expect(state.returned).toBeGreaterThan(0);
    expect(state.read).toBeLessThan(Math.ceil(many.length / 4096));
  });
});
