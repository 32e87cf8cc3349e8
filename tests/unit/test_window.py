"""The model's window over a long text: head only, or head + tail (``textgate.window``)."""

from __future__ import annotations

import pytest

from tests.helpers.fixtures_models import minilm_tokenizer_dir
from textgate import window


def test_short_ids_pass_through() -> None:
    assert window.fit([101, 7, 8, 102], 8, 3) == [101, 7, 8, 102]


def test_long_ids_keep_head_and_tail_with_both_specials() -> None:
    ids = [101, *range(1, 21), 102]  # [CLS] 1..20 [SEP]
    assert window.fit(ids, 8, 3) == [101, 1, 2, 3, 4, 19, 20, 102]
    assert window.fit(ids, 8, 0) == [101, 1, 2, 3, 4, 5, 6, 102]  # head only, as HF cuts


def test_tail_never_swallows_the_head() -> None:
    assert window.fit(list(range(10)), 4, 99)[0] == 0  # the first id (CLS) always stays


@pytest.mark.parametrize(("tail", "ok"), [(0, True), (64, True), (65, False), (-1, False)])
def test_check_bounds_the_tail_to_half_the_window(tail: int, ok: bool) -> None:
    problem = window.check(128, tail)
    assert (problem is None) is ok
    if not ok:
        assert problem is not None and "0..64" in problem


def test_bound_keeps_both_ends_of_a_huge_text() -> None:
    text = "a" * 10_000 + "MIDDLE" + "b" * 10_000
    cut = window.bound(text, 8, 4)
    assert len(cut) <= 8 * window.CHARS_PER_TOKEN + 1
    assert cut.startswith("a") and cut.endswith("b") and "MIDDLE" not in cut
    assert window.bound(text, 8, 0) == text[: 8 * window.CHARS_PER_TOKEN]
    assert window.bound("short", 8, 4) == "short"


def test_hf_ids_read_the_last_words_of_a_long_review() -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(minilm_tokenizer_dir()))
    text = "the plot starts slowly " * 20 + "overall i would never buy this again"
    head_only, both = (window.hf_ids(tok, [text], 32, tail)[0] for tail in (0, 12))
    assert len(head_only) == len(both) == 32
    assert head_only[0] == both[0] == tok.cls_token_id
    assert head_only[-1] == both[-1] == tok.sep_token_id
    assert "never buy this again" in tok.decode(both)
    assert "never" not in tok.decode(head_only)
    # the head is what the tokenizer's own truncation keeps
    assert both[:20] == head_only[:20]


def test_pad_right_with_mask() -> None:
    ids, mask = window.pad([[1, 2, 3], [4]], 0)
    assert ids == [[1, 2, 3], [4, 0, 0]] and mask == [[1, 1, 1], [1, 0, 0]]


def test_training_and_serving_cut_a_huge_text_alike() -> None:
    """Past ``max_length * CHARS_PER_TOKEN`` characters ``bound`` cuts the text first, on
    the training side (``hf_ids``) as in the bundle's tokenizer (``export.inference``)."""
    from transformers import AutoTokenizer

    from textgate.export import inference

    tok = AutoTokenizer.from_pretrained(str(minilm_tokenizer_dir()))
    bundle = inference.load_tokenizer(minilm_tokenizer_dir() / "tokenizer.json", 32, 12)
    text = "opening words " * 400 + "the middle " * 400 + "closing words here"
    assert len(text) > 32 * window.CHARS_PER_TOKEN
    ids = window.hf_ids(tok, [text], 32, 12)
    assert bundle.ids([text]) == ids
    assert tok.decode(ids[0][-4:]).endswith("closing words here [SEP]")
