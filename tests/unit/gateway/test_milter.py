"""The milter listener against Debian's ``miltertest``, with a stand-in scanner (no Triton):
every reply kind, scanner errors, a message over the limit, an aborted transaction, garbage.
The real gateway + Triton path is in tests/integration/test_mail.py."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from mailtools import FakeScanner, Loop, run_miltertest, split_message

from textgate.gateway import milter

DATA = Path(__file__).parents[2] / "data" / "email"
MESSAGE = (DATA / "html_only.eml").read_bytes()


@pytest.fixture
def served() -> Iterator[tuple[int, FakeScanner]]:
    loop, scanner = Loop(), FakeScanner()
    replies = {
        "allow": "headers",
        "review": "reject",
        "quarantine": "quarantine",
        "error": "tempfail",
    }
    server = milter.Server(
        scanner, replies=replies, max_bytes=4096, timeout_s=2.0, max_connections=2
    )
    port = loop.run(server.start("127.0.0.1", 0))
    try:
        yield port, scanner
    finally:
        loop.run(server.stop())
        loop.close()


@pytest.mark.parametrize(
    ("user", "reply", "lines"),
    [
        ("allow", "REPLY accept", ["HDR X-Spam-Flag", "HDR X-Textgate-Request-Id"]),
        ("quarantine", "REPLY accept", ["HDR X-Spam-Status", "QUARANTINE"]),
        ("review", "REPLY replycode", []),  # reject: 550 5.7.1
        ("down", "REPLY tempfail", []),  # Triton down: the MTA retries later
        ("bad", "REPLY accept", ["HDR X-Textgate-Error"]),  # unreadable mail passes, marked
    ],
)
def test_each_action_gets_its_reply(
    served: tuple[int, FakeScanner], tmp_path: Path, user: str, reply: str, lines: list[str]
) -> None:
    port, scanner = served
    out = run_miltertest(port, MESSAGE, tmp_path, user=user)
    assert reply in out and all(line in out for line in lines), out
    raw, seen_user = scanner.seen[-1]
    assert seen_user == user and b"Subject: You have won\r\n" in raw
    assert raw.endswith(split_message(MESSAGE)[1])  # the body as the MTA sent it


def test_over_the_limit_passes_unscanned(served: tuple[int, FakeScanner], tmp_path: Path) -> None:
    port, scanner = served
    big = (DATA / "long.eml").read_bytes()
    out = run_miltertest(port, big, tmp_path, user="quarantine")
    assert "REPLY accept" in out and "HDR X-Textgate-Skipped" in out, out
    assert "QUARANTINE" not in out and scanner.seen == []


def test_aborted_transaction_leaves_nothing_behind(
    served: tuple[int, FakeScanner], tmp_path: Path
) -> None:
    port, scanner = served
    out = run_miltertest(port, MESSAGE, tmp_path, user="allow", abort=True)
    assert "ABORTED" in out and "REPLY accept" in out, out
    assert len(scanner.seen) == 1 and b"half a message" not in scanner.seen[0][0]


@pytest.mark.parametrize(
    ("option", "reply"),
    [(["quarantine", "accept"], "accept"), (["quarantine", "discard"], "discard")],
)
def test_reply_map_is_configurable(tmp_path: Path, option: list[str], reply: str) -> None:
    loop, scanner = Loop(), FakeScanner()
    replies = {"allow": "headers", "review": "headers", "error": "tempfail", option[0]: option[1]}
    server = milter.Server(scanner, replies=replies, max_bytes=4096)
    port = loop.run(server.start("127.0.0.1", 0))
    try:
        out = run_miltertest(port, MESSAGE, tmp_path, user="quarantine")
        assert f"REPLY {reply}" in out and "HDR X-Spam-Flag" not in out, out
    finally:
        loop.run(server.stop())
        loop.close()


def test_garbage_closes_the_connection_not_the_listener(
    served: tuple[int, FakeScanner], tmp_path: Path
) -> None:
    port, _ = served
    for junk in (b"\xff\xff\xff\xffXXXX", b"\x00\x00\x00\x05Zabcd", b"GET / HTTP/1.0\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(junk)
            s.shutdown(socket.SHUT_WR)
            assert s.recv(100) == b""  # closed, no answer to garbage
    assert "REPLY accept" in run_miltertest(port, MESSAGE, tmp_path, user="allow")


def test_connections_over_the_cap_are_told_to_retry(
    served: tuple[int, FakeScanner], tmp_path: Path
) -> None:
    port, _ = served
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
    try:
        out = run_miltertest(port, MESSAGE, tmp_path, user="allow")
    except AssertionError as exc:  # miltertest errors out on a tempfail before EOM
        assert "tempfail" in str(exc).lower() or "failed" in str(exc), exc
    else:
        pytest.fail(f"a connection over the cap was served: {out}")
    finally:
        for s in held:
            s.close()
