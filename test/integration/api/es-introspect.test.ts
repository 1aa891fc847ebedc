/**
 * The introspection routes of the Elasticsearch-compatible API (api/routes/es/introspect.ts)
 * through the official `@elastic/elasticsearch` 8 client and raw HTTP, against the real
 * Elasticsearch and Redis: mappings, index info and existence, field caps (patterns, several
 * kinds, unmapped), `_cat/indices` (JSON and text), `_resolve/index`, documents by id, index
 * patterns on `_search`, and the 404 shapes. The mappings and field caps are compared with what
 * Elasticsearch itself reports for the fixture indices (no drift from es/mappings.ts). The records
 * are indexed in partitions of one block (es/partitions.ts), so the counts are sums over backing
 * indices. Indices and Redis keys live under unique prefixes and are deleted afterwards.
 */
import type { AddressInfo } from "node:net";
import { Client, errors, type estypes } from "@elastic/elasticsearch";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexName } from "../../../es/mappings.js";
import { aliasOfIndex } from "../../../es/partitions.js";
import { loadConfig } from "../../../lib/config/index.js";
import { uniformPartitioning } from "../../../lib/partitioning.js";
import { RECORD_KINDS, type RecordKind, recordId } from "../../../lib/records.js";
import {
  blocks,
  deleteRedisKeys,
  events,
  type FixtureApi,
  isolatedApi,
  logs,
  MAINNET,
  RECORDS,
  searchStackUp,
  startFixtureApi,
  txs,
} from "./fixtures.js";

const base = loadConfig();
const up = await searchStackUp(base);
const { id: ID, indexPrefix: PREFIX, token: TOKEN, config } = isolatedApi(base, "i");
const alias = (kind: RecordKind): string => indexName(MAINNET, kind, PREFIX);

// biome-ignore lint/suspicious/noExplicitAny: answers are walked as plain JSON; each test asserts their shape.
type Json = any;

/** The status and error type of a refused client call. */
async function refusal(p: Promise<unknown>): Promise<{ status: number | undefined; type: unknown; body: Json }> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(errors.ResponseError);
  const e = err as InstanceType<typeof errors.ResponseError>;
  return { status: e.statusCode, type: (e.body as Json)?.error?.type, body: e.body };
}

/** Elasticsearch's field caps of aliases with the backing index names replaced by their aliases (each listed once). */
function byAlias(res: estypes.FieldCapsResponse): Json {
  const names = (list: string[] | string | undefined) => (list === undefined ? undefined : [...new Set([list].flat().map(aliasOfIndex))]);
  const fields: Json = {};
  for (const [name, types] of Object.entries(res.fields)) {
    fields[name] = {};
    for (const [type, cap] of Object.entries(types as Record<string, Json>)) {
      const out: Json = { ...cap };
      for (const key of ["indices", "non_searchable_indices", "non_aggregatable_indices"]) {
        const v = names(cap[key]);
        if (v === undefined) delete out[key];
        else out[key] = v;
      }
      fields[name][type] = out;
    }
  }
  return { indices: names(res.indices as string[]), fields };
}

describe.skipIf(!up)("introspection routes of the Elasticsearch-compatible API", () => {
  let fixture: FixtureApi | undefined;
  let es: Client;
  let app: FastifyInstance;
  let client: Client;
  let esUrl: string;

  /** A raw request to `<api>/ethereum/ethereum/mainnet/es<path>` with the token: status, text, content type. */
  async function call(
    path: string,
    method = "GET",
  ): Promise<{ status: number; text: string; type: string | null; product: string | null }> {
    const res = await fetch(`${esUrl}${path}`, { method, headers: { authorization: `Bearer ${TOKEN}` } });
    return {
      status: res.status,
      text: await res.text(),
      type: res.headers.get("content-type"),
      product: res.headers.get("x-elastic-product"),
    };
  }

  beforeAll(async () => {
    fixture = await startFixtureApi(config, uniformPartitioning(1));
    ({ es, app } = fixture);
    await app.listen({ host: "127.0.0.1", port: 0 });
    esUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/ethereum/ethereum/mainnet/es`;
    client = new Client({ node: esUrl, auth: { bearer: TOKEN } });
  });

  afterAll(async () => {
    await client?.close();
    await fixture?.close();
    await deleteRedisKeys(base.redisUrl, `${ID}:`);
  });

  it("indices.getMapping: each kind's mapping equals the one Elasticsearch holds for its backing indices (without _meta)", async () => {
    const all = await client.indices.getMapping();
    expect(Object.keys(all).sort()).toEqual(RECORD_KINDS.map(alias).sort());
    for (const kind of RECORD_KINDS) {
      const ours = await client.indices.getMapping({ index: kind });
      expect(Object.keys(ours)).toEqual([alias(kind)]);
      expect(all[alias(kind)]).toEqual(ours[alias(kind)]);
      const real = await es.indices.getMapping({ index: alias(kind) });
      const backing = Object.values(real);
      expect(backing.length).toBeGreaterThan(0);
      for (const b of backing) {
        const { _meta, ...mappings } = b.mappings;
        expect(_meta).toBeDefined();
        expect(ours[alias(kind)]?.mappings).toEqual(mappings);
      }
    }
    // The same names as hits' _index: a hit's index can be introspected.
    const hit = (await client.search({ index: "tx", size: 1 })).hits.hits[0];
    expect(Object.keys(await client.indices.getMapping({ index: hit?._index as string }))).toEqual([alias("tx")]);
  });

  it("index patterns and comma lists on _mapping, _search and _count", async () => {
    const keys = async (index: string) => Object.keys(await client.indices.getMapping({ index })).sort();
    expect(await keys("tx,log")).toEqual([alias("log"), alias("tx")]);
    expect(await keys("ethereum-ethereum-mainnet-*")).toEqual(RECORD_KINDS.map(alias).sort());
    expect(await keys("*-tx")).toEqual([alias("tx")]);
    expect(await keys("eth*")).toEqual(RECORD_KINDS.map(alias).sort());
    expect(await keys(`${PREFIX}*-log`)).toEqual([alias("log")]);
    expect(await keys("*,-tx,-block,-call")).toEqual([alias("event"), alias("log")]);
    expect(await keys("nothing*")).toEqual([]);
    const search = await client.search({ index: "*-tx,*-log", size: 100 });
    expect(search.hits.hits.map((h) => h._id).sort()).toEqual(
      [...txs.map((t) => recordId("tx", t)), ...logs.map((l) => recordId("log", l))].sort(),
    );
    expect((await client.count({ index: "ethereum-*-block" })).count).toBe(blocks.length);
    // A search of a pattern matching nothing is 404 (it would otherwise search every index of the cluster).
    expect(await refusal(client.search({ index: "nothing*" }))).toMatchObject({ status: 404, type: "CS_UNKNOWN_KIND" });
  });

  it("indices.get and indices.exists: aliases, mappings and the settings clients read; 200/404", async () => {
    const info = await client.indices.get({ index: "tx" });
    const tx = info[alias("tx")];
    expect(Object.keys(info)).toEqual([alias("tx")]);
    expect(tx?.aliases).toEqual({});
    expect(tx?.mappings).toEqual((await client.indices.getMapping({ index: "tx" }))[alias("tx")]?.mappings);
    const real = await es.indices.getSettings({ index: alias("tx") });
    const backing = Object.entries(real).sort(([a], [b]) => (a < b ? -1 : 1));
    const s = tx?.settings?.index as Json;
    expect(s.provided_name).toBe(alias("tx"));
    expect(s.uuid).toBe(backing[0]?.[1].settings?.index?.uuid);
    expect(s.number_of_shards).toBe(String(backing.reduce((n, [, b]) => n + Number(b.settings?.index?.number_of_shards), 0)));
    expect(s.creation_date).toBe(String(Math.min(...backing.map(([, b]) => Number(b.settings?.index?.creation_date)))));
    expect(s.max_result_window).toBe(String(config.api.maxSize));
    expect(Object.keys(await client.indices.get({ index: "_all" })).sort()).toEqual(RECORD_KINDS.map(alias).sort());
    const flat = await call("/tx?flat_settings=true");
    expect(JSON.parse(flat.text)[alias("tx")].settings["index.provided_name"]).toBe(alias("tx"));

    expect(await client.indices.exists({ index: "tx" })).toBe(true);
    expect(await client.indices.exists({ index: alias("call") })).toBe(true);
    expect(await client.indices.exists({ index: "eth*" })).toBe(true);
    expect(await client.indices.exists({ index: "nothing*" })).toBe(false);
    expect(await client.indices.exists({ index: "ethereum-ethereum-sepolia-tx" })).toBe(false);
  });

  it("fieldCaps: every field of each kind as Elasticsearch reports it for the same indices, patterns, several kinds, unmapped", async () => {
    for (const kind of RECORD_KINDS) {
      const ours = await client.fieldCaps({ index: kind, fields: "*" });
      const real = byAlias(await es.fieldCaps({ index: alias(kind), fields: "*" }));
      expect(ours.indices).toEqual([alias(kind)]);
      const mine = Object.keys(ours.fields);
      // Every field Elasticsearch reports, except its internal metadata fields, with the same capabilities.
      const theirs = Object.keys(real.fields).filter((f) => !real.fields[f][Object.keys(real.fields[f])[0] as string].metadata_field);
      expect(mine.filter((f) => !f.startsWith("_")).sort()).toEqual(theirs.sort());
      for (const f of mine) expect(ours.fields[f], `${kind} ${f}`).toEqual(real.fields[f]);
      expect(mine).toEqual(expect.arrayContaining(["_id", "_index", "_source"]));
    }
    // Several kinds with conflicting types (nonce: keyword in block, an object in tx), unmapped fields.
    for (const [fields, unmapped] of [
      [["nonce*", "hash", "from*", "number.num"], false],
      [["*"], true],
    ] as const) {
      const ours = await client.fieldCaps({ index: "block,tx", fields: [...fields], include_unmapped: unmapped });
      const real = byAlias(await es.fieldCaps({ index: [alias("block"), alias("tx")], fields: [...fields], include_unmapped: unmapped }));
      for (const f of Object.keys(real.fields)) if (f.startsWith("_") && !(f in ours.fields)) delete real.fields[f];
      expect(ours).toEqual(real);
    }
    expect(Object.keys(ours("nonce", await client.fieldCaps({ index: "block,tx", fields: "nonce" })))).toEqual(["keyword", "object"]);
    // A pattern: the matching fields and their enclosing objects; POST with fields in the body.
    const args = await client.fieldCaps({ index: "event", fields: ["args.*"] });
    expect(Object.keys(args.fields).sort()).toEqual([
      "args",
      "args.name",
      "args.pos",
      "args.value",
      "args.value.hex",
      "args.value.num",
      "args.value.scaled",
      "args.value.type",
    ]);
    expect(args.fields.args?.nested).toMatchObject({ type: "nested", searchable: false, aggregatable: false });
    const posted = await app.inject({
      method: "POST",
      url: "/ethereum/ethereum/mainnet/es/tx/_field_caps",
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { fields: ["blockNumber.num"] },
    });
    expect(posted.json().fields).toEqual({
      blockNumber: { object: { type: "object", metadata_field: false, searchable: false, aggregatable: false } },
      "blockNumber.num": { long: { type: "long", metadata_field: false, searchable: true, aggregatable: true } },
    });
    const filtered = await app.inject({
      method: "POST",
      url: "/ethereum/ethereum/mainnet/es/tx/_field_caps?fields=*",
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { index_filter: { range: { "blockNumber.num": { gte: 1 } } } },
    });
    expect([filtered.statusCode, filtered.json().error.type]).toEqual([400, "CS_BODY_INVALID"]);
    const param = await call("/tx/_field_caps?fields=*&filters=-parent");
    expect([param.status, JSON.parse(param.text).error.type]).toEqual([400, "CS_BAD_REQUEST"]);
    expect(await client.fieldCaps({ index: "nothing*", fields: "*" })).toEqual({ indices: [], fields: {} });
    expect(await refusal(client.fieldCaps({ index: "tx" }))).toMatchObject({ status: 400, type: "CS_BAD_REQUEST" });
  });

  it("cat.indices: counts and sizes summed over the backing indices, JSON and text; cat.aliases is empty", async () => {
    const rows = await client.cat.indices({ format: "json", bytes: "b", s: "index" });
    expect(rows.map((r) => r.index)).toEqual(RECORD_KINDS.map(alias).sort());
    const stats = await es.indices.stats({ index: alias("tx"), metric: ["docs", "store"] });
    const tx = rows.find((r) => r.index === alias("tx"));
    expect(Number(tx?.["docs.count"])).toBe(stats._all.primaries?.docs?.count);
    expect(Number(tx?.["docs.count"])).toBe(txs.length);
    expect(Number(tx?.["store.size"])).toBe(stats._all.total?.store?.size_in_bytes);
    expect(Number(tx?.pri)).toBe(Object.keys(stats.indices ?? {}).length);
    expect(tx).toMatchObject({ status: "open", health: "green" });
    // The event kind: Lucene documents, its nested args counted as Elasticsearch counts them.
    const ev = rows.find((r) => r.index === alias("event"));
    expect(Number(ev?.["docs.count"])).toBeGreaterThanOrEqual(events.length);
    // The call kind has no record: 0 documents.
    expect(rows.find((r) => r.index === alias("call"))).toMatchObject({ "docs.count": "0" });
    expect(RECORDS.call).toHaveLength(0);

    const text = await call("/_cat/indices/*-tx,*-log?v&h=index,dc,ss&bytes=b&s=index:desc");
    expect(text.type).toMatch(/^text\/plain/);
    const lines = text.text.split("\n");
    expect(lines.slice(-1)).toEqual([""]);
    expect(lines[0]?.split(/ +/)).toEqual(["index", "docs.count", "store.size"]);
    expect(lines[1]?.split(/ +/).slice(0, 2)).toEqual([alias("tx"), String(txs.length)]);
    expect(lines[2]?.split(/ +/).slice(0, 2)).toEqual([alias("log"), String(logs.length)]);
    expect(lines[1]?.length).toBe(lines[0]?.length);
    expect(await client.cat.indices({ index: "nothing*", format: "json" })).toEqual([]);
    expect(await client.cat.aliases({ format: "json" })).toEqual([]);
    expect(await refusal(client.cat.indices({ h: "nope" }))).toMatchObject({ status: 400, type: "CS_BAD_REQUEST" });
  });

  it("indices.resolveIndex: the kinds an expression names, as indices", async () => {
    expect(await client.indices.resolveIndex({ name: "*-tx,*-log" })).toEqual({
      indices: [alias("log"), alias("tx")].map((name) => ({ name, attributes: ["open"] })),
      aliases: [],
      data_streams: [],
    });
    expect((await client.indices.resolveIndex({ name: "*" })).indices).toHaveLength(RECORD_KINDS.length);
  });

  it("get / exists / getSource of a document by id; found:false and 404 shapes", async () => {
    const tx = txs[0];
    if (!tx) throw new Error("fixtures changed");
    const real = (await es.search({ index: alias("tx"), query: { ids: { values: [tx.hash] } }, seq_no_primary_term: true, version: true }))
      .hits.hits[0];
    const doc = await client.get({ index: "tx", id: tx.hash });
    expect(doc).toEqual({
      _index: alias("tx"),
      _id: tx.hash,
      _version: real?._version,
      _seq_no: real?._seq_no,
      _primary_term: real?._primary_term,
      found: true,
      _source: real?._source,
    });
    expect(doc._source).toMatchObject({ hash: tx.hash, from: tx.from });
    expect(await client.getSource({ index: alias("tx"), id: tx.hash })).toEqual(real?._source);
    expect(await client.exists({ index: "tx", id: tx.hash })).toBe(true);
    expect(await client.exists({ index: "tx", id: "0xnope" })).toBe(false);
    expect(await client.exists({ index: "block", id: tx.hash })).toBe(false);
    const missing = await call("/tx/_doc/0xnope");
    expect([missing.status, JSON.parse(missing.text), missing.product]).toEqual([
      404,
      { _index: alias("tx"), _id: "0xnope", found: false },
      "Elasticsearch",
    ]);
    expect(await refusal(client.getSource({ index: "tx", id: "0xnope" }))).toMatchObject({ status: 404, type: "CS_NOT_FOUND" });
    expect(await refusal(client.get({ index: "tx,log", id: tx.hash }))).toMatchObject({ status: 400, type: "CS_BAD_REQUEST" });
    const block = blocks[0];
    expect((await client.get({ index: "block", id: block?.hash as string }))._source).toMatchObject({ hash: block?.hash });
  });

  it("404 shapes: an unknown index in Elasticsearch's error shape; allow_no_indices=false; unknown endpoints", async () => {
    const unknown = await refusal(client.indices.getMapping({ index: "ethereum-ethereum-sepolia-tx" }));
    expect(unknown).toMatchObject({ status: 404, type: "CS_UNKNOWN_KIND" });
    expect(unknown.body.error.reason).toContain("no such index [ethereum-ethereum-sepolia-tx]");
    expect(unknown.body.error.root_cause[0]).toMatchObject({ type: "CS_UNKNOWN_KIND", path: "params.index" });
    expect(unknown.body.status).toBe(404);
    expect(await refusal(client.indices.getMapping({ index: "nothing*", allow_no_indices: false }))).toMatchObject({
      status: 404,
      type: "CS_UNKNOWN_KIND",
    });
    expect(await refusal(client.indices.get({ index: "tx-p000001" }))).toMatchObject({ status: 404, type: "CS_UNKNOWN_KIND" });
    const head = await call("/nope", "HEAD");
    expect([head.status, head.text]).toEqual([404, ""]);
    expect((await call("/_stats")).status).toBe(404);
    // Kind block and _all: these paths are not taken by the contract's block-by-hash route nor the catch-all.
    const block = blocks[0]?.hash as string;
    expect(Object.keys(JSON.parse((await call("/block/_mapping")).text))).toEqual([alias("block")]);
    expect(Object.keys(JSON.parse((await call("/block/_field_caps?fields=hash")).text).fields)).toEqual(["hash"]);
    expect(JSON.parse((await call(`/block/_doc/${block}`)).text)).toMatchObject({ found: true, _id: block });
    expect(JSON.parse((await call(`/block/_source/${block}`)).text)).toMatchObject({ hash: block });
    expect(Object.keys(JSON.parse((await call("/_all/_mapping")).text))).toHaveLength(RECORD_KINDS.length);
    expect(Object.keys(JSON.parse((await call("/_all")).text))).toHaveLength(RECORD_KINDS.length);
    expect((await call("/_all", "HEAD")).status).toBe(200);
    expect((await call("/block", "HEAD")).status).toBe(200);
    expect(JSON.parse((await call("/tx/_settings")).text).error.type).toBe("CS_ROUTE_NOT_FOUND");
  });
});

/** The type entries of one field of a field caps answer. */
function ours(field: string, res: estypes.FieldCapsResponse): Record<string, unknown> {
  return res.fields[field] ?? {};
}
