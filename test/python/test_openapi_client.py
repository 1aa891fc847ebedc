"""A Python client generated with openapi-python-client from the API's own /docs/json: the
document names its shared schemas (components/schemas) and every operation (operationId), so the
client has few models, named after the schemas, and one function per operation. Then the
generated client searches and creates, reads, lists, updates and deletes a rule."""

import importlib
import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

#: Most model files the generated client may have (shared schemas, their union variants and enums):
#: 103 when the components were introduced, 125 with the ABI routes, the rule backtest and the Discord
#: and Telegram actions; 150 with saved searches (one SavedSearch component: 204 when each route inlined
#: it), GET /chains/ and the storm-control action fields; 143 with the saved-search request bodies
#: (SavedSearchCreate, SavedSearchUpdate, SavedSearchTest), the saved-search backtest and one
#: BacktestLine for both backtests (enums as one model each: 159 when written as unions of literals);
#: 170 with issue 30's Elasticsearch-compatible routes (scroll, point in time, introspection answers:
#: 43 es_* models, measured on h-paging merged with h-clients), 171 with the EsClusterHealth component
#: of _cluster/health; 174 on main before issue 35, 185 with the PagerDuty, Opsgenie and Teams actions
#: (3 AlertDefinition branches and their type enums, 3 parameter components, the severity and priority
#: enums; measured with openapi-python-client 0.26 on h-pager), and 6 more with the Kafka action
#: (KafkaParameters, its sasl, avro and avro auth objects, its key and mechanism enums; h-kdest);
#: the same document with every schema inlined gives 859 (docs/api.md).
MAX_MODELS = 200


@pytest.fixture(scope="module")
def document(info: dict) -> dict:
    with urllib.request.urlopen(info["url"] + "/docs/json", timeout=10) as res:
        return json.load(res)


@pytest.fixture(scope="module")
def generated(document: dict, tmp_path_factory: pytest.TempPathFactory):
    """The client package generated from the document (openapi-python-client, no post hooks)."""
    work = tmp_path_factory.mktemp("openapi")
    (work / "openapi.json").write_text(json.dumps(document), encoding="utf-8")
    # The rule backtest answers NDJSON, which the generator has no model for: taken as bytes (docs/api.md).
    (work / "config.yaml").write_text(
        "post_hooks: []\ncontent_type_overrides:\n  application/x-ndjson: application/octet-stream\n", encoding="utf-8"
    )
    out = work / "chainsift_client"
    tool = Path(sys.executable).parent / "openapi-python-client"
    run = subprocess.run(
        [str(tool), "generate", "--path", "openapi.json", "--meta", "none", "--config", "config.yaml", "--output-path", str(out)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Warning" not in run.stdout + run.stderr, run.stdout + run.stderr
    sys.path.insert(0, str(work))
    try:
        yield out, importlib.import_module("chainsift_client")
    finally:
        sys.path.remove(str(work))


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def test_every_operation_has_an_operation_id(document: dict) -> None:
    ops = [op for path in document["paths"].values() for op in path.values()]
    ids = [op.get("operationId") for op in ops]
    assert None not in ids
    assert len(set(ids)) == len(ids)
    for name in ("SearchBody", "HitsEnvelope", "ErrorBody", "Rule", "RuleCreate", "TargetDefinition", "AlertDefinition", "PayloadItem"):
        assert name in document["components"]["schemas"], name
    assert not [k for k in document["components"]["schemas"] if re.search(r"_\d+$", k)], "two different schemas under one name"
    health = document["paths"]["/healthz"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    ready = document["paths"]["/readyz"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert health == {"$ref": "#/components/schemas/Liveness"} and ready == {"$ref": "#/components/schemas/Readiness"}


def test_few_models_named_after_the_schemas(generated, document: dict) -> None:
    out, _ = generated
    models = sorted(p.stem for p in (out / "models").glob("*.py") if p.stem != "__init__")
    assert 0 < len(models) <= MAX_MODELS, models
    prefixes = [snake(n) for n in document["components"]["schemas"]]
    prefixes += [snake(op["operationId"]) for path in document["paths"].values() for op in path.values()]
    strays = [m for m in models if not any(m == p or m.startswith(p + "_") for p in prefixes)]
    assert strays == []


def test_search_and_rule_crud_with_the_generated_client(generated, info: dict, records: dict) -> None:
    _, pkg = generated
    client = pkg.AuthenticatedClient(base_url=info["url"], token=info["token"])
    search = importlib.import_module("chainsift_client.api.search.search")
    models = importlib.import_module("chainsift_client.models")
    chain = {"technology": "ethereum", "blockchain": "ethereum", "network": "mainnet"}

    tx0 = records["tx"][0]
    # The constructor, not SearchBody.from_dict: openapi-python-client 0.26's from_dict turns an
    # absent array of unions (search_after) into [], which the API rightly refuses.
    body = models.SearchBody(query=models.SearchBodyQuery.from_dict({"term": {"_id": tx0["hash"]}}), size=10)
    res = search.sync_detailed(**chain, kinds="tx", client=client, body=body)
    assert res.status_code == 200
    envelope = res.parsed
    assert isinstance(envelope, models.HitsEnvelope)
    assert envelope.hits.total == 1 and envelope.hits.hits[0].field_id == tx0["hash"]

    bad = search.sync_detailed(**chain, kinds="tx", client=client, body=models.SearchBody(query=models.SearchBodyQuery.from_dict({"script": {}})))
    assert bad.status_code == 400 and isinstance(bad.parsed, models.ErrorBody)
    assert bad.parsed.error.code == "CS_QUERY_UNSUPPORTED_CLAUSE"

    alerting = "chainsift_client.api.alerting."
    create, get, lst, update, delete = (importlib.import_module(alerting + n) for n in ("create_rule", "get_rule", "list_rules", "update_rule", "delete_rule"))
    rule = {
        **chain,
        "name": "USDT Transfers (generated client)",
        "maxConfirmationCount": 0,
        "config": {
            "targetType": "Event",
            "targetMap": [{"name": "event", "operator": "Equals", "value": "Transfer"}],
            "alerts": [
                {
                    "type": "Webhook (POST)",
                    "parameters": {"url": "https://hooks.example.com/chainsift/{transactionHash}"},
                    "payload": [{"fieldType": "Field", "fieldName": "transactionHash"}],
                }
            ],
        },
    }
    created = create.sync_detailed(client=client, body=models.RuleCreate.from_dict(rule))
    assert created.status_code == 201, created.content
    stored = created.parsed
    assert isinstance(stored, models.RuleWriteAnswer)
    rule_id = stored.id
    try:
        fetched = get.sync_detailed(rule_id, client=client)
        assert fetched.status_code == 200 and isinstance(fetched.parsed, models.Rule)
        assert fetched.parsed.name == rule["name"] and fetched.parsed.version == 1
        assert fetched.parsed.config.target_map[0].to_dict() == rule["config"]["targetMap"][0]

        listed = lst.sync_detailed(client=client)
        assert listed.status_code == 200 and rule_id in [r.id for r in listed.parsed.rules]

        changed = update.sync_detailed(rule_id, client=client, body=models.RuleUpdate.from_dict({"name": "renamed", "version": 1}))
        assert changed.status_code == 200, changed.content
        assert changed.parsed.name == "renamed" and changed.parsed.version == 2
    finally:
        gone = delete.sync_detailed(rule_id, client=client)
    assert gone.status_code == 204
    assert get.sync_detailed(rule_id, client=client).status_code == 404
