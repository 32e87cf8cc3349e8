"""Generated training mail: the genres the packaged corpus lacks or holds too little of.

Each generator writes seeded, real RFC 822 messages that go through the same reader and
normalizer as the corpus. They are training rows only: every group is named
``synthetic-<source>/<label>``, and ``data.split`` keeps groups with that prefix
(``data.table.TRAIN_ONLY_PREFIX``) out of validation and test, so every reported number is on
real mail; ``--exclude-source <source>`` builds without one.

``REGISTRY`` is what ``corpus.iter_email_corpus`` iterates, in this order (the order, the
seeds and the counts fix the default model's training data: change them on purpose only):

    common  Generator (a registry entry), the seeded item loop, people, names, dates,
            Message-IDs, the RFC 822 message and its plain or HTML body (``set_body``)
    modern  synthetic-modern/ham: orders, deliveries, receipts, account notices, calendars
    bulk    synthetic-bulk/ham: subscribed news, alerts, promotions, newsletters
    lists   synthetic-lists/ham: technical and discussion mailing-list posts
    lures   synthetic-lure/phish: today's credential and payment phishing
    poison  synthetic-poison/spam: a spam pitch padded with list and literary text
"""

from __future__ import annotations

from textgate.mail.synthetic import bulk, lists, lures, modern, poison
from textgate.mail.synthetic.common import Generator

REGISTRY: tuple[Generator, ...] = (
    modern.GENERATOR,
    bulk.GENERATOR,
    lists.GENERATOR,
    lures.GENERATOR,
    poison.GENERATOR,
)

__all__ = ["REGISTRY", "Generator", "bulk", "lists", "lures", "modern", "poison"]
