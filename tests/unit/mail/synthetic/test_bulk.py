from __future__ import annotations

from email import message_from_bytes

from textgate.mail import model_text
from textgate.mail.synthetic import bulk
from textgate.normalize import NormalizeSettings


# seeded, counted, real RFC 822, training only: tests/unit/mail/synthetic/test_registry.py
# that it reaches the model: test_registry.py::test_generated_mail_reaches_the_model
def test_generated_bulk_mail_is_unsubscribable_with_its_footer() -> None:
    for item in bulk.items(70):
        assert message_from_bytes(item.raw)["List-Unsubscribe"]
        text = model_text(item.raw, NormalizeSettings())
        assert "all rights reserved" in text.lower()  # the footer survives the tail window


def test_every_kind_is_generated_and_no_corpus_sender_is_imitated() -> None:
    raws = [i.raw.decode() for i in bulk.items(len(bulk.KINDS) * 3)]
    firsts = {r.split("\n\n", 1)[1].split("\n")[0][:12] for r in raws}
    assert len(firsts) >= len(bulk.KINDS)
    # the genre is the point, not the senders the held-out TREC group subscribed to
    for name in ("CNN", "CBS", "AccuWeather", "Netflix", "FOX News"):
        assert not any(name in r for r in raws), name
