"""The receiving MTA's ``Authentication-Results`` (RFC 8601), read the one safe way.

Only the topmost header and those below it with the same authserv-id count (one MTA's
milters may add one each): a header further down, or another server's, may come from the
sender. ARC-Authentication-Results are not read. Both the structure symbols
(``AUTH_*``) and the tenants' sender lists (an allow entry counts only for an authenticated
sender) read them here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

MAX_AUTH_HEADERS = 5
_COMMENT = re.compile(r"\([^()]*\)")
_RESINFO = re.compile(r"(?<![\w.-])(spf|dkim|dmarc)\s*=\s*([a-z]+)", re.I)
_PROPERTY = re.compile(
    r"(?<![\w.-])(header\.d|header\.i|header\.from|smtp\.mailfrom)\s*=\s*(\S+)", re.I
)


@dataclass(frozen=True)
class Results:
    methods: dict[str, set[str]] = field(default_factory=dict)  # method -> results seen
    no_result: bool = False  # the MTA wrote "none": nothing was checked
    passed: dict[str, set[str]] = field(default_factory=dict)  # method -> domains that passed


def read(values: Sequence[str]) -> Results:
    """The trusted results among ``values`` (the message's headers, top first)."""
    if not values:
        return Results()
    server = authserv_id(values[0])
    methods: dict[str, set[str]] = {}
    passed: dict[str, set[str]] = {}
    no_result = False
    for value in values[:MAX_AUTH_HEADERS]:
        if authserv_id(value) != server:
            continue
        for _ in range(3):  # comments nest; three levels is more than any MTA writes
            value = _COMMENT.sub(" ", value)
        _, _, stated = value.partition(";")
        no_result = no_result or stated.strip().lower() == "none"
        for resinfo in stated.split(";"):
            _one(resinfo, methods, passed)
    return Results(methods, no_result, passed)


def _one(resinfo: str, methods: dict[str, set[str]], passed: dict[str, set[str]]) -> None:
    found = _RESINFO.findall(resinfo)
    for method, result in found:
        methods.setdefault(method.lower(), set()).add(result.lower())
    if len(found) != 1 or found[0][1].lower() != "pass":
        return  # the domains of one passing result only: never mix two results' properties
    method = found[0][0].lower()
    for _prop, value in _PROPERTY.findall(resinfo):
        domain = value.strip().strip("<>\"';").rsplit("@", 1)[-1].strip(".").lower()
        if domain:
            passed.setdefault(method, set()).add(domain)


def authserv_id(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def aligned(domain: str, other: str) -> bool:
    """DMARC's relaxed alignment, simplified: the same domain or one below the other."""
    domain, other = domain.lower(), other.lower()
    return domain == other or domain.endswith("." + other) or other.endswith("." + domain)
