"""The spamd wire format on a real socket with a stand-in scanner; milter packets."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.mailtools import FakeScanner, Loop
from textgate.config import MailConfig
from textgate.errors import ConfigError
from textgate.gateway.mailproto import marks, milter, spamd
from textgate.gateway.mailproto.marks import Mark

DATA = Path(__file__).parents[3] / "data" / "email"


def _mark() -> Mark:
    probs = {"ham": 0.1, "spam": 0.3, "phish": 0.6}
    return Mark(True, 7.5, 5.0, "quarantine", "phish", 0.9, probs, "spam/3 (int8)", "rid-1",
                marks.tests_of(probs, "phish", "quarantine"))  # fmt: skip


@pytest.fixture
def spamd_port() -> Iterator[int]:
    loop = Loop()
    tell = spamd.TellRule(allow=True)  # the bad-TELL case below must reach the header checks
    server = spamd.Server(
        FakeScanner(), max_bytes=2048, timeout_s=1.0, max_connections=1, tell=tell
    )
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


# --- TELL: who may learn -------------------------------------------------------------------


class LearningScanner(FakeScanner):
    def __init__(self) -> None:
        super().__init__()
        self.learned: list[tuple[str, str | None, bool]] = []

    async def learn(self, raw: bytes, label: str, user: str | None, *, remove: bool) -> None:
        self.learned.append((label, user, remove))


@contextlib.contextmanager
def _spamd(**kwargs: Any) -> Iterator[tuple[int, LearningScanner, list[tuple[str, str]]]]:
    loop, scanner, counted = Loop(), LearningScanner(), []
    server = spamd.Server(
        scanner,
        max_bytes=4096,
        timeout_s=1.0,
        count=lambda cmd, code: counted.append((cmd, code)),
        **kwargs,
    )
    port = loop.run(server.start("127.0.0.1", 0))
    try:
        yield port, scanner, counted
    finally:
        loop.run(server.stop())
        loop.close()


def _tell(port: int, **extra: str) -> bytes:
    raw = (DATA / "html_only.eml").read_bytes()
    return _ask(port, _req("TELL", raw, **{"Message-class": "spam", "Set": "local", **extra}))


def _tenants(*names: str) -> spamd.TellRule:
    return spamd.TellRule(allow=True, is_tenant=lambda u: u in names)


def test_tell_is_refused_by_default() -> None:
    with _spamd() as (port, scanner, counted):
        out = _tell(port)
        assert out.startswith(b"SPAMD/1.5 77 ") and b"mail.allow_tell" in out, out
        out = _tell(port, **{"Remove": "local", "Set": ""})  # spamc -L forget too
        assert out.startswith(b"SPAMD/1.5 77 "), out
    assert scanner.learned == [] and counted == [("TELL", "77"), ("TELL", "77")]


def test_tell_is_refused_from_a_network_not_allowed() -> None:
    rule = spamd.TellRule(allow=True, networks=spamd.networks(["10.0.0.0/8", "::1/128"]))
    with _spamd(tell=rule) as (port, scanner, counted):
        out = _tell(port)  # the test client is 127.0.0.1
    assert out.startswith(b"SPAMD/1.5 77 ") and b"mail.tell_networks" in out, out
    assert scanner.learned == [] and counted == [("TELL", "77")]


def test_tell_is_refused_for_a_user_not_in_tell_users() -> None:
    rule = spamd.TellRule(allow=True, users=("alice",), is_tenant=lambda _u: True)
    with _spamd(tell=rule) as (port, scanner, _):
        refused = _tell(port, User="bob")
        nobody = _tell(port)  # tell_users set: a request must name one of them
        allowed = _tell(port, User="alice")
    assert refused.startswith(b"SPAMD/1.5 77 ") and b"mail.tell_users" in refused, refused
    assert nobody.startswith(b"SPAMD/1.5 77 "), nobody
    assert allowed.startswith(b"SPAMD/1.5 0 ") and b"DidSet: local" in allowed, allowed
    assert scanner.learned == [("spam", "alice", False)]


def test_without_tell_users_only_tenants_or_no_user_may_learn() -> None:
    with _spamd(tell=_tenants("reviewer")) as (port, scanner, counted):
        unix_user = _tell(port, User="root")  # what spamc sends without -u
        tenant = _tell(port, User="reviewer")
        no_user = _tell(port)
    assert unix_user.startswith(b"SPAMD/1.5 77 ") and b"mail.tell_users" in unix_user
    assert tenant.startswith(b"SPAMD/1.5 0 ") and no_user.startswith(b"SPAMD/1.5 0 ")
    assert scanner.learned == [("spam", "reviewer", False), ("spam", None, False)]
    assert counted == [("TELL", "77"), ("TELL", "0"), ("TELL", "0")]


def test_tell_is_allowed_when_configured() -> None:
    cfg = MailConfig(allow_tell=True, tell_users=("postmaster",))
    with _spamd(tell=spamd.TellRule.of(cfg)) as (port, scanner, _):
        out = _tell(port, User="postmaster", Remove="remote")
    assert out == b"SPAMD/1.5 0 EX_OK\r\nDidRemove: remote\r\nDidSet: local\r\n\r\n"
    assert scanner.learned == [("spam", "postmaster", True), ("spam", "postmaster", False)]


@pytest.mark.parametrize(
    ("peer", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),  # an IPv4 client on a dual-stack socket
        ("192.0.2.7", False),
        ("::ffff:192.0.2.7", False),
        ("2001:db8::1", False),
        (None, False),
        ("not-an-address", False),
    ],
)
def test_tell_networks_default_to_loopback(peer: str | None, allowed: bool) -> None:
    refusal = spamd.TellRule.of(MailConfig(allow_tell=True)).refusal(None, peer)
    assert (refusal is None) is allowed, refusal


def test_tell_networks_are_checked_when_the_config_is_loaded() -> None:
    assert MailConfig().tell_networks == ("127.0.0.0/8", "::1/128") and not MailConfig().allow_tell
    cfg = MailConfig(tell_networks=("192.0.2.0/24", "2001:db8::/32", "198.51.100.7"))
    assert spamd.TellRule.of(cfg).networks[2] == ipaddress.ip_network("198.51.100.7/32")
    for bad in ("192.0.2.1/24", "10.0.0.0/33", "localhost", ""):
        with pytest.raises(ConfigError, match="CIDR") as info:
            MailConfig(tell_networks=("127.0.0.0/8", bad))
        assert info.value.key == "tell_networks[1]"
    with pytest.raises(ConfigError):
        MailConfig(tell_users=("",))


# --- PROCESS / HEADERS: a sender's own X-Spam-* headers do not pass ------------------------

FORGED = (
    b"X-Spam-Status: No, score=-100.0 required=5.0\r\n\ttests=ALL_TRUSTED\r\n"
    b"Subject: You have won\r\n"
    b"x-spam-flag: NO\r\n"
    b"\r\n"
    b"X-Spam-Flag: NO is what the body says\r\n"
)
STRIPPED = b"Subject: You have won\r\n\r\nX-Spam-Flag: NO is what the body says\r\n"


@pytest.mark.parametrize("method", ["PROCESS", "HEADERS"])
def test_process_and_headers_drop_incoming_spam_headers(method: str) -> None:
    with _spamd() as (port, _, _):
        out = _ask(port, _req(method, FORGED, User="quarantine"))
    head, message = out.split(b"\r\n\r\n", 1)
    assert head.startswith(b"SPAMD/1.5 0 EX_OK\r\n")
    assert message.startswith(b"X-Spam-Flag: YES\r\n") and b"tests=ALL_TRUSTED" not in out
    assert b"score=-100" not in out and b"x-spam-flag" not in out
    ours = b"".join(f"{k}: {v}\r\n".encode() for k, v in marks.header_lines(_fake_mark()))
    if method == "PROCESS":
        assert message == ours + STRIPPED
    else:
        assert message == ours + b"Subject: You have won\r\n\r\n"


def test_strip_spam_headers_can_be_turned_off() -> None:
    with _spamd(strip_spam_headers=False) as (port, _, _):
        out = _ask(port, _req("PROCESS", FORGED, User="quarantine"))
    assert out.endswith(FORGED) and b"X-Spam-Flag: YES\r\n" in out


def _fake_mark() -> Mark:
    return Mark(True, 9.0, 5.0, "quarantine", "spam", 0.9, {"ham": 0.1}, "m/1", "r1")
