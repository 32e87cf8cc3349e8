"""Structure symbols of an e-mail: named rules in the style of SpamAssassin's, each
evidence for spam (+1) or for legitimate mail (-1), that the combiner weighs beside the
text models.

What is never read, and why: To, Cc, Delivered-To, X-Original-To (recipients in the
training corpus are placeholders, a label leak), Received (its chains differ by corpus
era) and every X- header but X-Mailman-Version (X-Spam-*, X-Virus-* are earlier filters'
verdicts). ``READ`` lists the only top-level headers looked at. A symbol that tracked the
corpus rather than the mail would teach the model a lie.

``from_message`` never raises and does bounded work: header values are cut to 2,000
characters and parsed here with short regexes, each group of symbols runs on its own and
stays silent when its input cannot be read, and the HTML and part walks are capped
(``textgate.signals.parts``, ``textgate.signals.links``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from email.message import Message
from email.utils import parseaddr, parsedate_to_datetime
from typing import Any

from textgate.signals import auth
from textgate.signals.links import has_image, link_symbols, registrable, text_host
from textgate.signals.parts import (
    MAX_HTML_PARTS,
    Leaf,
    attachment_symbols,
    decode_words,
    header_values,
    html_prefix,
    leaves,
)


@dataclass(frozen=True)
class Symbol:
    name: str  # e.g. "LIST_ID"
    direction: int  # +1: evidence of spam/phish; -1: evidence of legitimate mail
    description: str  # one line, shown in explanations and spamd REPORT


_HAM, _SPAM = -1, 1
# The combiner's feature order: never reorder or remove, only append.
_TABLE = (
    Symbol("LIST_ID", _HAM, "List-Id header: sent by a mailing list"),
    Symbol("LIST_UNSUBSCRIBE", _HAM, "List-Unsubscribe header: a way to opt out"),
    Symbol("PRECEDENCE_LIST", _HAM, "Precedence: list or bulk"),
    Symbol("MAILING_LIST_SOFTWARE", _HAM, "List-Post, Mailing-List or Mailman headers"),
    Symbol("IN_REPLY_TO", _HAM, "In-Reply-To or References: part of a conversation"),
    Symbol("AUTH_SPF_PASS", _HAM, "receiving MTA: SPF pass"),
    Symbol("AUTH_SPF_FAIL", _SPAM, "receiving MTA: SPF fail or softfail"),
    Symbol("AUTH_DKIM_PASS", _HAM, "receiving MTA: a DKIM signature verified"),
    Symbol("AUTH_DKIM_FAIL", _SPAM, "receiving MTA: a DKIM signature failed"),
    Symbol("AUTH_DMARC_PASS", _HAM, "receiving MTA: DMARC pass"),
    Symbol("AUTH_DMARC_FAIL", _SPAM, "receiving MTA: DMARC fail"),
    Symbol("AUTH_NONE", _SPAM, "receiving MTA: neither SPF nor DKIM results"),
    Symbol("FROM_NAME_HAS_OTHER_ADDRESS", _SPAM, "From name shows another address or domain"),
    Symbol("REPLYTO_DIFFERENT_DOMAIN", _SPAM, "Reply-To domain differs from From's"),
    Symbol("LINK_TEXT_DOMAIN_MISMATCH", _SPAM, "link text shows a domain its href lacks"),
    Symbol("LINK_IP_LITERAL", _SPAM, "a link to a bare IP address"),
    Symbol("LINK_SHORTENER", _SPAM, "a link through a URL shortener"),
    Symbol("LINK_PUNYCODE", _SPAM, "a link to an internationalized (xn--) host"),
    Symbol("MANY_LINK_DOMAINS", _SPAM, "links to 8 or more distinct domains"),
    Symbol("HTML_ONLY", _SPAM, "HTML with no text/plain part"),
    Symbol("HIDDEN_TEXT", _SPAM, "HTML hides much of its text"),
    Symbol("IMAGE_HEAVY", _SPAM, "HTML with images and little text"),
    Symbol("ATTACH_EXECUTABLE", _SPAM, "an executable or script attachment"),
    Symbol("ATTACH_ARCHIVE", _SPAM, "an archive attachment (zip, rar, 7z ...)"),
    Symbol("ATTACH_HTML", _SPAM, "an HTML file attachment"),
    Symbol("ATTACH_OFFICE_MACRO", _SPAM, "a macro-enabled Office attachment"),
    Symbol("MIME_DEFECTS", _SPAM, "MIME structure with tolerated defects"),
    Symbol("MISSING_MESSAGE_ID", _SPAM, "no Message-ID header"),
    Symbol("MISSING_DATE", _SPAM, "no Date header"),
    Symbol("DATE_UNPARSEABLE", _SPAM, "Date header cannot be read as a date"),
    Symbol("MESSAGE_ID_NO_DOMAIN", _SPAM, "Message-ID without an @domain"),
    Symbol("SUBJECT_ALL_CAPS", _SPAM, "Subject in capitals"),
    Symbol("SUBJECT_MONEY", _SPAM, "Subject names money (a currency or an amount)"),
    Symbol("SUBJECT_EXCLAIM", _SPAM, "Subject with two or more '!'"),
)
SYMBOLS: dict[str, Symbol] = {s.name: s for s in _TABLE}
ORDER: tuple[str, ...] = tuple(s.name for s in _TABLE)
# each symbol's fixed sign (+1 spam-ward, -1 ham-ward), as the combiner's fit and file take it
DIRECTIONS: dict[str, int] = {s.name: s.direction for s in _TABLE}

# The only top-level headers read (lower case); see the module docstring.
READ = frozenset(
    {
        "from",
        "reply-to",
        "date",
        "message-id",
        "subject",
        "list-id",
        "list-unsubscribe",
        "list-post",
        "mailing-list",
        "x-mailman-version",
        "precedence",
        "in-reply-to",
        "references",
        "authentication-results",
    }
)
# The headers whose absence together means a headerless text, not a strange message.
_IDENTITY = ("from", "date", "message-id")
HIDDEN_CHARS = 200  # hidden characters that make HIDDEN_TEXT whatever the text
HIDDEN_SHARE = 0.3  # ... or this share of all text, once at least HIDDEN_FLOOR are hidden
HIDDEN_FLOOR = 20  # a hidden preheader of a few characters is no trick
LITTLE_TEXT = 200  # visible characters below which an HTML mail with images is IMAGE_HEAVY

_Headers = dict[str, list[str]]
_ADDRESS = re.compile(r"[\w.+-]+@((?:[\w-]+\.)+[\w-]+)")
_PUNCT = "()<>[]{}\"',;:!?"
_MONEY = re.compile(
    r"[$€£¥₹₽₩₿]|\b\d[\d,.]{0,20}\s?(?:usd|eur|gbp|dollars?|euros?|pounds)\b"
    r"|\b(?:usd|eur|gbp)\s?\d",
    re.I,
)


def from_message(
    message: Message,
    *,
    html: bool,
    text_chars: int,
    hidden_chars: int,
    link_domains: Sequence[str],
    defects: Sequence[str],
) -> tuple[str, ...]:
    """The names of the symbols that fire for ``message``, in ``ORDER`` order.

    ``html``: an HTML part was read; ``text_chars``: characters of visible text extracted;
    ``hidden_chars``: HTML text a browser hides; ``link_domains``: hosts of the shown links;
    ``defects``: the tolerated MIME defects. A message without From, Date and Message-ID
    (a headerless text) gives ``()``: its structure is unknown, not suspicious.
    """
    try:
        headers = header_values(message, READ)
    except Exception:  # headers that cannot even be listed: nothing is known
        return ()
    if not any(name in headers for name in _IDENTITY):
        return ()
    fired: set[str] = set()
    for group, args in (
        (_list_symbols, (headers,)),
        (_auth_symbols, (headers.get("authentication-results", []),)),
        (_sender_symbols, (headers,)),
        (_identity_symbols, (headers,)),
        (_subject_symbols, (_first(headers, "subject"),)),
        (_defect_symbols, (defects,)),
    ):
        fired |= _quietly(group, *args)
    try:
        parts = list(leaves(message))
    except Exception:  # a part tree the walk cannot read: no part symbols
        parts = []
    fired |= _quietly(_attachment_symbols, parts)
    fired |= _quietly(_shape_symbols, parts, html, text_chars, hidden_chars)
    fired |= _quietly(_page_symbols, parts, html, text_chars, link_domains)
    return tuple(name for name in ORDER if name in fired)


def _quietly(group: Callable[..., Iterable[str]], *args: Any) -> set[str]:
    """``group(*args)``, or nothing when hostile input makes it raise: one unreadable
    header silences its own symbols, never the others or the caller."""
    try:
        return set(group(*args))
    except Exception:
        return set()


def _first(headers: _Headers, name: str) -> str:
    values = headers.get(name)
    return values[0] if values else ""


def _present(headers: _Headers, name: str) -> bool:
    """Whether a header ``name`` with a non-blank value exists."""
    return any(v.strip() for v in headers.get(name, ()))


def _list_symbols(headers: _Headers) -> Iterable[str]:
    if _present(headers, "list-id"):
        yield "LIST_ID"
    if _present(headers, "list-unsubscribe"):
        yield "LIST_UNSUBSCRIBE"
    if _first(headers, "precedence").strip().lower().partition(" ")[0] in ("list", "bulk"):
        yield "PRECEDENCE_LIST"
    if any(_present(headers, h) for h in ("list-post", "x-mailman-version", "mailing-list")):
        yield "MAILING_LIST_SOFTWARE"
    if _present(headers, "in-reply-to") or _present(headers, "references"):
        yield "IN_REPLY_TO"


def _auth_symbols(values: Sequence[str]) -> Iterable[str]:
    """From the receiving MTA's Authentication-Results (``auth.read``: its own headers only)."""
    if not values:
        return
    results = auth.read(values)
    yield from _auth_names(results.methods, results.no_result)


def _auth_names(results: dict[str, set[str]], no_result: bool) -> Iterable[str]:
    spf, dkim, dmarc = (results.get(m, set()) for m in ("spf", "dkim", "dmarc"))
    if "pass" in spf:
        yield "AUTH_SPF_PASS"
    if spf & {"fail", "softfail"}:
        yield "AUTH_SPF_FAIL"
    if "pass" in dkim:
        yield "AUTH_DKIM_PASS"
    if "fail" in dkim:
        yield "AUTH_DKIM_FAIL"
    if "pass" in dmarc:
        yield "AUTH_DMARC_PASS"
    if "fail" in dmarc:
        yield "AUTH_DMARC_FAIL"
    if no_result or ("none" in spf and "none" in dkim):
        yield "AUTH_NONE"


def _sender_symbols(headers: _Headers) -> Iterable[str]:
    name, address = parseaddr(_first(headers, "from"))
    domain = _domain(address)
    if not domain:
        return
    own = registrable(domain)
    if any(registrable(d) != own for d in _name_domains(decode_words(name))):
        yield "FROM_NAME_HAS_OTHER_ADDRESS"
    reply = _domain(parseaddr(_first(headers, "reply-to"))[1])
    if reply and registrable(reply) != own:
        yield "REPLYTO_DIFFERENT_DOMAIN"


def _domain(address: str) -> str:
    _, at, domain = address.rpartition("@")
    return domain.strip().strip("<>").lower().rstrip(".") if at else ""


def _name_domains(name: str) -> list[str]:
    """The domains a display name shows: of the addresses in it, and the words that read as
    domains ("PayPal.com Support")."""
    found = [m.group(1) for m in _ADDRESS.finditer(name)]
    for word in _ADDRESS.sub(" ", name).split()[:50]:
        host = text_host(word.strip(_PUNCT))
        if host:
            found.append(host)
    return found


def _identity_symbols(headers: _Headers) -> Iterable[str]:
    ids = headers.get("message-id")
    if not ids:
        yield "MISSING_MESSAGE_ID"
    elif "@" not in ids[0]:
        yield "MESSAGE_ID_NO_DOMAIN"
    dates = headers.get("date")
    if not dates:
        yield "MISSING_DATE"
        return
    try:
        parsedate_to_datetime(dates[0].strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        yield "DATE_UNPARSEABLE"


def _subject_symbols(raw: str) -> Iterable[str]:
    subject = decode_words(raw)
    cased = [c for c in subject if c.isupper() or c.islower()]
    if len(cased) >= 10 and sum(c.isupper() for c in cased) >= 0.9 * len(cased):
        yield "SUBJECT_ALL_CAPS"
    if _MONEY.search(subject):
        yield "SUBJECT_MONEY"
    if subject.count("!") + subject.count("！") >= 2:
        yield "SUBJECT_EXCLAIM"


def _defect_symbols(defects: Sequence[str]) -> Iterable[str]:
    if len(defects) > 0:
        yield "MIME_DEFECTS"


def _attachment_symbols(parts: Sequence[Leaf]) -> Iterable[str]:
    for leaf in parts:
        yield from attachment_symbols(leaf)


def _shape_symbols(
    parts: Sequence[Leaf], html: bool, text_chars: int, hidden_chars: int
) -> Iterable[str]:
    # A .txt attachment is no plain alternative of the HTML.
    plain = any(p.content_type == "text/plain" and not p.attachment for p in parts)
    if html and not plain:
        yield "HTML_ONLY"
    total = hidden_chars + text_chars
    if hidden_chars >= HIDDEN_CHARS or (
        hidden_chars >= HIDDEN_FLOOR and hidden_chars >= HIDDEN_SHARE * total
    ):
        yield "HIDDEN_TEXT"


def _page_symbols(
    parts: Sequence[Leaf], html: bool, text_chars: int, link_domains: Sequence[str]
) -> Iterable[str]:
    bodies = [p for p in parts if p.content_type == "text/html" and not p.attachment]
    pages = [html_prefix(p) for p in bodies[:MAX_HTML_PARTS]]
    if html and text_chars < LITTLE_TEXT and has_image(pages):
        yield "IMAGE_HEAVY"
    yield from link_symbols(pages, link_domains)
