"""Standard Webhooks: requests the notify deliverer really sent (test/python/serve.ts `webhooks`) verify
with the PyPI `standardwebhooks` package, and a tampered body or id does not."""

import pytest
from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def _post_and_get(info: dict) -> tuple[dict, dict]:
    hooks = info.get("webhooks") or []
    post = next(h for h in hooks if h["method"] == "POST")
    get = next(h for h in hooks if h["method"] == "GET")
    return post, get


def test_delivered_post_verifies(info: dict) -> None:
    post, _ = _post_and_get(info)
    headers = post["headers"]
    assert headers["webhook-id"] == headers["x-chainsift-alert-id"]
    assert headers["webhook-signature"].startswith("v1,")
    payload = Webhook(post["secret"]).verify(post["body"], headers)
    assert payload["id"] == headers["webhook-id"]
    with pytest.raises(WebhookVerificationError):
        Webhook(post["secret"]).verify(post["body"].replace('"sequence":42', '"sequence":43'), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(post["secret"]).verify(post["body"], {**headers, "webhook-id": "other"})


def test_delivered_get_verifies_its_request_target(info: dict) -> None:
    _, get = _post_and_get(info)
    assert get["body"] == ""
    # a GET has no body: chainsift signs the request target (path and query), as for X-Chainsift-Signature
    wh = Webhook(get["secret"])
    assert wh.verify(get["target"], get["headers"], json_parse=False) is None
    with pytest.raises(WebhookVerificationError):
        wh.verify(get["target"] + "x", get["headers"])
