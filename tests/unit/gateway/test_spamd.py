"""The spamd wire format on a real socket with a stand-in scanner; milter packets."""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from mailtools import FakeScanner, Loop

from textgate.gateway import headers, milter, spamd
from textgate.gateway.headers import Mark

DATA = Path(__file__).parents[2] / "data" / "email"


def _mark() -> Mark:
    probs = {"ham": 0.1, "spam": 0.3, "phish": 0.6}
    return Mark(True, 7.5, 5.0, "quarantine", "phish", 0.9, probs, "spam/3 (int8)", "rid-1",
                headers.tests_of(probs, "phish", "quarantine"))  # fmt: skip


@pytest.fixture
def spamd_port() -> Iterator[int]:
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
