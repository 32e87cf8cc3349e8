from __future__ import annotations

from email import message_from_bytes

from textgate import data
from textgate.mail import bulk, model_text
from textgate.normalize import NormalizeSettings


def test_generated_bulk_mail_is_seeded_distinct_and_real_rfc822() -> None:
    first, again = list(bulk.items(70)), list(bulk.items(70))
    assert [i.raw for i in first] == [i.raw for i in again]  # same messages on every build
    assert len({i.raw for i in first}) == 70
    assert {i.label for i in first} == {"ham"} and {i.group for i in first} == {bulk.GROUP}
    for item in first:
        msg = message_from_bytes(item.raw)
        assert msg["From"] and msg["Subject"] and msg["Date"] and msg["List-Unsubscribe"]
        text = model_text(item.raw, NormalizeSettings())
        assert len(text.split()) >= 20, text  # a body reaches the model, HTML or plain
        assert "all rights reserved" in text.lower()  # the footer survives the tail window


def test_every_kind_is_generated_and_no_corpus_sender_is_imitated() -> None:
    raws = [i.raw.decode() for i in bulk.items(len(bulk.KINDS) * 3)]
    firsts = {r.split("\n\n", 1)[1].split("\n")[0][:12] for r in raws}
    assert len(firsts) >= len(bulk.KINDS)
    # the genre is the point, not the senders the held-out TREC group subscribed to
    for name in ("CNN", "CBS", "AccuWeather", "Netflix", "FOX News"):
        assert not any(name in r for r in raws), name


def test_generated_bulk_mail_is_training_data_only() -> None:
    # data.split keeps every group with this prefix out of validation and test
    # (tests/unit/test_data.py::test_generated_groups_only_ever_train)
    assert bulk.GROUP.startswith(data.table.TRAIN_ONLY_PREFIX)
