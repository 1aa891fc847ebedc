"""The official Python `elasticsearch` 8 client and `elasticsearch.dsl` against chainsift's
Elasticsearch-compatible routes (api/routes/es/): info/ping, each query shape of the contract,
a search_after walk, an aggregation, count, msearch and refused queries whose code the client
surfaces. Expectations are computed from the indexed fixture records (test/python/serve.ts)."""

import pytest
from elasticsearch import AuthenticationException, BadRequestError, Elasticsearch, NotFoundError
from elasticsearch.dsl import A, MultiSearch, Q, Search


def hashes(items: list) -> list:
    return sorted(i["hash"] for i in items)


def ids(res) -> list:
    return sorted(h["_id"] for h in res["hits"]["hits"])


def test_info_and_ping(es: Elasticsearch, node: str) -> None:
    info = es.info()
    assert info["name"] == "chainsift"
    assert info["cluster_name"] == "chainsift ethereum/ethereum/mainnet"
    assert es.ping() is True
    with Elasticsearch(node, bearer_auth="wrong") as stranger:
        with pytest.raises(AuthenticationException) as refused:
            stranger.search(index="tx")
    assert refused.value.status_code == 401
    assert refused.value.body["error"]["code"] == "CS_AUTH_REQUIRED"


def test_contract_query_shapes_with_the_client(es: Elasticsearch, records: dict) -> None:
    blocks, txs, logs, events = records["block"], records["tx"], records["log"], records["event"]
    b1, tx0 = blocks[1], txs[0]

    res = es.search(index="block", query={"term": {"number.num": b1["number"]["num"]}})
    assert ids(res) == [b1["hash"]]
    assert res["hits"]["total"] == {"value": 1, "relation": "eq"}
    assert "_type" not in res["hits"]["hits"][0]

    res = es.search(index="tx", query={"term": {"blockHash": b1["hash"]}}, size=100)
    assert ids(res) == hashes([t for t in txs if t["blockHash"] == b1["hash"]])

    lo = blocks[0]["number"]["num"]
    res = es.search(index="tx", query={"range": {"blockNumber.num": {"gte": lo, "lte": lo + 1}}}, size=100)
    assert ids(res) == hashes([t for t in txs if t["blockNumber"]["num"] <= lo + 1])

    sender = tx0["from"]
    res = es.search(index="tx", query={"bool": {"should": [{"term": {"from": sender}}, {"term": {"to": sender}}]}}, size=100)
    assert ids(res) == hashes([t for t in txs if sender in (t["from"], t["to"])])

    assert ids(es.search(index="tx", query={"term": {"_id": tx0["hash"]}})) == [tx0["hash"]]
    assert ids(es.search(index="block", query={"ids": {"values": [b1["hash"]]}})) == [b1["hash"]]

    log0 = logs[0]
    res = es.search(index="log", query={"term": {"transactionHash": log0["transactionHash"]}})
    assert res["hits"]["total"]["value"] == len([x for x in logs if x["transactionHash"] == log0["transactionHash"]])
    res = es.search(index="log", query={"term": {"address": log0["address"]}}, size=100)
    assert len(res["hits"]["hits"]) == len([x for x in logs if x["address"] == log0["address"]])

    res = es.search(index="event", query={"term": {"event.raw": "Transfer"}}, size=100)
    assert len(res["hits"]["hits"]) == len([e for e in events if e["event"] == "Transfer"]) > 0
    res = es.search(index="event", query={"term": {"address.raw": events[0]["address"]}}, size=100)
    assert len(res["hits"]["hits"]) == len([e for e in events if e["address"] == events[0]["address"]])

    # block,tx as index-style names: the kind behind a hash is unknown.
    res = es.search(index=["ethereum-ethereum-mainnet-block", "ethereum-ethereum-mainnet-tx"], query={"ids": {"values": [b1["hash"], tx0["hash"]]}})
    assert ids(res) == sorted([b1["hash"], tx0["hash"]])


def test_nested_argument_query_with_the_dsl(es: Elasticsearch, records: dict) -> None:
    events = records["event"]
    to_arg = next(a for a in events[0]["args"] if a["name"] == "to")
    s = Search(using=es, index="ethereum-ethereum-mainnet-event").query(
        "nested", path="args", query=Q("bool", filter=[Q("term", **{"args.name": "to"}), Q("term", **{"args.value.hex": to_arg["value"]["hex"]})])
    )[:100]
    response = s.execute()
    expected = [e for e in events if any(a["name"] == "to" and a["value"]["hex"] == to_arg["value"]["hex"] for a in e["args"])]
    assert response.success()
    assert response.hits.total.value == len(expected) > 0
    assert sorted(h.meta.id for h in response) == sorted(f"{e['transactionHash']}_e_{e['logIndex']['num']}" for e in expected)
    assert all(h.event in ("Transfer", "Approval") for h in response)


def test_search_after_walk_with_the_dsl(es: Elasticsearch, records: dict) -> None:
    txs = records["tx"]
    base = Search(using=es, index="tx").sort({"blockNumber.num": "desc"}, {"hash": "asc"}).extra(size=5)
    seen, after = [], None
    for _ in range(10):
        page = (base.extra(search_after=after) if after else base).execute()
        if len(page.hits) == 0:
            break
        seen += [h.hash for h in page]
        after = list(page.hits[-1].meta.sort)
    expected = [t["hash"] for t in sorted(txs, key=lambda t: (-t["blockNumber"]["num"], t["hash"]))]
    assert seen == expected


def test_aggregation_with_the_dsl(es: Elasticsearch, records: dict) -> None:
    s = Search(using=es, index="tx").extra(size=0)
    s.aggs.bucket("per_block", A("histogram", field="blockNumber.num", interval=1)).metric("gas", "sum", field="gasUsed.num")
    response = s.execute()
    expected: dict = {}
    for t in records["tx"]:
        n = t["blockNumber"]["num"]
        count, gas = expected.get(n, (0, 0))
        expected[n] = (count + 1, gas + t["gasUsed"]["num"])
    got = {int(b.key): (b.doc_count, int(b.gas.value)) for b in response.aggregations.per_block.buckets}
    assert got == expected


def test_count_with_the_client_and_the_dsl(es: Elasticsearch, records: dict) -> None:
    txs = records["tx"]
    assert es.count(index="tx")["count"] == len(txs)
    sender = txs[0]["from"]
    assert es.count(index="ethereum-ethereum-mainnet-tx", query={"term": {"from": sender}})["count"] == len([t for t in txs if t["from"] == sender])
    assert Search(using=es, index="block").count() == len(records["block"])


def test_msearch_with_the_dsl(es: Elasticsearch, records: dict) -> None:
    ms = MultiSearch(using=es, index="tx").add(Search().extra(size=0)).add(Search(index="block").extra(size=1))
    first, second = ms.execute()
    assert first.hits.total.value == len(records["tx"])
    assert second.hits.total.value == len(records["block"]) and len(second.hits) == 1


def test_refused_queries_surface_our_code(es: Elasticsearch) -> None:
    with pytest.raises(BadRequestError) as refused:
        es.search(index="tx", query={"script": {"script": {"source": "true"}}})
    err = refused.value
    assert err.status_code == 400
    assert err.error == "CS_QUERY_UNSUPPORTED_CLAUSE"  # the client's message is our code
    assert err.body["error"]["code"] == "CS_QUERY_UNSUPPORTED_CLAUSE"
    assert err.body["error"]["path"] == "query.script"

    with pytest.raises(BadRequestError) as refused:
        Search(using=es, index="tx").query("wildcard", **{"from": "0x*"}).execute()
    assert refused.value.body["error"]["code"] == "CS_QUERY_UNSUPPORTED_CLAUSE"

    with pytest.raises(BadRequestError) as refused:  # from is served now (test_es_tools.py); rescore never
        es.search(index="tx", rescore={"window_size": 10, "query": {"rescore_query": {"match_all": {}}}})
    assert refused.value.body["error"]["code"] == "CS_BODY_INVALID"
    assert refused.value.body["error"]["path"] == "rescore"

    with pytest.raises(NotFoundError) as missing:
        es.search(index="ethereum-ethereum-sepolia-tx")
    assert missing.value.body["error"]["code"] == "CS_UNKNOWN_KIND"
