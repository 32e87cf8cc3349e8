"""Pure parts of the mail protocols: points, headers (no other byte changed), spamd wire
format on a real socket with a stand-in scanner, milter end-of-message packets."""

from __future__ import annotations

import asyncio
import socket
import struct
import zlib
from pathlib import Path

import pytest
from mailtools import FakeScanner, Loop

from textgate.gateway import headers, milter, spamd
from textgate.gateway.headers import Mark

DATA = Path(__file__).parents[2] / "data" / "email"


def _mark(spam: bool = True, points: float = 7.5) -> Mark:
    probs = {"ham": 0.1, "spam": 0.3, "phish": 0.6}
    return Mark(spam, points, 5.0, "quarantine", "phish", 0.9, probs, "spam/3 (int8)", "rid-1",
                headers.tests_of(probs, "phish", "quarantine"))  # fmt: skip


def test_points_put_review_at_on_the_required_score() -> None:
    assert headers.points(0.85, 0.85, 5.0, 10.0) == 5.0
    assert headers.points(0.0, 0.85, 5.0, 10.0) == 0.0
    assert headers.points(1.0, 0.85, 5.0, 10.0) == 10.0
    assert headers.points(float("nan"), 0.85, 5.0, 10.0) == 5.0  # reviewed: flagged
    assert headers.shown_points(4.96, False, 5.0) == 4.9  # a ham never reads 5.0
    assert headers.shown_points(4.99, True, 5.0) == 5.0


def test_tests_name_every_flagging_label_of_a_three_label_model() -> None:
    tests = headers.tests_of({"ham": 0.1, "spam": 0.5, "phish": 0.4}, "spam", "review")
    assert tests == ("TEXTGATE_SPAM", "TEXTGATE_REVIEW")
    assert headers.tests_of({"ham": 0.9, "spam": 0.1}, "ham", "allow") == ()


@pytest.mark.parametrize("path", sorted(DATA.glob("*.eml")), ids=lambda p: p.stem)
def test_marked_keeps_every_original_byte(path: Path) -> None:
    raw = path.read_bytes()
    out = headers.marked(raw, _mark())
    block = headers.header_block(_mark(), raw)
    assert out == block + raw
    nl = b"\r\n" if raw.split(b"\n", 1)[0].endswith(b"\r") else b"\n"
    assert block.endswith(b"X-Textgate-Request-Id: rid-1" + nl)
    assert headers.header_section(out).endswith(nl + nl)


def test_mbox_from_line_stays_first() -> None:
    raw = b"From a@b Mon Jan  1 00:00:00 2026\nSubject: x\n\nbody\n"
    out = headers.marked(raw, _mark())
    assert out.startswith(b"From a@b") and out.endswith(b"Subject: x\n\nbody\n")
    assert b"\nX-Spam-Flag: YES\n" in out


@pytest.fixture
def spamd_port() -> object:
    loop = Loop()
    server = spamd.Server(FakeScanner(), max_bytes=2048, timeout_s=1.0, max_connections=1)
    port = loop.run(server.start("127.0.0.1", 0))
    yield port
    loop.run(server.stop())
    loop.close()


def _ask(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(4096):
            out += chunk
    return out


def _req(method: str, body: bytes, **extra: str) -> bytes:
    head = f"{method} SPAMC/1.5\r\nContent-length: {len(body)}\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in extra.items())
    return head.encode() + b"\r\n" + body


def test_spamd_commands_on_the_wire(spamd_port: int) -> None:
    raw = (DATA / "html_only.eml").read_bytes()
    assert _ask(spamd_port, b"PING SPAMC/1.5\r\n\r\n") == b"SPAMD/1.5 0 PONG\r\n\r\n"
    check = _ask(spamd_port, _req("CHECK", raw, User="quarantine"))
    assert check == b"SPAMD/1.5 0 EX_OK\r\nSpam: True ; 9.0 / 5.0\r\n\r\n"
    symbols = _ask(spamd_port, _req("SYMBOLS", raw, User="quarantine"))
    assert symbols.endswith(b"Content-length: 0\r\n\r\n")  # the stand-in hits no rules
    process = _ask(spamd_port, _req("PROCESS", zlib.compress(raw), Compress="zlib"))
    assert process.endswith(raw) and b"Spam: False ; 1.0 / 5.0" in process
    head, body = process.split(b"\r\n\r\n", 1)
    assert int(head.split(b"Content-length: ")[1]) == len(body)
    assert _ask(
        spamd_port, _req("TELL", raw, **{"Message-class": "eggs", "Set": "local"})
    ).startswith(b"SPAMD/1.5 76 ")


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"\x00\x01\x02\r\n", b"76"),
        (b"CHECK SPAMC/1.5\r\n" + b"X: y\r\n" * 40 + b"\r\n", b"76"),
        (b"CHECK SPAMC/1.5\r\n\r\n", b"76"),  # no Content-length
        (_req("CHECK", b"x" * 5000), b"866"),  # over the limit
        (_req("CHECK", b"not zlib", Compress="zlib"), b"65"),
        (_req("CHECK", b"abc", Compress="gzip"), b"76"),
        (b"X" * 9000 + b"\r\n", b"76"),  # a line over MAX_LINE
        (_req("CHECK", b"", User="bad"), b"65"),  # the scanner's input error
        (_req("CHECK", b"", User="down"), b"75"),  # Triton down: retry later
    ],
)
def test_spamd_bad_input_gets_a_spamd_code(spamd_port: int, data: bytes, code: bytes) -> None:
    assert _ask(spamd_port, data).startswith(b"SPAMD/1.5 " + code + b" ")


def test_milter_packets() -> None:
    rej = milter.answer("reject", _mark())
    assert rej == [milter.packet(b"y", b"550 5.7.1 Message rejected as spam by textgate rid-1\0")]
    q = milter.answer("quarantine", _mark())
    assert q[-1] == milter.packet(b"a") and q[-2][4:5] == b"q" and q[0][4:5] == b"h"
    assert milter.answer("tempfail", None) == [milter.packet(b"t")]
    assert struct.unpack("!I", milter.packet(b"a")[:4]) == (1,)


def test_reply_map_comes_from_config() -> None:
    from textgate.config import MailConfig

    cfg = MailConfig(milter_review="reject", milter_allow="accept")
    assert milter.replies(cfg)["review"] == "reject" and milter.replies(cfg)["allow"] == "accept"
    asyncio.run(asyncio.sleep(0))
