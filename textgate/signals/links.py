"""Hosts and links: registrable domains, and the link symbols of a message's HTML.

The HTML is read with one bounded regex, not a parser: ``textgate.normalize`` already
parsed it for the text and the link domains, and a symbol only needs hrefs, the text of
their anchors and whether an image exists. Every scan is capped (characters read, matches
kept, the length of each piece of a match), so the work has a bound whatever the page.
"""

from __future__ import annotations

import html
import ipaddress
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice

MAX_ANCHORS = 200  # <a href> read per HTML part
MAX_LINK_DOMAINS = 1000  # entries of the normalizer's link domains read
MANY_DOMAINS = 8  # distinct registrable domains that make MANY_LINK_DOMAINS

SHORTENERS = frozenset(
    {"bit.ly", "tinyurl.com", "t.co", "goo.gl", "ow.ly", "is.gd", "buff.ly", "rebrand.ly"}
    | {"cutt.ly", "shorturl.at", "rb.gy", "tiny.cc"}
)
# Second-level labels that registries sell under a country code (example.co.uk).
_SECOND_LEVEL = frozenset(
    {"ac", "co", "com", "edu", "go", "gob", "gov", "gv", "ltd", "ne", "net", "or", "org", "plc"}
)
# TLDs a bare "word.tld" anchor text must end in to count as a domain, so that "report.pdf"
# or "setup.py" is not taken for one; a scheme or "www." makes any TLD count.
_COMMON_TLDS = frozenset(
    {"com", "net", "org", "info", "biz", "edu", "gov", "mil", "int", "io", "co", "me", "us", "uk"}
    | {"de", "fr", "ru", "cn", "jp", "br", "in", "it", "nl", "au", "ca", "es", "ch", "se", "no"}
    | {"dk", "fi", "pl", "eu", "be", "at", "ie", "nz", "za", "mx", "ar", "kr", "tw", "hk", "sg"}
    | {"xyz", "top", "online", "site", "app", "dev", "ly", "ai", "tv", "cc", "ws", "club", "shop"}
    | {"store", "live"}
)
# Bounded pieces, possessive quantifiers (no backtracking into an href or the rest of the
# tag) and no "<" inside a tag keep a failed match cheap however the page is built.
_ANCHOR = re.compile(
    r"""<a\b[^<>]{0,200}?\bhref\s*+=\s*+"""
    r"""(?:"([^"]{0,2000}+)"|'([^']{0,2000}+)'|([^\s<>]{1,500}+))[^<>]{0,200}+>"""
    r"""(.{0,300}?)</a\s*>""",
    re.I | re.S,
)
_IMG = re.compile(r"<img\b", re.I)
_TAG = re.compile(r"<[^>]*>")
_TEXT_HOST = re.compile(
    r"(?:(https?)://)?((?:[\w-]{1,63}\.){1,10}[a-z]{2,63})\.?(?::\d{1,5})?(?:[/?#]\S*)?",
    re.I,
)
# scheme://[userinfo@]host: what urlsplit finds, at a fraction of its cost. A backslash
# ends the authority as "/" does, as browsers read it: "http://evil.example\@bank.example"
# goes to evil.example.
_URL_HOST = re.compile(
    r"\s*[a-z][a-z0-9+.-]{0,30}:[/\\]{2}(?:[^/?#@\s\\]{0,500}+@)?"
    r"(\[[0-9a-f:.]{0,60}\]|[^/?#:\s\\@\[\]]{1,253}+)",
    re.I,
)
# What a browser takes for an IPv4 address: 1 to 4 decimal, octal or hex parts.
_LOOSE_IPV4 = re.compile(r"(?:0x[0-9a-f]*|\d+)(?:\.(?:0x[0-9a-f]*|\d+)){0,3}\.?", re.I)


def registrable(host: str) -> str:
    """The part of ``host`` one owner registers: the last two labels, three under a
    country code's second level (``mail.example.co.uk`` → ``example.co.uk``). No public
    suffix list: a rough cut that is the same for training and serving."""
    host = host.lower().rstrip(".")
    labels = host.split(".")
    if len(labels) <= 2 or is_ip_literal(host):
        return host
    if len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def is_ip_literal(host: str) -> bool:
    """Whether a browser would read ``host`` as an IP address (dotted, decimal, hex)."""
    if ":" not in host:
        return _LOOSE_IPV4.fullmatch(host) is not None
    try:
        ipaddress.IPv6Address(host.strip("[]"))
    except ValueError:
        return False
    return True


def host_of(href: str) -> str | None:
    """The lower-case host of an absolute URL; None for mailto:, relative or broken ones."""
    match = _URL_HOST.match(href)
    host = match.group(1).lower().rstrip(".") if match else ""
    return host or None


def text_host(text: str) -> str | None:
    """The host that anchor text shows when it reads as a URL or a domain, else None."""
    text = text.strip()
    match = _TEXT_HOST.fullmatch(text)
    if match is None:
        return None
    host = match.group(2).lower()
    shown_as_url = match.group(1) is not None or host.startswith("www.")
    if not shown_as_url and host.rsplit(".", 1)[-1] not in _COMMON_TLDS:
        return None
    return _ascii_host(host)


def _ascii_host(host: str) -> str:
    # An IDN shown as Unicode in the text is punycode in the href: compare one spelling.
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def anchors(page: str) -> Iterator[tuple[str, str]]:
    """(href, visible text) of the first ``MAX_ANCHORS`` anchors of an HTML page."""
    for match in islice(_ANCHOR.finditer(page), MAX_ANCHORS):
        href = match.group(1) or match.group(2) or match.group(3) or ""
        text = html.unescape(_TAG.sub("", match.group(4)))
        yield html.unescape(href), text


def has_image(pages: Iterable[str]) -> bool:
    return any(_IMG.search(page) for page in pages)


def link_symbols(pages: Sequence[str], link_domains: Sequence[str]) -> set[str]:
    """The link symbols of the HTML ``pages`` (each already cut) and of the normalizer's
    ``link_domains`` (the hosts of the links it showed)."""
    shown = dict.fromkeys(
        d.lower() for d in islice(link_domains, MAX_LINK_DOMAINS) if isinstance(d, str)
    )
    hosts, mismatch = _read_anchors(pages)
    fired = _host_symbols([*shown, *hosts])
    if mismatch:
        fired.add("LINK_TEXT_DOMAIN_MISMATCH")
    if len({registrable(d) for d in shown if not is_ip_literal(d)}) >= MANY_DOMAINS:
        fired.add("MANY_LINK_DOMAINS")
    return fired


def _read_anchors(pages: Sequence[str]) -> tuple[list[str], bool]:
    """The hosts the anchors link to, and whether one's text names another domain."""
    hosts: list[str] = []
    mismatch = False
    for page in pages:
        for href, text in anchors(page):
            host = host_of(href)
            if host is None:
                continue
            hosts.append(host)
            claimed = text_host(text) if "." in text else None
            if claimed is not None and registrable(claimed) != registrable(_ascii_host(host)):
                mismatch = True
    return hosts, mismatch


def _host_symbols(hosts: Sequence[str]) -> set[str]:
    fired: set[str] = set()
    for host in dict.fromkeys(hosts):
        if is_ip_literal(host):
            fired.add("LINK_IP_LITERAL")
        elif host.removeprefix("www.") in SHORTENERS:
            fired.add("LINK_SHORTENER")
        if any(label.startswith("xn--") for label in host.split(".")):
            fired.add("LINK_PUNYCODE")
    return fired
