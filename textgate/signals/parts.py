"""The MIME parts of a message as the symbols need them: type, disposition, file names,
and the first ``MAX_HTML_CHARS`` of each HTML body.

Part headers are read raw (``raw_items``) and parsed here with short regexes: the stdlib's
header parser is slow on long hostile values and can raise, and a symbol needs only the
media type and a file name's extension.
"""

from __future__ import annotations

import binascii
import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass
from email.header import decode_header
from email.message import Message
from urllib.parse import unquote

MAX_PARTS = 500  # parts visited (the normalizer's own cap, max_parts, is 100 by default)
MAX_HTML_PARTS = 8  # HTML bodies scanned for links
MAX_HTML_CHARS = 65_536  # characters of one HTML body scanned
_RAW_CHARS = 90_000  # raw payload read: 64 KiB after base64, with its line ends
MAX_VALUE = 2000  # characters of one header value read

_EXECUTABLE = frozenset(
    {"exe", "scr", "com", "pif", "bat", "cmd", "js", "jse", "vbs", "vbe", "wsf", "hta", "msi"}
    | {"jar", "ps1", "lnk", "iso", "img"}
)
_EXECUTABLE_TYPES = frozenset(
    {"application/x-msdownload", "application/x-msdos-program", "application/x-dosexec"}
)
_ARCHIVE = frozenset({"zip", "rar", "7z", "gz", "tgz", "ace", "cab", "arj"})
_HTML = frozenset({"htm", "html", "shtml"})
_MACRO = frozenset({"docm", "xlsm", "pptm", "xlam"})

_TYPE = re.compile(r"\s*([\w!#$&^.+-]+/[\w!#$&^.+-]+)")
_DISPOSITION = re.compile(r"\s*([\w-]+)")
# name=, filename=, and the RFC 2231 forms name*=, filename*0=, filename*1*= ...
_NAME = re.compile(
    r"""\b(?:file)?name(\*\d{0,3})?(\*)?\s*=\s*(?:"((?:[^"\\]|\\.){0,500}+)"|([^;\s]{0,500}))""",
    re.I,
)
_CHARSET = re.compile(r"""\bcharset\s*=\s*"?([\w.:-]{1,40})""", re.I)
_NOT_BASE64 = re.compile(rb"[^A-Za-z0-9+/=]")


@dataclass(frozen=True)
class Leaf:
    """A part with no parts inside, as the symbols see it."""

    content_type: str  # lower case, "type/subtype"
    attachment: bool  # Content-Disposition: attachment
    extensions: frozenset[str]  # lower-case extensions of every file name it gives
    part: Message


def header_values(item: Message, names: frozenset[str]) -> dict[str, list[str]]:
    """The raw values of the headers named (lower case), each cut to ``MAX_VALUE``,
    unfolded and with raw 8-bit bytes decoded. Headers outside ``names`` are never looked
    at."""
    values: dict[str, list[str]] = {}
    for name, value in item.raw_items():
        key = str(name).strip().lower()
        if key in names:
            text = str(value)[:MAX_VALUE].replace("\r", "").replace("\n", "")
            values.setdefault(key, []).append(_unescaped(text))
    return values


def _unescaped(text: str) -> str:
    """``text`` with raw 8-bit header bytes (surrogate escapes from the bytes parser) read
    as UTF-8, as RFC 6532 mail writes them; undecodable bytes become U+FFFD."""
    return text if text.isascii() else _raw_bytes(text).decode("utf-8", "replace")


def _raw_bytes(text: str) -> bytes:
    """The bytes a parsed ``text`` came from: surrogate escapes back to 8-bit bytes."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no bytes parser made: U+FFFD once decoded
        return text.encode("utf-8", "surrogatepass")


def leaves(message: Message) -> Iterator[Leaf]:
    """The leaf parts in document order, at most ``MAX_PARTS`` parts visited."""
    stack = [message]
    visited = 0
    while stack and visited < MAX_PARTS:
        part = stack.pop()
        visited += 1
        if part.is_multipart():
            children = part.get_payload()
            if isinstance(children, list):
                stack.extend(c for c in reversed(children) if isinstance(c, Message))
            continue
        yield _leaf(part)


def _leaf(part: Message) -> Leaf:
    fields = header_values(
        part, frozenset({"content-type", "content-disposition", "content-transfer-encoding"})
    )
    content_type = _first(fields, "content-type")
    match = _TYPE.match(content_type)
    kind = match.group(1).lower() if match else part.get_default_type()
    disposition = _DISPOSITION.match(_first(fields, "content-disposition"))
    attached = disposition is not None and disposition.group(1).lower() == "attachment"
    named = f"{content_type};{_first(fields, 'content-disposition')}"
    return Leaf(kind, attached, frozenset(_extensions(named)), part)


def _first(fields: dict[str, list[str]], name: str) -> str:
    found = fields.get(name)
    return found[0] if found else ""


def _extensions(params: str) -> set[str]:
    """Extensions of every file name in ``params``: each plain one, and the RFC 2231
    sections joined in order (``filename*0="a.pd"; filename*1="f.exe"``)."""
    names: list[str] = []
    sections: list[str] = []
    for match in _NAME.finditer(params):
        value = match.group(3) if match.group(3) is not None else match.group(4)
        if match.group(2):  # charset'language'percent-encoded
            value = unquote(value.split("'", 2)[-1])
        (sections if match.group(1) else names).append(value)
    names.append("".join(sections))
    return {ext for ext in (_extension(decode_words(n)) for n in names) if ext}


def decode_words(name: str) -> str:
    """``name`` with its RFC 2047 encoded words decoded (as it is when they are broken)."""
    if "=?" not in name:
        return name
    try:
        words = decode_header(name)
    except Exception:  # HeaderParseError and the decoders' errors on hostile words
        return name
    return "".join(_text(d, c) if isinstance(d, bytes) else d for d, c in words)


def _text(data: bytes, charset: str | None) -> str:
    """``data`` decoded with ``charset``; UTF-8 when the name is unknown or its codec is
    not one from bytes to text (a hostile part may name rot13 or base64)."""
    try:
        codec = codecs.lookup(charset or "utf-8")
        if codec._is_text_encoding:  # type: ignore[attr-defined]
            return data.decode(codec.name, "replace")
    except (LookupError, UnicodeError, TypeError, ValueError):
        pass
    return data.decode("utf-8", "replace")


def _extension(name: str) -> str:
    # Windows drops trailing dots and spaces: "invoice.exe. " runs as invoice.exe.
    name = name.strip().strip("\"'").rstrip(". ")
    base, dot, ext = name.rpartition(".")
    return ext.lower() if dot and base else ""


def attachment_symbols(leaf: Leaf) -> set[str]:
    """The ATTACH_* symbols of one leaf (none for a body text part without a file name)."""
    fired: set[str] = set()
    exts = leaf.extensions
    if exts & _EXECUTABLE or leaf.content_type in _EXECUTABLE_TYPES:
        fired.add("ATTACH_EXECUTABLE")
    if exts & _ARCHIVE:
        fired.add("ATTACH_ARCHIVE")
    if exts & _HTML or (leaf.content_type == "text/html" and leaf.attachment):
        fired.add("ATTACH_HTML")
    if exts & _MACRO:
        fired.add("ATTACH_OFFICE_MACRO")
    return fired


def html_prefix(leaf: Leaf) -> str:
    """The first ``MAX_HTML_CHARS`` characters of an HTML part, decoded from a prefix of
    its raw payload (never the whole of a large body)."""
    body = leaf.part.get_payload(decode=False)
    if not isinstance(body, str):
        return ""
    data = _raw_bytes(body[:_RAW_CHARS])
    fields = header_values(leaf.part, frozenset({"content-transfer-encoding", "content-type"}))
    encoding = _first(fields, "content-transfer-encoding").strip().lower()
    try:
        if encoding == "base64":
            clean = _NOT_BASE64.sub(b"", data)
            data = binascii.a2b_base64(clean[: len(clean) // 4 * 4])
        elif encoding == "quoted-printable":
            data = binascii.a2b_qp(data)
    except (binascii.Error, ValueError):
        return ""
    charset = _CHARSET.search(_first(fields, "content-type"))
    return _text(data, charset.group(1) if charset else None)[:MAX_HTML_CHARS]
