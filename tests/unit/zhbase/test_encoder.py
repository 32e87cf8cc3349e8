"""The Chinese base's two starts: a seeded encoder, and the packaged MiniLM's layers under
a new character embedding (the transplant)."""

from __future__ import annotations

from pathlib import Path

import pytest
from zhtexts import reviews

from textgate.zhbase import encoder

pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def transplanted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from textgate.train.base import packaged_base

    body = packaged_base()
    out = tmp_path_factory.mktemp("transplant")
    texts = [t for t, _ in reviews(300, seed=3)] + ["这个手机的质量很差，非常失望"] * 2
    encoder.transplant(texts, out, body, seed=1)  # characters seen twice are tokens
    return body, out


def test_every_layer_of_the_body_is_kept(transplanted: tuple[Path, Path]) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, BertModel

    body, out = transplanted
    source = BertModel.from_pretrained(str(body)).state_dict()
    model = AutoModelForSequenceClassification.from_pretrained(str(out), num_labels=2)
    mine = model.bert.state_dict()
    layers = [k for k in source if k.startswith("encoder.") or "position_embeddings" in k]
    assert len(layers) > 90
    for key in layers:
        assert torch.equal(mine[key], source[key]), key


def test_the_embedding_is_the_chinese_vocabulary_with_known_tokens_copied(
    transplanted: tuple[Path, Path],
) -> None:
    import torch
    from transformers import AutoTokenizer, BertModel

    body, out = transplanted
    english = AutoTokenizer.from_pretrained(str(body)).get_vocab()
    known = BertModel.from_pretrained(str(body)).embeddings.word_embeddings.weight.detach()
    tok = AutoTokenizer.from_pretrained(str(out))
    rows = BertModel.from_pretrained(str(out)).embeddings.word_embeddings.weight.detach()
    assert rows.shape == (len(tok), known.shape[1])
    ids = tok("这个手机的质量很差，非常失望")["input_ids"]
    assert tok.unk_token_id not in ids  # every character is a token of its own
    mine = tok.get_vocab()
    for token in ("[CLS]", "[SEP]", "的", "手"):  # in both vocabularies
        assert torch.equal(rows[mine[token]], known[english[token]]), token
    fresh = rows[mine["差"]]  # not in the English vocabulary: drawn, on the same scale
    assert not any(torch.equal(fresh, row) for row in known[:2000])
    assert 0.5 < float(fresh.std()) / float(known.std()) < 2.0
