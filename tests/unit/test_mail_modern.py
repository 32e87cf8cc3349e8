from __future__ import annotations

from email import message_from_bytes

from textgate.mail import model_text, modern
from textgate.normalize import NormalizeSettings


def test_generated_mail_is_seeded_distinct_and_real_rfc822() -> None:
    first, again = list(modern.items(40)), list(modern.items(40))
    assert [i.raw for i in first] == [i.raw for i in again]  # same messages on every build
    assert len({i.raw for i in first}) == 40
    assert {i.label for i in first} == {"ham"} and {i.group for i in first} == {modern.GROUP}
    for item in first:
        msg = message_from_bytes(item.raw)
        assert msg["From"] and msg["Subject"] and msg["Date"]
        text = model_text(item.raw, NormalizeSettings())
        assert len(text.split()) >= 8, text  # a body reaches the model, HTML or plain


def test_every_kind_of_message_is_generated() -> None:
    subjects = [message_from_bytes(i.raw)["Subject"] for i in modern.items(len(modern.KINDS))]
    assert len(set(subjects)) == len(modern.KINDS)
