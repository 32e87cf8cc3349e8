"""The Chinese sentiment model through real Triton (issue 15 §4): seed 001's re-score band
0.45-0.55 with a tenant's own band, the ``unk_ratio`` note for an unseen script, and the
head + tail window of a long review.

The tiny model is a random 2-layer BERT over a char-level WordPiece vocabulary of a few
Chinese characters; served as int8 (a copy of fp32, so scores are equal) plus
``sentiment-zh_fp32``. Random weights answer P(positive) close to 0.5, inside the band.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.fixtures_models import zh_bert_checkpoint
from tests.helpers.gateway_fixtures import RunningGateway, run_gateway, two_variant_bundle
from tests.helpers.triton_settings import server_config
from textgate.config import RepositoryConfig
from textgate.repository import build
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton]

TASK = "sentiment-zh"
NARROW = {"task": TASK, "kind": "label", "rescore_range": [0.9, 1.0], "unk_note_above": 0.2}
IN_VOCAB = "这家餐厅的菜非常好吃，服务也很周到。"
THAI = "ภาพยนตร์เรื่องนี้สนุกมาก"


@pytest.fixture(scope="module")
def zh_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from textgate.export import export_bundle

    root = tmp_path_factory.mktemp("zh")
    labels = ("negative", "positive")
    # sentiment-zh's window: the head and the last tokens of a long review (textgate.window)
    ckpt = zh_bert_checkpoint(root / "ckpt", task=TASK, labels=labels, seed=3, tail_tokens=16)
    export_bundle(ckpt, root / "bundle", variants=())
    two = two_variant_bundle(root / "bundle", root / "two")
    settings = RepositoryConfig(max_batch_size=16, rescore_variant="fp32")
    return build([two], root / "repo", settings).repository


@pytest.fixture(scope="module")
def gateway(zh_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("gw")
    config = {
        "gateway": {"tokenizer_dirs": [str(zh_repo)]},
        # no policy.tasks: the defaults, where sentiment-zh has seed 001's band
        "policy": {"tenants": [{"name": "narrow", "tasks": [NARROW]}]},
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
        "client": {"timeout_s": 10.0, "health_interval_s": 0.3},
    }
    server = TritonServer(zh_repo, config=server_config())
    server.start()
    try:
        server.wait_ready()
        with run_gateway(config, [server.grpc_url]) as gw:
            yield gw
    finally:
        server.stop()


@pytest.fixture
def http(gateway: RunningGateway) -> Iterator[httpx.Client]:
    with gateway.client() as c:
        yield c


def _classify(http: httpx.Client, text: str, **headers: str) -> dict[str, Any]:
    r = http.post(f"/v1/classify/{TASK}", json={"text": text}, headers=headers)
    assert r.status_code == 200, r.text
    item: dict[str, Any] = r.json()["results"][0]
    return item


def test_chinese_text_in_the_band_is_answered_by_fp32(http: httpx.Client) -> None:
    item = _classify(http, IN_VOCAB)
    assert 0.45 <= item["score"] <= 0.55  # the random model's answer: inside the band
    assert item["rescored"] is True and item["precision_path"] == "fp32"
    assert item["rescore_band"] == [[0.45, 0.55]]
    assert item["model"]["variant"] == "int8"
    assert item["unk_ratio"] == 0.0 and item["notes"] == []  # every character is known


def test_a_tenant_band_overrides_the_default(http: httpx.Client) -> None:
    item = _classify(http, IN_VOCAB, **{"X-Tenant": "narrow"})
    assert item["rescored"] is False and item["precision_path"] == "int8"
    assert item["rescore_band"] == [[0.9, 1.0]]


@pytest.mark.parametrize("text", [THAI, "The food was great"])
def test_unseen_script_gets_the_unk_note(http: httpx.Client, text: str) -> None:
    item = _classify(http, text)
    assert item["unk_ratio"] == 1.0
    (note,) = item["notes"]
    assert "100%" in note and "script the model has not seen" in note


def test_mixed_text_reports_the_share(http: httpx.Client) -> None:
    item = _classify(http, "这家菜 great")  # 3 known characters, 1 unknown word
    assert item["unk_ratio"] == 0.25 and len(item["notes"]) == 1


# 100 characters, 102 ids with [CLS]/[SEP]: the window of 64 keeps [CLS] + the first 47 and
# the last 15 + [SEP]; characters 48-85 are never read.
HEAD, MIDDLE, TAIL = (
    "这家餐厅的菜非常好吃服务也很周到" * 4,
    "太差了难失望不推荐喜欢满意" * 2,
    "服务也很周到太差了失望不推荐了",
)


def test_a_long_review_is_read_by_its_head_and_its_tail(http: httpx.Client) -> None:
    base = _classify(http, HEAD[:60] + MIDDLE[:25] + TAIL)["score"]
    # another middle: outside the window, the very same tokens, the very same score
    assert _classify(http, HEAD[:60] + MIDDLE[::-1][:25] + TAIL)["score"] == base
    # another ending: inside the window (the head-only cut of before would not see it)
    assert _classify(http, HEAD[:60] + MIDDLE[:25] + TAIL[::-1])["score"] != base
