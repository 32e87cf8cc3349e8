"""MLM pre-training: packing, masking, the masked-rows loss and a bounded run's report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from zhtexts import reviews

from textgate.zhbase import encoder
from textgate.zhbase.pretrain import PretrainOptions, mask_batch, masked_loss, pack, pretrain

pytest.importorskip("transformers")

TINY = encoder.EncoderShape(layers=1, hidden=32, heads=2, intermediate=64, max_positions=64)


def _corpus() -> list[str]:
    return [t for t, _ in reviews(200, seed=5)]


def test_packing_keeps_sentences_whole_within_the_length() -> None:
    rows = pack([[5, 6, 7], [8, 9], [10, 11, 12, 13]], 8, cls=1, sep=2)
    assert rows == [[1, 5, 6, 7, 2, 8, 9, 2], [1, 10, 11, 12, 13, 2]]
    assert all(len(r) <= 8 for r in rows)


def test_masking_never_asks_for_special_or_padding_tokens() -> None:
    rng = np.random.default_rng(0)
    rows = [[1, *range(10, 60), 2], [1, *range(10, 30), 2]]
    inputs, attn, labels = mask_batch(rows, rng, pad=0, mask=4, vocab=100, special={0, 1, 2, 3, 4})
    asked = labels != -100
    assert asked.any()
    assert not np.isin(labels[asked], [0, 1, 2, 3, 4]).any()
    assert (attn[asked] == 1).all()
    assert (inputs[asked] == 4).mean() > 0.5  # most asked positions are [MASK]


def test_masked_rows_loss_equals_the_models_own_loss(tmp_path: Path) -> None:
    import torch

    model, tok = encoder.init_base(_corpus(), tmp_path, shape=TINY, seed=1)
    model.eval()
    rows = pack(
        tok(_corpus()[:20], add_special_tokens=False)["input_ids"],
        48,
        tok.cls_token_id,
        tok.sep_token_id,
    )
    inputs, attn, labels = (
        torch.from_numpy(a)
        for a in mask_batch(
            rows,
            np.random.default_rng(2),
            pad=tok.pad_token_id,
            mask=tok.mask_token_id,
            vocab=len(tok),
            special=set(tok.all_special_ids),
        )
    )
    with torch.no_grad():
        full = model(input_ids=inputs, attention_mask=attn, labels=labels).loss
        ours = masked_loss(model, inputs, attn, labels)
    assert torch.allclose(full, ours, atol=1e-5)


def test_a_bounded_run_lowers_the_loss_and_reports_its_curve(tmp_path: Path) -> None:
    from transformers import BertForMaskedLM

    model, tok = encoder.init_base(_corpus(), tmp_path, shape=TINY, seed=1)
    opts = PretrainOptions(
        minutes=60, seq_length=64, batch_size=8, lr=2e-3, warmup_steps=10, max_steps=120
    )
    report = pretrain(model, tok, _corpus(), tmp_path, opts)
    assert report["steps"] == 120
    steps = [point[0] for point in report["curve"]]
    assert steps == [50, 100]
    assert report["curve"][-1][2] < report["curve"][0][2]
    json.dumps(report)  # recorded in the base's info file
    BertForMaskedLM.from_pretrained(str(tmp_path))  # the weights were saved
