"""Byte-level caps before any parser: every hostile case is read without the stdlib parser
walking into it, and every boundary spelling is counted."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from textgate import guards, normalize
from textgate.normalize import NormalizeSettings, normalize_email

DEFAULT = NormalizeSettings()
GENERATOR = Path(__file__).resolve().parents[1] / "data" / "hostile" / "generate.py"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hostile_generate", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOSTILE: dict[str, bytes] = _generator().cases()
# Cases the parser can read safely; its own checks (or the decoders) decide.
PARSED = {
    "from_nested_comments_800",
    "charset_unicode_escape",
    "charset_idna",
    "filename_unicode_escape",
    "subject_encoded_unicode_escape",
    "malformed_no_boundary",
}


def check(raw: bytes) -> tuple[str, ...]:
    return guards.check(raw, max_header_bytes=DEFAULT.max_header_bytes, max_parts=DEFAULT.max_parts)


@pytest.mark.parametrize("name", sorted(set(HOSTILE) - PARSED))
def test_hostile_structure_never_reaches_the_parser(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the MIME parser ran on a message a guard should stop")

    monkeypatch.setattr(normalize.mime, "BytesParser", refuse)
    raw = HOSTILE[name]
    assert check(raw), name
    result = normalize_email(raw, DEFAULT)
    assert result.notes.best_effort and set(check(raw)) <= set(result.notes.defects)
    assert "you won a prize" in result.text  # the subject is still read


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_every_hostile_case_gets_text_and_a_sender_or_none(name: str) -> None:
    result = normalize_email(HOSTILE[name], DEFAULT)
    assert result.text and result.pieces
    assert result == normalize_email(HOSTILE[name], DEFAULT)  # deterministic
    assert result.notes.sender in (None, "attacker@example.com", "a@example.com")


def test_nested_comments_in_from_do_not_hide_the_sender() -> None:
    result = normalize_email(HOSTILE["from_nested_comments_800"], DEFAULT)
    assert result.notes.sender == "a@example.com" and not result.notes.best_effort


def test_ordinary_mail_trips_nothing() -> None:
    fixtures = Path(__file__).resolve().parents[1] / "data" / "email"
    mails = sorted(fixtures.glob("*.eml"))
    assert mails
    for path in mails:
        assert check(path.read_bytes()) == (), path.name


@pytest.mark.parametrize(
    ("declaration", "want"),
    [
        (b"boundary=abc", {b"abc"}),
        (b'boundary="a b;c"', {b"a b;c"}),
        (b'boundary="a\\"b\\\\c"', {b'a"b\\c'}),
        (b"boundary*=us-ascii'en'a%20b", {b"a b"}),
        (b"boundary*=''zz", {b"zz"}),
        (b"BOUNDARY = x", {b"x"}),
        (b"boundary*0=a; boundary*1=b", None),
        (b"boundary*0*=utf-8''a; boundary*1=b", None),
        # the stdlib decodes these to other bytes than the raw ones (found by fuzzing:
        # exact counting missed every delimiter, so 300-deep nesting went through)
        (b'boundary="=?us-ascii?q?zz?="', None),
        (b"boundary*=utf-16le''z%00z%00", None),
        (b"boundary*=utf-7''+AHoAeg-", None),
        (b'boundary="zz\x0c"', None),
        (b"boundary*=utf-8''zz", {b"zz"}),
    ],
)
def test_every_boundary_spelling_is_resolved_or_conservative(
    declaration: bytes, want: set[bytes] | None
) -> None:
    raw = b"Content-Type: multipart/mixed; " + declaration + b"\r\n\r\n"
    assert guards.boundaries(raw) == want


@pytest.mark.parametrize(
    "declaration",
    [
        b"boundary=zz",
        b'boundary="zz"',
        b"boundary*=''zz",
        b'boundary="z\\z"',
        b"boundary*0=zz",
        b'boundary="=?us-ascii?q?zz?="',
        b"boundary*=utf-16le''z%00z%00",
        b'boundary="zz\x0c"',
    ],
)
def test_delimiters_are_counted_under_every_spelling(declaration: bytes) -> None:
    def mail(n: int) -> bytes:
        part = b"--zz\r\nContent-Type: text/plain\r\n\r\nhi\r\n"
        return b"Content-Type: multipart/mixed; " + declaration + b"\r\n\r\n" + part * n + b"--zz--"

    assert "too_many_parts" not in check(mail(40))
    # Exactly resolved spellings trip at max_parts; the others count every "--" line.
    assert "too_many_parts" in check(mail(2 * DEFAULT.max_parts + 3))
    if guards.boundaries(b"Content-Type: multipart/mixed; " + declaration + b"\r\n") is not None:
        assert "too_many_parts" in check(mail(DEFAULT.max_parts))


def test_dash_lines_that_are_not_delimiters_do_not_count() -> None:
    signature = b"-- \r\nme\r\n" + b"-----\r\n" * 500
    raw = b"Content-Type: multipart/mixed; boundary=zz\r\n\r\n--zz\r\n\r\n" + signature + b"--zz--"
    assert check(raw) == ()


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (
            b"Content-Type: text/plain; " + b"a=b; " * (guards.MAX_PARAMETERS + 1),
            "too_many_parameters",
        ),
        (b"Content-Type: text/plain " + b"(x)" * (guards.MAX_COMMENTS + 1), "too_many_comments"),
        (
            b"Content-Type: text/plain; "
            + b"".join(b"n*%d=a; " % i for i in range(guards.MAX_CONTINUATIONS + 1)),
            "too_many_continuations",
        ),
        (b"Content-Type: text/plain; x=" + b"y" * guards.MAX_STRUCTURED_HEADER, "header_too_long"),
        (b"Subject: " + b"y" * guards.MAX_HEADER, "header_too_long"),
        (b"Content-Disposition: inline\r\n " + b"(x)" * 20, "too_many_comments"),  # folded
    ],
)
def test_each_cap_trips_with_its_code(header: bytes, code: str) -> None:
    assert code in check(header + b"\r\n\r\nbody")


def test_caps_just_under_the_limits_trip_nothing() -> None:
    header = b"Content-Type: text/plain; " + b"a=b; " * (guards.MAX_PARAMETERS - 1)
    assert check(header + b"\r\n\r\nbody") == ()
    assert check(b"Subject: x\r\n\r\n" + b"line\n" * (guards.MAX_LINES - 10)) == ()
    assert "too_many_lines" in check(b"Subject: x\r\n\r\n" + b"\n" * (guards.MAX_LINES + 1))


def test_bare_cr_line_ends_are_scanned_as_the_parser_reads_them() -> None:
    inner = b"Content-Type: text/plain " + b"(x)" * 100
    raw = (
        b"Subject: x\rContent-Type: multipart/mixed; boundary=b\r\r--b\r" + inner + b"\r\rhi\r--b--"
    )
    assert "too_many_comments" in check(raw)
