"""HTML to the text a browser shows: heads, hidden elements, implied end tags, and
hostile markup that must neither stall nor hide what the reader sees."""

from __future__ import annotations

import sys

import pytest

from textgate.normalize import NormalizeSettings, html_to_text, normalize_email, read_html

DEFAULT = NormalizeSettings()


@pytest.mark.timeout(15)
def test_html_with_100k_nested_tags_completes_without_recursion() -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)  # a recursive parser could not get through 100k levels
    try:
        text, _ = html_to_text("<div><b>" * 100_000 + "deep" + "</b></div>" * 100_000)
        unclosed, _ = html_to_text("<span>" * 100_000 + "open")
    finally:
        sys.setrecursionlimit(limit)
    assert text.split() == ["deep"] and unclosed.split() == ["open"]


@pytest.mark.timeout(15)
def test_100k_heads_and_titles_neither_hide_the_body_nor_stall() -> None:
    # each <head> after the first is ignored; the <title>s hide only themselves
    html = "<head>" * 100_000 + "<title>t</title>" * 50_000 + "<p>shown" + "</head>" * 100_000
    text, _ = html_to_text(html)
    assert text.split() == ["shown"]


@pytest.mark.parametrize(
    "html",
    ["<![" * 1000, "<!" * 1000, "</" * 1000, "&#" * 1000, "<a " * 1000, "<script>" + "<" * 1000],
)
def test_pathological_html_does_not_raise(html: str) -> None:
    html_to_text(html)


def test_html_entities_blocks_and_unclosed_head() -> None:
    text, domains = html_to_text(
        "<head><title>t</title><body><p>a&nbsp;b</p><p>c&amp;d</p>"
        '<a href="HTTPS://WWW.Example.COM/x">go</a> <a href="javascript:x()">no</a> '
        '<a href="http://[bad">bad</a></body>'
    )
    assert text.split() == ["a", "b", "c&d", "go", "no", "bad"]
    assert domains == ["example.com"]


@pytest.mark.parametrize(
    ("html", "want"),
    [
        # a real phish's shape: the head never closes, the body starts with <center>
        (
            '<html><head><meta charset="utf-8"><center><h3><a href="http://x.test/">Hot</a>'
            "</h3></center>",
            ["Hot"],
        ),
        ("<head><title>t</title>shown text<meta x></head>", ["shown", "text"]),
        ("<head><style>p {}</style><link rel=x><title>t</title></head><p>body</p>", ["body"]),
        # after the body has started, browsers ignore <head> and </head>: nothing hides
        ("<p>one</p><head>two</head> three", ["one", "two", "three"]),
        ("lead <head>in</head> out", ["lead", "in", "out"]),
        ("<html><head></head><body>a <head>b</head> c</body>", ["a", "b", "c"]),
        ("<head><title>an unclosed title hides the rest, as in a browser", []),
    ],
)
def test_head_ends_where_a_browser_ends_it(html: str, want: list[str]) -> None:
    text, _ = html_to_text(html)
    assert text.split() == want


def test_unclosed_head_mail_is_read_past_its_subject() -> None:
    raw = (
        b"Subject: Get ready for a new date?\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        b'<!DOCTYPE html><html><head><meta charset="utf-8"><center><h3>'
        b'<a href="http://shop.example/cl/1">Charming girls are waiting</a></h3></center>'
    )
    out = normalize_email(raw, DEFAULT)
    assert "Charming girls are waiting" in out.text
    assert out.notes.link_domains == ("shop.example",)


# --- hidden text: what a browser hides, the model does not read --------------------------


@pytest.mark.parametrize(
    ("html", "want"),
    [
        # a real phish's shape: filler the reader never sees, between the words of the pitch
        (
            'está <span style="visibility: hidden; position: absolute; font-size: 0;">Talvez '
            "ele não quisesse competir</span>retido na alfândega",
            ["está", "retido", "na", "alfândega"],
        ),
        ('<div style="display:none">gone <b style="display:block">too</b></div>after', ["after"]),
        ('<div style="DISPLAY: None !important">x</div>y', ["y"]),
        ('<div style="display:none; display:block">shown</div>', ["shown"]),  # last one wins
        ("<div hidden>attr</div><p>seen", ["seen"]),
        ('<div style="opacity:0">faded</div>seen', ["seen"]),
        ('<div style="max-height:0px;overflow:hidden">preheader</div>seen', ["seen"]),
        ('<div style="overflow:hidden">clipped but tall</div>', ["clipped", "but", "tall"]),
        # visibility and font size inherit, and a descendant can undo them
        ('<div style="visibility:hidden">a<span style="visibility:visible">b</span></div>', ["b"]),
        (
            '<table><tr><td style="font-size:0"><div style="font-size:13px">cell</div> gap</td>',
            ["cell"],
        ),
        (
            '<span style="font-size:0">a<b style="font-size:150%">rel</b>'
            '<i style="font-size:1em">em</i><u style="font-size:small">key</u></span>',
            ["key"],
        ),
        ('<span style="font-size:1px">tiny</span><span style="font-size:1pt">pt</span> ok', ["ok"]),
        ('<span style="font-size:2px">two</span>', ["two"]),
        (
            '<span style="font:0/0 a">gone</span> <span style="font: 700 12px/1.4 Arial">ok</span>',
            ["ok"],
        ),
        ('<p style="font-size:0">a <span style="font-size:1.2rem">rem</span>', ["rem"]),
    ],
)
def test_hidden_text_is_not_read(html: str, want: list[str]) -> None:
    text, _ = html_to_text(html)
    assert text.split() == want


@pytest.mark.parametrize(
    ("html", "want"),
    [
        # where a hidden element ends, a browser shows the rest: so must the reader
        ('<p style="font-size:0">x<p>pitch', ["pitch"]),
        ('<p style="display:none">x<div>pitch</div>', ["pitch"]),
        ('<ul><li style="display:none">a<li>b</ul>', ["b"]),
        ('<dl><dt style="display:none">a<dd>b</dl>', ["b"]),
        ('<table><tr><td style="display:none">a<td>b</table>', ["b"]),
        ('<table><tr style="display:none"><td>a<tr><td>b</table>', ["b"]),
        ('<select><option style="display:none">a<option>b</select>', ["b"]),
        ('<h1 style="display:none">a<h2>b</h2>', ["b"]),
        ('<div><span style="display:none">x</div>after', ["after"]),  # the end tag closes it
        ('<span style="display:none"/>after', ["after"]),
        ('<img style="display:none">after<br style="display:none">more', ["after", "more"]),
        # text in a table outside its cells is shown before the table (foster parenting)
        ('<table style="display:none">lead<tr><td>cell</td></tr></table>after', ["lead", "after"]),
        ('<table style="display:none"><table>next</table>', ["next"]),
        ('<table style="display:none"><div>lead</div><tr><td>cell</td></tr></table>', ["lead"]),
        ('<table><tr style="display:none"><span>lead</span><td>cell</table>', ["lead"]),
        # HTML inside SVG ends the SVG; an absolutely positioned box escapes a static clip
        ('<svg style="display:none"><text>a</text><p>pitch', ["pitch"]),
        (
            '<div style="height:0;overflow:hidden">a<div style="position:absolute">b</div></div>',
            ["b"],
        ),
        # the mail's own <html>/<body> style does not blank the mail; a <p> in a cell stays
        ('<body style="display:none">all', ["all"]),
        ('<div style="display:none"><table><tr><td><p>in cell</td></tr></table>', []),
        # quirks mode keeps a table inside an open <p>; standards mode closes the <p>: the
        # reader takes the reading that shows more
        ('<p style="display:none"><table><tr><td>cell</td></tr></table>', ["cell"]),
        ("<title>t<body>body", ["body"]),
    ],
)
def test_hidden_elements_end_where_a_browser_ends_them(html: str, want: list[str]) -> None:
    text, _ = html_to_text(html)
    assert text.split() == want


def test_links_in_hidden_text_are_not_counted() -> None:
    _, domains = html_to_text(
        '<div style="display:none"><a href="http://hidden.example/">x</a></div>'
        '<a href="http://shown.example/">y</a>'
    )
    assert domains == ["shown.example"]


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    "html",
    [
        "<span>" * 100_000 + "<div>" * 100_000 + "x",  # 100k implied-end checks, deep stack
        "<p><table><td>" + "<span>" * 100_000 + "<div>" * 100_000 + "x",  # p out of scope
        '<div style="display:none">' * 100_000 + "x" + "</div>" * 100_000,
        "<tr>" * 100_000 + "<table>" * 100_000 + "<li>" * 100_000 + "x",
        "".join(f"<t{i}>" for i in range(100_000)) + "</span>" * 100_000 + "x",
    ],
)
def test_hostile_nesting_stays_linear(html: str) -> None:
    text, _ = html_to_text(html)
    assert text.split() in (["x"], [])


def test_hidden_filler_mail_reads_as_its_pitch() -> None:
    raw = (
        b"Subject: Entrega retida\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        b'<p>Sua encomenda <span style="font-size:0;visibility:hidden">ele sabia que ia '
        b'perder</span>est\xc3\xa1 retida. <a href="http://taxas.example/">Pague</a>'
        b'<a style="display:none" href="http://legit.example/">x</a></p>'
    )
    out = normalize_email(raw, DEFAULT)
    assert out.text == "Entrega retida Sua encomenda está retida. Pague taxas.example"
    assert out.notes.link_domains == ("taxas.example",)
    assert out.notes.hidden_chars == len("elesabiaqueiaperder") + len("x")  # noted, not read
    assert out.notes.as_dict()["hidden_chars"] == out.notes.hidden_chars


def test_hidden_text_is_counted_titles_and_scripts_are_not() -> None:
    html = (
        "<head><title>The title</title><style>p {}</style></head>"
        '<script>var x</script><p style="display:none">ab c</p><template>t</template>'
    )
    assert read_html(html).hidden_chars == 3
    best = normalize_email(
        b"Subject: s\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: bogus\r\n\r\n"
        b'<p>shown <span style="font-size:0">hid</span></p>',
        DEFAULT,
    )
    assert "hid" not in best.text


PITCH = "verify your bank password now"


@pytest.mark.parametrize(
    "html",
    [
        # comment ends HTML5 knows and HTMLParser did not (found by fuzzing)
        f"<!-->{PITCH}<!-- -->",
        f"<!--->{PITCH}<!-- -->",
        f"<!-- x --!>{PITCH}<!-- -->",
        # the first of a repeated attribute counts; !important beats a later declaration
        f"<p style='display:block' style='display:none'>{PITCH}</p>",
        f"<p style='display:block!important;display:none'>{PITCH}</p>",
        f"<p style='display:block ! important;display:none'>{PITCH}</p>",
        # table cells outside a table are no elements; a row ends the open cell
        f"<td style='display:none'>{PITCH}",
        f"<table><td style='display:none'>x<tr><td>{PITCH}</table>",
        # any heading end tag closes the open heading; a link ends the open link
        f"<h1 style='display:none'>x</h2>{PITCH}",
        f"<a style='display:none' href='http://x.example/'>x<a href='http://evil.example/'>{PITCH}",
    ],
)
def test_text_a_browser_shows_is_read(html: str) -> None:
    assert PITCH in " ".join(html_to_text(html)[0].split())


def test_a_hidden_important_declaration_stays_hidden() -> None:
    assert html_to_text("<p style='display:none!important;display:block'>x</p>y")[0].split() == [
        "y"
    ]


def test_a_host_longer_than_dns_allows_is_no_link_domain() -> None:
    long = "a." * 200 + "com"
    assert html_to_text(f"<a href='http://{long}/'>x</a><a href='http://ok.example/'>y</a>")[1] == [
        "ok.example"
    ]


@pytest.mark.parametrize(
    "html",
    [
        # a link or heading opened outside a table is out of reach from inside its cells
        "<div style='visibility:hidden'><a href=http://a.example/ style='visibility:visible'>"
        f"<table><tr><td><a href=http://b.example/>{PITCH}</a>",
        "<div style='visibility:hidden'><h1 style='visibility:visible'><table><tr><td>"
        f"intro</h2>{PITCH}",
        # "<table/>" opens a table: the cell that follows is a cell, with its own style
        f"<div style='font-size:0'><table/><tr><td style='font-size:14px'>{PITCH}",
    ],
)
def test_closing_rules_stop_where_a_browser_stops_them(html: str) -> None:
    assert PITCH in " ".join(html_to_text(html)[0].split())
