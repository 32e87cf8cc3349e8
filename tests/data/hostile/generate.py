"""The hostile-mail corpus: every message that stalled, fooled or crashed the gateway.

Generated, not committed as bytes (several are near 1 MiB): tests import ``cases()``; to
look at them as files, ``python tests/data/hostile/generate.py OUTDIR`` writes one ``.eml``
per case. Each case is at most 1 MiB (the default ``max_body_bytes``), so each must get a
verdict (or a 4xx), in bounded time, never a 500 or a stalled event loop (issue 10).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

LIMIT = 1_048_576
HEAD = b"From: attacker@example.com\r\nSubject: you won a prize\r\nMIME-Version: 1.0\r\n"
BODY = b"\r\n\r\nclaim your free money now\r\n"


def _ct(value: bytes, body: bytes = BODY) -> bytes:
    return HEAD + b"Content-Type: " + value + body


def _parts(declaration: bytes, boundary: bytes, n: int) -> bytes:
    part = b"--" + boundary + b"\r\nContent-Type: text/plain\r\n\r\nfree money\r\n"
    return (
        HEAD
        + b"Content-Type: multipart/mixed; "
        + declaration
        + b"\r\n\r\n"
        + part * n
        + b"--"
        + boundary
        + b"--\r\n"
    )


def _nested_multipart(depth: int) -> bytes:
    head = b"".join(
        b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (k, k)
        for k in range(depth)
    )
    tail = b"".join(b"\r\n--b%d--\r\n" % k for k in reversed(range(depth)))
    return HEAD + head + b"Content-Type: text/plain\r\n\r\nfree money" + tail


def _continuations(n: int) -> bytes:
    return b"text/plain; " + b"".join(b"name*%d*=utf-8''a%%41; " % i for i in range(n))


CASES: dict[str, Callable[[], bytes]] = {
    # Content-Type parsing is superlinear in comments, parameters and continuations.
    "comments_10k": lambda: _ct(b"text/plain " + b"(c)" * 10_000),
    "comments_100k": lambda: _ct(b"text/plain " + b"(c)" * 100_000),
    "nested_comments_3k": lambda: _ct(b"text/plain " + b"(" * 3_000),
    "semicolons_in_quoted_boundary": lambda: _ct(
        b'multipart/mixed; boundary="' + b";" * 300_000 + b'"'
    ),
    "parameters_30k": lambda: _ct(b"text/plain; " + b"a=b; " * 30_000),
    "continuations_400": lambda: _ct(_continuations(400)),
    "long_content_type_14285": lambda: _ct(b"text/html; x=" + b"y" * 14_285, b"\r\n\r\n<p>win</p>"),
    # Part counts under every boundary spelling.
    "parts_boundary_plain": lambda: _parts(b"boundary=zz", b"zz", 20_000),
    "parts_boundary_star": lambda: _parts(b"boundary*=us-ascii''zz", b"zz", 20_000),
    "parts_boundary_sections": lambda: _parts(b"boundary*0=z; boundary*1=z", b"zz", 20_000),
    "parts_boundary_escaped": lambda: _parts(b'boundary="z\\z"', b"zz", 20_000),
    "parts_short_80k": lambda: (
        HEAD
        + b"Content-Type: multipart/mixed; boundary*=''q\r\n\r\n"
        + b"--q\r\n\r\nx\r\n" * 80_000
    ),
    "nested_multipart_2000": lambda: _nested_multipart(2_000),
    "nested_rfc822_2000": lambda: (
        HEAD + b"Content-Type: message/rfc822\r\n\r\n" * 2_000 + b"Subject: s\r\n\r\nfree money"
    ),
    # Decoders and address parsing that raised instead of answering.
    "from_nested_comments_800": lambda: (
        b"From: "
        + b"(" * 800
        + b"a"
        + b")" * 800
        + b" <a@example.com>\r\n"
        + HEAD.split(b"\r\n", 1)[1]
        + BODY
    ),
    "charset_unicode_escape": lambda: _ct(b"text/plain; charset*=unicode-escape''%5Cx"),
    "charset_idna": lambda: _ct(b"text/plain; charset*=idna''x"),
    "filename_unicode_escape": lambda: (
        HEAD
        + b"Content-Type: text/plain\r\n"
        + b"Content-Disposition: attachment; filename*=unicode-escape''%5Cud800"
        + BODY
    ),
    "subject_encoded_unicode_escape": lambda: (
        b"Subject: =?unicode-escape?q?\\ud800?=\r\n" + HEAD.split(b"\r\n", 1)[0] + BODY
    ),
    # Size and shape of the header block and the line count.
    "header_block_1mib": lambda: HEAD + b"X-Filler: " + b"a" * (LIMIT - 200),
    "header_lines_30k": lambda: HEAD + b"".join(b"X-H%d: v\r\n" % i for i in range(30_000)) + BODY,
    "blank_lines_500k": lambda: HEAD + BODY + b"\r\n" * 500_000,
    "malformed_no_boundary": lambda: _ct(b"multipart/mixed", b"\r\n\r\n--\r\nno boundary\r\n"),
}


def cases() -> dict[str, bytes]:
    out = {name: make() for name, make in CASES.items()}
    over = [name for name, raw in out.items() if len(raw) > LIMIT]
    assert not over, f"cases over max_body_bytes: {over}"
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: generate.py OUTDIR", file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, raw in cases().items():
        (out / f"{name}.eml").write_bytes(raw)
    print(f"{len(CASES)} cases written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
