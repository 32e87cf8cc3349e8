"""The confidence cascade against a real tritonserver (issue 42 §1): mail the n-gram half
is sure of is answered by ``spam_cheap`` without a request to the transformer's ensemble;
the rest is answered exactly as with the cascade off; a tenant may turn it off."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.helpers.fixtures_models import bert_checkpoint
from tests.helpers.gateway_fixtures import run_gateway
from tests.helpers.servers import triton
from tests.helpers.triton_settings import repo_settings
from textgate.repository import build
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(300)]

HAM = [
    "minutes of the budget meeting on tuesday are attached for review",
    "the team lunch moves to thursday at noon in the usual room",
    "please review the draft of the quarterly report before friday",
    "the project plan for next quarter is in the shared folder",
    "can we move our call about the contract to monday morning",
    "notes from the design review and the open questions for the team",
]
SPAM = [
    "win a free cruise today claim your prize now",
    "cheap pills online no prescription free shipping",
    "you have won a lottery prize click here to claim",
    "free money waiting for you click now limited offer",
    "exclusive deal win cash prize today only click",
    "claim your free gift card now winner selected",
]
SURE = "the quarterly report and the meeting notes for the team are attached for review"
UNSURE = "a short note"
TENANTS = ("acme", "all-read")


@pytest.fixture(scope="module")
def cascade_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, float]]:
    """A tiny spam bundle with a real n-gram half and the allow bound set between SURE's
    P(not ham) and UNSURE's, exported through export_bundle's cascade option."""
    from textgate.export import export_bundle
    from textgate.train import ngram

    root = tmp_path_factory.mktemp("cascade")
    ckpt = bert_checkpoint(root / "ckpt", task="spam", labels=("ham", "spam"), seed=3)
    y = np.array([0] * len(HAM) + [1] * len(SPAM))
    model, _ = ngram.fit(HAM + SPAM, y, negative=0)
    model.save(ckpt / "ngrams.npz")
    meta = json.loads((ckpt / "textgate.json").read_text())
    meta["ngrams"] = {**model.describe(), "file": "ngrams.npz"}
    (ckpt / "textgate.json").write_text(json.dumps(meta))
    p_sure, p_unsure = 1 / (1 + np.exp(-model.scores([SURE, UNSURE])))
    assert p_sure < p_unsure, (p_sure, p_unsure)
    bound = float((p_sure + p_unsure) / 2)
    bounds = {"allow_at_or_below": bound, "quarantine_at_or_above": None, "source": "test"}
    manifest = export_bundle(ckpt, root / "spam", variants=(), cascade=bounds)
    assert manifest["cascade"]["allow_at_or_below"] == bound
    repo = root / "repo"
    result = build([root / "spam"], repo, repo_settings())
    assert "spam_cheap" in result.models
    yield repo, bound


@pytest.fixture(scope="module")
def cascade_triton(cascade_repo: tuple[Path, float]) -> Iterator[TritonServer]:
    with triton(cascade_repo[0]) as server:
        yield server


def _requests(server: TritonServer, model: str) -> float:
    text = httpx.get(server.metrics_url, timeout=5).text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("nv_inference_request_success{") and f'model="{model}"' in line
    )


def _config(tmp_path: Path) -> dict[str, Any]:
    # the same policy for both tenants (the default spam policy, review_at raised above the
    # tiny model's range so both paths' actions are comparable), only ``cascade`` differs
    policy = {"task": "spam", "negative_label": "ham", "review_at": 0.9, "quarantine_at": 0.95}
    tenants = [
        {"name": name, "api_key": f"{name}-key-1234", "tasks": [{**policy, "cascade": on}]}
        for name, on in zip(TENANTS, (True, False), strict=True)
    ]
    return {
        "gateway": {"parse_workers": 0},
        "policy": {"tenants": tenants},
        "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
    }


def _post(c: httpx.Client, tenant: str, text: str, query: str = "") -> dict[str, Any]:
    r = c.post(f"/v1/classify/spam{query}", json={"text": text},
               headers={"X-API-Key": f"{tenant}-key-1234"})  # fmt: skip
    assert r.status_code == 200, r.text
    return dict(r.json()["results"][0])


def test_sure_mail_takes_the_cheap_path_and_the_rest_answers_as_without_a_cascade(
    cascade_triton: TritonServer, cascade_repo: tuple[Path, float], tmp_path: Path
) -> None:
    bound = cascade_repo[1]
    with run_gateway(_config(tmp_path), [cascade_triton.grpc_url]) as gw, gw.client() as c:
        full_before = _requests(cascade_triton, "spam")
        cheap = _post(c, "acme", SURE)
        assert cheap["path"] == "cheap" and cheap["action"] == "allow" and cheap["label"] == "ham"
        assert cheap["precision_path"] == "ngrams" and cheap["score"] <= bound
        assert _requests(cascade_triton, "spam") == full_before  # the transformer never ran
        assert _requests(cascade_triton, "spam_cheap") >= 1
        read = _post(c, "all-read", SURE)  # the tenant that turned the cascade off
        assert read["path"] == "full" and _requests(cascade_triton, "spam") == full_before + 1
        # inside the band: the cascade sends it on, and the answer is the full model's
        band = _post(c, "acme", UNSURE)
        same = _post(c, "all-read", UNSURE)
        assert band["path"] == "full" == same["path"]
        for k in ("label", "probabilities", "score", "action", "precision_path"):
            assert band[k] == same[k], k
        # ?explain works on the cheap path, with the stage that answered
        explained = _post(c, "acme", SURE, "?explain=2")
        assert explained["path"] == "cheap" and len(explained["explanation"]) >= 1
        metrics = c.get("/metrics").text
    counts = [x for x in metrics.splitlines() if x.startswith("textgate_cascade_total")]
    assert any('path="cheap"' in x and x.endswith(" 2.0") for x in counts), counts
    assert any('path="full"' in x and x.endswith(" 1.0") for x in counts), counts
