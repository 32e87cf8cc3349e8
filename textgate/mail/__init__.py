"""Labelled mail for training: container formats, the packaged e-mail corpus, label leaks.

    path ─ eml directory | mbox | Maildir | .tar[.gz|.xz] ─┐
    data/email/{ham,spam,phish}.tar.xz + MANIFEST.tsv ─────┴─ MailItem(name, raw, label, group)
        ─ normalize_email (the gateway's own function and settings) ─ scrub leaks ─ rows

A message's label comes from a mapping CSV (``file,label``; for mbox members
``file#index,label``) or else from the first path component under the root: ``root/spam/1.eml``,
``root/spam.mbox``, the Maildir ``root/ham/`` and the tar member ``spam/1.eml`` are all ``spam``.
Mail in ``label/source/...`` folders carries ``label/source`` as its group, for
``textgate evaluate --by-source``. A message that cannot be read is named (file, mbox index,
tar member) and skipped with a count, or raises under ``strict``.

The corpus's known label leaks (its SOURCES.md) are neutralized here, in the data pipeline,
never in the gateway: the honeypot's placeholder recipient and the TREC mailbox owner's name
become one neutral recipient, and years are re-drawn so that the era gap between ham
(1999-2007) and phish (2022-2026) teaches nothing. Headers never reach the model's text, so the
header-only leaks (X-Spam-*, X-Virus-*, Enron's X-From) cannot be learnt from it.

One room per concern, in the order of the flow:

    containers  MailItem, MailReport; iter_mail over eml dirs, mbox, Maildir, tar
    leaks       scrub: the corpus's label leaks neutralized
    text        model_text, rows: messages normalized as the gateway serves them
    corpus      the packaged corpus: pins, manifest, fine source groups, cached rows
    synthetic/  generated training mail the corpus lacks, one REGISTRY of generators (modern
                transactional, subscribed and mailing-list ham, today's phishing lures,
                Bayes-poisoned spam) on shared helpers; training rows only
"""

from __future__ import annotations

from textgate.mail.containers import (
    MAIL_SUFFIXES,
    MAX_MESSAGE_BYTES,
    TAR_SUFFIXES,
    MailItem,
    MailReport,
    is_mail_path,
    iter_mail,
    read_label_map,
)
from textgate.mail.corpus import (
    EMAIL_ARCHIVES,
    EMAIL_LABELS,
    EMAIL_SOURCES,
    NONCOMMERCIAL_SOURCES,
    corpus_rows,
    email_corpus_dir,
    fine_group,
    iter_email_corpus,
    manifest,
)
from textgate.mail.leaks import scrub
from textgate.mail.synthetic import REGISTRY, Generator, bulk, lists, lures, modern, poison
from textgate.mail.text import model_text, rows

__all__ = [
    "EMAIL_ARCHIVES",
    "EMAIL_LABELS",
    "EMAIL_SOURCES",
    "MAIL_SUFFIXES",
    "MAX_MESSAGE_BYTES",
    "NONCOMMERCIAL_SOURCES",
    "REGISTRY",
    "TAR_SUFFIXES",
    "Generator",
    "MailItem",
    "MailReport",
    # the generator modules as before the move: callers read mail.modern.COUNT, ...
    "bulk",
    "corpus_rows",
    "email_corpus_dir",
    "fine_group",
    "is_mail_path",
    "iter_email_corpus",
    "iter_mail",
    "lists",
    "lures",
    "manifest",
    "model_text",
    "modern",
    "poison",
    "read_label_map",
    "rows",
    "scrub",
]
