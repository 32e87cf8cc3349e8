"""The parity set: deterministic, mixed lengths, real texts first, truncation exercised."""

from __future__ import annotations

from textgate.export.texts import generate, parity_set, texts_hash


def test_generated_texts_are_deterministic_and_mixed() -> None:
    a, b = generate(500, 32), generate(500, 32)
    assert a == b
    words = [len(t.split()) for t in a]
    assert min(words) <= 3
    assert sum(w >= 32 for w in words) >= 25  # ~10 % longer than max_length: truncation
    assert sum(w <= 12 for w in words) >= 300  # the short bulk of real traffic
    assert any(not t.isascii() for t in a)


def test_parity_set_keeps_real_texts_first_and_tops_up() -> None:
    real = [f"real text {i}" for i in range(1000)] + ["real text 0", "  "]
    texts = parity_set(real, 500, 64)
    assert len(texts) == 500
    assert texts[:400] == real[:400]  # at most 80 % real
    assert texts[400:] == generate(100, 64)
    assert parity_set(["only one"], 500, 64)[0] == "only one"
    assert len(parity_set([], 500, 64)) == 500


def test_texts_hash_changes_with_content() -> None:
    assert texts_hash(["a", "b"]) != texts_hash(["b", "a"])
    assert texts_hash(["a"]) == texts_hash(["a"])
