"""Bayes-poisoned spam, generated: a short pitch buried in text copied from elsewhere.

Spammers pad a pitch (a penny stock, cheap software, pills, a loan) with sentences lifted
from technical manuals, mailing lists and novels, so that a word-counting filter sees mostly
legitimate words. Held out, TREC 2007's spam of this kind was the transformer's worst miss
(HP-UX notes and video-rendering API text around a stock tip scored 0.02-0.04), and the
generated list ham of ``lists`` teaches that technical text is ham, which
makes the padding work better. This module writes the pairs' other side: the same kind of
technical and literary filler, with a pitch inside, so that what separates the two is the
pitch. Stock symbols, prices and hosts are drawn at random, none taken from the corpus.

Seeded: the same messages on every build. Training rows only (group
``synthetic-poison/spam``, see ``data.table.TRAIN_ONLY_PREFIX``); ``--exclude-source
synthetic-poison`` builds without them.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterator

from textgate.mail.containers import MailItem
from textgate.mail.synthetic import common, lists

SOURCE = "synthetic-poison"
LABEL = "spam"
GROUP = f"{SOURCE}/{LABEL}"
COUNT = 300
SEED = 20261206

_LITERARY = (
    "The rain had stopped by the time they reached the bridge, and the river ran high.",
    "She folded the letter twice and put it back under the clock on the mantelpiece.",
    "Nobody in the village remembered who had planted the row of poplars along the road.",
    "He counted the steps down to the cellar, as he had done every night as a boy.",
    "The ship's bell rang once, and the harbour went quiet under the fog.",
    "By noon the market square was full of carts, dogs and arguing farmers.",
)


def _symbol(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_uppercase) for _ in range(4))


def _stock(rng: random.Random) -> tuple[str, str]:
    sym, now = _symbol(rng), rng.randint(2, 90) / 100
    pitch = (
        f"{rng.choice(('Investor alert', 'Hot pick', 'Market watch'))}: {sym}\n"
        f"Current price: ${now:.2f}\n"
        f"{rng.randint(3, 10)} day target: ${now * rng.randint(4, 9):.2f}\n"
        f"Rating: {rng.choice(('Strong buy', 'Aggressive buy'))}. Get in before the news breaks!"
    )
    return rng.choice((f"{sym} ready to explode", "Stock alert", f"Watch {sym} this week")), pitch


def _software(rng: random.Random) -> tuple[str, str]:
    product = rng.choice(("0ffice Pro", "Ad0be Creative Suite", "Windows Vlsta Ultimate"))
    price = rng.randint(39, 99)
    pitch = f"{product} for only ${price}! Instant download, full version, no CD needed."
    return f"{product} ${price}", pitch


def _pills(rng: random.Random) -> tuple[str, str]:
    drug = rng.choice(("V1AGRA", "C1ALIS", "Vlcodin", "Xan@x"))
    price = f"${rng.randint(1, 3)}.{rng.randint(10, 99)}"
    pitch = f"{drug} from {price} per dose. No prescription, discreet shipping."
    return rng.choice((f"Cheap {drug}", "Your pharmacy order", "Feel great again")), pitch


def _loan(rng: random.Random) -> tuple[str, str]:
    rate = rng.randint(2, 5) + rng.randint(0, 9) / 10
    pitch = f"Refinance today at {rate:.1f}% fixed. Bad credit OK, approval in minutes."
    return rng.choice(("Approved: your new rate", "Lower your payments")), pitch


def _watch(rng: random.Random) -> tuple[str, str]:
    brand = rng.choice(("R0lex", "0mega", "Cart1er", "Breit1ing"))
    pitch = (
        f"Luxury {brand} replicas from ${rng.randint(99, 249)}. Nobody will know the difference."
    )
    return f"{brand} at a fraction of the price", pitch


Pitch = Callable[[random.Random], tuple[str, str]]  # subject, pitch
PITCHES: tuple[Pitch, ...] = (_stock, _software, _pills, _loan, _watch)


def _filler(rng: random.Random, most: int = 6) -> str:
    """Sentences of the genres the padding is lifted from: list mail, manuals, novels."""
    p = rng.choice(lists.PROJECTS)
    pool = [
        *lists.ANSWERS,
        *lists.TRIED,
        *_LITERARY,
        f"If {rng.choice(p.parts)} is enabled, {p.name} reads it before the first request.",
        f"The command {rng.choice(p.commands)} prints {rng.choice(p.errors)} on older systems.",
    ]
    return " ".join(rng.sample(pool, rng.randint(min(3, most), most)))


def _message(rng: random.Random, i: int) -> bytes:
    subject, pitch = PITCHES[i % len(PITCHES)](rng)
    host = "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(5, 9)))
    link = f"http://www.{host}.{rng.choice(('com', 'net', 'info', 'biz'))}/"
    parts = [pitch, link, _filler(rng)]
    if rng.random() < 0.5:
        # the pitch in the middle, yet inside the head the model reads (head + tail window)
        parts.insert(0, _filler(rng, most=1))
    name, address = common.person(rng)
    free = rng.choice(("mail.ru", "yahoo.com", "hotmail.com"))
    headers = {
        "From": f"{rng.choice(common.FIRST)} <{host}@{free}>",
        "To": f"{name} <{address}>",
        "Subject": subject,
        "Date": common.date(rng, 2003, 8_000_000),
        "Message-ID": common.message_id(rng, f"{host}.com"),
    }
    return common.rfc822(headers, "\n\n".join(parts), html=rng.random() < 0.3, rng=rng)


def items(count: int = COUNT, seed: int = SEED) -> Iterator[MailItem]:
    return common.generate(GROUP, LABEL, _message, count, seed)


GENERATOR = common.Generator(GROUP, LABEL, COUNT, items)
