"""The Sendmail/Postfix milter protocol (version 6) on a TCP listener, in asyncio.

    packet: uint32 length (network order, command byte included) | command | data
    MTA:    O(negotiate) [D(macros)] C H M R* T L* N B* E | A(abort) | Q(quit) | K(next conn)
    us:     c(continue) to each of C H M R T L N B U; at E: m(change header: delete)*
            h(add header)* [q(quarantine)]
            then a(accept) | y(reply code: 550 reject) | d(discard) | t(tempfail)

The policy's action picks the reply through ``mail.milter_<action>`` (``replies``); the
message is rebuilt from the header and body packets as it arrived (``name: value`` CRLF,
blank line, body bytes) and scanned by ``front.Scanner.scan``: ``Service.run``, the path of
spamd and HTTP too.

Why not pymilter: it wraps Sendmail's libmilter, which keeps one milter per process in
global state and runs ``smfi_main`` as a blocking loop with its own signal thread
(SIGHUP/SIGTERM/SIGINT), next to the gateway's event loop and signal handling; it also needs
a C compiler and libmilter-dev on every machine, and pymilter is GPL-2.0 while textgate is
Apache-2.0. The protocol itself is a dozen packet types.

The MTA's ``X-Spam-*`` headers are deleted (``m`` with an empty value, SMFIF_CHGHDRS) in
every reply that adds headers, unless ``mail.strip_spam_headers`` is false: a sender can
forge ``X-Spam-Status: No`` for the filters after us (``marks.strip_spam_headers`` is the
same rule for spamd).

Limits: a body past ``max_bytes`` is not kept (the message is accepted unscanned with an
``X-Textgate-Skipped`` header), packets over ``MAX_PACKET`` close the connection, a silent
MTA is dropped after ``timeout_s`` within a packet (10x that between packets), and
connections beyond the cap (``listener.py``) are answered tempfail.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from textgate.errors import Kind, TextgateError
from textgate.gateway.mailproto import marks
from textgate.gateway.mailproto.listener import Listener, no_count
from textgate.gateway.mailproto.spamd import Scanner
from textgate.gateway.records import held_mail, logs

MAX_PACKET = 1 << 20  # libmilter's own cap on one packet is 64 KiB for body chunks
VERSION = 6
SMFIF_ADDHDRS, SMFIF_CHGHDRS, SMFIF_QUARANTINE = 0x01, 0x10, 0x20
REPLIES = ("accept", "headers", "quarantine", "reject", "discard", "tempfail")
_NO_REPLY = {b"D", b"A", b"Q", b"K"}
IDLE_FACTOR = 10  # read_timeout_s x this between packets (300 s by default)
# The milter's one table, read with ``mail.milter_error``: the kinds of error that answer
# with that reply (the MTA defers or keeps the message). Every other kind says the message
# cannot be read as mail: it passes with an X-Textgate-Error header.
CANNOT_SCAN = frozenset(
    {Kind.OVERLOADED, Kind.UNAVAILABLE, Kind.TIMEOUT, Kind.UPSTREAM, Kind.INTERNAL, Kind.BUG}
)


def replies(mail_config: Any) -> dict[str, str]:
    """Policy action -> milter reply kind, from ``mail.milter_*`` (other actions: review's)."""
    return {
        "allow": mail_config.milter_allow,
        "review": mail_config.milter_review,
        "quarantine": mail_config.milter_quarantine,
        "error": mail_config.milter_error,
    }


def packet(cmd: bytes, data: bytes = b"") -> bytes:
    return struct.pack("!I", len(data) + 1) + cmd + data


def _cstr(*parts: str) -> bytes:
    return b"".join(p.encode("utf-8", "replace") + b"\0" for p in parts)


@dataclass
class Message:
    """One SMTP transaction's message as the MTA sent it."""

    head: list[bytes] = field(default_factory=list)
    body: list[bytes] = field(default_factory=list)
    size: int = 0
    over: bool = False
    # X-Spam-* names as presented, kept past the size limit too: an unscanned message
    # still must not carry a sender's forged verdict on
    spam_headers: list[bytes] = field(default_factory=list)
    recipients: list[str] = field(default_factory=list)  # envelope RCPT TO, as the MTA sent

    def add(self, data: bytes, limit: int, *, header: bool) -> None:
        self.size += len(data)
        if self.size > limit:
            self.over = True
            self.head, self.body = [], []
        elif not self.over:
            (self.head if header else self.body).append(data)

    def raw(self) -> bytes:
        return b"".join(self.head) + b"\r\n" + b"".join(self.body)


def _address(data: bytes) -> str:
    """The address of an SMFIC_RCPT packet (its first NUL-terminated argument, ``<a@b>``)."""
    first = data.split(b"\0", 1)[0].decode("utf-8", "replace").strip()
    return first.removeprefix("<").removesuffix(">").strip()[:320]


def deletes(names: list[bytes]) -> list[bytes]:
    """SMFIR_CHGHEADER packets deleting each named header, in the order the MTA sent them.

    The index is 1-based among the headers of that name (MTAs compare names without case).
    Sent last occurrence first: whether an MTA renumbers after a delete or not, the
    indices still to be sent then point at the same headers.
    """
    seen: dict[bytes, int] = {}
    out = []
    for name in names:
        index = seen[name.lower()] = seen.get(name.lower(), 0) + 1
        out.append(packet(b"m", struct.pack("!I", index) + name + b"\0" + b"\0"))
    return out[::-1]


def answer(kind: str, mark: marks.Mark | None) -> list[bytes]:
    """The end-of-message packets for a reply kind."""
    add = [packet(b"h", _cstr(k, v)) for k, v in marks.header_lines(mark)] if mark else []
    rid = mark.request_id if mark else ""
    if kind == "accept":
        return [packet(b"a")]
    if kind == "headers":
        return [*add, packet(b"a")]
    if kind == "quarantine":
        return [*add, packet(b"q", _cstr(f"textgate: {mark.action if mark else 'error'} {rid}")),
                packet(b"a")]  # fmt: skip
    if kind == "reject":
        return [packet(b"y", _cstr(f"550 5.7.1 Message rejected as spam by textgate {rid}"))]
    if kind == "discard":
        return [packet(b"d")]
    return [packet(b"t")]  # tempfail: the MTA answers 4xx and the sender retries


class Server(Listener):
    busy_stays = True  # the MTA keeps the connection: each transaction is answered tempfail

    def __init__(
        self,
        scanner: Scanner,
        *,
        replies: dict[str, str],
        max_bytes: int,
        max_connections: int = 32,
        timeout_s: float = 30.0,
        count: Callable[[str, str], None] = no_count,
        strip_spam_headers: bool = True,
    ) -> None:
        super().__init__(max_connections=max_connections, timeout_s=timeout_s, count=count)
        self.scanner = scanner
        self.replies = replies
        self.max_bytes = max_bytes
        self.strip_spam_headers = strip_spam_headers

    async def handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, busy: bool
    ) -> None:
        try:
            await Connection(self, reader, writer, busy=busy).run()
        except (asyncio.IncompleteReadError, ConnectionError, TimeoutError):
            self.count("connection", "dropped")
        except Exception as exc:  # a bug must not kill the listener
            logs.logger.exception("milter: unexpected error", exc_info=exc)


class Connection:
    """One MTA connection: any number of transactions until Q."""

    def __init__(
        self,
        server: Server,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        busy: bool,
    ) -> None:
        self.server, self.reader, self.writer, self.busy = server, reader, writer, busy
        self.message = Message()
        self.user: str | None = None
        # The MTA's queue id (macro "i": Postfix sends it with MAIL and at end of data); it
        # belongs to one transaction, so it is forgotten after end of message and on abort.
        self.queue_id: str | None = None
        self.actions = 0  # negotiated SMFIF_* flags

    async def read(self) -> tuple[bytes, bytes]:
        s = self.server
        # Between packets the MTA may be waiting on its SMTP client (Postfix's smtpd timeout
        # is 300 s): idle for longer than a packet takes to arrive.
        idle = s.timeout_s * IDLE_FACTOR
        (length,) = struct.unpack("!I", await asyncio.wait_for(self.reader.readexactly(4), idle))
        if not 1 <= length <= MAX_PACKET:
            raise ConnectionError(f"milter packet of {length} bytes")
        data = await asyncio.wait_for(self.reader.readexactly(length), s.timeout_s)
        return data[:1], data[1:]

    async def send(self, *packets: bytes) -> None:
        self.writer.write(b"".join(packets))
        await asyncio.wait_for(self.writer.drain(), self.server.timeout_s)

    async def run(self) -> None:
        while True:
            cmd, data = await self.read()
            if cmd == b"Q":
                return
            reply = await self.handle(cmd, data)
            if reply:
                await self.send(*reply)

    async def handle(self, cmd: bytes, data: bytes) -> list[bytes]:
        if cmd == b"O":
            return [self.negotiate(data)]
        if cmd == b"D":
            self.macros(data)
            return []
        if cmd in (b"A", b"K"):
            self.message = Message()  # an aborted transaction leaves nothing behind
            self.queue_id = None
            return []
        if self.busy and cmd not in _NO_REPLY:
            self.server.count("busy", "tempfail")
            return [packet(b"t")]
        if cmd == b"M":
            self.message = Message()
        elif cmd == b"L":
            name, _, rest = data.partition(b"\0")
            value = rest.split(b"\0", 1)[0]
            self.message.add(name + b": " + value + b"\r\n", self.server.max_bytes, header=True)
            if marks.is_spam_header(name):
                self.message.spam_headers.append(name)
        elif cmd == b"R":
            self.message.recipients.append(_address(data))
        elif cmd == b"B":
            self.message.add(data, self.server.max_bytes, header=False)
        elif cmd == b"E":
            if data:
                self.message.add(data, self.server.max_bytes, header=False)
            out = await self.end_of_message()
            self.message, self.queue_id = Message(), None
            return out
        elif cmd not in b"CHRTNU" or len(cmd) != 1:
            raise ConnectionError(f"unknown milter command {cmd!r}")
        return [packet(b"c")]

    def negotiate(self, data: bytes) -> bytes:
        if len(data) < 12:
            raise ConnectionError("short option negotiation")
        version, actions, _protocol = struct.unpack("!III", data[:12])
        if version < 2:
            raise ConnectionError(f"milter protocol version {version} is too old")
        self.actions = actions & (SMFIF_ADDHDRS | SMFIF_CHGHDRS | SMFIF_QUARANTINE)
        return packet(b"O", struct.pack("!III", min(version, VERSION), self.actions, 0))

    def macros(self, data: bytes) -> None:
        items = data[1:].split(b"\0")
        for name, value in zip(items[::2], items[1::2], strict=False):
            if name.strip(b"{}") == b"auth_authen" and value:
                self.user = value.decode("utf-8", "replace")
            elif name.strip(b"{}") == b"i" and value:
                self.queue_id = held_mail.queue_id(value.decode("ascii", "replace"))

    async def end_of_message(self) -> list[bytes]:
        s = self.server
        if self.message.over:
            s.count("eom", "too_large")
            note = f"message over {s.max_bytes} bytes, not scanned"
            return [*self.strip(), packet(b"h", _cstr("X-Textgate-Skipped", note)), packet(b"a")]
        try:
            mark = await s.scanner.scan(
                self.message.raw(),
                self.user,
                explain=False,
                recipients=self.message.recipients,
                queue_id=self.queue_id,
            )
        except TextgateError as exc:
            if exc.kind in CANNOT_SCAN:
                s.count("eom", "error")
                logs.event("milter: cannot scan", error=exc.message)
                return answer(s.replies["error"], None)
            s.count("eom", "input_error")  # the message cannot be read as mail: let it pass
            note = exc.message[:200]
            return [*self.strip(), packet(b"h", _cstr("X-Textgate-Error", note)), packet(b"a")]
        kind = s.replies.get(mark.action, s.replies["review"] if mark.spam else s.replies["allow"])
        s.count("eom", kind)
        out = answer(kind, mark)
        # Only replies that mark the message strip it: "accept" promises no change, and a
        # rejected, discarded or deferred message is not delivered at all.
        return [*self.strip(), *out] if kind in ("headers", "quarantine") else out

    def strip(self) -> list[bytes]:
        """The deletes of the MTA's X-Spam-* headers, when configured and negotiated."""
        names = self.message.spam_headers
        if not names or not self.server.strip_spam_headers:
            return []
        if not self.actions & SMFIF_CHGHDRS:
            logs.event(
                "milter: the MTA did not offer SMFIF_CHGHDRS; incoming X-Spam-* headers kept",
                logging.WARNING,
                headers=len(names),
            )
            return []
        return deletes(names)
