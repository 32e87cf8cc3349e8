from __future__ import annotations

from email import message_from_bytes

from textgate.mail.synthetic import modern


# seeded, counted, real RFC 822, training only: tests/unit/mail/synthetic/test_registry.py
# that it reaches the model: test_registry.py::test_generated_mail_reaches_the_model
def test_every_kind_of_message_is_generated() -> None:
    subjects = [message_from_bytes(i.raw)["Subject"] for i in modern.items(len(modern.KINDS))]
    assert len(set(subjects)) == len(modern.KINDS)
