"""Raw e-mail: guards, the MIME walk (subject + text parts, attachments skipped), and the
hand-over to ``best_effort`` when the structure cannot be trusted."""

from __future__ import annotations

import functools
import quopri
import re
from email.message import Message
from email.parser import BytesParser
from email.policy import EmailPolicy
from typing import Any

from textgate import guards, signals
from textgate.errors import (
    EmptyText,
    InputError,
    InvalidInput,
    MalformedMessage,
    MessageTooComplex,
    PayloadTooLarge,
)
from textgate.normalize.charsets import canonical, decode_bytes
from textgate.normalize.fallback import best_effort
from textgate.normalize.markup import read_html
from textgate.normalize.sender import sender_address
from textgate.normalize.settings import CharsetFallback, CountFn, Normalized, NormalizeSettings
from textgate.normalize.text import finish, has_surrogates, too_large

# Parts read as text; every other leaf part is an attachment: skipped and counted.
TEXT_TYPES = frozenset({"text/plain", "text/html"})


# Defects after which the part boundaries (and so the text) are guesses.
_FATAL_DEFECTS = frozenset(
    {
        "NoBoundaryInMultipartDefect",
        "StartBoundaryNotFoundDefect",
        "MultipartInvariantViolationDefect",
    }
)


class _ParsedOnce(EmailPolicy):
    """``email.policy.default`` that parses each header value once per message.

    The stdlib re-parses a header on every read, and reads Content-Type over and over
    (the feed parser per line of a multipart body, ``get_content_maintype`` and the walk
    after it): ~14 Content-Type parses a message, about half of ``normalize_email``.
    A header object is a function of (name, value) alone and read-only once made, so the
    per-message cache returns what a fresh parse would (failures are not cached). The
    cache is an ``lru_cache`` over the policy's own method: a hit adds no Python frame, so
    a deeply nested message meets the recursion limit where it did before. Values parsed
    from bytes are always ``str`` (hashable), the only kind a parsed message holds.
    """

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        parse = functools.partial(EmailPolicy.header_fetch_parse, self)
        # policies refuse attribute writes; this instance attribute shadows the method
        object.__setattr__(self, "header_fetch_parse", functools.lru_cache(maxsize=None)(parse))


def normalize_email(
    raw: bytes, settings: NormalizeSettings, count: CountFn | None = None
) -> Normalized:
    """Normalize a raw RFC 822 message: subject + text parts, attachments skipped."""
    if not isinstance(raw, bytes | bytearray):
        raise InvalidInput("must be bytes", field="message", reason="wrong_type")
    raw = bytes(raw)
    if len(raw) > settings.max_body_bytes:
        raise too_large("message", len(raw), settings.max_body_bytes, "max_body_bytes")
    if not raw.strip():
        raise EmptyText("the message is empty", field="message", reason="empty")
    tripped = guards.check(
        raw, max_header_bytes=settings.max_header_bytes, max_parts=settings.max_parts
    )
    if tripped:
        return best_effort(raw, settings, count, defects=tripped)
    try:
        message = BytesParser(policy=_ParsedOnce()).parsebytes(raw)  # one per message
        extracted = _Extraction(settings)
        text = extracted.run(message)
        notes = {**extracted.notes(), "sender": sender_address(message)}
        notes["symbols"] = extracted.symbols(message, text)
    except InputError as exc:  # the walk's own limits: structure unreadable or too big
        return best_effort(raw, settings, count, defects=(exc.reason,))
    except RecursionError:
        # The stdlib parser recurses per nested message/rfc822 and per nested comment.
        return best_effort(raw, settings, count, defects=("too_deep",))
    except Exception as exc:  # any stdlib parser/decoder failure on input
        # (LookupError, UnicodeError, ValueError ... from RFC 2231 charsets like
        # unicode-escape''): the input is strange, not the caller's fault to be refused.
        return best_effort(raw, settings, count, defects=(f"parse_error:{type(exc).__name__}",))
    try:
        return finish(text, settings, count, field="message", notes=notes, cut=True)
    except EmptyText:
        # No text where the parser looked (a message whose first line is not a header,
        # text in a part it took for structure): read the raw bytes before saying "empty".
        return best_effort(raw, settings, count, defects=("no_text_in_structure",))


class _Extraction:
    """One walk over a parsed message, iterative so depth never meets the stack limit."""

    def __init__(self, settings: NormalizeSettings) -> None:
        self.settings = settings
        self.texts: list[str] = []
        self.fallbacks: list[CharsetFallback] = []
        self.domains: list[str] = []
        self.defects: list[str] = []
        self.parts = 0
        self.attachments = 0
        self.html = False
        self.hidden_chars = 0

    def run(self, message: Message) -> str:
        # (part, depth, is a message: its Subject is text too — the top one, or forwarded)
        stack: list[tuple[Message, int, bool]] = [(message, 0, True)]
        while stack:
            part, depth, is_message = stack.pop()
            self.parts += 1
            if self.parts > self.settings.max_parts:
                raise MessageTooComplex(
                    f"more than {self.settings.max_parts} MIME parts (max_parts)",
                    field="message",
                    reason="too_many_parts",
                )
            self._check(part)
            if is_message and part.get("subject"):
                self.texts.append(self._header_text(str(part["subject"])))
            inner = part.get_content_type() == "message/rfc822"
            for child in reversed(self._children(part, depth)):
                stack.append((child, depth + 1, inner))
            self._leaf(part)
        return "\n".join(self.texts)

    def notes(self) -> dict[str, Any]:
        return {
            "charset_fallback": tuple(self.fallbacks),
            "html_converted": self.html,
            "attachments_skipped": self.attachments,
            "parts": self.parts,
            "link_domains": tuple(dict.fromkeys(self.domains)),
            "hidden_chars": self.hidden_chars,
            "defects": tuple(dict.fromkeys(self.defects)),
        }

    def symbols(self, message: Message, text: str) -> tuple[str, ...]:
        """The structure symbols of the whole message (``textgate.signals``)."""
        return signals.from_message(
            message,
            html=self.html,
            text_chars=len(text),
            hidden_chars=self.hidden_chars,
            link_domains=self.domains,
            defects=self.defects,
        )

    def _check(self, part: Message) -> None:
        size = 0
        for name, value in part.raw_items():  # long structured headers: textgate.guards
            size += len(name) + len(value)
        if size > self.settings.max_header_bytes:
            raise PayloadTooLarge(
                f"a part's headers are {size:,} long, over {self.settings.max_header_bytes:,}"
                " (max_header_bytes)",
                reason="max_header_bytes_exceeded",
                limit=self.settings.max_header_bytes,
            )
        names = [type(d).__name__ for d in part.defects]
        fatal = [n for n in names if n in _FATAL_DEFECTS]
        if fatal or (part.get_content_maintype() == "multipart" and not part.is_multipart()):
            raise MalformedMessage(
                f"MIME structure cannot be read ({', '.join(fatal) or 'multipart without parts'})",
                field="message",
                reason="malformed_mime",
            )
        self.defects.extend(names)

    def _children(self, part: Message, depth: int) -> list[Message]:
        if not part.is_multipart():
            return []
        if depth + 1 > self.settings.max_depth:
            raise MessageTooComplex(
                f"MIME nesting deeper than {self.settings.max_depth} (max_depth)",
                field="message",
                reason="too_deep",
            )
        children = [c for c in part.get_payload() if isinstance(c, Message)]
        if part.get_content_type() != "multipart/alternative":
            return children
        # RFC 2046: alternatives come in increasing faithfulness; read the last we can.
        readable = [c for c in children if c.get_content_type() in TEXT_TYPES or c.is_multipart()]
        self.parts += len(children) - len(readable[-1:])
        return readable[-1:]

    def _leaf(self, part: Message) -> None:
        if part.is_multipart():
            return
        attached = part.get_content_disposition() == "attachment"
        if attached or part.get_content_type() not in TEXT_TYPES:
            self.attachments += 1
            return
        self.texts.append(self._body_text(part))

    def _header_text(self, value: str) -> str:
        if not has_surrogates(value):
            return value
        # Raw 8-bit header bytes arrive as surrogate escapes: recover and decode them.
        try:
            data = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            data = value.encode("utf-8", "surrogatepass")
        text, used, replaced = decode_bytes(data, None)
        self.fallbacks.append(CharsetFallback("subject", None, used, replaced))
        return text

    def _body_text(self, part: Message) -> str:
        payload: Any = _qp_lone_cr(part)
        if payload is None:
            payload = part.get_payload(decode=True)
        data = payload if isinstance(payload, bytes) else b""
        declared = part.get_content_charset()
        text, used, replaced = decode_bytes(data, declared)
        # No charset means US-ASCII (RFC 2045): note only bytes that are not ASCII.
        expected = used == canonical(declared) or (declared is None and data.isascii())
        if replaced or not expected:
            where = f"part {self.parts}"
            self.fallbacks.append(CharsetFallback(where, declared, used, replaced))
        if part.get_content_type() == "text/html":
            self.html = True
            text, domains, hidden = read_html(text)
            self.domains.extend(domains)
            self.hidden_chars += hidden
            if self.settings.keep_link_domains:
                text = f"{text} {' '.join(dict.fromkeys(domains))}" if domains else text
        return text


_LONE_CR = re.compile(r"\r(?!\n)")


def _qp_lone_cr(part: Message) -> bytes | None:
    """A quoted-printable body with lone CR line ends, decoded with them as line ends
    (None: any other body). ``a2b_qp`` reads "=" + lone CR as a soft break running to the
    next LF, so the rest of the line, or of a CR-only message, would be lost unseen."""
    if part.get("content-transfer-encoding", "").strip().lower() != "quoted-printable":
        return None
    body = part.get_payload(decode=False)
    if not isinstance(body, str) or "\r" not in body:
        return None
    fixed = _LONE_CR.sub("\r\n", body)
    try:
        data = fixed.encode("ascii", "surrogateescape")
    except UnicodeEncodeError:
        data = fixed.encode("raw-unicode-escape")
    return quopri.decodestring(data)
