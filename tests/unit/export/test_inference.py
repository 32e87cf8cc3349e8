"""Length-sorted batches for the gates: same rows, fewer pad tokens, answers in text order."""

from __future__ import annotations

import numpy as np
from tokenizers import Tokenizer, models, pre_tokenizers

from textgate.export import inference


def _tokenizer() -> Tokenizer:
    vocab = {"[PAD]": 0, "[UNK]": 1, **{f"w{i}": i + 2 for i in range(40)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def _texts(n: int) -> list[str]:
    rng = np.random.default_rng(3)
    return [" ".join(f"w{j % 40}" for j in range(int(k))) for k in rng.integers(1, 60, n)]


def test_by_length_keeps_every_row_and_pads_less() -> None:
    tok, texts = _tokenizer(), _texts(100)
    sorted_batches, order = inference.by_length(tok, texts)
    plain = list(inference.encode(tok, texts))
    assert sorted(order.tolist()) == list(range(100))
    lengths = np.concatenate([m.sum(axis=1) for _, m in sorted_batches])
    assert (np.diff(lengths) >= 0).all()
    expected = [len(t.split()) for t in texts]
    assert inference.in_order(lengths[:, None], order)[:, 0].tolist() == expected
    padded = sum(ids.size for ids, _ in sorted_batches)
    assert padded < sum(ids.size for ids, _ in plain)


def test_in_order_restores_the_texts_order() -> None:
    order = np.array([2, 0, 1])
    computed = np.array([[0.2, 0.8], [0.9, 0.1], [0.5, 0.5]])  # rows for texts 2, 0, 1
    back = inference.in_order(computed, order)
    assert back.tolist() == [[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]]
    assert inference.in_order(computed, None) is computed


def test_by_length_leaves_the_callers_tokenizer_padded() -> None:
    tok = _tokenizer()
    inference.by_length(tok, ["w1", "w1 w2 w3"])
    assert tok.padding is not None
