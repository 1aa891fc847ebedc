"""The tools people use on Elasticsearch, against chainsift's Elasticsearch-compatible routes over the
real mainnet fixture blocks (../shared/data/mainnet, served by test/python/serve.ts as the chain
ethereum/ethereum/mainnet-fixtures in block-range partitions): `helpers.scan` (scroll),
`elasticsearch.dsl` scan / slicing / count, point-in-time paging, the index introspection a tool
starts with (mapping, field caps, cat indices), an eland DataFrame, a volume-per-month aggregation,
and the refusals the client surfaces. Runs with the `elasticsearch` 8 and 9 clients (test/python/run.sh).
Every expectation is computed from the fixture records themselves; skips when the data is absent."""

from collections import Counter, defaultdict

import pytest
from elasticsearch import BadRequestError, Elasticsearch, NotFoundError, helpers
from elasticsearch.dsl import Search

USDT = "0xdac17f958d2ee523a2206206994597c13d831ec7"
KINDS = ["block", "tx", "log", "event"]


def record_id(kind: str, r: dict) -> str:
    """The document _id chainsift gives a record (lib/records.ts recordId)."""
    if kind in ("block", "tx"):
        return r["hash"]
    return f"{r['transactionHash']}_{'l' if kind == 'log' else 'e'}_{r['logIndex']['num']}"


def tx_order(t: dict) -> tuple:
    return (t["blockNumber"]["num"], t["transactionIndex"]["num"])


@pytest.mark.parametrize("kind", KINDS)
def test_helpers_scan_returns_every_record(fes: Elasticsearch, fixtures: dict, findex, kind: str) -> None:
    records = fixtures["records"][kind]
    got = [h["_id"] for h in helpers.scan(fes, index=findex(kind), size=500, scroll="1m")]
    assert len(got) == len(records) > 0
    assert sorted(got) == sorted(record_id(kind, r) for r in records)


def test_helpers_scan_preserve_order(fes: Elasticsearch, fixtures: dict, findex) -> None:
    txs = fixtures["records"]["tx"]
    query = {"query": {"range": {"blockNumber.num": {"gte": 11_000_000}}}, "sort": [{"blockNumber.num": "desc"}, {"transactionIndex.num": "asc"}]}
    got = [h["_source"]["hash"] for h in helpers.scan(fes, query=query, index=findex("tx"), size=100, scroll="1m", preserve_order=True)]
    expected = [t["hash"] for t in sorted((t for t in txs if t["blockNumber"]["num"] >= 11_000_000), key=lambda t: (-t["blockNumber"]["num"], t["transactionIndex"]["num"]))]
    assert got == expected and len(expected) > 100


def test_dsl_scan_slice_and_count(fes: Elasticsearch, fixtures: dict, findex) -> None:
    events = fixtures["records"]["event"]
    transfers = [e for e in events if e["event"] == "Transfer"]
    s = Search(using=fes, index=findex("event")).filter("term", **{"event.raw": "Transfer"}).params(size=300)
    got = sorted(h.meta.id for h in s.scan())
    assert got == sorted(record_id("event", e) for e in transfers) and len(got) > 300

    txs = sorted(fixtures["records"]["tx"], key=tx_order)
    ordered = Search(using=fes, index=findex("tx")).sort("blockNumber.num", "transactionIndex.num")
    page = ordered[20:25].execute()
    assert [h.hash for h in page] == [t["hash"] for t in txs[20:25]]

    in_block = Search(using=fes, index=findex("tx")).filter("term", **{"blockNumber.num": 18_000_000})
    assert in_block.count() == len([t for t in txs if t["blockNumber"]["num"] == 18_000_000]) == 94
    assert Search(using=fes, index=findex("log")).count() == len(fixtures["records"]["log"])


def test_point_in_time_paging_equals_the_sorted_listing(fes: Elasticsearch, fixtures: dict, findex) -> None:
    txs = fixtures["records"]["tx"]
    pit = fes.open_point_in_time(index=findex("tx"), keep_alive="1m")["id"]
    seen: list = []
    try:
        after = None
        for _ in range(len(txs) // 100 + 2):
            extra = {"search_after": after} if after else {}
            res = fes.search(pit={"id": pit, "keep_alive": "1m"}, sort=[{"blockNumber.num": "asc"}, {"transactionIndex.num": "asc"}], size=100, **extra)
            hits = res["hits"]["hits"]
            if not hits:
                break
            seen += [h["_id"] for h in hits]
            after = hits[-1]["sort"]
            pit = res.get("pit_id", pit)
    finally:
        closed = fes.close_point_in_time(id=pit)
    assert seen == [t["hash"] for t in sorted(txs, key=tx_order)]
    assert closed["succeeded"] is True and closed["num_freed"] >= 1
    with pytest.raises(NotFoundError) as gone:
        fes.search(pit={"id": pit, "keep_alive": "1m"}, size=1)
    assert gone.value.status_code == 404
    assert gone.value.error == gone.value.body["error"]["code"] == "CS_CONTEXT_NOT_FOUND"


def test_mapping_field_caps_and_cat_indices(fes: Elasticsearch, fixtures: dict, findex) -> None:
    txs = fixtures["records"]["tx"]
    mappings = fes.indices.get_mapping(index=findex("tx"))
    assert len(mappings) >= 1
    for index_mapping in mappings.values():
        props = index_mapping["mappings"]["properties"]
        assert {k for t in txs for k in t} <= set(props)  # every field of the records is mapped
        assert props["blockNumber"]["properties"]["num"]["type"] == "long"
        assert props["timestamp"]["type"] == "date"

    caps = fes.field_caps(index=findex("event"), fields="*")["fields"]
    assert "nested" in caps["args"]
    assert caps["args.value.scaled"]["double"]["aggregatable"] is True
    assert caps["timestamp"]["date"]["searchable"] is True

    chain = findex("")[:-1]
    rows = fes.cat.indices(index=f"{chain}-*", format="json")
    counts: Counter = Counter()
    for row in rows:
        kind = next(k for k in KINDS + ["call"] if f"{chain}-{k}" in row["index"])
        counts[kind] += int(row["docs.count"])
    assert counts["tx"] == len(txs)
    assert {"block", "tx", "log", "event"} <= set(counts)


def test_eland_dataframe_of_a_block(fes: Elasticsearch, fixtures: dict, findex) -> None:
    ed = pytest.importorskip("eland")
    expected = {t["hash"]: t for t in fixtures["records"]["tx"] if t["blockNumber"]["num"] == 18_000_000}
    df = ed.DataFrame(fes, findex("tx"))
    block = df[df["blockNumber.num"] == 18_000_000]
    assert len(block) == len(expected) == 94
    rows = block[["hash", "from", "transactionIndex.num", "gasUsed.num"]].to_pandas()
    assert sorted(rows["hash"]) == sorted(expected)
    for _, row in rows.iterrows():
        t = expected[row["hash"]]
        assert (row["from"], int(row["transactionIndex.num"]), int(row["gasUsed.num"])) == (t["from"], t["transactionIndex"]["num"], t["gasUsed"]["num"])


def test_usdt_volume_per_month(fes: Elasticsearch, fixtures: dict, findex) -> None:
    transfers = [e for e in fixtures["records"]["event"] if e["address"].lower() == USDT and e["event"] == "Transfer"]
    expected_volume: dict = defaultdict(float)
    expected_count: Counter = Counter()
    for e in transfers:
        month = e["timestamp"][:7]
        expected_count[month] += 1
        expected_volume[month] += sum(a["value"]["scaled"] for a in e["args"] if a["name"] == "value")

    # `address` is a keyword with a lower-case normalizer: any letter case matches.
    s = Search(using=fes, index=findex("event")).filter("term", address=USDT).filter("term", **{"event.raw": "Transfer"}).extra(size=0)
    per_month = s.aggs.bucket("per_month", "date_histogram", field="timestamp", calendar_interval="month", format="yyyy-MM")
    per_month.bucket("args", "nested", path="args").bucket("amount", "filter", term={"args.name": "value"}).metric("volume", "sum", field="args.value.scaled")
    buckets = s.execute().aggregations.per_month.buckets

    assert {b.key_as_string: b.doc_count for b in buckets if b.doc_count > 0} == dict(expected_count)
    got = {b.key_as_string: b.args.amount.volume.value for b in buckets if b.doc_count > 0}
    assert got == pytest.approx(dict(expected_volume), rel=1e-9)
    assert len(got) >= 4  # the fixture blocks' USDT transfers span several months


def test_refusals_surface_their_code(fes: Elasticsearch, findex) -> None:
    with pytest.raises(BadRequestError) as refused:
        fes.search(index=findex("tx"), query={"query_string": {"query": "*cdef", "default_field": "hash"}})
    assert refused.value.status_code == 400
    assert refused.value.error == refused.value.body["error"]["code"] == "CS_QUERY_LEADING_WILDCARD"

    # Elasticsearch's index.max_result_window: from + size up to 10,000 is a page, past it a refusal.
    res = fes.search(index=findex("tx"), from_=9_995, size=5)
    assert res["hits"]["hits"] == []
    with pytest.raises(BadRequestError) as refused:
        fes.search(index=findex("tx"), from_=9_995, size=6)
    assert refused.value.status_code == 400
    assert refused.value.error == refused.value.body["error"]["code"] == "CS_RESULT_WINDOW_TOO_LARGE"

    # A keep-alive past the deployment's cap (CHAINSIFT_SEARCH_CONTEXT_MAX_KEEP_ALIVE_MS, default 1h).
    with pytest.raises(BadRequestError) as refused:
        fes.open_point_in_time(index=findex("tx"), keep_alive="2h")
    assert refused.value.error == refused.value.body["error"]["code"] == "CS_KEEP_ALIVE_INVALID"
    with pytest.raises(BadRequestError) as refused:
        list(helpers.scan(fes, index=findex("tx"), scroll="2h"))
    assert refused.value.error == refused.value.body["error"]["code"] == "CS_KEEP_ALIVE_INVALID"
