"""tokenizer.json cuts text as the package's own C tokenizer does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tokenizers import normalizers

from textgate.encoders import charsmap, e5file, e5tokenizer

# full-width punctuation, emoji with a skin tone, mixed scripts, controls, spaces
MULTILINGUAL = (
    "Hello, world!",
    "这个手机很好用，电池也耐用！",
    "Ｈｅｌｌｏ，世界！～",
    "物流太慢了……再也不买了。。",
    "Ça coûte 12,50 € — très cher",
    "Olá, tudo bem? 😀👍🏽",
    "Привет, мир",
    "ข้อความภาษาไทย",
    "मुझे यह पसंद है",
    "مرحبا بالعالم",
    "mixed 中文 and English  double   spaces",
    "  leading and trailing  ",
    "tab\tnew\nline\r\nzero\u200bwidth\ufeffbom",
    "ctrl\x01\x07chars\x7f",
    "meta\u2581space and \ufffd replacement",
    "ｶﾞｷﾞ ①②③ ㍻ ﬁ",
    "価格は¥1,200です。とても良い！",
    "Ihr Konto wurde gesperrt: https://example.com/login?id=42",
)


@pytest.fixture(scope="module")
def full(real_file: Path):  # type: ignore[no-untyped-def]
    return e5tokenizer.build(e5file.read(real_file).vocab)


@pytest.mark.parametrize("text", MULTILINGUAL)
def test_ids_equal_the_engines(full, engine_ids: Callable[[str], list[int]], text: str) -> None:  # type: ignore[no-untyped-def]
    assert full.encode(text, add_special_tokens=False).ids == engine_ids(text)


def test_the_prefix_and_the_specials_frame_every_text(full) -> None:  # type: ignore[no-untyped-def]
    enc = full.encode("好")
    assert enc.tokens[:4] == ["<s>", "▁que", "ry", ":"] and enc.tokens[-1] == "</s>"
    assert enc.special_tokens_mask[0] == 1 and enc.special_tokens_mask[-1] == 1


def test_a_run_of_unknown_characters_is_one_unk_here_and_one_each_in_the_engine(
    full, engine_ids: Callable[[str], list[int]]
) -> None:  # type: ignore[no-untyped-def]
    # The one known difference: `tokenizers`' Unigram fuses adjacent <unk>s (no switch).
    text = "x \U00020000\U00020001 y"
    ours = full.encode(text, add_special_tokens=False).ids
    theirs = engine_ids(text)
    assert ours.count(3) == 1 and theirs.count(3) == 2
    assert [i for i in ours if i != 3] == [i for i in theirs if i != 3]


def test_the_charsmap_applies_every_entry_of_the_packaged_map(real_file: Path) -> None:
    mapping = e5file.read(real_file).vocab.normalization
    norm = normalizers.Precompiled(charsmap.build(mapping))
    wrong = {cp: out for cp, out in mapping.items() if norm.normalize_str(chr(cp)) != out}
    assert len(mapping) > 4000 and not wrong
    assert norm.normalize_str("～ \u00e9") == "～ \u00e9"  # unmapped code points pass through


def test_a_kept_list_must_start_with_the_specials(real_file: Path) -> None:
    vocab = e5file.read(real_file).vocab
    with pytest.raises(ValueError, match="start with"):
        e5tokenizer.build(vocab, [5, 0, 1, 2, 3])
