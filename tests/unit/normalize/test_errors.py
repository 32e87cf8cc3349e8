"""Every error branch of normalize, walked: each ``raise`` and each fallback handler in
``textgate/normalize/`` is reached by a case below, and each ends as a 4xx or a verdict.

The branch list is read from the package's syntax trees, so a new ``raise`` without a case
here fails this test instead of becoming an untested 500.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from textgate import normalize
from textgate.errors import InputError
from textgate.gateway.http.http_errors import status_of
from textgate.normalize import (
    NormalizeSettings,
    best_effort,
    decode_utf8,
    normalize_email,
    normalize_text,
)

SOURCES = sorted(Path(normalize.__file__).parent.glob("*.py"))
DEFAULT = NormalizeSettings()
SMALL = NormalizeSettings(max_parts=3, max_chars=50)
# Limits high enough that only the stdlib parser's own recursion stops a deep message.
UNBOUNDED = NormalizeSettings(max_parts=100_000, max_depth=100_000)


def _rfc822(depth: int) -> bytes:
    return b"Subject: f\r\nContent-Type: message/rfc822\r\n\r\n" * depth + b"Subject: s\r\n\r\nx"


def _nested(depth: int) -> bytes:
    head = b"".join(
        b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (k, k)
        for k in range(depth)
    )
    return b"Subject: deep\r\n" + head + b"Content-Type: text/plain\r\n\r\nhello"


BIG_PART_HEAD = (
    b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n"
    + b"".join(b"X-F%d: %s\r\n" % (i, b"v" * 900) for i in range(80))
    + b"\r\nhi\r\n--b--"
)

# (name, call, expected: a 4xx status or "verdict")
CASES: list[tuple[str, Callable[[], Any], int | str]] = [
    ("text wrong type", lambda: normalize_text(b"x", DEFAULT), 422),  # type: ignore[arg-type]
    ("text too large", lambda: normalize_text("a" * (DEFAULT.max_body_bytes + 1), DEFAULT), 413),
    ("text surrogate", lambda: normalize_text("\ud800", DEFAULT), 422),
    ("text empty", lambda: normalize_text(" \x00 ", DEFAULT), 422),
    ("text over max_chars", lambda: normalize_text("word " * 100, SMALL), 413),
    ("mail wrong type", lambda: normalize_email("x", DEFAULT), 422),  # type: ignore[arg-type]
    ("mail too large", lambda: normalize_email(b"a" * (DEFAULT.max_body_bytes + 1), DEFAULT), 413),
    ("mail empty", lambda: normalize_email(b" \r\n", DEFAULT), 422),
    ("utf-8 invalid", lambda: decode_utf8(b"\xff"), 422),
    (
        "guard tripped",
        lambda: normalize_email(b"Subject: x\r\n\r\n" + b"\n" * 200_000, DEFAULT),
        "verdict",
    ),
    ("walk too many parts", lambda: normalize_email(_rfc822(5), SMALL), "verdict"),
    ("walk part headers too big", lambda: normalize_email(BIG_PART_HEAD, DEFAULT), "verdict"),
    (
        "walk malformed mime",
        lambda: normalize_email(b"Content-Type: multipart/mixed\r\n\r\nx", DEFAULT),
        "verdict",
    ),
    ("walk too deep", lambda: normalize_email(_nested(DEFAULT.max_depth + 2), DEFAULT), "verdict"),
    (
        "parser recursion",
        lambda: normalize_email(_rfc822(1000), UNBOUNDED),
        "verdict",
    ),
    (
        "decoder error",
        lambda: normalize_email(b"Content-Type: text/plain; charset*=idna''x\r\n\r\nhi", DEFAULT),
        "verdict",
    ),
    (
        # the parser reads the tab-led first line as a header and finds no text
        "mail whose first line is no header",
        lambda: normalize_email(b"\tverify your account at http://x.example now\n", DEFAULT),
        "verdict",
    ),
    (
        "best effort too large",
        lambda: best_effort(b"a" * (DEFAULT.max_body_bytes + 1), DEFAULT),
        413,
    ),
]


def _branches() -> dict[tuple[str, int], str]:
    """(file, line) -> description of every ``raise`` and ``except`` body in the normalize
    package (the settings validation, ConfigError, is a config path, not input)."""
    out: dict[tuple[str, int], str] = {}
    for source in SOURCES:
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Raise) and "ConfigError" not in ast.unparse(node):
                out[(source.name, node.lineno)] = ast.unparse(node)[:60]
            elif isinstance(node, ast.ExceptHandler) and _answers(node):
                what = f"except {ast.unparse(node.type) if node.type else ''}"
                out[(source.name, node.body[0].lineno)] = what
    return out


def _answers(handler: ast.ExceptHandler) -> bool:
    """A handler that turns an error into an answer (a raise or the best-effort path);
    the others tolerate a detail (a bad charset name) and carry on."""
    body = ast.unparse(ast.Module(body=handler.body, type_ignores=[]))
    return "raise" in body or "best_effort(" in body


def _run_traced(call: Callable[[], Any]) -> tuple[Any, set[tuple[str, int]]]:
    lines: set[tuple[str, int]] = set()
    targets = {str(source): source.name for source in SOURCES}

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        name = targets.get(frame.f_code.co_filename)
        if name is None:
            return None
        if event == "line":
            lines.add((name, frame.f_lineno))
        return tracer

    sys.settrace(tracer)
    try:
        try:
            result: Any = call()
        except InputError as exc:
            result = exc
    finally:
        sys.settrace(None)
    return result, lines


def test_every_error_branch_of_normalize_is_walked_and_answers_4xx_or_a_verdict() -> None:
    seen: set[tuple[str, int]] = set()
    for name, call, expected in CASES:
        result, lines = _run_traced(call)
        seen |= lines
        if expected == "verdict":
            assert isinstance(result, normalize.Normalized), (name, result)
            assert result.notes.best_effort and result.notes.defects, name
        else:
            assert isinstance(result, InputError), (name, result)
            assert status_of(result) == expected, (name, status_of(result))
            assert result.reason and result.message, name
    missing = {line: what for line, what in _branches().items() if line not in seen}
    assert not missing, f"branches of textgate/normalize/ no case reaches: {missing}"


@pytest.mark.parametrize(("name", "call", "expected"), CASES, ids=[c[0] for c in CASES])
def test_each_case_alone(name: str, call: Callable[[], Any], expected: int | str) -> None:
    if expected == "verdict":
        assert call().notes.best_effort
    else:
        with pytest.raises(InputError) as err:
            call()
        assert status_of(err.value) == expected


def test_mail_over_max_chars_is_cut_and_says_so_where_text_is_refused() -> None:
    """A message gets a verdict within ``max_body_bytes``; a JSON text over ``max_chars``
    is the caller's to shorten (413)."""
    got = normalize_email(b"Subject: s\r\n\r\n" + b"word " * 100, SMALL)
    assert len(got.text) <= SMALL.max_chars and got.text.startswith("s word")
    assert got.notes.defects == ("text_cut",) and not got.notes.best_effort
    with pytest.raises(InputError) as err:
        normalize_text("word " * 100, SMALL)
    assert status_of(err.value) == 413
