"""The package's tokenizer as a ``tokenizers`` pipeline, so training, export and Triton
read ``tokenizer.json`` alone and cut text as the package's C engine does:

    "query: " + text ─ the package's per-code-point map (``charsmap``) ─ runs of spaces
    to one ─ U+2581 for spaces, one in front ─ Viterbi over the Unigram pieces ─ <s> … </s>

Not NFKC: the map keeps 74 code points NFKC would change (U+FF5E among them) and
overrides 45 (controls removed; tabs, newlines, zero-width and U+FFFD to a space).
e5 was trained with a "query: " or "passage: " prefix; the prefix is part of the tokenizer
so nothing upstream must remember it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from textgate.encoders import charsmap
from textgate.encoders.e5file import Vocab

PREFIX = "query: "
META = "\u2581"


@functools.lru_cache(maxsize=4)
def _charsmap(items: tuple[tuple[int, str], ...]) -> bytes:
    # seconds to build; the same map serves the full and the trimmed tokenizer
    return charsmap.build(dict(items))


def build(vocab: Vocab, keep: Sequence[int] | None = None, prefix: str = PREFIX) -> Tokenizer:
    """The tokenizer over ``vocab``'s pieces, or over the pieces ``keep`` lists (in that
    order: new id i is old piece ``keep[i]``; the four specials must come first)."""
    order = list(range(len(vocab.pieces))) if keep is None else list(keep)
    specials = (vocab.bos, vocab.pad, vocab.eos, vocab.unk)
    if tuple(order[:4]) != specials:
        raise ValueError("the kept pieces must start with <s>, <pad>, </s>, <unk>")
    pieces = [(vocab.pieces[i], float(vocab.scores[i])) for i in order]
    tok = Tokenizer(models.Unigram(pieces, unk_id=3, byte_fallback=False))
    steps: list[normalizers.Normalizer] = []
    if prefix:
        steps.append(normalizers.Prepend(prefix))
    steps += [
        normalizers.Precompiled(_charsmap(tuple(sorted(vocab.normalization.items())))),
        normalizers.Replace(Regex(" {2,}"), " "),
    ]
    tok.normalizer = normalizers.Sequence(steps)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement=META, prepend_scheme="always", split=False
    )
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=False)
    bos, eos = pieces[0][0], pieces[2][0]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, 0), (eos, 2)],
    )
    tok.add_special_tokens([p for p, _ in pieces[:4]])
    return tok
