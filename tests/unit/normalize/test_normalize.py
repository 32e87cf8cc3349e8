"""E-mail and text normalization: real messages, wrong charsets, hostile inputs, long text."""

from __future__ import annotations

import base64
import contextlib
import itertools
import sysconfig
from pathlib import Path

import pytest

from textgate.errors import (
    ConfigError,
    EmptyText,
    InputError,
    InvalidInput,
    PayloadTooLarge,
)
from textgate.normalize import (
    Normalized,
    NormalizeSettings,
    decode_bytes,
    decode_utf8,
    html_to_text,
    normalize_email,
    normalize_text,
    split_long,
)
from textgate.normalize.fallback import best_effort

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "email"
CPYTHON_DATA = Path(sysconfig.get_path("stdlib")) / "test" / "test_email" / "data"
DEFAULT = NormalizeSettings()


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def cpython_messages() -> list[Path]:
    return sorted(CPYTHON_DATA.glob("msg_*.txt")) if CPYTHON_DATA.is_dir() else []


# --- real messages --------------------------------------------------------------------------


@pytest.mark.skipif(
    not CPYTHON_DATA.is_dir(),
    reason=f"CPython's e-mail test messages are absent ({CPYTHON_DATA}); "
    "install the Debian package libpython3.11-testsuite",
)
def test_cpython_test_messages_all_get_text_malformed_ones_best_effort() -> None:
    outcomes: dict[str, str] = {}
    for path in cpython_messages():
        try:
            result = normalize_email(path.read_bytes(), DEFAULT)
        except InputError as exc:  # only "nothing to classify" may remain a refusal
            assert isinstance(exc, EmptyText), (path.name, exc)
            outcomes[path.name] = "empty"
        else:
            assert result.text and result.text == " ".join(result.text.split())
            outcomes[path.name] = "best_effort" if result.notes.best_effort else "ok"
    assert len(outcomes) >= 40
    assert sum(v == "ok" for v in outcomes.values()) >= 35, outcomes
    # msg_15: a nested part reuses its parent's boundary; msg_25: multipart without one.
    # Refused before (issue 9 §4); now a verdict from the raw text, flagged for the policy.
    assert outcomes["msg_15.txt"] == outcomes["msg_25.txt"] == "best_effort"
    msg_15 = normalize_email((CPYTHON_DATA / "msg_15.txt").read_bytes(), DEFAULT)
    assert msg_15.notes.defects == ("malformed_mime",)


@pytest.mark.skipif(not CPYTHON_DATA.is_dir(), reason="libpython3.11-testsuite not installed")
def test_cpython_message_with_attachment_and_forward() -> None:
    fish = normalize_email((CPYTHON_DATA / "msg_07.txt").read_bytes(), DEFAULT)
    assert fish.text.startswith("Here is your dingus fish Hi there")
    assert fish.notes.attachments_skipped == 1  # the image/gif
    enclosed = normalize_email((CPYTHON_DATA / "msg_11.txt").read_bytes(), DEFAULT)
    assert "An enclosed message" in enclosed.text  # the rfc822 part's own Subject


def test_multipart_alternative_reads_the_last_alternative() -> None:
    result = normalize_email(fixture("alternative.eml"), DEFAULT)
    assert result.text == (
        "Parcel waiting Your parcel is waiting – confirm the delivery fee of €1.99 here. "
        "Café hours are 9–5. parcel-fees.example"
    )
    notes = result.notes
    assert notes.html_converted and notes.link_domains == ("parcel-fees.example",)
    assert notes.parts == 3 and notes.attachments_skipped == 0 and not notes.truncated


def test_quoted_printable_soft_breaks_and_accents() -> None:
    result = normalize_email(fixture("quoted_printable.eml"), DEFAULT)
    assert "cover résumé uploads, naïve pricing and the über-plan. Regards, The team" in (
        result.text
    )
    assert result.notes.charset_fallback == ()


def test_base64_emoji_and_mixed_scripts() -> None:
    result = normalize_email(fixture("base64_utf8.eml"), DEFAULT)
    # The full-width comma of 你好，世界 is folded to ASCII (fold_width, on by default).
    assert result.text == (
        "Grüße 🎉 Happy birthday! 🎉🎂 Привет, мир. مرحبا بالعالم. 你好,世界。 Ελληνικά."
    )


@pytest.mark.parametrize(
    ("name", "declared", "used", "expected"),
    [
        ("ascii_but_latin1.eml", "us-ascii", "cp1252", "Today: crème brûlée and café au lait."),
        ("ascii_but_utf8.eml", "us-ascii", "utf-8", "Today: crème brûlée and café au lait 🍮."),
        ("utf8_but_cp1252.eml", "utf-8", "cp1252", "He said “win €500 now” — don’t."),
        ("chinese_gbk.eml", "gb2312", "gb18030", "陶喆演唱会门票八折优惠"),
    ],
)
def test_wrong_declared_charset_falls_back_and_says_so(
    name: str, declared: str, used: str, expected: str
) -> None:
    result = normalize_email(fixture(name), DEFAULT)
    assert expected in result.text
    (fallback,) = result.notes.charset_fallback
    assert (fallback.declared, fallback.used, fallback.replaced) == (declared, used, False)


def test_chinese_subject_in_encoded_words() -> None:
    # 您好！: the full-width ! is folded (fold_width).
    assert normalize_email(fixture("chinese_gbk.eml"), DEFAULT).text.startswith("优惠通知 您好!")


def test_html_only_drops_hidden_content_and_keeps_link_domains() -> None:
    result = normalize_email(fixture("html_only.eml"), DEFAULT)
    assert result.text == (
        "You have won Congratulations! You have won a free cruise & a prize worth £1000. "
        "Claim now Unsubscribe: mail us Grüße claim.prize.example"
    )
    for hidden in ("Prize", "var x", "hidden", "display", "template text", "comment"):
        assert hidden not in result.text
    no_domains = normalize_email(
        fixture("html_only.eml"), NormalizeSettings(keep_link_domains=False)
    )
    assert no_domains.text.endswith("Grüße")
    assert no_domains.notes.link_domains == ("claim.prize.example",)


def test_nested_rfc822_includes_the_forwarded_subject_and_body() -> None:
    result = normalize_email(fixture("nested_rfc822.eml"), DEFAULT)
    assert result.text == (
        "Fwd: Quarterly numbers See below. "
        "Quarterly numbers Revenue grew eight percent this quarter."
    )
    assert result.notes.parts == 4


def test_attachments_are_skipped_and_counted() -> None:
    result = normalize_email(fixture("attachments.eml"), DEFAULT)
    assert result.text == "Invoice attached Please find the invoice attached."
    assert result.notes.attachments_skipped == 3  # pdf, text/plain attachment, calendar


# Messages whose declared charsets are right: a mail client shows exactly this text.
@pytest.mark.parametrize("name", ["quoted_printable.eml", "base64_utf8.eml", "long.eml"])
def test_raw_message_and_its_extracted_text_normalize_the_same(name: str) -> None:
    import email
    from email import policy

    message = email.message_from_bytes(fixture(name), policy=policy.default)
    body = message.get_body(preferencelist=("plain",))
    assert body is not None
    extracted = f"{message['subject']}\n{body.get_content()}"
    for choice in (DEFAULT, NormalizeSettings(long_text="chunk")):
        raw, text = normalize_email(fixture(name), choice), normalize_text(extracted, choice)
        assert (raw.text, raw.pieces) == (text.text, text.pieces)


def test_crlf_and_lf_line_endings_give_the_same_text() -> None:
    crlf = fixture("quoted_printable.eml")
    assert (
        normalize_email(crlf, DEFAULT).text
        == normalize_email(crlf.replace(b"\r\n", b"\n"), DEFAULT).text
    )


# --- long text ----------------------------------------------------------------------------


def test_long_message_head_and_tail_truncation_is_reported() -> None:
    result = normalize_email(fixture("long.eml"), DEFAULT)
    (piece,) = result.pieces
    assert result.notes.truncated and result.notes.original_chars == len(result.text) > 20_000
    assert piece.startswith("Annual report Paragraph 0:")
    assert piece.endswith("FINAL LINE: call 555-0100 to claim your prize.")
    assert len(piece) <= DEFAULT.head_chars + DEFAULT.tail_chars + 1


def test_long_message_chunks_keep_head_and_end_when_over_max_chunks() -> None:
    settings = NormalizeSettings(long_text="chunk", chunk_chars=512, max_chunks=16)
    result = normalize_email(fixture("long.eml"), settings)
    assert result.notes.chunks == len(result.pieces) == 16 and result.notes.truncated
    assert all(len(p) <= 512 for p in result.pieces)
    assert result.pieces[-1].endswith("claim your prize.")
    roomy = NormalizeSettings(long_text="chunk", chunk_chars=4000, chunk_overlap=200, max_chunks=16)
    full = normalize_email(fixture("long.eml"), roomy)
    assert not full.notes.truncated and 5 < full.notes.chunks < 16


def test_chunks_overlap_and_cover_the_text() -> None:
    words = " ".join(f"w{i}" for i in range(400))
    settings = NormalizeSettings(
        long_text="chunk", chunk_chars=100, chunk_overlap=20, max_chunks=99
    )
    chunks = split_long(words, settings)
    assert all(len(c) <= 100 for c in chunks)
    assert chunks[0].startswith("w0 ") and chunks[-1].endswith("w399")
    for left, right in itertools.pairwise(chunks):
        assert right.split()[0] in left.split()  # overlap: each chunk starts inside the last
    seen = {w for c in chunks for w in c.split()}
    assert seen == set(words.split())


def test_split_without_spaces_and_with_a_token_count() -> None:
    chinese = "垃圾邮件" * 500
    pieces = split_long(chinese, NormalizeSettings(head_chars=100, tail_chars=50))
    assert [len(p) for p in pieces] == [151]  # head, one space, tail
    tokens = split_long(
        " ".join(["spam"] * 1000),
        NormalizeSettings(long_text="chunk", chunk_chars=64, chunk_overlap=8, max_chunks=4),
        count=lambda s: len(s.split()),
    )
    assert len(tokens) == 4 and all(len(p.split()) <= 64 for p in tokens)


def test_short_text_is_one_piece_untouched() -> None:
    assert split_long("hello world", DEFAULT) == ["hello world"]
    result = normalize_text("  Hello\u00a0\tworld\r\n", DEFAULT)
    assert (result.text, result.pieces, result.notes.truncated) == (
        "Hello world",
        ("Hello world",),
        False,
    )


def test_text_is_nfc_like_the_training_data() -> None:
    from textgate.data import normalize

    decomposed = "Cafe\u0301 \u2003 🎉 Ω"
    assert normalize_text(decomposed, DEFAULT).text == normalize(decomposed) == "Café 🎉 Ω"


# --- bad inputs: a specific InputError, never a crash ----------------------------------------


@pytest.mark.parametrize("text", ["", "   \r\n\t", "\x00\x00\x00", "\x07\x1b"])
def test_empty_text_is_refused(text: str) -> None:
    with pytest.raises(EmptyText) as err:
        normalize_text(text, DEFAULT)
    assert err.value.field == "text" and err.value.reason == "empty"


def test_nul_bytes_are_removed_and_counted() -> None:
    result = normalize_text("free\x00 mon\x00ey", DEFAULT)
    assert (result.text, result.notes.controls_removed) == ("free money", 2)
    raw = b"Subject: hi\r\nContent-Type: text/plain\r\n\r\nfree\x00 money\r\n"
    assert normalize_email(raw, DEFAULT).text == "hi free money"


def test_lone_surrogate_and_invalid_utf8_are_refused() -> None:
    with pytest.raises(InvalidInput, match="surrogate"):
        normalize_text("bad \ud800 text", DEFAULT)
    with pytest.raises(InvalidInput, match="not valid UTF-8") as err:
        decode_utf8(b"caf\xe9", field="text")
    assert err.value.reason == "encoding"
    assert decode_utf8("café".encode()) == "café"


def test_invalid_utf8_in_a_message_is_replaced_and_reported() -> None:
    raw = b"Subject: x\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nwin \x81\x8d\x90 now\r\n"
    result = normalize_email(raw, DEFAULT)
    assert result.text == "x win \ufffd\ufffd\ufffd now"
    (fallback,) = result.notes.charset_fallback
    assert fallback.replaced and fallback.declared == "utf-8"


def test_unknown_declared_charset_and_8bit_subject() -> None:
    raw = (
        b"Subject: caf\xc3\xa9 =?x-unknown?q?abc?=\r\n"
        b"Content-Type: text/plain; charset=x-klingon\r\n\r\ncaf\xe9\r\n"
    )
    result = normalize_email(raw, DEFAULT)
    assert result.text.startswith("café") and result.text.endswith("café")
    assert any(f.declared == "x-klingon" for f in result.notes.charset_fallback)


def test_ten_megabyte_body_is_refused_before_parsing() -> None:
    with pytest.raises(PayloadTooLarge) as err:
        normalize_email(b"Subject: x\r\n\r\n" + b"a" * 10_000_000, DEFAULT)
    assert err.value.limit == DEFAULT.max_body_bytes
    with pytest.raises(PayloadTooLarge):
        normalize_text("a " * 5_000_000, DEFAULT)


def test_text_over_max_chars_is_refused_not_cut() -> None:
    with pytest.raises(PayloadTooLarge, match="max_chars"):
        normalize_text("word " * 100, NormalizeSettings(max_chars=50))


def best(raw: bytes, settings: NormalizeSettings = DEFAULT) -> Normalized:
    """normalize_email on a message that must take the best-effort path."""
    result = normalize_email(raw, settings)
    assert result.notes.best_effort and result.notes.defects, result.notes
    assert result == normalize_email(raw, settings)  # deterministic: training agrees
    return result


def test_huge_headers_get_a_best_effort_verdict_not_a_refusal() -> None:
    raw = b"Subject: " + b"free money " * 10_000 + b"\r\n\r\nbody\r\n"
    assert set(best(raw).notes.defects) == {"header_block_too_long", "header_too_long"}
    assert best(raw).text.startswith("free money") and best(raw).text.endswith(" body")
    params = b"Content-Type: text/plain; " + b"a=b; " * 2000 + b"\r\n\r\nbody\r\n"
    assert best(params).text == "body"
    assert set(best(params).notes.defects) == {"header_too_long", "too_many_parameters"}
    # The 14,285-character Content-Type of a real spam (issue 9): a verdict, not a 422.
    real = b"Subject: win\r\nContent-Type: text/html; x=" + b"y" * 14_285 + b"\r\n\r\n<p>cash</p>"
    assert best(real).text == "win cash" and best(real).notes.html_converted


@pytest.mark.timeout(10)
def test_nested_comment_in_a_header_is_best_effort_not_a_recursion_error() -> None:
    raw = b"Content-Type: text/plain " + b"(" * 3000 + b"\r\n\r\nbody\r\n"
    assert best(raw).text == "body"
    assert "too_many_comments" in best(raw).notes.defects


@pytest.mark.parametrize(
    "raw",
    [
        b"Subject: x\r\nContent-Type: multipart/mixed\r\n\r\nno boundary parameter\r\n",
        b"Subject: x\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\nboundary never used\r\n",
    ],
)
def test_malformed_mime_is_read_best_effort(raw: bytes) -> None:
    result = best(raw)
    assert result.notes.defects == ("malformed_mime",)
    assert result.text.startswith("x ")  # the subject, then the raw body text


def nested_multiparts(depth: int) -> bytes:
    head = b"".join(
        b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (k, k)
        for k in range(depth)
    )
    tail = b"".join(b"\r\n--b%d--\r\n" % k for k in reversed(range(depth)))
    return b"Subject: deep\r\n" + head + b"Content-Type: text/plain\r\n\r\nhello" + tail


@pytest.mark.timeout(20)
def test_deep_nesting_is_limited() -> None:
    assert normalize_email(nested_multiparts(5), DEFAULT).text == "deep hello"
    assert not normalize_email(nested_multiparts(5), DEFAULT).notes.best_effort
    assert best(nested_multiparts(11)).notes.defects == ("too_deep",)
    assert best(nested_multiparts(11)).text == "deep hello"
    assert best(nested_multiparts(2000)).text == "deep hello"
    forwards = b"Subject: f\r\nContent-Type: message/rfc822\r\n\r\n" * 2000 + b"Subject: s\r\n\r\nx"
    assert best(forwards).notes.defects == ("too_many_parts",)


@pytest.mark.timeout(20)
def test_many_parts_are_refused_before_the_parser_builds_them() -> None:
    def parts(n: int) -> bytes:
        return (
            b"Subject: x\r\nContent-Type: multipart/mixed; boundary=zz\r\n\r\n"
            + b"--zz\r\nContent-Type: text/plain\r\n\r\nhi\r\n" * n
            + b"--zz--\r\n"
        )

    assert best(parts(20_000)).notes.defects == ("too_many_parts",)
    assert best(parts(20_000)).text == "x " + " ".join(["hi"] * 20_000)
    assert normalize_email(parts(40), DEFAULT).notes.parts == 41
    assert best(parts(40), NormalizeSettings(max_parts=20)).notes.defects == ("too_many_parts",)


def test_message_with_no_text_is_empty() -> None:
    only_pdf = (
        b"Content-Type: application/pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        + base64.b64encode(b"%PDF")
        + b"\r\n"
    )
    with pytest.raises(EmptyText):
        normalize_email(only_pdf, DEFAULT)
    with pytest.raises(EmptyText):
        normalize_email(b"\r\n\r\n", DEFAULT)


def test_wrong_types_are_invalid_input() -> None:
    with pytest.raises(InvalidInput):
        normalize_text(b"bytes", DEFAULT)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        normalize_email("text", DEFAULT)  # type: ignore[arg-type]


# --- charsets and settings ----------------------------------------------------------------


def test_decode_bytes_chain() -> None:
    assert decode_bytes("café".encode(), "latin-1") == ("café", "utf-8", False)  # mislabelled
    assert decode_bytes("café".encode("latin-1"), "iso-8859-1") == ("café", "iso8859-1", False)
    assert decode_bytes(b"abc", "unicode-escape") == ("abc", "utf-8", False)  # not a charset


@pytest.mark.parametrize("charset", ["base64", "hex", "rot13", "zlib", "uu", "quopri"])
def test_bytes_to_bytes_codec_as_charset_is_ignored_not_a_crash(charset: str) -> None:
    # codecs.lookup knows these, but bytes.decode refuses them with LookupError.
    assert decode_bytes(b"hello", charset) == ("hello", "utf-8", False)
    raw = f"Subject: hi\r\nContent-Type: text/plain; charset={charset}\r\n\r\ncaf\xe9\r\n"
    result = normalize_email(raw.encode("latin-1"), DEFAULT)
    assert result.text == "hi café"
    assert result.notes.charset_fallback[0].declared == charset


@pytest.mark.parametrize(
    ("kwargs", "key"),
    [
        ({"max_parts": 0}, "max_parts"),
        ({"long_text": "summarize"}, "long_text"),
        ({"chunk_chars": 10, "chunk_overlap": 10}, "chunk_overlap"),
        ({"tail_chars": -1}, "tail_chars"),
    ],
)
def test_settings_are_validated(kwargs: dict[str, object], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        NormalizeSettings(**kwargs)  # type: ignore[arg-type]
    assert err.value.key == key


def test_settings_from_dict_names_unknown_keys() -> None:
    assert NormalizeSettings.from_dict({"max_parts": 5}).max_parts == 5
    with pytest.raises(ConfigError, match="max_part"):
        NormalizeSettings.from_dict({"max_part": 5})


def test_notes_serialize_for_the_response() -> None:
    notes = normalize_email(fixture("utf8_but_cp1252.eml"), DEFAULT).notes.as_dict()
    assert notes["charset_fallback"] == [
        {"part": "part 1", "declared": "utf-8", "used": "cp1252", "replaced": False}
    ]


# --- fuzz ---------------------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis (dev extra) not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MIME_BITS = st.sampled_from(
    [
        b"Subject: =?utf-8?b?w6k=?=\r\n",
        b"Content-Type: multipart/mixed; boundary=q\r\n",
        b"Content-Type: multipart/alternative; boundary=q\r\n",
        b"Content-Type: message/rfc822\r\n",
        b"Content-Type: text/html; charset=gb2312\r\n",
        b'Content-Type: text/plain; charset="x\x00y"\r\n',
        b"Content-Transfer-Encoding: base64\r\n",
        b"Content-Transfer-Encoding: quoted-printable\r\n",
        b"Content-Disposition: attachment\r\n",
        b"\r\n",
        b"--q\r\n",
        b"--q--\r\n",
        b"<html><a href='http://x.example'>",
        b"=C3=A9=\r\n",
        b"\x00\xff\xfe",
        b"(((",
    ]
)


@FUZZ
@given(st.binary(max_size=2000))
def test_fuzz_arbitrary_bytes_raise_only_input_errors(raw: bytes) -> None:
    with contextlib.suppress(InputError):
        normalize_email(raw, DEFAULT)


@FUZZ
@given(st.lists(st.one_of(MIME_BITS, st.binary(max_size=20)), max_size=40))
def test_fuzz_mime_shaped_bytes_raise_only_input_errors(bits: list[bytes]) -> None:
    try:
        result = normalize_email(b"".join(bits), DEFAULT)
    except InputError:
        return
    assert result.text and result.pieces


@FUZZ
@given(st.text(max_size=500))
def test_fuzz_html_and_text(text: str) -> None:
    html_to_text(text)
    with contextlib.suppress(InputError):
        normalize_text(text, DEFAULT)


# --- the sender note (the canary's `sender` key) -------------------------------------------


@pytest.mark.parametrize(
    ("header", "want"),
    [
        (b"From: Alice Example <Alice@Example.COM>\r\n", "alice@example.com"),
        (b"From: bob@example.org (Bob)\r\n", "bob@example.org"),
        (b"From:\r\n =?utf-8?q?J=C3=BCrgen?= <j@example.de>\r\n", "j@example.de"),
        (b"From: \xe4\xf6 <caf\xc3\xa9@example.fr>\r\n", "caf\u00e9@example.fr"),
        (b"From: not an address at all <\r\n", None),
        (b"", None),
    ],
)
def test_sender_is_the_from_address(header: bytes, want: str | None) -> None:
    raw = header + b"Subject: hi\r\n\r\nhello\r\n"
    sender = normalize_email(raw, DEFAULT).notes.sender
    assert sender == want
    assert sender is None or sender.encode("utf-8")  # JSON-safe: no lone surrogates


def test_text_has_no_sender() -> None:
    assert normalize_text("hello", DEFAULT).notes.sender is None
    assert normalize_text("hello", DEFAULT).notes.as_dict()["sender"] is None


# --- train/serve agreement ------------------------------------------------------------------


def test_fingerprint_agrees_with_itself_and_names_a_difference() -> None:
    from textgate.normalize import fingerprint, skew

    mine = NormalizeSettings()
    assert skew(fingerprint(mine), mine) == []
    other = fingerprint(NormalizeSettings(head_chars=200))
    assert skew(other, mine) == ["head_chars: trained with 200, serving with 384"]
    assert "version" in skew({**fingerprint(mine), "version": 1}, mine)[0]
    # Size limits decide acceptance, not the text: they are not part of the fingerprint.
    assert skew(fingerprint(NormalizeSettings(max_parts=5)), mine) == []


# --- found by fuzzing the normalizer (every one lost text a reader sees) -------------------

_PITCH = b"verify your bank password at http://evil.example now"


def _says_pitch(got: Normalized) -> bool:
    return "verify your bank password" in got.text


@pytest.mark.parametrize(
    "raw",
    [
        # lone CR line ends, on the structured path and the best-effort one
        b"Subject: invoice\rContent-Type: text/plain\r\r" + _PITCH + b"\r",
        b"From: a@example.com\rContent-Type: multipart/mixed\r\r" + _PITCH + b"\r",
        # quoted-printable soft break before a lone CR, inside an ordinary CRLF message
        b"Subject: invoice\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: "
        b"quoted-printable\r\n\r\nSee the attached invoice.=\r" + _PITCH + b"\r\nRegards\r\n",
        # a first line the parser takes for a header, with no text after it
        b"\t" + _PITCH + b"\n",
        # a base64 text part on the best-effort path (multipart without a boundary)
        b"Content-Type: multipart/mixed\r\n\r\n--x\r\nContent-Type: text/plain\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(_PITCH) + b"--x--\r\n",
    ],
)
def test_text_a_reader_sees_is_read(raw: bytes) -> None:
    assert _says_pitch(normalize_email(raw, NormalizeSettings()))


def test_best_effort_decodes_base64_text_and_drops_base64_attachments() -> None:
    part = b"--x\r\nContent-Type: %s\r\nContent-Transfer-Encoding: base64\r\n\r\n%s"
    raw = (
        b"Subject: s\r\nContent-Type: multipart/mixed\r\n\r\n"
        + part % (b"text/html", base64.encodebytes(b"<p>" + _PITCH + b"</p>"))
        + part % (b"image/png", base64.encodebytes(b"attachment words " * 20))
        + b"--x--\r\n"
    )
    got = best_effort(raw, NormalizeSettings())
    assert _says_pitch(got) and "attachment" not in got.text
    assert "Content-Type" not in got.text and "base64" not in got.text


def test_best_effort_keeps_decoding_a_part_past_a_signature_line() -> None:
    # "(c)" x 17 in Content-Type sends it to the best-effort reader
    raw = (
        b"Subject: s\r\nContent-Type: text/plain" + b"(c)" * 17 + b"\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\n"
        b"price 5 =E2=82=AC\r\n-- \r\nBob =E4=BD=A0=E5=A5=BD\r\n"
    )
    got = normalize_email(raw, NormalizeSettings())
    assert got.notes.best_effort and "5 €" in got.text and "你好" in got.text


def test_best_effort_reads_html_whose_comment_closes_at_a_line_start() -> None:
    raw = (
        b"Subject: s\r\nContent-Type: text/html" + b"(c)" * 17 + b"\r\n\r\n"
        b"<style><!--\r\np {margin:0}\r\n--></style>\r\n<p>" + _PITCH + b"</p>\r\n"
    )
    assert _says_pitch(normalize_email(raw, NormalizeSettings()))


def test_an_8bit_body_keeps_its_cr_bytes() -> None:
    # UTF-16LE 不 is 0D 4E: a CR byte that is no line end
    body = "这本书不推荐".encode("utf-16-le")
    raw = (
        b"Subject: s\r\nContent-Type: text/plain; charset=utf-16-le\r\n"
        b"Content-Transfer-Encoding: 8bit\r\n\r\n" + body
    )
    assert "这本书不推荐" in normalize_email(raw, NormalizeSettings()).text


def test_a_best_effort_text_that_nfc_lengthens_is_cut_not_refused() -> None:
    settings = NormalizeSettings(max_chars=1000)
    raw = b"Subject: s\r\nContent-Type: text/plain" + b"(c)" * 17 + b"\r\n\r\n"
    got = normalize_email(raw + "\u0958".encode() * 900, settings)  # NFC: 2 characters each
    assert got.notes.best_effort and len(got.text) <= 1000
