from __future__ import annotations

import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from textgate import ngrams


def test_grams_are_stable_and_split_into_a_word_and_a_character_block() -> None:
    a, b = ngrams.grams("Claim your FREE prize"), ngrams.grams("claim your free prize")
    assert a == b  # lower-cased; crc32, not Python's salted hash(): stable across processes
    assert any(i < ngrams.BUCKETS for i in a) and any(i >= ngrams.BUCKETS for i in a)
    assert max(a) < 2 * ngrams.BUCKETS
    assert ngrams.grams("") == {}


def test_a_huge_text_and_a_huge_word_cost_a_bounded_number_of_grams() -> None:
    huge = ngrams.grams("x" * 10_000_000)
    assert sum(huge.values()) < 200
    many = ngrams.grams("word " * 1_000_000)
    assert sum(many.values()) <= 3 * ngrams.MAX_CHARS
    whole = ngrams.grams("很" * 10_000_000, ngrams.Features((1, 3), "char", words=False))
    assert sum(whole.values()) <= 3 * ngrams.MAX_CHARS


def test_weighted_blocks_have_unit_length() -> None:
    idf = np.ones(2 * ngrams.BUCKETS)
    idx, values = ngrams.weighted(ngrams.grams("win a free cruise now"), idf)
    for block in (idx < ngrams.BUCKETS, idx >= ngrams.BUCKETS):
        assert np.dot(values[block], values[block]) == pytest.approx(1.0)


def _log_odds(logits: np.ndarray, negative: int) -> np.ndarray:
    others = np.delete(logits, negative, axis=1)
    return np.log(np.exp(others).sum(axis=1)) - logits[:, negative]


def test_adjust_mixes_the_not_negative_log_odds_and_keeps_the_split_of_the_others() -> None:
    logits = np.array([[2.0, 0.5, -1.0], [-3.0, 1.0, 2.0]])
    z = np.array([4.0, -2.0])
    for weight in (0.0, 0.5, 1.0):
        out = ngrams.adjust(logits, z, 0, weight)
        expected = (1 - weight) * _log_odds(logits, 0) + weight * z
        np.testing.assert_allclose(_log_odds(out, 0), expected)
        np.testing.assert_allclose(out[:, 1] - out[:, 2], logits[:, 1] - logits[:, 2])
    np.testing.assert_allclose(ngrams.adjust(logits, z, 0, 0.0), logits)


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    size = 2 * ngrams.BUCKETS
    model = ngrams.NgramModel(rng.random(size), rng.normal(size=size), 0.3, 0, 0.5)
    model.save(tmp_path / "n.npz")
    back = ngrams.NgramModel.load(tmp_path / "n.npz")
    texts = ["free money now", "minutes of the meeting"]
    np.testing.assert_allclose(back.scores(texts), model.scores(texts), rtol=1e-5)
    assert (back.negative, back.weight) == (0, 0.5)


def test_a_file_of_another_format_is_refused(tmp_path: Path) -> None:
    with open(tmp_path / "x.npz", "wb") as fh:
        np.savez(fh, format=np.array("something/9"))
    with pytest.raises(ValueError, match="'something/9' is not one of textgate-ngrams/1"):
        ngrams.NgramModel.load(tmp_path / "x.npz")


CHINESE = ngrams.Features(char_range=(1, 3), char_mode="char", words=False)


def _char_block(grams: list[str]) -> Counter[int]:
    mask = ngrams.BUCKETS - 1
    return Counter(ngrams.BUCKETS + (zlib.crc32(g.encode()) & mask) for g in grams)


def test_char_mode_reads_the_whole_text_across_spaces_and_no_words() -> None:
    got = ngrams.grams("很  好吃\n", ngrams.Features((1, 2), "char", words=False))
    # whitespace runs are one space, the ends trimmed; n-grams cross the space
    assert got == _char_block(["很", " ", "好", "吃", "很 ", " 好", "好吃"])
    with_words = ngrams.grams("很  好吃", ngrams.Features((1, 2), "char", words=True))
    assert {i for i in with_words if i < ngrams.BUCKETS}  # 很 is one char: only 好吃 is a word


def test_char_mode_grams_are_scikit_learns_char_analyzer() -> None:
    text_module = pytest.importorskip("sklearn.feature_extraction.text")
    text = "这个手机质量很差, 非常失望 Not good"
    analyzer = text_module.TfidfVectorizer(analyzer="char", ngram_range=(1, 3)).build_analyzer()
    assert ngrams.grams(text, CHINESE) == _char_block(analyzer(text))


def test_wb_mode_with_another_range_keeps_the_word_padding() -> None:
    got = ngrams.grams("Ab cd", ngrams.Features((2, 2), "wb", words=False))
    assert got == _char_block([" a", "ab", "b ", " c", "cd", "d "])


def test_features_are_checked() -> None:
    for bad in (ngrams.Features((0, 3)), ngrams.Features((4, 3)), ngrams.Features((1, 9))):
        with pytest.raises(ValueError, match="char n-gram range"):
            bad.checked()
    with pytest.raises(ValueError, match="char_mode"):
        ngrams.Features(char_mode="word").checked()
    size = 2 * ngrams.BUCKETS
    with pytest.raises(ValueError, match="char_mode"):
        ngrams.NgramModel(np.ones(size), np.zeros(size), 0.0, 0, 0.5, ngrams.Features((1, 3), "x"))


def test_format_2_round_trip_keeps_the_features(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    size = 2 * ngrams.BUCKETS
    model = ngrams.NgramModel(rng.random(size), rng.normal(size=size), -0.2, 0, 0.5, CHINESE)
    model.save(tmp_path / "zh.npz")
    with np.load(tmp_path / "zh.npz") as f:
        assert str(f["format"]) == "textgate-ngrams/2"
    back = ngrams.NgramModel.load(tmp_path / "zh.npz")
    assert back.features == CHINESE
    texts = ["这个手机质量很差", "非常好, 推荐"]
    np.testing.assert_allclose(back.scores(texts), model.scores(texts), rtol=1e-5)
    assert back.describe() == {
        "format": "textgate-ngrams/2",
        "buckets": ngrams.BUCKETS,
        "char_ngrams": [1, 3],
        "char_mode": "char",
        "word_block": False,
        "weight": 0.5,
        "negative": 0,
    }


def test_a_format_1_file_still_loads_with_the_default_features(tmp_path: Path) -> None:
    """Bundles built before the features were stored keep serving what they were built with."""
    rng = np.random.default_rng(2)
    size = 2 * ngrams.BUCKETS
    idf, coef = rng.random(size).astype(np.float32), rng.normal(size=size).astype(np.float32)
    with open(tmp_path / "v1.npz", "wb") as fh:  # the /1 writer's keys, exactly
        np.savez_compressed(
            fh,
            format=np.array("textgate-ngrams/1"),
            meta=np.array([0.3, 0, 0.5, ngrams.BUCKETS], dtype=np.float64),
            idf=idf,
            coef=coef,
        )
    back = ngrams.NgramModel.load(tmp_path / "v1.npz")
    assert back.features == ngrams.DEFAULT == ngrams.Features((3, 5), "wb", True)
    expected = ngrams.NgramModel(idf, coef, 0.3, 0, 0.5)
    texts = [PINNED_TEXT, "minutes of the meeting"]
    np.testing.assert_allclose(back.scores(texts), expected.scores(texts))
    assert back.describe()["char_ngrams"] == [3, 5] and back.describe()["word_block"] is True


# Computed with the featurizer of textgate-ngrams/1, before the settings became part of the
# model: the spam bundle's features must not move by one bucket under the default settings.
PINNED_TEXT = "Free money, free prize: claim your FREE prize now! café 80086"
PINNED_SHA256 = "92ff4d1a857b2b80bfd389adf50ca1afb46cd5487506934c59b5781fe437c7e7"


def test_the_default_features_are_the_pinned_buckets() -> None:
    import hashlib

    counts = ngrams.grams(PINNED_TEXT)
    items = sorted(counts.items())
    assert (len(counts), sum(counts.values())) == (110, 141)
    assert items[:2] == [(5585, 1), (17235, 1)] and items[-2:] == [(1012682, 2), (1025298, 1)]
    assert counts[442824] == 3 and counts[35777] == 2 and counts[541635] == 3  # "free" ...
    assert hashlib.sha256(repr(items).encode()).hexdigest() == PINNED_SHA256
    idx, values = ngrams.weighted(counts, np.ones(2 * ngrams.BUCKETS))
    got = dict(zip(idx.tolist(), values.tolist(), strict=True))
    assert got[35777] == pytest.approx(0.3446252184507683, rel=1e-12)
    assert got[442824] == pytest.approx(0.4271540753985316, rel=1e-12)
