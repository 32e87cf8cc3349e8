from __future__ import annotations

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
    with pytest.raises(ValueError, match="not a textgate-ngrams/1 file"):
        ngrams.NgramModel.load(tmp_path / "x.npz")


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
