"""Vocabulary trimming: the pieces a task's model keeps.

Kept: the four specials, every piece the training texts use under the full vocabulary,
and every single-character piece (so any text in any script still splits into known
pieces rather than <unk>). Ids keep their original order. Because each kept training
text's best split uses only kept pieces, and every split under the trimmed vocabulary is
also a split under the full one, the training texts get exactly the same pieces.
Deterministic: the same texts and file give the same list (its hash keys the build cache).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from tokenizers import Tokenizer

from textgate.encoders.e5file import Vocab

BATCH = 512


def kept_pieces(vocab: Vocab, tokenizer: Tokenizer, texts: Iterable[str]) -> list[int]:
    """Original ids of the pieces to keep, specials first then ascending."""
    used: set[int] = set()
    batch: list[str] = []
    for text in texts:
        batch.append(text)
        if len(batch) == BATCH:
            used.update(_ids(tokenizer, batch))
            batch = []
    used.update(_ids(tokenizer, batch))
    used.update(i for i, p in enumerate(vocab.pieces) if len(p) == 1)
    specials = [vocab.bos, vocab.pad, vocab.eos, vocab.unk]
    return specials + sorted(used - set(specials))


def _ids(tokenizer: Tokenizer, texts: list[str]) -> set[int]:
    out: set[int] = set()
    for enc in tokenizer.encode_batch(texts, add_special_tokens=False):
        out.update(enc.ids)
    return out


def digest(keep: list[int]) -> str:
    return hashlib.sha256(",".join(map(str, keep)).encode()).hexdigest()
