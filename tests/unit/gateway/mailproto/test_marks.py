"""Points, rule names and X-Spam headers: no byte of the message but the added headers changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from textgate.gateway.mailproto import marks
from textgate.gateway.mailproto.marks import Mark

DATA = Path(__file__).parents[3] / "data" / "email"


def _mark(spam: bool = True, points: float = 7.5) -> Mark:
    probs = {"ham": 0.1, "spam": 0.3, "phish": 0.6}
    return Mark(spam, points, 5.0, "quarantine", "phish", 0.9, probs, "spam/3 (int8)", "rid-1",
                marks.tests_of(probs, "phish", "quarantine"))  # fmt: skip


def test_points_put_review_at_on_the_required_score() -> None:
    assert marks.points(0.85, 0.85, 5.0, 10.0) == 5.0
    assert marks.points(0.0, 0.85, 5.0, 10.0) == 0.0
    assert marks.points(1.0, 0.85, 5.0, 10.0) == 10.0
    assert marks.points(float("nan"), 0.85, 5.0, 10.0) == 5.0  # reviewed: flagged
    assert marks.shown_points(4.96, False, 5.0) == 4.9  # a ham never reads 5.0
    assert marks.shown_points(4.99, True, 5.0) == 5.0


def test_tests_name_every_flagging_label_of_a_three_label_model() -> None:
    tests = marks.tests_of({"ham": 0.1, "spam": 0.5, "phish": 0.4}, "spam", "review")
    assert tests == ("TEXTGATE_SPAM", "TEXTGATE_REVIEW")
    assert marks.tests_of({"ham": 0.9, "spam": 0.1}, "ham", "allow") == ()


@pytest.mark.parametrize("path", sorted(DATA.glob("*.eml")), ids=lambda p: p.stem)
def test_marked_keeps_every_original_byte(path: Path) -> None:
    raw = path.read_bytes()
    out = marks.marked(raw, _mark())
    block = marks.header_block(_mark(), raw)
    assert out == block + raw
    nl = b"\r\n" if raw.split(b"\n", 1)[0].endswith(b"\r") else b"\n"
    assert block.endswith(b"X-Textgate-Request-Id: rid-1" + nl)
    assert marks.header_section(out).endswith(nl + nl)


def test_mbox_from_line_stays_first() -> None:
    raw = b"From a@b Mon Jan  1 00:00:00 2026\nSubject: x\n\nbody\n"
    out = marks.marked(raw, _mark())
    assert out.startswith(b"From a@b") and out.endswith(b"Subject: x\n\nbody\n")
    assert b"\nX-Spam-Flag: YES\n" in out


# --- incoming X-Spam-* headers (a sender's forged verdict) ----------------------------------


def test_strip_removes_spam_headers_and_their_folded_lines() -> None:
    raw = (
        b"Received: from a\r\n\tby b\r\n"
        b"X-Spam-Status: No, score=-100.0 required=5.0\r\n\ttests=NONE\r\n    autolearn=no\r\n"
        b"Subject: hello\r\n"
        b"X-Spam-Flag: NO\r\n"
        b"\r\n"
        b"body\r\n"
    )
    assert marks.strip_spam_headers(raw) == (
        b"Received: from a\r\n\tby b\r\nSubject: hello\r\n\r\nbody\r\n"
    )


def test_strip_matches_any_case_and_only_the_x_spam_prefix() -> None:
    raw = b"x-spam-flag: NO\nX-SPAM-LEVEL: \nX-Spam-Status : No\nX-Spammer: keep\nX-Spam: keep\n\n"
    assert marks.strip_spam_headers(raw) == b"X-Spammer: keep\nX-Spam: keep\n\n"


def test_strip_leaves_the_body_alone() -> None:
    raw = b"Subject: x\n\nX-Spam-Status: No, score=-100\n X-Spam-Flag: NO\n"
    assert marks.strip_spam_headers(raw) == raw
    # A line that is not a header ends the header section, as a blank line does.
    text = b"hello there\nX-Spam-Flag: NO\n"
    assert marks.strip_spam_headers(text) == text


def test_strip_without_headers_or_without_body() -> None:
    assert marks.strip_spam_headers(b"") == b""
    assert marks.strip_spam_headers(b"\r\nX-Spam-Flag: NO\r\n") == b"\r\nX-Spam-Flag: NO\r\n"
    only_head = b"Subject: x\r\nX-Spam-Flag: NO\r\n\tfolded"
    assert marks.strip_spam_headers(only_head) == b"Subject: x\r\n"
    mbox = b"From a@b Mon Jan  1 00:00:00 2026\nX-Spam-Flag: NO\nSubject: x\n\nbody\n"
    assert (
        marks.strip_spam_headers(mbox) == b"From a@b Mon Jan  1 00:00:00 2026\nSubject: x\n\nbody\n"
    )


@pytest.mark.parametrize("path", sorted(DATA.glob("*.eml")), ids=lambda p: p.stem)
def test_strip_keeps_a_message_without_spam_headers(path: Path) -> None:
    raw = path.read_bytes()
    assert marks.strip_spam_headers(raw) == raw
