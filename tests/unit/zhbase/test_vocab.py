"""The Chinese tokenizer: counted from a corpus, deterministic, one token per character."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from zhtexts import reviews

from textgate.zhbase import vocab as charvocab

pytest.importorskip("tokenizers")


def _corpus() -> list[str]:
    return [t for t, _ in reviews(300, seed=3)]


def test_same_corpus_same_tokenizer_in_any_order() -> None:
    corpus = _corpus()
    shuffled = corpus[:]
    random.Random(1).shuffle(shuffled)
    first = charvocab.build_tokenizer(corpus).to_str()
    assert charvocab.build_tokenizer(corpus).to_str() == first
    assert charvocab.build_tokenizer(shuffled).to_str() == first


def test_cjk_characters_are_single_tokens_and_round_trip() -> None:
    tok = charvocab.build_tokenizer(_corpus())
    text = "这个手机质量很差，失望"
    enc = tok.encode(text)
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert enc.tokens[1:-1] == list(text)
    assert "".join(tok.decode(enc.ids).split()) == text


def test_latin_words_fall_back_to_pieces_and_unseen_characters_to_unk() -> None:
    tok = charvocab.build_tokenizer(_corpus() + ["iphone"] * 10)
    assert tok.encode("iphone").tokens[1:-1] == ["iphone"]
    pieces = tok.encode("phone").tokens[1:-1]
    assert pieces[0] == "p" and all(p.startswith("##") for p in pieces[1:])
    assert tok.encode("龘").tokens[1:-1] == ["[UNK]"]


def test_rare_characters_are_left_out() -> None:
    vocab = charvocab.vocabulary(charvocab.count_words(["好好好", "坏"]))
    assert vocab[: len(charvocab.SPECIALS)] == list(charvocab.SPECIALS)
    assert "好" in vocab and "坏" not in vocab  # seen once: below MIN_CHAR_COUNT


def test_saved_as_a_transformers_fast_tokenizer(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    charvocab.save_pretrained(charvocab.build_tokenizer(_corpus()), tmp_path, 64)
    hf = AutoTokenizer.from_pretrained(str(tmp_path))
    assert hf.is_fast and hf.pad_token == "[PAD]" and hf.mask_token == "[MASK]"
    assert hf("很好")["input_ids"] == charvocab.build_tokenizer(_corpus()).encode("很好").ids
