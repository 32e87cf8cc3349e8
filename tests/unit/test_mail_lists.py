from __future__ import annotations

import re
from email import message_from_bytes

from textgate import data
from textgate.mail import EMAIL_SOURCES, iter_email_corpus, lists, model_text
from textgate.normalize import NormalizeSettings


def test_generated_list_mail_is_seeded_distinct_and_real_rfc822() -> None:
    first, again = list(lists.items(80)), list(lists.items(80))
    assert [i.raw for i in first] == [i.raw for i in again]  # same messages on every build
    assert len({i.raw for i in first}) == 80
    assert {i.label for i in first} == {"ham"} and {i.group for i in first} == {lists.GROUP}
    texts = set()
    for item in first:
        msg = message_from_bytes(item.raw)
        assert msg["From"] and msg["Subject"] and msg["Date"] and msg["List-Id"]
        text = model_text(item.raw, NormalizeSettings())
        assert len(text.split()) >= 15, text  # a body reaches the model
        texts.add(text)
    assert len(texts) == 80  # distinct after normalization too, so dedup keeps them all


def test_every_kind_of_list_mail_is_generated() -> None:
    subjects = [str(message_from_bytes(i.raw)["Subject"]) for i in lists.items(200)]
    assert any(s.startswith("Re: ") for s in subjects)  # replies that quote
    assert any("[PATCH" in s for s in subjects)
    assert any("[ANNOUNCE]" in s for s in subjects)
    assert any(" commit " in s for s in subjects)
    bodies = [i.raw.decode() for i in lists.items(200)]
    assert any("Hallo zusammen" in b or "Hola a todos" in b or "Bonjour" in b for b in bodies)
    assert any(b.count("\n> ") >= 2 for b in bodies)


def test_no_list_of_the_held_out_trec_group_is_imitated() -> None:
    # the genre is the point, not the lists the TREC mailbox was subscribed to
    raws = " ".join(i.raw.decode().lower() for i in lists.items(300))
    for name in (
        "r-help",
        "perl",
        "samba",
        "debian",
        "laptop.org",
        "ibiblio",
        "speakup",
        "kate bush",
    ):
        assert not re.search(rf"(?<![\w-]){re.escape(name)}", raws), name


def test_generated_list_mail_is_training_data_only_and_can_be_left_out() -> None:
    # data.split keeps every group with this prefix out of validation and test
    # (tests/unit/test_data.py::test_generated_groups_only_ever_train)
    assert lists.GROUP.startswith(data.table.TRAIN_ONLY_PREFIX)
    assert lists.SOURCE in EMAIL_SOURCES
    kept = iter_email_corpus(
        exclude_sources=("enron-raw", "enron-spam-pre", "trec07p", "phishing-pot")
    )
    assert not any(
        item.group == lists.GROUP
        for item in iter_email_corpus(
            exclude_sources=("enron-raw", "enron-spam-pre", "trec07p", "phishing-pot", lists.SOURCE)
        )
    )
    assert any(item.group == lists.GROUP for item in kept)
