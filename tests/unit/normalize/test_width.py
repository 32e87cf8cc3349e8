"""Full-width folding: one function, applied identically in training and serving."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from textgate import data
from textgate.normalize import NormalizeSettings, fingerprint, normalize_text, skew
from textgate.normalize.width import fold_width

MIXED = "质量很好，ＯＫ！　价格１２３元～"


def test_full_width_ascii_and_the_ideographic_space_fold() -> None:
    assert fold_width(MIXED) == "质量很好,OK! 价格123元~"
    assert fold_width("！～") == "!~" and fold_width("\u3000") == " "


def test_other_wide_or_compatibility_characters_stay() -> None:
    kept = "。、“”《》①ｶ㈱ﬁ繁體"  # CJK punctuation, circled digit, half-width kana, ligature
    assert fold_width(kept) == kept


# Controls are removed by serving only (training data never holds them), so leave them out.
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")))


@given(_TEXT | st.builds("".join, st.lists(st.sampled_from(["，", "Ｏ", "　", "好", " ", "a"]))))
def test_training_and_serving_give_the_same_text(text: str) -> None:
    trained = data.normalize(text)
    if not trained:
        return  # empty: skipped in training, refused at serving
    assert normalize_text(text, NormalizeSettings()).text == trained


def test_a_training_table_and_a_request_agree_on_full_width_text() -> None:
    table = data.build_table(
        [(1, MIXED, "positive"), (2, "很差", "negative")],
        source="t",
        labels=("negative", "positive"),
    )
    served = normalize_text(MIXED, NormalizeSettings()).text
    assert served in table.texts
    assert data.text_hash(MIXED) == data.text_hash(served)  # the same split either way


def test_the_setting_is_recorded_and_a_mismatch_refused() -> None:
    recorded = fingerprint(NormalizeSettings())
    assert recorded["settings"]["fold_width"] is True
    off = dataclasses.replace(NormalizeSettings(), fold_width=False)
    assert normalize_text(MIXED, off).text == MIXED.replace("\u3000", " ")  # still whitespace
    assert any("fold_width" in p for p in skew(recorded, off))
    assert skew(recorded, NormalizeSettings()) == []
