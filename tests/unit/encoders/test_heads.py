"""Classifier heads: the mean-pooling head reads only the real tokens, is stored in the
checkpoint, and training, the ONNX export and the parity check all load it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from textgate.encoders import heads
from textgate.errors import TrainError


def _tiny_bert(tmp_path: Path) -> Path:
    from tests.helpers.fixtures_models import make_checkpoint

    return make_checkpoint(tmp_path / "base", "bert", textgate=False)


def test_mean_pooling_ignores_padding_and_differs_from_the_first_token(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    from textgate.train.base import load_model

    base = _tiny_bert(tmp_path)
    mean = load_model(base, ["ham", "spam"], "mean").eval()
    ids = torch.tensor([[101, 2023, 2003, 102]])
    padded = torch.tensor([[101, 2023, 2003, 102, 0, 0, 0]])
    with torch.no_grad():
        alone = mean(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
        mask = torch.tensor([[1, 1, 1, 1, 0, 0, 0]])
        with_pad = mean(input_ids=padded, attention_mask=mask).logits
    np.testing.assert_allclose(alone.numpy(), with_pad.numpy(), atol=1e-5)
    assert mean.config.textgate_pooling == "mean"
    cls = load_model(base, ["ham", "spam"], "cls").eval()
    assert not hasattr(cls.config, "textgate_pooling")


def test_the_head_survives_a_save_and_every_loader_reads_it(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from textgate.train.base import load_model

    model = load_model(_tiny_bert(tmp_path), ["ham", "spam"], "mean")
    model.save_pretrained(tmp_path / "ckpt")
    assert heads.stored_pooling(tmp_path / "ckpt") == "mean"
    loaded = heads.classifier_class("mean").from_pretrained(tmp_path / "ckpt")
    assert type(loaded).__name__ == "MeanPooledBert"
    assert heads.stored_pooling(tmp_path / "nowhere") == "cls"  # the loader reports it
    with pytest.raises(ValueError, match="pooling"):
        heads.classifier_class("max")


def test_mean_pooling_on_a_base_that_is_not_bert_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from tests.helpers.fixtures_models import make_checkpoint
    from textgate.train.base import load_model

    roberta = make_checkpoint(tmp_path / "roberta", "roberta", textgate=False)
    with pytest.raises(TrainError, match="BERT-shaped"):
        load_model(roberta, ["ham", "spam"], "mean")


@pytest.mark.slow
def test_a_mean_pooled_checkpoint_exports_and_passes_parity_with_its_own_head(
    tmp_path: Path,
) -> None:
    """The export and its PyTorch reference both load the mean head: ONNX Runtime agrees
    with it, and the graph's logits are the mean head's, not the first token's."""
    torch = pytest.importorskip("torch")
    from tests.helpers.fixtures_models import _textgate_files, make_checkpoint
    from textgate.export import export_bundle
    from textgate.export.inference import session
    from textgate.train.base import load_model

    base = make_checkpoint(tmp_path / "base", "bert", textgate=False)
    ckpt = tmp_path / "ckpt"
    torch.manual_seed(0)
    model = load_model(base, ["ham", "spam"], "mean")
    model.save_pretrained(ckpt)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (base / name).is_file():
            (ckpt / name).write_bytes((base / name).read_bytes())
    _textgate_files(ckpt, "bert")
    manifest = export_bundle(ckpt, tmp_path / "bundle", variants=())
    assert manifest["parity"]["passed"]
    ids = np.array([[101, 2023, 2003, 1037, 3231, 102]], dtype=np.int64)
    mask = np.ones_like(ids)
    got = session(tmp_path / "bundle" / "model.onnx").run(
        None, {"input_ids": ids, "attention_mask": mask}
    )[0]
    model.eval()
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(got, want.logits.numpy(), atol=1e-4)
