from __future__ import annotations

import re
from email import message_from_bytes

from textgate.mail import model_text
from textgate.mail.synthetic import lists
from textgate.normalize import NormalizeSettings


# seeded, counted, real RFC 822, training only, left out by --exclude-source:
# tests/unit/mail/synthetic/test_registry.py
# that it reaches the model: test_registry.py::test_generated_mail_reaches_the_model
def test_generated_list_mail_carries_list_headers_and_stays_distinct_when_normalized() -> None:
    texts = set()
    for item in lists.items(80):
        assert message_from_bytes(item.raw)["List-Id"]
        texts.add(model_text(item.raw, NormalizeSettings()))
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
