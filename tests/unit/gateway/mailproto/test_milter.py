"""The milter listener against Debian's ``miltertest``, with a stand-in scanner (no Triton):
every reply kind, scanner errors, a message over the limit, an aborted transaction, garbage.
The real gateway + Triton path is in tests/integration/test_mail.py."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.mailtools import FakeScanner, Loop, run_miltertest, script, split_message
from textgate.gateway.mailproto import marks, milter

DATA = Path(__file__).parents[3] / "data" / "email"
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
    assert scanner.recipients[-1] == ["rcpt@example.net"]  # the envelope's RCPT TO
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


# --- the MTA's X-Spam-* headers are deleted (SMFIR_CHGHEADER with an empty value) ---------

FORGED = (
    b"X-Spam-Status: No, score=-100.0 required=5.0\r\n"
    b"Subject: You have won\r\n"
    b"x-spam-flag: NO\r\n"
    b"X-Spam-Status: No, the second one\r\n"
    b"\r\n"
    b"X-Spam-Flag: NO in the body stays\r\n"
)


def _miltertest_checks(port: int, raw: bytes, work: Path, user: str, checks: list[str]) -> str:
    """miltertest on one message, printing each Lua ``eom_check`` expression that held."""
    tool = shutil.which("miltertest")
    assert tool, "miltertest is not installed: scripts/bootstrap.sh installs it (TEST_PACKAGES)"
    extra = "\n".join(f"if {c} then print([[YES {c}]]) end" for c in checks)
    text = script(port, raw, work, user=user).replace(
        "mt.disconnect(conn)", extra + "\nmt.disconnect(conn)"
    )
    path = work / "checks.lua"
    path.write_text(text, encoding="utf-8")
    out = subprocess.run(
        [tool, "-s", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, f"miltertest failed:\n{out.stdout}\n{out.stderr}"
    return out.stdout


def test_miltertest_sees_the_spam_headers_deleted(
    served: tuple[int, FakeScanner], tmp_path: Path
) -> None:
    port, _ = served
    deleted = 'mt.eom_check(conn, MT_HDRCHANGE, "X-Spam-Status", "")'
    flag = 'mt.eom_check(conn, MT_HDRCHANGE, "x-spam-flag", "")'
    subject = 'mt.eom_check(conn, MT_HDRCHANGE, "Subject")'
    added = 'mt.eom_check(conn, MT_HDRADD, "X-Spam-Status")'
    out = _miltertest_checks(port, FORGED, tmp_path, "allow", [deleted, flag, subject, added])
    assert "REPLY accept" in out and f"YES {deleted}" in out and f"YES {flag}" in out, out
    assert f"YES {added}" in out and f"YES {subject}" not in out, out
    # reject (mail.milter_review here): the message is not delivered, nothing to change
    out = _miltertest_checks(port, FORGED, tmp_path, "review", [deleted])
    assert "REPLY replycode" in out and "YES" not in out, out


def _packets(data: bytes) -> list[tuple[bytes, bytes]]:
    out = []
    while data:
        (n,) = struct.unpack("!I", data[:4])
        out.append((data[4:5], data[5 : 4 + n]))
        data = data[4 + n :]
    return out


def _transaction(
    port: int, actions: int, user: str = "allow", *, eom_macros: bytes = b"", again: bool = False
) -> list[tuple[bytes, bytes]]:
    """One raw milter transaction of FORGED (``again``: a second one on the connection, with
    no macros); the packets answered to the end of message."""
    fields, body = split_message(FORGED)
    message = [
        *(milter.packet(b"L", f"{n}\0{v}\0".encode()) for n, v in fields),
        milter.packet(b"N"),
        milter.packet(b"B", body),
    ]
    sent = [
        milter.packet(b"O", struct.pack("!III", 6, actions, 0)),
        milter.packet(b"D", b"M{auth_authen}\0" + user.encode() + b"\0"),
        milter.packet(b"M", b"<a@example.org>\0"),
        *message,
        *([milter.packet(b"D", b"E" + eom_macros)] if eom_macros else []),
        milter.packet(b"E"),
        *([milter.packet(b"M", b"<b@example.org>\0"), *message, milter.packet(b"E")] * again),
        milter.packet(b"Q"),
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"".join(sent))
        s.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    return _packets(got)


def _deleted(replies: list[tuple[bytes, bytes]]) -> list[tuple[int, bytes, bytes]]:
    out = []
    for cmd, data in replies:
        if cmd == b"m":
            name, value, _ = data[4:].split(b"\0")
            out.append((struct.unpack("!I", data[:4])[0], name, value))
    return out


def test_change_header_replies_delete_each_spam_header(served: tuple[int, FakeScanner]) -> None:
    port, _ = served
    offered = milter.SMFIF_ADDHDRS | milter.SMFIF_CHGHDRS | milter.SMFIF_QUARANTINE | 0x02
    replies = _transaction(port, offered)
    negotiated = struct.unpack("!III", replies[0][1])[1]
    assert negotiated == milter.SMFIF_ADDHDRS | milter.SMFIF_CHGHDRS | milter.SMFIF_QUARANTINE
    # 1-based per name (without case), as presented; the last first, so no index shifts
    assert _deleted(replies) == [
        (2, b"X-Spam-Status", b""),
        (1, b"x-spam-flag", b""),
        (1, b"X-Spam-Status", b""),
    ]
    cmds = [cmd for cmd, _ in replies[1:]]
    assert cmds == [b"c", b"c", b"c", b"c", b"c", b"c", b"c", b"m", b"m", b"m", *[b"h"] * 7, b"a"]


def test_no_change_header_without_the_mtas_offer_or_when_turned_off(
    served: tuple[int, FakeScanner],
) -> None:
    port, _ = served
    replies = _transaction(port, milter.SMFIF_ADDHDRS | milter.SMFIF_QUARANTINE)
    assert _deleted(replies) == [] and replies[-1] == (b"a", b"")
    assert any(cmd == b"h" for cmd, _ in replies)
    loop = Loop()
    replies_map = {"allow": "headers", "review": "headers", "error": "tempfail"}
    server = milter.Server(
        FakeScanner(), replies=replies_map, max_bytes=4096, strip_spam_headers=False
    )
    keep = loop.run(server.start("127.0.0.1", 0))
    try:
        assert _deleted(_transaction(keep, 0x3F)) == []
    finally:
        loop.run(server.stop())
        loop.close()


def test_unscanned_and_unreadable_messages_are_stripped_too(
    served: tuple[int, FakeScanner],
) -> None:
    port, _ = served
    bad = _transaction(port, 0x3F, user="bad")  # accepted with X-Textgate-Error
    assert len(_deleted(bad)) == 3 and bad[-2][1].startswith(b"X-Textgate-Error\0"), bad
    loop = Loop()
    replies_map = {"allow": "headers", "review": "headers", "error": "tempfail"}
    server = milter.Server(FakeScanner(), replies=replies_map, max_bytes=64)
    small = loop.run(server.start("127.0.0.1", 0))
    try:
        over = _transaction(small, 0x3F)  # FORGED is over 64 bytes: accepted unscanned
    finally:
        loop.run(server.stop())
        loop.close()
    assert len(_deleted(over)) == 3 and over[-2][1].startswith(b"X-Textgate-Skipped\0"), over


def test_deletes_and_spam_header_names() -> None:
    assert milter.deletes([b"X-Spam-Flag", b"X-SPAM-FLAG"]) == [
        milter.packet(b"m", struct.pack("!I", 2) + b"X-SPAM-FLAG\0\0"),
        milter.packet(b"m", struct.pack("!I", 1) + b"X-Spam-Flag\0\0"),
    ]
    assert marks.is_spam_header("x-spam-level") and marks.is_spam_header(b"X-Spam-Status")
    assert not marks.is_spam_header("X-Spammer") and not marks.is_spam_header("Subject")


def test_the_mtas_queue_id_reaches_the_scan_for_its_transaction_only(
    served: tuple[int, FakeScanner],
) -> None:
    port, scanner = served
    scanner.queue_ids.clear()
    _transaction(port, 0x3F, eom_macros=b"i\0" + b"4XyZ1abcDEF\0", again=True)
    # the id of the first transaction is not carried into the second
    assert scanner.queue_ids[-2:] == ["4XyZ1abcDEF", None]
    _transaction(port, 0x3F, eom_macros=b"i\0" + b"../../etc; rm\0")
    assert scanner.queue_ids[-1] is None  # not a queue id: never stored, never released
