"""HTML to visible text, and the domains of its links."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import NamedTuple
from urllib.parse import urlsplit

from textgate.normalize import html5
from textgate.normalize.style import SHOWN, Shown, shown

# The state of <title> and <template> and what is in them: not content, so not counted as
# hidden text (a distinct instance: descendants of a gone element share their parent's).
_NOT_CONTENT = Shown(gone=True)


@dataclass(slots=True)
class _Open:
    tag: str
    state: Shown
    near: dict[str, int]  # tracked tag → index of its nearest open element, this one included


class _TextParser(HTMLParser):
    """Streaming HTML → the text a browser shows. ``HTMLParser`` is a regex-driven loop with
    no recursion and no tree, so 100k nested tags cost time linear in their length. Chosen
    over selectolax (Lexbor), which is faster on ordinary mail but whose tree is not linear
    on hostile nesting (docs/email-model.md, "One normalization", has the measurement) —
    and it is stdlib.

    Hidden text (``textgate.normalize.style``) needs to know which element a piece of text
    is in, so the parser keeps the stack of open elements, with the part of HTML5's tree
    builder that decides where an element ends: void elements, implied end tags, an end
    tag closing everything above its element, text in a table shown before the table
    (foster parenting). Where it differs from a browser it errs towards showing text:
    a filter that hides what the reader sees is the hole a spammer wants."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.domains: list[str] = []
        self.hidden_chars = 0  # shown-to-nobody text dropped (not titles, scripts, styles)
        self.stack: list[_Open] = []
        self.counts: dict[str, int] = {}  # open elements per tag, for O(1) stray end tags
        self.in_head = False
        self.body_started = False  # after it, <head> and </head> are ignored, as browsers do

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in html5.TABLE_ONLY and not self.counts.get("table"):
            return  # a cell or row outside a table is no element to a browser, nor its style
        if tag == "head":
            self.in_head = not self.body_started
        elif tag == "body":
            self._start_body()
            while self.counts.get("title") or self.counts.get("template"):
                self._pop()  # an unclosed <title> in the head does not hide the body
        elif self.in_head and tag not in html5.HEAD_CONTENT:
            self._start_body()
        self._close_implied(tag)
        if tag in html5.BLOCK:
            self.out.append("\n")
        state = self._context() if tag in html5.IN_TABLE else self._text_context()
        if tag not in ("html", "head", "body"):  # their style would hide the whole mail
            values: dict[str, str | None] = {}
            for name, value in attrs:  # a browser keeps the first of a repeated attribute
                values.setdefault(name, value)
            state = (
                _NOT_CONTENT
                if tag in html5.HIDDEN
                else shown(state, values.get("style"), "hidden" in values)
            )
            if tag == "a" and state.text_shown:
                domain = _link_domain(values.get("href"))
                if domain:
                    self.domains.append(domain)
        if tag not in html5.VOID:
            self._push(tag, state)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":  # "<table/>" opens a table to a browser: its rows and cells follow
            self.handle_starttag(tag, attrs)
            return
        # "<span style=display:none/>" hides what follows in a browser (the slash means
        # nothing on a non-void element); reading it as closed errs towards showing.
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "head" and self.in_head:
            self._start_body()
        if tag in html5.BLOCK:
            self.out.append("\n")
        if tag in html5.HEADINGS and not self.counts.get(tag):
            # </h2> closes an open <h1> in a browser: <h1 hidden>x</h2>pitch shows the pitch
            self._close_in_scope(html5.HEADINGS, html5.CELL_SCOPE)
        elif self.counts.get(tag):
            while self._pop() != tag:
                pass

    def handle_data(self, data: str) -> None:
        # script/style are CDATA to HTMLParser: their text arrives while the tag is open.
        if self.cdata_elem is not None or (not data.strip() and self.in_head):
            return
        context = self._text_context()
        if not context.text_shown:
            if context is not _NOT_CONTENT:
                self.hidden_chars += len("".join(data.split()))
            return
        if data.strip():
            self._start_body()  # shown text starts the body, and ends an unclosed head
        if not self.in_head:
            self.out.append(data)

    def _start_body(self) -> None:
        self.in_head = False
        self.body_started = True

    def _context(self) -> Shown:
        return self.stack[-1].state if self.stack else SHOWN

    def _text_context(self) -> Shown:
        """Where text (or an element not made for tables) lands: in a table outside any
        cell, before the table."""
        if not self.stack or self.stack[-1].tag not in html5.TABLE_PARTS:
            return self._context()
        table = self.stack[-1].near.get("table", -1)
        return self.stack[table - 1].state if table > 0 else SHOWN

    def _close_implied(self, tag: str) -> None:
        if tag in html5.BREAKOUT and (self.counts.get("svg") or self.counts.get("math")):
            while self.counts.get("svg") or self.counts.get("math"):
                self._pop()  # HTML in SVG or MathML ends them: <svg hidden><p> shows the <p>
        if tag in html5.CLOSES_P:
            self._close_in_scope(*html5.IMPLIED["p"])
        if tag in html5.HEADINGS and self.stack and self.stack[-1].tag in html5.HEADINGS:
            self._pop()
        if tag == "a" and self.counts.get("a"):  # a link does not nest in a link
            self._close_in_scope(frozenset({"a"}), html5.CELL_SCOPE)
        if tag in html5.ROWS:  # a row or a table section ends the open cell first
            self._close_in_scope(frozenset({"td", "th"}), frozenset({"table", "html", "template"}))
        if tag == "table" and self.stack and self.stack[-1].tag in html5.TABLE_PARTS:
            self._close_in_scope(frozenset({"table"}), frozenset({"html"}))
        if tag in html5.IMPLIED and tag != "p":
            self._close_in_scope(*html5.IMPLIED[tag])

    def _close_in_scope(self, closes: frozenset[str], stops: frozenset[str]) -> None:
        if not self.stack:
            return
        near = self.stack[-1].near
        target = max((near.get(t, -1) for t in closes), default=-1)
        if target >= 0 and target > max((near.get(t, -1) for t in stops), default=-1):
            while len(self.stack) > target:
                self._pop()

    def _push(self, tag: str, state: Shown) -> None:
        near = self.stack[-1].near if self.stack else {}
        if tag in html5.TRACKED:
            near = {**near, tag: len(self.stack)}
        self.stack.append(_Open(tag, state, near))
        self.counts[tag] = self.counts.get(tag, 0) + 1

    def _pop(self) -> str:
        tag = self.stack.pop().tag
        self.counts[tag] -= 1
        return tag

    def parse_marked_section(self, i: int, report: bool = True) -> int:
        # Python 3.11's _markupbase raises AssertionError on "<![junk"; browsers treat it
        # as a bogus comment up to the next ">".
        try:
            return super().parse_marked_section(i, report)
        except AssertionError:
            end = self.rawdata.find(">", i + 3)
            return -1 if end < 0 else end + 1


def _link_domain(href: str | None) -> str | None:
    if not href:
        return None
    try:
        parts = urlsplit(href.strip())
        host = parts.hostname
    except ValueError:  # e.g. "http://[bad" — an invalid IPv6 literal
        return None
    if parts.scheme.lower() not in ("http", "https") or not host or len(host) > _MAX_HOST:
        return None  # longer than DNS allows: no host a browser could reach
    return host.removeprefix("www.")


class Html(NamedTuple):
    text: str  # what a browser shows
    domains: list[str]  # of the shown http(s) links, in order
    hidden_chars: int  # non-space characters of text a browser hides, not read


# HTML5 ends a comment at "<!-->", "<!--->" and "--!>"; ``HTMLParser`` reads on to the next
# "-->", so text a browser shows between them would be lost (a spammer's trick).
_ABRUPT_COMMENT = re.compile(r"<!---?>")
_BANG_CLOSE = re.compile(r"--!>")
_MAX_HOST = 253


def read_html(html: str) -> Html:
    """Visible text of an HTML document, its shown links' domains and how much it hid."""
    parser = _TextParser()
    parser.feed(_BANG_CLOSE.sub("-->", _ABRUPT_COMMENT.sub("<!---->", html)))
    parser.close()
    return Html("".join(parser.out), parser.domains, parser.hidden_chars)


def html_to_text(html: str) -> tuple[str, list[str]]:
    """Visible text of an HTML document and the domains of its http(s) links, in order."""
    text, domains, _ = read_html(html)
    return text, domains
