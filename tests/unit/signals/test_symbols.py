"""Structure symbols: each fires on a message built for it and stays quiet on ordinary
mail; hostile headers and pages never make ``from_message`` raise; the headers that leak
the training corpus's labels are never read."""

from __future__ import annotations

import base64
import quopri
import subprocess
import sys
from collections.abc import Sequence
from email.message import Message
from email.parser import BytesParser
from email.policy import default
from typing import Any

import pytest

from textgate import signals
from textgate.signals import ORDER, SYMBOLS, from_message
from textgate.signals.links import registrable
from textgate.signals.symbols import READ

BASE = {
    "From": "Ann Lee <ann@example.com>",
    "To": "bob@example.org",
    "Subject": "Lunch on Friday",
    "Date": "Tue, 03 Nov 2026 10:00:00 +0000",
    "Message-ID": "<20261103100000.1@example.com>",
}
PLAIN = b"Content-Type: text/plain; charset=utf-8\r\n\r\nSee you at noon by the fountain.\r\n"
ORDINARY_HTML = (
    '<p>Hello Bob, the agenda is on <a href="https://www.example.com/agenda">example.com</a>'
    ' and <a href="https://news.example.com/x">the newsletter</a>.'
    ' Write to <a href="mailto:ann@example.com">ann@example.com</a>.</p>'
    '<img src="cid:logo@example.com">'
)
QUIET = {"html": False, "text_chars": 300, "hidden_chars": 0, "link_domains": (), "defects": ()}
HTML = {**QUIET, "html": True}


def parse(raw: bytes) -> Message:
    return BytesParser(policy=default).parsebytes(raw)


def mail(*extra: str, drop: Sequence[str] = (), body: bytes = PLAIN, **fields: str) -> Message:
    """An ordinary message; ``fields`` replace BASE's (``Reply_To`` → Reply-To), ``extra``
    adds raw header lines, ``drop`` removes BASE's."""
    values = {**BASE, **{k.replace("_", "-"): v for k, v in fields.items()}}
    lines = [f"{k}: {v}" for k, v in values.items() if k not in drop] + list(extra)
    return parse("\r\n".join(lines).encode("utf-8", "surrogateescape") + b"\r\n" + body)


def html_only(page: str, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return (
        f"MIME-Version: 1.0\r\nContent-Type: text/html; charset=utf-8\r\n{head}\r\n{page}\r\n"
    ).encode()


def alternative(page: str) -> bytes:
    return (
        "MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=b1\r\n\r\n"
        f"--b1\r\n{PLAIN.decode()}--b1\r\n"
        f"Content-Type: text/html; charset=utf-8\r\n\r\n{page}\r\n--b1--\r\n"
    ).encode()


def attached(*headers: str, payload: str = "AAAA") -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return (
        "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b2\r\n\r\n"
        f"--b2\r\n{PLAIN.decode()}--b2\r\n{head}\r\n{payload}\r\n--b2--\r\n"
    ).encode()


def auth(value: str) -> str:
    return f"Authentication-Results: mx.example.net; {value}"


def link(href: str, text: str = "here") -> Message:
    return mail(body=alternative(f'<p>Click <a href="{href}">{text}</a></p>'))


def disposed(params: str) -> Message:
    """An ordinary message with an octet-stream attachment of these disposition params."""
    return mail(body=attached(OCTET, f"Content-Disposition: attachment; {params}"))


def symbols(message: Message, **kw: Any) -> tuple[str, ...]:
    return from_message(message, **{**QUIET, **kw})


OCTET = "Content-Type: application/octet-stream"
CASES: list[Any] = [
    ("LIST_ID", mail("List-Id: Developers <dev.lists.example.org>"), QUIET),
    ("LIST_UNSUBSCRIBE", mail("List-Unsubscribe: <mailto:leave@example.com>"), QUIET),
    ("PRECEDENCE_LIST", mail("Precedence: bulk"), QUIET),
    ("PRECEDENCE_LIST", mail("Precedence: List"), QUIET),
    ("MAILING_LIST_SOFTWARE", mail("X-Mailman-Version: 2.1.39"), QUIET),
    ("MAILING_LIST_SOFTWARE", mail("List-Post: <mailto:dev@example.org>"), QUIET),
    ("MAILING_LIST_SOFTWARE", mail("Mailing-List: contact dev-help@example.org"), QUIET),
    ("IN_REPLY_TO", mail("In-Reply-To: <x1@example.org>"), QUIET),
    ("IN_REPLY_TO", mail("References: <x1@example.org> <x2@example.org>"), QUIET),
    ("AUTH_SPF_PASS", mail(auth("spf=pass smtp.mailfrom=example.com")), QUIET),
    ("AUTH_SPF_FAIL", mail(auth("SPF=SoftFail smtp.mailfrom=example.com")), QUIET),
    ("AUTH_SPF_FAIL", mail(auth("spf=fail (sender not permitted) smtp.mailfrom=x")), QUIET),
    ("AUTH_DKIM_PASS", mail(auth("dkim=pass header.d=example.com")), QUIET),
    ("AUTH_DKIM_FAIL", mail(auth("dkim=fail (bad signature) header.d=example.com")), QUIET),
    ("AUTH_DMARC_PASS", mail(auth("dmarc=pass header.from=example.com")), QUIET),
    ("AUTH_DMARC_FAIL", mail(auth("dmarc=fail action=none header.from=example.com")), QUIET),
    ("AUTH_NONE", mail("Authentication-Results: mx.example.net; none"), QUIET),
    ("AUTH_NONE", mail(auth("spf=none smtp.mailfrom=x; dkim=none")), QUIET),
    ("FROM_NAME_HAS_OTHER_ADDRESS", mail(From='"service@paypal.com" <x@evil.example>'), QUIET),
    ("FROM_NAME_HAS_OTHER_ADDRESS", mail(From="PayPal.com Support <x@evil.example>"), QUIET),
    ("FROM_NAME_HAS_OTHER_ADDRESS", mail(From="=?utf-8?q?Bank=2Ecom?= <x@evil.example>"), QUIET),
    ("REPLYTO_DIFFERENT_DOMAIN", mail(Reply_To="Ann <ann@other.example>"), QUIET),
    ("LINK_TEXT_DOMAIN_MISMATCH", link("http://evil.example/login", "www.paypal.com"), HTML),
    ("LINK_TEXT_DOMAIN_MISMATCH", link("http://paypal.com.evil.ru/", "https://paypal.com/"), HTML),
    ("LINK_TEXT_DOMAIN_MISMATCH", link("http://evil.example/", "<b>paypal.com</b>"), HTML),
    ("LINK_TEXT_DOMAIN_MISMATCH", link("http://paypal.com@evil.ru/", "paypal.com"), HTML),
    ("LINK_TEXT_DOMAIN_MISMATCH", link("http://evil.ru\\@paypal.com/", "paypal.com"), HTML),
    ("LINK_IP_LITERAL", link("http://192.168.10.5/login"), HTML),
    ("LINK_IP_LITERAL", link("http://[2001:db8::1]/login"), HTML),
    ("LINK_IP_LITERAL", link("http://0x7f000001/"), HTML),
    ("LINK_IP_LITERAL", mail(), {**HTML, "link_domains": ("10.0.0.1",)}),
    ("LINK_SHORTENER", link("https://bit.ly/3abc"), HTML),
    ("LINK_SHORTENER", mail(), {**HTML, "link_domains": ("tinyurl.com",)}),
    ("LINK_PUNYCODE", link("http://xn--pypal-4ve.com/"), HTML),
    ("MANY_LINK_DOMAINS", mail(), {**HTML, "link_domains": [f"d{i}.example" for i in range(8)]}),
    ("HTML_ONLY", mail(body=html_only("<p>Hello Bob, see you at noon.</p>")), HTML),
    ("HIDDEN_TEXT", mail(), {**HTML, "hidden_chars": 250, "text_chars": 5000}),
    ("HIDDEN_TEXT", mail(), {**HTML, "hidden_chars": 40, "text_chars": 60}),
    ("IMAGE_HEAVY", mail(body=alternative('<img src="x.png">')), {**HTML, "text_chars": 20}),
    ("ATTACH_EXECUTABLE", disposed('filename="invoice.pdf.exe"'), QUIET),
    ("ATTACH_EXECUTABLE", mail(body=attached("Content-Type: application/x-msdownload")), QUIET),
    ("ATTACH_EXECUTABLE", mail(body=attached(f'{OCTET}; name="run.JS. "')), QUIET),
    ("ATTACH_EXECUTABLE", disposed('filename*0="inv"; filename*1="oice.vbs"'), QUIET),
    ("ATTACH_EXECUTABLE", disposed("filename*=utf-8''r%C3%A9sum%C3%A9.scr"), QUIET),
    ("ATTACH_EXECUTABLE", disposed('filename="=?utf-8?b?c2V0dXAubXNp?="'), QUIET),
    ("ATTACH_ARCHIVE", disposed('filename="docs.zip"'), QUIET),
    ("ATTACH_HTML", disposed('filename="Payment.HTML"'), QUIET),
    (
        "ATTACH_HTML",
        mail(body=attached("Content-Type: text/html", "Content-Disposition: attachment")),
        QUIET,
    ),
    ("ATTACH_OFFICE_MACRO", disposed('filename="q3.xlsm"'), QUIET),
    ("MIME_DEFECTS", mail(), {**QUIET, "defects": ("MissingHeaderBodySeparatorDefect",)}),
    ("MISSING_MESSAGE_ID", mail(drop=("Message-ID",)), QUIET),
    ("MISSING_DATE", mail(drop=("Date",)), QUIET),
    ("DATE_UNPARSEABLE", mail(Date="next Tuesday, probably"), QUIET),
    ("MESSAGE_ID_NO_DOMAIN", mail(Message_ID="<1234567890>"), QUIET),
    ("SUBJECT_ALL_CAPS", mail(Subject="FREE OFFER FOR YOU TODAY"), QUIET),
    ("SUBJECT_ALL_CAPS", mail(Subject="=?utf-8?q?GRATUIT_POUR_VOUS_=C3=89T=C3=89?="), QUIET),
    ("SUBJECT_MONEY", mail(Subject="You won $5,000"), QUIET),
    ("SUBJECT_MONEY", mail(Subject="€100 gift card inside"), QUIET),
    ("SUBJECT_MONEY", mail(Subject="Claim 500 USD today"), QUIET),
    ("SUBJECT_EXCLAIM", mail(Subject="Act now!!"), QUIET),
]


def test_every_symbol_has_a_case_that_fires_it() -> None:
    assert {case[0] for case in CASES} == set(ORDER)


@pytest.mark.parametrize(("name", "message", "kw"), CASES, ids=[c[0] for c in CASES])
def test_the_symbol_fires(name: str, message: Message, kw: dict[str, Any]) -> None:
    assert name in from_message(message, **kw)


@pytest.mark.parametrize("name", ORDER)
def test_the_symbol_stays_quiet_on_ordinary_mail(name: str) -> None:
    assert name not in symbols(mail())
    page = mail(body=alternative(ORDINARY_HTML))
    domains = ("example.com", "news.example.com")
    assert name not in symbols(page, html=True, text_chars=800, link_domains=domains)


def test_ordinary_mail_fires_nothing() -> None:
    assert symbols(mail()) == ()


@pytest.mark.parametrize(
    ("message", "kw", "absent"),
    [
        (mail(Subject="RE: IBM Q3"), QUIET, "SUBJECT_ALL_CAPS"),
        (mail(Subject="Room 5, floor 100"), QUIET, "SUBJECT_MONEY"),
        (mail(From='"ann@example.com" <ann@example.com>'), QUIET, "FROM_NAME_HAS_OTHER_ADDRESS"),
        (mail(From="Amazon.com <ship@amazon.com>"), QUIET, "FROM_NAME_HAS_OTHER_ADDRESS"),
        (mail(From="J.R.R. Tolkien <jrr@example.com>"), QUIET, "FROM_NAME_HAS_OTHER_ADDRESS"),
        (mail(Reply_To="<ann@mail.example.com>"), QUIET, "REPLYTO_DIFFERENT_DOMAIN"),
        (link("https://click.example.com/t", "example.com"), HTML, "LINK_TEXT_DOMAIN_MISMATCH"),
        (link("https://x.example.com/", "report.pdf"), HTML, "LINK_TEXT_DOMAIN_MISMATCH"),
        (link("https://x.example.com/", "Click here"), HTML, "LINK_TEXT_DOMAIN_MISMATCH"),
        (link("http://[bad", "www.paypal.com"), HTML, "LINK_TEXT_DOMAIN_MISMATCH"),
        (
            link("https://shop.xn--bcher-kva.de/", "www.bücher.de"),
            HTML,
            "LINK_TEXT_DOMAIN_MISMATCH",
        ),
        (mail(), {**HTML, "hidden_chars": 10, "text_chars": 5}, "HIDDEN_TEXT"),
        (mail(In_Reply_To=" "), QUIET, "IN_REPLY_TO"),
        (disposed('filename="report.pdf"'), QUIET, "ATTACH_EXECUTABLE"),
        (disposed('filename="notes.txt"'), QUIET, "ATTACH_HTML"),
        (mail(body=alternative("<p>x</p>")), HTML, "HTML_ONLY"),
        (mail(Subject="one!"), QUIET, "SUBJECT_EXCLAIM"),
    ],
)
def test_near_misses_stay_quiet(message: Message, kw: dict[str, Any], absent: str) -> None:
    assert absent not in from_message(message, **kw)


def test_a_headerless_text_has_no_structure() -> None:
    raw = b"Subject: FREE MONEY $$$ !!!\r\n\r\nClick http://1.2.3.4/ now\r\n"
    kw = {**HTML, "defects": ("x",), "link_domains": ("1.2.3.4",)}
    assert from_message(parse(raw), **kw) == ()
    # one identity header is enough for the structure to count
    assert "MISSING_DATE" in from_message(mail(drop=("Date", "From")), **QUIET)


def test_symbols_come_in_order_and_are_deterministic() -> None:
    raw = mail(
        "List-Id: <a.example>",
        auth("dkim=fail; spf=pass"),
        drop=("Date",),
        Subject="WIN $100 NOW!!",
    )
    first = symbols(raw)
    assert first == symbols(raw)
    assert list(first) == sorted(first, key=ORDER.index)
    assert set(first) >= {"LIST_ID", "AUTH_DKIM_FAIL", "AUTH_SPF_PASS", "MISSING_DATE"}


def test_only_the_receiving_mtas_authentication_results_are_read() -> None:
    message = mail(
        auth("dkim=fail header.d=example.com"),
        "Authentication-Results: mx.example.net; dmarc=fail",  # a second milter, same MTA
        "Authentication-Results: forged.example; spf=pass; dkim=pass; dmarc=pass",
        "ARC-Authentication-Results: i=1; forged.example; dkim=pass; spf=pass",
    )
    fired = set(symbols(message))
    assert {"AUTH_DKIM_FAIL", "AUTH_DMARC_FAIL"} <= fired
    assert not fired & {"AUTH_DKIM_PASS", "AUTH_SPF_PASS", "AUTH_DMARC_PASS"}
    commented = mail(auth("spf=neutral (dkim=pass in a comment (nested)) smtp.mailfrom=x"))
    assert not set(symbols(commented)) & {"AUTH_DKIM_PASS", "AUTH_SPF_PASS"}


def test_headers_that_leak_the_corpus_are_never_read() -> None:
    quiet = symbols(mail())
    for leak in (
        ("To: undisclosed", "Cc: spam-trap@corpus.invalid"),
        ("Received: from x (spf=fail dkim=fail) by y", "Delivered-To: ham@corpus.invalid"),
        ("X-Spam-Status: Yes, score=99 LIST_ID", "X-Original-To: spam@corpus.invalid"),
        ("X-Virus-Scanned: found", "X-List-Id: <leak.example>", "X-Precedence: bulk"),
        ("ARC-Authentication-Results: i=1; mx; spf=fail; dkim=fail; dmarc=fail",),
    ):
        assert symbols(mail(*leak)) == quiet, leak
    assert not {"to", "cc", "received", "delivered-to", "x-original-to"} & READ
    assert {h for h in READ if h.startswith("x-")} == {"x-mailman-version"}


def lone_surrogates() -> Message:
    """Headers no bytes parser makes: surrogates outside the escapes of 8-bit bytes."""
    message = Message()
    message._headers.append(("From", "A \ud800 <a@b.example>"))
    message._headers.append(("Subject", "\ud800\udcff FREE OFFER TODAY!!"))
    message.set_payload("x")
    return message


HOSTILE: list[Any] = [
    mail(Subject="A" * 300_000),
    mail(From="x" * 300_000 + " <a@b.example>", Reply_To="(" * 300_000),
    mail(Date="(" * 100_000, Message_ID="<" + "@" * 300_000),
    mail(From="J\udcf6rg \udcff <j@ex\udce4mple.com>", Subject="\udcff\udcfe CAPS \udce9 !!"),
    mail("Authentication-Results: ;;;(((spf=pass", "Authentication-Results: dkim"),
    mail("Authentication-Results: " + "(" * 50_000 + "spf=pass" + ")" * 50_000),
    mail("Authentication-Results: mx; spf=; dkim==; dmarc=pass=fail; =none"),
    mail(From="<>", Reply_To="@@@", Message_ID=""),
    mail(From="=?bogus-charset?b?////?= <a@b.example>", Subject="=?rot13?q?UVQR?="),
    disposed("filename*=x'y'%ZZ%"),
    mail(body=attached("Content-Type: " + "a/" * 100_000, 'Content-Disposition: "' * 1000)),
    disposed('filename="=?unicode-escape?q?\\x?="'),
    mail(body=html_only('<a href="http://">x</a><a href="http:///p">y.com</a><a href>z</a>')),
    mail(body=html_only('<a href="http://[bad">www.a.com</a><a href="//">b.com</a>')),
    mail(body=html_only("<a href=x" * 30_000)),
    mail(body=html_only("<a href='http://a.example/'>" + "x" * 100_000)),
    mail(body=html_only("<p>x</p>", "Content-Transfer-Encoding: base64")),
    mail(body=html_only("=ZZ=\r\n<p>", "Content-Transfer-Encoding: quoted-printable")),
    mail(body=html_only("<p>x</p>").replace(b"charset=utf-8", b"charset=base64")),
    lone_surrogates(),
]


@pytest.mark.parametrize("message", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_hostile_input_never_raises(message: Message) -> None:
    kw = {**HTML, "link_domains": ("", "[::1]", "x" * 10_000, "a..b")}
    fired = from_message(message, **kw)
    assert isinstance(fired, tuple) and set(fired) <= set(ORDER)


def test_an_unreadable_message_gives_nothing() -> None:
    class Unreadable(Message):
        def raw_items(self) -> Any:
            raise RuntimeError("hostile")

    assert from_message(Unreadable(), **QUIET) == ()


def test_one_failing_group_silences_only_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(message: Message) -> Any:
        raise RecursionError("a part tree too deep")

    monkeypatch.setattr("textgate.signals.symbols.leaves", broken)
    exe = attached(OCTET, "Content-Disposition: attachment; filename=a.exe")
    message = mail("List-Id: <a.example>", body=exe)
    assert symbols(message) == ("LIST_ID",)


def test_a_large_page_with_many_links_is_read_in_bounded_work() -> None:
    anchors = "".join(
        f'<a href="http://d{i}.example{i % 50}.com/p?q={i}">www.example{i % 50}.com</a>\n'
        for i in range(5000)
    )
    assert len(anchors) > 200_000
    message = mail(body=alternative(f'<img src="a.png">{anchors}'))
    domains = [f"d{i}.example{i % 50}.com" for i in range(5000)]
    fired = symbols(message, html=True, text_chars=150_000, link_domains=domains)
    assert "MANY_LINK_DOMAINS" in fired
    assert "LINK_TEXT_DOMAIN_MISMATCH" not in fired


@pytest.mark.parametrize("encoding", ["base64", "quoted-printable"])
def test_encoded_html_parts_are_decoded(encoding: str) -> None:
    page = b'<p>Hi</p><a href="https://bit.ly/x">here</a>' * 3
    encoded = base64.encodebytes(page) if encoding == "base64" else quopri.encodestring(page)
    body = html_only(encoded.decode(), f"Content-Transfer-Encoding: {encoding}")
    assert "LINK_SHORTENER" in symbols(mail(body=body), html=True)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("mail.example.com", "example.com"),
        ("WWW.Example.COM.", "example.com"),
        ("a.b.example.co.uk", "example.co.uk"),
        ("shop.example.com.au", "example.com.au"),
        ("x.example.de", "example.de"),
        ("example", "example"),
        ("10.1.2.3", "10.1.2.3"),
    ],
)
def test_registrable_domain(host: str, expected: str) -> None:
    assert registrable(host) == expected


def test_the_table() -> None:
    assert len(ORDER) == len(set(ORDER)) == len(SYMBOLS)
    assert set(ORDER) == set(SYMBOLS)
    for name, symbol in SYMBOLS.items():
        assert symbol.name == name and name == name.upper() and " " not in name
        assert symbol.direction in (1, -1)
        assert symbol.description.strip() and "\n" not in symbol.description


def test_the_package_needs_no_numpy() -> None:
    code = "import sys, textgate.signals; sys.exit('numpy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    assert signals.from_message is from_message
