"""A character-level WordPiece tokenizer for Chinese, built from a corpus, deterministically.

CJK characters are tokens of their own (BERT's normalizer puts spaces around them, so the
pre-tokenizer makes each one a word); Latin letters and digits form words that WordPiece
splits into the frequent whole words of the corpus or, failing that, single-character
pieces. The vocabulary is counted here and sorted by (count, token), not learnt by the
``tokenizers`` trainer, so the same texts give the same ``tokenizer.json`` byte for byte
on every machine and thread count.

    texts ─ BERT normalizer (lowercase, CJK spaced) ─ BERT pre-tokenizer ─ count
          ─ vocab = specials + characters (+ "##" pieces) + frequent Latin/digit words
          ─ WordPiece(vocab) + [CLS] … [SEP] template  →  tokenizer.json
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MIN_CHAR_COUNT = 2  # a character seen once is more often a typo than a word
MIN_WORD_COUNT = 5
MAX_WORDS = 2_000  # whole Latin/digit words kept besides the characters
MAX_WORD_CHARS = 12


def _pipeline() -> tuple[Any, Any]:
    from tokenizers import normalizers, pre_tokenizers

    normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=True
    )
    return normalizer, pre_tokenizers.BertPreTokenizer()


def count_words(texts: Iterable[str]) -> Counter[str]:
    """Pre-tokenized words (single CJK characters, punctuation, Latin/digit runs) by count."""
    normalizer, pre = _pipeline()
    counts: Counter[str] = Counter()
    for text in texts:
        words = pre.pre_tokenize_str(normalizer.normalize_str(text))
        counts.update(word for word, _span in words)
    return counts


def vocabulary(counts: Counter[str]) -> list[str]:
    """Specials, then characters, continuation pieces and whole words, most frequent first."""
    chars: Counter[str] = Counter()
    pieces: Counter[str] = Counter()
    for word, n in counts.items():
        for i, ch in enumerate(word):
            chars[ch] += n
            if i:
                pieces[f"##{ch}"] += n
    # Every ASCII letter and digit, alone and as a piece: any Latin word is then spelt out
    # rather than [UNK], whatever the corpus held.
    for ch in string.ascii_lowercase + string.digits:
        chars[ch] += MIN_CHAR_COUNT
        pieces[f"##{ch}"] += MIN_CHAR_COUNT
    words = Counter(
        {w: n for w, n in counts.items() if 1 < len(w) <= MAX_WORD_CHARS and n >= MIN_WORD_COUNT}
    )

    def ranked(c: Counter[str], floor: int, limit: int | None = None) -> list[str]:
        kept = sorted((t for t, n in c.items() if n >= floor), key=lambda t: (-c[t], t))
        return kept[:limit]

    vocab = list(SPECIALS)
    for token in (
        ranked(chars, MIN_CHAR_COUNT) + ranked(pieces, MIN_CHAR_COUNT) + ranked(words, 1, MAX_WORDS)
    ):
        if token not in SPECIALS:
            vocab.append(token)
    return list(dict.fromkeys(vocab))


def build_tokenizer(texts: Iterable[str]) -> Any:
    """A ``tokenizers.Tokenizer`` whose vocabulary comes from ``texts``."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, processors

    vocab = vocabulary(count_words(texts))
    ids = {token: i for i, token in enumerate(vocab)}
    tok = Tokenizer(models.WordPiece(ids, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer, tok.pre_tokenizer = _pipeline()
    tok.add_special_tokens([AddedToken(t, special=True) for t in SPECIALS])
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def save_pretrained(tok: Any, out: Path, max_length: int) -> Any:
    """Write ``tok`` as a transformers fast tokenizer (tokenizer.json + its config)."""
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_length,
    )
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(str(out))
    return fast
