"""Cheap byte-level caps on a raw message, run before any MIME parser sees it.

The stdlib parser is superlinear in a header's parameters, comments and RFC 2231
continuations, and builds one object per part before anyone can count them. Every check
here is one regex scan or a count over the raw bytes (linear, in C), so a 1 MiB message
costs milliseconds whatever it holds. A check that trips does not refuse the message: the
caller reads it with the best-effort text path instead and lists the codes as defects.

The scans are conservative: they look at every line that could start a header, in any
part, including lines of a body that only look like headers. Over-counting sends a
strange-but-honest message to the best-effort path; under-counting would let a parse run
away, so every boundary spelling (``boundary=``, quoted with escapes, ``boundary*=``,
``boundary*0=``) is either resolved exactly or makes the delimiter count fall back to
every line that starts with ``--``.
"""

from __future__ import annotations

import re
from urllib.parse import unquote_to_bytes

# Content-Type / -Disposition / -Transfer-Encoding: what the parser itself tokenizes.
MAX_STRUCTURED_HEADER = 4096  # characters of one unfolded structured header
MAX_PARAMETERS = 64  # ';' in one structured header
MAX_COMMENTS = 16  # '(' in one structured header
MAX_CONTINUATIONS = 32  # RFC 2231 'name*N' sections in one structured header
MAX_HEADER = 16_384  # any single unfolded header field
MAX_LINES = 100_000  # a 1 MiB mail of 76-character lines has ~14k

_STRUCTURED = re.compile(
    rb"^(?:content-type|content-disposition|content-transfer-encoding)[ \t]*:"
    rb"((?:[^\n]*\n[ \t])*[^\n]*)",
    re.I | re.M,
)
# Any header-looking field with its folded continuation lines.
_FIELD = re.compile(rb"^[!-9;-~]{1,200}[ \t]*:((?:[^\n]*\n[ \t])*[^\n]*)", re.M)
_BLANK = re.compile(rb"\r?\n\r?\n")
_CONTINUATION = re.compile(rb"\*[ \t]*[0-9]")
_DASH_LINE = re.compile(rb"^--([^\r\n]*)", re.M)
# boundary= or boundary*= followed by a quoted string (escapes allowed) or a token.
_BOUNDARY = re.compile(
    rb'boundary[ \t]*(\*?)[ \t]*=[ \t]*(?:"((?:[^"\\\r\n]|\\[^\r\n]){0,200})"|([^\s;"]{1,200}))',
    re.I,
)
_SECTIONED = re.compile(rb"boundary[ \t]*\*[ \t]*[0-9]", re.I)
_ESCAPE = re.compile(rb"\\(.)")
_PLAIN_CHARSETS = frozenset({b"", b"us-ascii", b"ascii", b"utf-8", b"utf8"})
_NOT_PRINTABLE = re.compile(rb"[^\x20-\x7e]")


def check(raw: bytes, *, max_header_bytes: int, max_parts: int) -> tuple[str, ...]:
    """The caps ``raw`` trips, as stable codes; empty when a parser may read it."""
    # The stdlib parser also ends lines at a bare CR: scan what it will see.
    raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    tripped: list[str] = []
    if raw.count(b"\n") > MAX_LINES:
        tripped.append("too_many_lines")
    blank = _BLANK.search(raw, 0, max_header_bytes + 4)
    if blank is None and len(raw) > max_header_bytes:
        tripped.append("header_block_too_long")
    # Unstructured fields are only read in the top block (a body line may look like one).
    head = raw[: blank.start()] if blank else raw[:max_header_bytes]
    for match in _FIELD.finditer(head):
        if len(match.group(1)) > MAX_HEADER:
            tripped.append("header_too_long")
            break
    tripped.extend(_structured(raw, max_parts))
    if _too_many_delimiters(raw, max_parts):
        tripped.append("too_many_parts")
    return tuple(dict.fromkeys(tripped))


def _structured(raw: bytes, max_parts: int) -> list[str]:
    tripped: list[str] = []
    count = 0
    for match in _STRUCTURED.finditer(raw):
        count += 1
        value = match.group(1)
        if len(value) > MAX_STRUCTURED_HEADER:
            tripped.append("header_too_long")
        if value.count(b";") > MAX_PARAMETERS:
            tripped.append("too_many_parameters")
        if value.count(b"(") > MAX_COMMENTS:
            tripped.append("too_many_comments")
        if len(_CONTINUATION.findall(value)) > MAX_CONTINUATIONS:
            tripped.append("too_many_continuations")
    # Each part has at most one of each structured header; three per part is a bound.
    if count > 3 * (max_parts + 1):
        tripped.append("too_many_parts")
    return tripped


def boundaries(raw: bytes) -> set[bytes] | None:
    """Every declared boundary value, or None when one cannot be resolved exactly
    (RFC 2231 sections ``boundary*0=``): then only a conservative count is safe."""
    if _SECTIONED.search(raw):
        return None
    found: set[bytes] = set()
    for star, quoted, token in _BOUNDARY.findall(raw):
        value = _ESCAPE.sub(rb"\1", quoted) if quoted or not token else token
        if star:  # RFC 2231 extended value: charset'language'percent-encoded
            charset = value.split(b"'", 1)[0].lower() if value.count(b"'") >= 2 else b""
            if charset not in _PLAIN_CHARSETS:
                return None  # the stdlib decodes it by that charset: not these bytes
            value = unquote_to_bytes(value.split(b"'", 2)[-1])
        if b"=?" in value or _NOT_PRINTABLE.search(value.rstrip(b" \t")):
            # an encoded word the stdlib decodes, or a control byte it strips: the
            # delimiter lines it looks for are not these bytes
            return None
        found.add(value.rstrip(b" \t"))
    return found


def _too_many_delimiters(raw: bytes, max_parts: int) -> bool:
    """More parts than ``max_parts``, counted on delimiter lines before any parse.

    Every part starts at a line ``--boundary``: the lines that match a declared boundary
    bound the parts the parser would build. Unresolvable boundaries: every ``--`` line
    counts, with room for a close per multipart.
    """
    bound = 2 * max_parts + 2
    lines = [m.group(1).rstrip(b" \t") for m in _DASH_LINE.finditer(raw)]
    if len(lines) + 1 <= max_parts:
        return False
    declared = boundaries(raw)
    if declared is None:
        return len(lines) > bound
    # Exactly resolved: every opening delimiter is one part (the top one is a part too).
    opens = sum(1 for x in lines if x in declared)
    return opens + 1 > max_parts
