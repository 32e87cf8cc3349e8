"""Drive Debian's ``miltertest`` (a real milter client, Lua-scripted) with a real message.

``run_miltertest`` writes a Lua script that replays one RFC 822 file as an SMTP transaction
(connect, HELO, MAIL with an ``{auth_authen}`` macro, RCPT, each header, the body as a file,
end of message) and prints what the milter answered: ``REPLY <kind>``, ``HDR <name>`` for
each header it added, ``QUARANTINE``. ``abort=True`` aborts after the headers and then runs
a second, complete transaction on the same connection.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from textgate.errors import InvalidInput, TritonUnavailable
from textgate.gateway.mailproto.marks import Mark

HEADERS_ADDED = ("X-Spam-Flag", "X-Spam-Status", "X-Textgate-Action", "X-Textgate-Skipped")
HEADERS_ADDED += ("X-Textgate-Error", "X-Textgate-Request-Id")


def _lua(s: str) -> str:
    level = 1
    while f"]{'=' * level}]" in s:
        level += 1
    eq = "=" * level
    return f"[{eq}[\n{s}]{eq}]"  # a long bracket drops the first newline


def split_message(raw: bytes) -> tuple[list[tuple[str, str]], bytes]:
    text = raw.replace(b"\r\n", b"\n")
    head, _, body = text.partition(b"\n\n")
    fields: list[tuple[str, str]] = []
    for line in head.decode("utf-8", "replace").split("\n"):
        if line[:1] in (" ", "\t") and fields:
            fields[-1] = (fields[-1][0], fields[-1][1] + "\r\n" + line)
        elif ":" in line:
            name, _, value = line.partition(":")
            fields.append((name, value.lstrip(" ")))
    return fields, body.replace(b"\n", b"\r\n")


def _transaction(fields: list[tuple[str, str]], body_file: Path, user: str) -> str:
    lines = [
        f'mt.macro(conn, SMFIC_MAIL, "{{auth_authen}}", "{user}")',
        'check(mt.mailfrom(conn, "<sender@example.org>"), "mailfrom")',
        'check(mt.rcptto(conn, "<rcpt@example.net>"), "rcptto")',
    ]
    lines += [f"check(mt.header(conn, {_lua(n)}, {_lua(v)}), 'header')" for n, v in fields]
    lines += [
        'check(mt.eoh(conn), "eoh")',
        f"check(mt.bodyfile(conn, {_lua(str(body_file))}), 'body')",
    ]
    return "\n".join(lines)


def script(port: int, raw: bytes, work: Path, *, user: str = "", abort: bool = False) -> str:
    fields, body = split_message(raw)
    body_file = work / "body.txt"
    body_file.write_bytes(body)
    checks = "\n".join(
        f'if mt.eom_check(conn, MT_HDRADD, "{h}") then print("HDR {h}") end' for h in HEADERS_ADDED
    )
    aborted = ""
    if abort:
        aborted = "\n".join(
            [
                f'mt.macro(conn, SMFIC_MAIL, "{{auth_authen}}", "{user}")',
                'check(mt.mailfrom(conn, "<a@example.org>"), "mailfrom")',
                'check(mt.rcptto(conn, "<b@example.net>"), "rcptto")',
                "check(mt.header(conn, 'Subject', 'half a message'), 'header')",
                "mt.abort(conn)",
                'print("ABORTED")',
            ]
        )
    return f"""
function check(r, what)
  if r ~= nil then error(what .. " failed: " .. tostring(r)) end
end
conn = mt.connect("inet:{port}@127.0.0.1", 20, 0.25)
if conn == nil then error("mt.connect() failed") end
check(mt.conninfo(conn, "client.example", "127.0.0.1"), "conninfo")
if mt.getreply(conn) ~= SMFIR_CONTINUE then error("conninfo not continued") end
check(mt.helo(conn, "client.example"), "helo")
{aborted}
{_transaction(fields, body_file, user)}
check(mt.eom(conn), "eom")
r = mt.getreply(conn)
names = {{[SMFIR_ACCEPT]="accept", [SMFIR_REPLYCODE]="replycode", [SMFIR_DISCARD]="discard",
         [SMFIR_TEMPFAIL]="tempfail", [SMFIR_REJECT]="reject", [SMFIR_CONTINUE]="continue"}}
print("REPLY " .. (names[r] or tostring(r)))
{checks}
if mt.eom_check(conn, MT_QUARANTINE) then print("QUARANTINE") end
mt.disconnect(conn)
"""


def run_miltertest(
    port: int, raw: bytes, work: Path, *, user: str = "", abort: bool = False
) -> list[str]:
    tool = shutil.which("miltertest")
    assert tool, "miltertest is not installed: scripts/bootstrap.sh installs it (TEST_PACKAGES)"
    path = work / "test.lua"
    path.write_text(script(port, raw, work, user=user, abort=abort), encoding="utf-8")
    out = subprocess.run(
        [tool, "-s", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, f"miltertest failed:\n{out.stdout}\n{out.stderr}"
    return out.stdout.split("\n")


class FakeScanner:
    """Answers the action named by the milter's user (auth_authen); records what it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[bytes, str | None]] = []
        self.recipients: list[list[str]] = []
        self.queue_ids: list[str | None] = []

    async def scan(
        self,
        raw: bytes,
        user: str | None,
        *,
        explain: bool,
        recipients: Sequence[str] = (),
        queue_id: str | None = None,
    ) -> Mark:
        self.seen.append((raw, user))
        self.recipients.append(list(recipients))
        self.queue_ids.append(queue_id)
        if user == "down":
            raise TritonUnavailable("no Triton endpoint answers")
        if user == "bad":
            raise InvalidInput("no text to classify", field="message")
        action = user or "allow"
        spam = action != "allow"
        return Mark(spam, 9.0 if spam else 1.0, 5.0, action, "spam", 0.9, {"ham": 0.1}, "m/1", "r1")

    async def learn(self, raw: bytes, label: str, user: str | None, *, remove: bool) -> None:
        raise AssertionError("a milter never learns")


class Loop:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout=30)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
