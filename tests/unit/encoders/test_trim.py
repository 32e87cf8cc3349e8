"""Trimming keeps what the training texts use and splits them exactly as before."""

from __future__ import annotations

from pathlib import Path

from textgate.encoders import e5file, e5tokenizer, trim

TRAIN = ["这个手机很好用，电池也耐用！", "物流太慢了，再也不买了。", "质量一般般 good enough"]


def test_training_texts_get_the_same_pieces_after_trimming(real_file: Path) -> None:
    vocab = e5file.read(real_file).vocab
    full = e5tokenizer.build(vocab)
    keep = trim.kept_pieces(vocab, full, TRAIN)
    small = e5tokenizer.build(vocab, keep)
    for text in TRAIN:
        assert small.encode(text).tokens == full.encode(text).tokens
        # new ids index the kept list
        assert [keep[i] for i in small.encode(text).ids] == full.encode(text).ids
    assert len(keep) < len(vocab.pieces) // 5


def test_every_single_character_piece_is_kept_so_unseen_text_avoids_unk(real_file: Path) -> None:
    vocab = e5file.read(real_file).vocab
    full = e5tokenizer.build(vocab)
    keep = trim.kept_pieces(vocab, full, TRAIN)
    assert keep[:4] == [0, 1, 2, 3] and keep[4:] == sorted(keep[4:])
    small = e5tokenizer.build(vocab, keep)
    unseen = small.encode("Привет мир, 價格便宜 😀").ids
    assert 3 not in unseen


def test_the_same_texts_give_the_same_digest(real_file: Path) -> None:
    vocab = e5file.read(real_file).vocab
    full = e5tokenizer.build(vocab)
    a = trim.kept_pieces(vocab, full, TRAIN)
    b = trim.kept_pieces(vocab, full, list(reversed(TRAIN)))
    assert trim.digest(a) == trim.digest(b)
    assert trim.digest(a) != trim.digest(trim.kept_pieces(vocab, full, TRAIN[:1]))
