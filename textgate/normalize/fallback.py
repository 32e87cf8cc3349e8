"""Best effort: a message whose MIME structure is not trusted, read from its raw bytes."""

from __future__ import annotations

import base64
import re

from textgate.normalize.charsets import decode_bytes
from textgate.normalize.markup import read_html
from textgate.normalize.sender import sender_of
from textgate.normalize.settings import CharsetFallback, CountFn, Normalized, NormalizeSettings
from textgate.normalize.text import finish, too_large

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_SUBJECT = re.compile(rb"^subject[ \t]*:((?:[^\n]*\n[ \t])*[^\n]*)", re.I | re.M)
_FROM = re.compile(rb"^from[ \t]*:((?:[^\n]*\n[ \t])*[^\n]*)", re.I | re.M)
_HEADER_START = re.compile(rb"[!-9;-~]{1,200}[ \t]*:")
# Delimiter lines split the body into parts; the header fields a part opens with say how
# to read it. Structure, not text.
_DELIMITER = re.compile(rb"^--(?!>)[^\n]*(?:\n|\Z)", re.M)  # "-->" ends a comment
_PART_FIELDS = re.compile(rb"\A(?:[!-9;-~]{1,200}[ \t]*:[^\n]*\n(?:[ \t][^\n]*\n)*)+")
_CTE = re.compile(rb"^content-transfer-encoding[ \t]*:[ \t]*([a-z0-9-]{1,40})", re.I | re.M)
_TYPE = re.compile(rb"^content-type[ \t]*:[ \t]*([a-z0-9!#$&.+^_-]{1,80})/", re.I | re.M)
_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/]")
_BASE64_WORD = re.compile(rb"[A-Za-z0-9+/]+={0,2}")
# MIME fields of nested parts and forwarded messages: structure wherever they stand.
_MIME_FIELD = re.compile(
    rb"^(?:content-[a-z-]{1,40}|mime-version)[ \t]*:[^\n]*\n(?:[ \t][^\n]*\n)*", re.I | re.M
)
_BASE64_LINE = re.compile(rb"^[A-Za-z0-9+/]{40,}={0,2}\r?$\n?", re.M)
_QP_SOFT = re.compile(rb"=\r?\n")
_QP_BYTE = re.compile(rb"=([0-9A-Fa-f]{2})")
_ENCODED_WORD = re.compile(r"=\?([^?\s]{1,40})\?([bBqQ])\?([^?\s]{0,2000})\?=")
_LOOKS_HTML = re.compile(rb"<(?:[a-zA-Z][a-zA-Z0-9]{0,10}[\s/>]|!--)")
_MAX_SUBJECT = 2048


def best_effort(
    raw: bytes,
    settings: NormalizeSettings,
    count: CountFn | None = None,
    *,
    defects: tuple[str, ...] = (),
) -> Normalized:
    """Read a message whose structure is not trusted: Subject + body bytes as text.

    Linear regex passes over the raw bytes, no MIME parser: the body split at delimiter
    lines, each part decoded as its own fields declare (base64 text parts decoded, other
    base64 parts dropped as attachments, quoted-printable undone), bytes through the
    charset fallback chain, HTML read as a browser shows it. The text is
    cut at ``max_chars`` (noted) rather than refused: this path exists to give a verdict.
    """
    raw = bytes(raw)
    if len(raw) > settings.max_body_bytes:
        raise too_large("message", len(raw), settings.max_body_bytes, "max_body_bytes")
    # A lone CR is a line end to mail software: as LF, the line-anchored passes see it.
    raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if b"\r" in raw else raw
    head, body = _head_and_body(raw)
    subject = _raw_header(_SUBJECT, head)
    sender = _raw_header(_FROM, head)
    body = _body_text(head, body)
    text, used, replaced = decode_bytes(body, None)
    fallbacks = (
        [] if used == "utf-8" and not replaced else [CharsetFallback("body", None, used, replaced)]
    )
    domains: list[str] = []
    hidden = 0
    html = bool(_LOOKS_HTML.search(body))
    if html:
        text, domains, hidden = read_html(text)
        if settings.keep_link_domains and domains:
            text = f"{text} {' '.join(dict.fromkeys(domains))}"
    subject_text = _decode_words(decode_bytes(subject[:_MAX_SUBJECT], None)[0])
    # Whitespace is collapsed later anyway; collapse it first so only text counts.
    joined = " ".join(f"{subject_text}\n{text}".split())
    cut = len(joined) > settings.max_chars
    notes = {
        "charset_fallback": tuple(fallbacks),
        "html_converted": html,
        "link_domains": tuple(dict.fromkeys(domains)),
        "hidden_chars": hidden,
        "defects": tuple(dict.fromkeys((*defects, *(("best_effort_cut",) if cut else ())))),
        "best_effort": True,
        "sender": sender_of(decode_bytes(sender, None)[0]) if sender else None,
    }
    # cut=True: NFC can lengthen the text past max_chars again; a message is never refused
    return finish(
        joined[: settings.max_chars], settings, count, field="message", notes=notes, cut=True
    )


def _body_text(head: bytes, body: bytes) -> bytes:
    """The body's readable bytes: its parts, each decoded as its own fields declare."""
    last = b"" if _maintype(head) == b"multipart" else head
    out = []
    for i, part in enumerate(_DELIMITER.split(body)):
        fields = _PART_FIELDS.match(part) if i else None
        if fields:
            last = fields.group(0)
            out.append(_decoded(part[fields.end() :], last))
        else:
            # No fields of its own: a "--" line inside a part (a signature, a quoted
            # "-----Original Message-----"), so the text goes on as the part it is in.
            out.append(_decoded(part, last, inherited=i > 0))
    return b"\n".join(out)


def _decoded(part: bytes, fields: bytes, inherited: bool = False) -> bytes:
    cte = _CTE.search(fields)
    encoding = cte.group(1).lower() if cte else b""
    if encoding == b"base64" and inherited and not _looks_base64(part):
        encoding = b""  # a plain part after a base64 one, not the rest of it
    if encoding == b"base64":
        if _maintype(fields) not in (b"", b"text"):
            return b""  # an attachment
        data = _NOT_BASE64.sub(b"", part)
        try:
            return base64.b64decode(data[: len(data) // 4 * 4], validate=False)
        except ValueError:
            return b""
    if encoding == b"quoted-printable":
        return _QP_BYTE.sub(lambda m: bytes([int(m.group(1), 16)]), _QP_SOFT.sub(b"", part))
    # Undeclared: forwarded parts' MIME fields and base64 lines (attachments) out.
    return _BASE64_LINE.sub(b"", _MIME_FIELD.sub(b"", part))


def _looks_base64(part: bytes) -> bool:
    lines = part.split()
    return bool(lines) and sum(bool(_BASE64_WORD.fullmatch(x)) for x in lines) * 10 >= 9 * len(
        lines
    )


def _maintype(fields: bytes) -> bytes:
    found = _TYPE.search(fields)
    return found.group(1).lower() if found else b""


def _head_and_body(raw: bytes) -> tuple[bytes, bytes]:
    end = _HEAD_END.search(raw)
    if end is not None:
        return raw[: end.start()], raw[end.end() :]
    # No blank line: all header if it starts like one (a headers-only mail), else all body.
    return (raw, b"") if _HEADER_START.match(raw) else (b"", raw)


def _raw_header(pattern: re.Pattern[bytes], head: bytes) -> bytes:
    match = pattern.search(head)
    return b" ".join(match.group(1).split()) if match else b""


def _decode_words(text: str) -> str:
    """RFC 2047 encoded words (``=?utf-8?q?...?=``) in a raw header, by the same chain."""

    def one(match: re.Match[str]) -> str:
        charset, kind, data = match.group(1), match.group(2).lower(), match.group(3)
        try:
            if kind == "b":
                payload = base64.b64decode(data + "=" * (-len(data) % 4), validate=False)
            else:
                payload = _QP_BYTE.sub(
                    lambda m: bytes([int(m.group(1), 16)]), data.replace("_", " ").encode()
                )
        except (ValueError, UnicodeEncodeError):
            return match.group(0)
        return decode_bytes(payload, charset.split("*", 1)[0])[0]

    return _ENCODED_WORD.sub(one, text)
