"""The parts of HTML5's parsing rules that decide which text a browser shows: which elements
separate words, never hold content, close an open paragraph, belong only in a table, break
out of SVG, or end implicitly. Tables only; ``markup`` applies them."""

from __future__ import annotations

# Elements whose text a browser never shows (script and style: CDATA, see handle_data).
HIDDEN = frozenset({"template", "title"})
# What may stand in a <head>. Any other start tag, or text, ends an unclosed head: a
# browser shows what follows, so a filter that waited for </head> or <body> would read
# nothing of an HTML mail that never closes its head (a spammer's trick; real phish do it).
HEAD_CONTENT = frozenset(
    {"base", "basefont", "bgsound", "link", "meta", "noscript", "script", "style", *HIDDEN}
)
# Elements that separate words when rendered.
BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "dd",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "body",
        "html",
        "center",
        "option",
        "select",
        "textarea",
        "button",
    ]
)


# Elements that never have content or an end tag: never on the open-element stack.
VOID = frozenset(
    [
        "area",
        "base",
        "basefont",
        "bgsound",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
# A start tag of one of these closes an open <p> (HTML5 "close a p element"), and a
# heading closes a heading: without this, <p style="font-size:0">x<p>pitch would hide
# the pitch a browser shows.
CLOSES_P = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "center",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "li",
        "dd",
        "dt",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "ul",
        "listing",
        "plaintext",
        "xmp",
    ]
)
HEADINGS = frozenset(["h1", "h2", "h3", "h4", "h5", "h6"])
TABLE_PARTS = frozenset({"table", "tbody", "thead", "tfoot", "tr"})
ROWS = frozenset({"tbody", "thead", "tfoot", "tr"})
# Ignored by a browser outside a <table> (HTML5 "in body": parse error, ignore the token).
TABLE_ONLY = frozenset({"caption", "col", "colgroup", "tbody", "td", "tfoot", "th", "thead", "tr"})
# What a table keeps inside it; any other element there goes before the table.
IN_TABLE = TABLE_PARTS | {
    "caption",
    "colgroup",
    "col",
    "td",
    "th",
    "script",
    "style",
    "template",
    "form",
    "input",
}
# HTML start tags that break out of SVG or MathML content (HTML5 "foreign content").
BREAKOUT = frozenset(
    [
        "b",
        "big",
        "blockquote",
        "body",
        "br",
        "center",
        "code",
        "dd",
        "div",
        "dl",
        "dt",
        "em",
        "embed",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "head",
        "hr",
        "i",
        "img",
        "li",
        "listing",
        "menu",
        "meta",
        "nobr",
        "ol",
        "p",
        "pre",
        "ruby",
        "s",
        "small",
        "span",
        "strong",
        "strike",
        "sub",
        "sup",
        "table",
        "tt",
        "u",
        "ul",
        "var",
    ]
)
# Start tag → (elements it closes, elements that stop the search): the implied end tags
# of HTML5's tree builder, for the elements whose content mail hides.
IMPLIED: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
SCOPE = frozenset(
    ["applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "button"]
)
IMPLIED["p"] = (frozenset({"p"}), SCOPE)
IMPLIED["li"] = (frozenset({"li"}), SCOPE | {"ol", "ul"})
IMPLIED["dd"] = IMPLIED["dt"] = (frozenset({"dd", "dt"}), SCOPE | {"dl"})
for _cell in ("td", "th"):
    IMPLIED[_cell] = (frozenset({"td", "th"}), frozenset({"tr", "table", "html", "template"}))
IMPLIED["tr"] = (frozenset({"tr"}), frozenset({"table", "html", "template"}))
for _section in ("tbody", "thead", "tfoot"):
    IMPLIED[_section] = (frozenset({"tbody", "thead", "tfoot"}), frozenset({"table", "html"}))
IMPLIED["option"] = (frozenset({"option"}), frozenset({"select", "datalist", "html"}))
# Tags whose nearest open position each stack entry remembers, so that every implied-end
# check is O(1) however deep the stack (100k nested spans must stay linear).
TRACKED = frozenset(
    {tag for closes, stops in IMPLIED.values() for tag in closes | stops}
    | TABLE_PARTS
    | HEADINGS
    | {"a", "caption"}
)
# A link or heading opened outside a table is out of reach from inside one of its cells.
CELL_SCOPE = frozenset({"td", "th", "caption", "table", "html", "template"})
