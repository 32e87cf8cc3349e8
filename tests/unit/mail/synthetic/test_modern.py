from __future__ import annotations

from email import message_from_bytes

from textgate.mail import model_text
from textgate.mail.synthetic import modern
from textgate.normalize import NormalizeSettings


# seeded, counted, real RFC 822, training only: tests/unit/mail/synthetic/test_registry.py
def test_generated_mail_reaches_the_model() -> None:
    for item in modern.items(40):
        assert item.label == "ham"
        text = model_text(item.raw, NormalizeSettings())
        assert len(text.split()) >= 8, text  # a body reaches the model, HTML or plain


def test_every_kind_of_message_is_generated() -> None:
    subjects = [message_from_bytes(i.raw)["Subject"] for i in modern.items(len(modern.KINDS))]
    assert len(set(subjects)) == len(modern.KINDS)
