"""The SPAMC/SPAMD protocol (SpamAssassin's ``spamc`` 4.x) on a TCP listener.

    request:  METHOD SPAMC/1.5\\r\\n  Header: value\\r\\n ... \\r\\n  body (Content-length bytes)
    answer:   SPAMD/1.5 CODE MESSAGE\\r\\n  Header: value\\r\\n ... \\r\\n  body

PING, SKIP, CHECK, SYMBOLS, REPORT, REPORT_IFSPAM, PROCESS, HEADERS and TELL; ``Compress:
zlib`` bodies (answers are never compressed: spamc 4 does not expect it); ``User`` names the
tenant. The scanning itself is a ``Scanner`` (``mail_front.py``: the gateway's one path), so
this module is the wire format and its limits only:

- a connection cap (``listener.py``, with the count and the timeout): the connection
  beyond it is answered EX_TEMPFAIL ("busy") at once;
- a read timeout per line and for the body: a slow client gets EX_TIMEOUT and is closed;
- a body over ``max_bytes`` (declared or after decompression) gets EX_TOOBIG, unscanned;
- every malformed request gets EX_PROTOCOL with the reason; a client gone mid-message is
  dropped without an answer (there is no one to answer);
- TELL (spamc -L) is refused with EX_NOPERM unless ``TellRule`` allows the client's address
  and ``User``: the socket carries no API key, and a correction steers the next model;
- PROCESS and HEADERS drop the message's own ``X-Spam-*`` headers before adding ours.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from textgate.errors import Kind, TextgateError, kind_of
from textgate.gateway.mailproto import marks
from textgate.gateway.mailproto.listener import Listener, no_count
from textgate.gateway.records import logs

if TYPE_CHECKING:
    from textgate.config import MailConfig

VERSION = "SPAMD/1.5"
EX_OK, EX_USAGE, EX_DATAERR, EX_NOUSER = 0, 64, 65, 67
EX_UNAVAILABLE, EX_SOFTWARE, EX_TEMPFAIL, EX_PROTOCOL = 69, 70, 75, 76
LINGER_S = 1.0  # how long a busy answer waits for the client's request to end
EX_NOPERM, EX_TIMEOUT, EX_TOOBIG = 77, 79, 866  # 866: libspamc's EX_TOOBIG
NAMES = {
    EX_OK: "EX_OK",
    EX_USAGE: "EX_USAGE",
    EX_DATAERR: "EX_DATAERR",
    EX_NOUSER: "EX_NOUSER",
    EX_UNAVAILABLE: "EX_UNAVAILABLE",
    EX_SOFTWARE: "EX_SOFTWARE",
    EX_TEMPFAIL: "EX_TEMPFAIL",
    EX_PROTOCOL: "EX_PROTOCOL",
    EX_NOPERM: "EX_NOPERM",
    EX_TIMEOUT: "EX_TIMEOUT",
    EX_TOOBIG: "EX_TOOBIG",
}
SCANS = ("CHECK", "SYMBOLS", "REPORT", "REPORT_IFSPAM", "PROCESS", "HEADERS")
METHODS = (*SCANS, "PING", "SKIP", "TELL")
MAX_LINE = 8192  # a request or header line; spamc's are < 100 bytes
MAX_HEADERS = 32
DRAIN_FACTOR = 4  # an over-limit body is read away (so spamc sees the answer) up to 4x the limit


class Scanner(Protocol):
    async def scan(
        self,
        raw: bytes,
        user: str | None,
        *,
        explain: bool,
        recipients: Sequence[str] = (),
        queue_id: str | None = None,
    ) -> marks.Mark: ...

    async def learn(self, raw: bytes, label: str, user: str | None, *, remove: bool) -> None: ...


class ProtocolError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Request:
    method: str
    headers: dict[str, str] = field(default_factory=dict)  # names lower-cased
    body: bytes = b""

    @property
    def user(self) -> str | None:
        return self.headers.get("user") or None


IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
LOOPBACK = ("127.0.0.0/8", "::1/128")


def _no_tenants(_user: str) -> bool:
    return False


@dataclass(frozen=True)
class TellRule:
    """Who may TELL: ``mail.allow_tell``, ``mail.tell_users``, ``mail.tell_networks``.

    Refused by default, as spamd without ``--allow-tell``. With ``users`` empty, a request
    without ``User`` or whose ``User`` names a configured tenant (``is_tenant``) may learn;
    any other name (spamc sends the local Unix user unless ``-u``) is refused rather than
    stored as a correction of the shared, tenant-less model.
    """

    allow: bool = False
    users: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = tuple(ipaddress.ip_network(n) for n in LOOPBACK)
    is_tenant: Callable[[str], bool] = _no_tenants

    @classmethod
    def of(cls, config: MailConfig, is_tenant: Callable[[str], bool] = _no_tenants) -> TellRule:
        """From a ``MailConfig`` (whose networks were checked when it was loaded)."""
        return cls(
            allow=config.allow_tell,
            users=tuple(config.tell_users),
            networks=networks(config.tell_networks),
            is_tenant=is_tenant,
        )

    def refusal(self, user: str | None, peer: str | None) -> str | None:
        """Why this client may not TELL (naming the key to change), or None."""
        if not self.allow:
            return "TELL refused: learning is off; set mail.allow_tell: true to allow it"
        addr = _address(peer)
        if addr is None or not any(addr in net for net in self.networks):
            return f"TELL refused: client {peer} is not in mail.tell_networks"
        if self.users:
            if user is None:
                return "TELL refused: no User header; mail.tell_users names who may learn"
            if user not in self.users:
                return f"TELL refused: User {user[:40]!r} is not in mail.tell_users"
        elif user is not None and not self.is_tenant(user):
            return (
                f"TELL refused: User {user[:40]!r} is not a configured tenant; "
                "list it in mail.tell_users or send a tenant (spamc -u)"
            )
        return None


def networks(cidrs: Sequence[str]) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(n) for n in cidrs)


def _address(peer: str | None) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not peer:
        return None
    try:
        addr = ipaddress.ip_address(peer)
    except ValueError:
        return None
    # On a dual-stack socket an IPv4 client shows as ::ffff:a.b.c.d: match it as IPv4.
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


CODES: dict[Kind, int] = {  # spamd's one table: an error's kind -> the code spamc sees
    Kind.TOO_LARGE: EX_TOOBIG,
    Kind.UNAUTHENTICATED: EX_NOPERM,
    Kind.OVERLOADED: EX_TEMPFAIL,  # the MTA retries later
    Kind.UNAVAILABLE: EX_TEMPFAIL,
    Kind.TIMEOUT: EX_TEMPFAIL,
    Kind.INVALID: EX_DATAERR,
    Kind.UNSUPPORTED: EX_DATAERR,
    Kind.NOT_FOUND: EX_DATAERR,
    Kind.FORBIDDEN: EX_DATAERR,
    Kind.CONFLICT: EX_DATAERR,
    Kind.UPSTREAM: EX_UNAVAILABLE,
    Kind.INTERNAL: EX_UNAVAILABLE,
    Kind.BUG: EX_SOFTWARE,
}


def code_of(exc: BaseException) -> int:
    """An error as a spamd code."""
    return CODES[kind_of(exc)]


def answer(code: int, message: str | None = None, hdrs: dict[str, str] | None = None) -> bytes:
    msg = message or NAMES.get(code, "EX_SOFTWARE")
    msg = " ".join(msg.split())[:200]  # one line, whatever the reason text holds
    head = f"{VERSION} {code} {msg}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in (hdrs or {}).items())
    return head.encode("utf-8", "replace") + b"\r\n"


def with_body(code: int, hdrs: dict[str, str], body: bytes) -> bytes:
    return answer(code, None, {**hdrs, "Content-length": str(len(body))}) + body


class Server(Listener):
    """One listener; ``start`` binds, ``stop`` closes it and waits for its connections."""

    stream_limit = MAX_LINE

    def __init__(
        self,
        scanner: Scanner,
        *,
        max_bytes: int,
        max_connections: int = 32,
        timeout_s: float = 30.0,
        count: Callable[[str, str], None] = no_count,
        tell: TellRule | None = None,
        strip_spam_headers: bool = True,
    ) -> None:
        super().__init__(max_connections=max_connections, timeout_s=timeout_s, count=count)
        self.scanner = scanner
        self.max_bytes = max_bytes
        self.tell = tell or TellRule()
        self.strip_spam_headers = strip_spam_headers

    async def refuse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.count("busy", NAMES[EX_TEMPFAIL])
        await _send(writer, answer(EX_TEMPFAIL, "server busy, try again later"))
        await _linger(reader, writer)

    async def handle(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, busy: bool
    ) -> None:
        # ``busy`` is always False here: spamd refuses a connection beyond the cap (refuse)
        method = "?"
        peername = writer.get_extra_info("peername")
        peer = str(peername[0]) if isinstance(peername, tuple) and peername else None
        try:
            req = await self._read(reader)
            method = req.method
            out = await self._dispatch(req, peer)
        except ProtocolError as exc:
            out = answer(exc.code, exc.message)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.count(method, "disconnected")
            return  # the client went away mid-request: no one to answer
        except TimeoutError:
            out = answer(EX_TIMEOUT, f"no data for {self.timeout_s:g} s")
        except TextgateError as exc:
            code = code_of(exc)
            out = answer(code, f"{NAMES.get(code)} {exc.message}")
        except Exception as exc:  # a bug must not kill the listener; the MTA gets an answer
            logs.logger.exception("spamd: unexpected error", exc_info=exc)
            out = answer(EX_SOFTWARE)
        if out:
            self.count(method, out.split(b" ", 2)[1].decode() if b" " in out else "?")
            await _send(writer, out)

    async def _line(self, reader: asyncio.StreamReader) -> str:
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\n"), self.timeout_s)
        except asyncio.LimitOverrunError:
            raise ProtocolError(EX_PROTOCOL, f"line longer than {MAX_LINE} bytes") from None
        try:
            return raw.decode("ascii").rstrip("\r\n")
        except UnicodeDecodeError:
            raise ProtocolError(EX_PROTOCOL, "request line or header is not ASCII") from None

    async def _read(self, reader: asyncio.StreamReader) -> Request:
        first = await self._line(reader)
        parts = first.split()
        if len(parts) != 2 or not parts[1].startswith("SPAMC/"):
            raise ProtocolError(EX_PROTOCOL, f"bad request line {first[:60]!r}")
        if parts[0] not in METHODS:
            raise ProtocolError(EX_PROTOCOL, f"unknown method {parts[0][:30]!r}")
        req = Request(parts[0])
        for _ in range(MAX_HEADERS + 1):
            line = await self._line(reader)
            if not line:
                break
            name, sep, value = line.partition(":")
            if not sep or not name.strip() or " " in name.strip():
                raise ProtocolError(EX_PROTOCOL, f"bad header line {line[:60]!r}")
            req.headers[name.strip().lower()] = value.strip()
        else:
            raise ProtocolError(EX_PROTOCOL, f"more than {MAX_HEADERS} headers")
        if req.method in ("PING", "SKIP"):
            return req
        req.body = await self._body(reader, req)
        return req

    async def _body(self, reader: asyncio.StreamReader, req: Request) -> bytes:
        length = req.headers.get("content-length")
        if length is None or not length.isdigit():
            raise ProtocolError(EX_PROTOCOL, "Content-length header missing or not a number")
        n = int(length)
        if n > self.max_bytes:
            await self._drain(reader, n)
            raise ProtocolError(EX_TOOBIG, f"message of {n} bytes over the limit {self.max_bytes}")
        body = await asyncio.wait_for(reader.readexactly(n), self.timeout_s)
        compress = req.headers.get("compress", "").lower()
        if not compress:
            return body
        if compress != "zlib":
            raise ProtocolError(EX_PROTOCOL, f"unsupported Compress {compress[:20]!r}")
        return self._inflate(body)

    def _inflate(self, body: bytes) -> bytes:
        d = zlib.decompressobj()
        try:
            out = d.decompress(body, self.max_bytes + 1)  # bounded: no zip bomb
        except zlib.error as exc:
            raise ProtocolError(EX_DATAERR, f"body is not zlib data: {exc}") from None
        if len(out) > self.max_bytes or d.unconsumed_tail:
            raise ProtocolError(EX_TOOBIG, f"message over the limit {self.max_bytes} uncompressed")
        return out

    async def _drain(self, reader: asyncio.StreamReader, n: int) -> None:
        left = min(n, self.max_bytes * DRAIN_FACTOR)
        with contextlib.suppress(TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            while left > 0:
                chunk = await asyncio.wait_for(reader.read(min(left, 65536)), self.timeout_s)
                if not chunk:
                    return
                left -= len(chunk)

    async def _dispatch(self, req: Request, peer: str | None) -> bytes:
        if req.method == "PING":
            return answer(EX_OK, "PONG")
        if req.method == "SKIP":
            return b""
        if req.method == "TELL":
            return await self._tell(req, peer)
        explain = req.method in ("REPORT", "REPORT_IFSPAM", "SYMBOLS")
        mark = await self.scanner.scan(req.body, req.user, explain=explain)
        return render(req.method, mark, req.body, strip=self.strip_spam_headers)

    async def _tell(self, req: Request, peer: str | None) -> bytes:
        refusal = self.tell.refusal(req.user, peer)
        if refusal is not None:
            logs.event(
                "spamd: TELL refused", logging.WARNING, reason=refusal, peer=peer, user=req.user
            )
            raise ProtocolError(EX_NOPERM, refusal)
        label = req.headers.get("message-class", "").lower()
        sets, removes = req.headers.get("set", ""), req.headers.get("remove", "")
        if not sets and not removes:
            raise ProtocolError(EX_PROTOCOL, "TELL needs a Set or Remove header")
        if label not in ("spam", "ham") and (sets or label):
            # spamc -L forget sends Remove alone; learning needs the class.
            raise ProtocolError(EX_PROTOCOL, "TELL needs Message-class: spam or ham")
        if sets and removes and set(_places(sets)) & set(_places(removes)):
            raise ProtocolError(EX_PROTOCOL, "TELL cannot Set and Remove the same place")
        out: dict[str, str] = {}
        if removes:
            await self.scanner.learn(req.body, label, req.user, remove=True)
            out["DidRemove"] = ",".join(_places(removes))
        if sets:
            await self.scanner.learn(req.body, label, req.user, remove=False)
            out["DidSet"] = ",".join(_places(sets))
        return answer(EX_OK, None, out)


def _places(value: str) -> list[str]:
    return [p.strip().lower() for p in value.split(",") if p.strip()]


def render(method: str, mark: marks.Mark, raw: bytes, *, strip: bool = True) -> bytes:
    """The EX_OK answer of a scan command; ``strip``: drop the message's own X-Spam-*."""
    spam = {"Spam": marks.spam_header(mark)}
    if method == "CHECK":
        return answer(EX_OK, None, spam)
    if method == "SYMBOLS":
        return with_body(EX_OK, spam, ",".join(mark.rules).encode())
    if method == "REPORT" or (method == "REPORT_IFSPAM" and mark.spam):
        return with_body(EX_OK, spam, marks.report(mark).encode("utf-8", "replace"))
    if method == "REPORT_IFSPAM":
        return answer(EX_OK, None, spam)
    out = marks.marked(marks.strip_spam_headers(raw) if strip else raw, mark)
    if method == "HEADERS":
        out = marks.header_section(out)
    return with_body(EX_OK, spam, out)


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Half-close and drain a request we answered without reading: closing a socket with
    unread input sends a reset, which can destroy the answer before the client reads it."""
    with contextlib.suppress(ConnectionError, TimeoutError, OSError):
        if writer.can_write_eof():
            writer.write_eof()
        async with asyncio.timeout(LINGER_S):
            while await reader.read(65536):
                pass


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(ConnectionError, TimeoutError):
        writer.write(data)
        await asyncio.wait_for(writer.drain(), 10.0)
