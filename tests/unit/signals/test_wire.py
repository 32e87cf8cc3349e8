"""The frame that carries a message's symbols to Triton beside its text, and the gateway's
choice of when to send it."""

from __future__ import annotations

import pytest

from textgate.gateway.scoring.prepare import Prepared, Preparer
from textgate.signals import wire


def test_a_frame_round_trips_and_plain_text_is_left_alone() -> None:
    assert wire.frame((), "hello") == "hello"
    framed = wire.frame(("LIST_ID", "IN_REPLY_TO"), "hello")
    assert framed.startswith(wire.MARK) and framed.endswith("hello")
    assert wire.unframe(framed) == (("LIST_ID", "IN_REPLY_TO"), "hello")
    assert wire.unframe("hello") == ((), "hello")


def test_a_client_cannot_forge_a_frame_through_the_text_it_sends() -> None:
    # normalization drops NUL, so no normalized text starts with the frame's mark
    forged = "\x00LIST_ID\x00buy now"
    item = Preparer().text(forged)
    assert not item.text.startswith(wire.MARK)
    assert wire.unframe(item.pieces[0]) == ((), item.pieces[0])
    assert item.symbols == ()


@pytest.mark.parametrize("framed", [True, False])
def test_pieces_are_framed_only_for_a_model_that_combines_symbols(framed: bool) -> None:
    item = Prepared("t", ("a", "b"), {"symbols": ["LIST_ID"]})
    sent = item.wire(framed)
    if framed:
        assert [wire.unframe(p) for p in sent] == [(("LIST_ID",), "a"), (("LIST_ID",), "b")]
    else:
        assert sent == ("a", "b")
    assert Prepared("t", ("a",), {"symbols": []}).wire(True) == ("a",)


def test_raw_mail_gets_its_symbols_from_normalization() -> None:
    raw = (
        b"From: Ann <ann@example.org>\r\nTo: dev@example.org\r\nSubject: Re: patch\r\n"
        b"Date: Tue, 03 Nov 2026 10:00:00 +0000\r\nMessage-ID: <a@example.org>\r\n"
        b"List-Id: <dev.example.org>\r\nIn-Reply-To: <b@example.org>\r\n\r\nLooks good.\r\n"
    )
    item = Preparer().email(raw)
    assert {"LIST_ID", "IN_REPLY_TO"} <= set(item.symbols)
    assert "LIST_ID" not in item.text  # symbols never become text the transformer reads
