"""What every generator shares: the registry's entry, the seeded item loop, people, dates,
Message-IDs and the RFC 822 message with its plain or HTML body.

Every helper draws from the generator's ``rng`` in the order the generators drew before they
shared it: the seeds must keep producing the same bytes (the default model's training data),
so a change here that adds, drops or reorders a draw changes every generated message.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.utils import format_datetime

from textgate.mail.containers import MailItem

# message(rng, i): the i-th message of a generator, drawn from its one seeded rng
Message = Callable[[random.Random, int], bytes]


@dataclass(frozen=True)
class Generator:
    """One generator of training-only mail, as ``corpus.iter_email_corpus`` iterates it."""

    name: str  # its source group, "synthetic-modern/ham": "source/label"
    label: str
    count: int  # how many messages ``items()`` yields (the progress bar's total sums them)
    items: Callable[[], Iterator[MailItem]]

    @property
    def source(self) -> str:
        """What ``--exclude-source`` names: the group without its label."""
        return self.name.split("/")[0]


def generate(group: str, label: str, message: Message, count: int, seed: int) -> Iterator[MailItem]:
    """``count`` messages from one ``random.Random(seed)``, named ``source/0000.eml`` on."""
    source = group.split("/")[0]
    rng = random.Random(seed)
    for i in range(count):
        yield MailItem(f"{source}/{i:04d}.eml", message(rng, i), label, group)


FIRST = [
    "Anna",
    "Ben",
    "Carla",
    "David",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kim",
    "Leo",
    "Maya",
    "Noor",
    "Omar",
    "Priya",
]
LAST = [
    "Meyer",
    "Novak",
    "Rossi",
    "Silva",
    "Tanaka",
    "Walsh",
    "Kowalski",
    "Haddad",
    "Jensen",
    "Okafor",
    "Lindqvist",
    "Moreau",
]
_MAILHOSTS = ["gmail.com", "outlook.com", "example.net", "posteo.de", "icloud.com"]


def person(rng: random.Random) -> tuple[str, str]:
    """A private person: ("Anna Meyer", "anna.meyer@posteo.de")."""
    first, last = rng.choice(FIRST), rng.choice(LAST)
    domain = rng.choice(_MAILHOSTS)
    return f"{first} {last}", f"{first.lower()}.{last.lower()}@{domain}"


def date(rng: random.Random, since: int, minutes: int) -> str:
    """An RFC 822 date up to ``minutes`` after 1 January of ``since`` (each genre its era)."""
    when = datetime(since, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randint(0, minutes))
    return format_datetime(when)


def message_id(rng: random.Random, host: str | Sequence[str]) -> str:
    """``<hex@host>``; given several hosts, one is drawn after the token, as lures always did."""
    token = rng.getrandbits(64)
    at = host if isinstance(host, str) else rng.choice(host)
    return f"<{token:x}@{at}>"


def rfc822(
    headers: Mapping[str, str], body: str, *, html: bool = False, rng: random.Random | None = None
) -> bytes:
    """The message's bytes: ``headers`` in their order, then the body (see ``set_body``)."""
    msg = EmailMessage()
    for name, value in headers.items():
        msg[name] = value
    set_body(msg, body, html=html, rng=rng)
    return msg.as_bytes()


# Link text of generated HTML. Real HTML mail links from words ("View order", "Sign in") far
# more often than it prints its URLs; generated ham without any <a> taught the model that an
# anchor (whose domain the normalizer appends to the text) means phishing: a LinkedIn notice
# scored 0.94 as HTML and 0.05 as plain text.
_ANCHORS = ("here", "View online", "Open", "View details", "Learn more", "Sign in", "Click here")
_URL = re.compile(r"https?://[^\s|<>\"]+")


def set_body(msg: EmailMessage, body: str, *, html: bool, rng: random.Random | None = None) -> None:
    """The body as plain text, or as HTML only: one paragraph a line, each URL a link whose
    text is a call to action (drawn from ``rng``) or, a third of the time, the URL itself."""
    if html:

        def link(match: re.Match[str]) -> str:
            url = match.group(0)
            words = rng.choice(_ANCHORS) if rng is not None and rng.random() < 2 / 3 else url
            return f'<a href="{url}">{words}</a>'

        paragraphs = "".join(f"<p>{_URL.sub(link, line)}</p>" for line in body.split("\n") if line)
        msg.set_content(f"<html><body>{paragraphs}</body></html>", subtype="html")
    else:
        msg.set_content(body)
