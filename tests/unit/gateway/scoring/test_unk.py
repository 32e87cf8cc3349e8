"""unk_ratio: the share of [UNK] tokens under the served tokenizer, found by its SHA-256."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.helpers.fixtures_models import minilm_tokenizer_dir, zh_tokenizer
from textgate.config import Config
from textgate.gateway.scoring import unk


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def zh_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("repo") / "sentiment-zh_model" / "1"
    zh_tokenizer(out)
    return out


def test_ratio_of_unseen_script_and_of_in_vocabulary_text(zh_dir: Path) -> None:
    counter = unk.UnkCounter([zh_dir.parent.parent])
    sha = _sha(zh_dir / "tokenizer.json")
    assert counter.ratio(sha, ["这家餐厅的菜非常好吃"]) == 0.0
    assert counter.ratio(sha, ["The food was great"]) == 1.0
    assert counter.ratio(sha, ["这家菜 great"]) == pytest.approx(1 / 4)
    assert counter.ratio(sha, ["这家", "great"]) == pytest.approx(1 / 3)  # over all pieces
    assert counter.ratio(sha, [""]) == 0.0


def test_english_tokenizer_sees_chinese_as_mostly_unknown() -> None:
    path = minilm_tokenizer_dir() / "tokenizer.json"
    counter = unk.UnkCounter([minilm_tokenizer_dir()])
    # the packaged tokenizer.json pads to 128: the ratio must not count padding
    assert counter.ratio(_sha(path), ["The food was great"]) == 0.0
    ratio = counter.ratio(_sha(path), ["这家餐厅的菜非常好吃，服务也很周到。"])
    assert ratio is not None and ratio > 0.5


def test_unknown_tokenizer_gives_none_and_no_directory_is_fine(tmp_path: Path) -> None:
    counter = unk.UnkCounter([tmp_path / "missing"])
    assert counter.ratio("0" * 64, ["text"]) is None
    assert counter.ratio("", ["text"]) is None


def test_dirs_from_config_include_the_release_repository(tmp_path: Path) -> None:
    cfg = Config.from_dict(
        {"gateway": {"tokenizer_dirs": [str(tmp_path / "a")]}, "release": {"repository": "r"}}
    )
    assert unk.UnkCounter.from_config(cfg).dirs == [tmp_path / "a", Path("r")]
    assert "80%" in unk.note(0.8)
