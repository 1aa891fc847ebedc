"""Fixtures of the Python suite: the API started by test/python/run.sh (see test/python/serve.ts)."""

import json
import os

import pytest
from elasticsearch import Elasticsearch


@pytest.fixture(scope="session")
def info() -> dict:
    """{url, token, chainPath, records}: where the API listens, its token and the indexed fixture records."""
    path = os.environ.get("CHAINSIFT_PY_INFO")
    if not path:
        pytest.fail("CHAINSIFT_PY_INFO is not set: run test/python/run.sh, which starts the API")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def records(info: dict) -> dict:
    """The indexed records by kind (block, tx, log, event)."""
    return info["records"]


@pytest.fixture(scope="session")
def node(info: dict) -> str:
    """The node URL the official clients take: <api>/<technology>/<blockchain>/<network>/es."""
    return info["url"] + info["chainPath"]


@pytest.fixture(scope="session")
def es(node: str, info: dict) -> Elasticsearch:
    """The official client, pointed at chainsift with the API token."""
    client = Elasticsearch(node, bearer_auth=info["token"])
    yield client
    client.close()


@pytest.fixture(scope="session")
def fixtures(info: dict) -> dict:
    """{chainPath, records}: the chain serving the real mainnet fixture blocks (../shared/data/mainnet)
    and their records by kind; skips the test when the data is absent (see test/python/serve.ts)."""
    fx = info.get("fixtures") or {}
    if not fx.get("chainPath"):
        pytest.skip(fx.get("skipped", "the API serves no mainnet fixture chain"))
    return fx


@pytest.fixture(scope="session")
def fes(info: dict, fixtures: dict) -> Elasticsearch:
    """The official client pointed at the mainnet fixture chain (<api>/ethereum/ethereum/mainnet-fixtures/es)."""
    client = Elasticsearch(info["url"] + fixtures["chainPath"], bearer_auth=info["token"])
    yield client
    client.close()


@pytest.fixture(scope="session")
def findex(fixtures: dict):
    """The index-style name of a kind of the fixture chain, e.g. ethereum-ethereum-mainnet-fixtures-tx."""
    chain = "-".join(fixtures["chainPath"].strip("/").split("/")[:3])
    return lambda kind: f"{chain}-{kind}"
