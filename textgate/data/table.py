"""The one shape every loader returns, and what makes it clean and split.

``build_table`` normalises, drops empty and undeclared rows, de-duplicates and drops texts
seen with two labels, counting each skip by reason; ``split`` cuts by content hash alone."""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from textgate.errors import DataError
from textgate.normalize import normalize_whitespace as normalize

SPLIT_FRACTIONS = (0.8, 0.1, 0.1)  # train, validation, test
MAX_EXAMPLES_PER_REASON = 5


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
    # Each text's structure symbols (e-mail: textgate.signals); empty when the data has none.
    symbols: tuple[tuple[str, ...], ...] = ()

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
            symbols=tuple(self.symbols[i] for i in keep) if self.symbols else (),
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
    symbols: dict[int, tuple[str, ...]] | None = None,
) -> Table:
    """Normalise, drop empty/unknown rows, de-duplicate, drop conflicts; validate labels.

    ``groups`` maps a row number to its source group; a kept text keeps its first row's group
    (and ``symbols``, row -> structure symbols, its first row's symbols).
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
            skip_row(report, reason, row, source, strict)
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
    if groups is not None:
        table = dataclasses.replace(table, groups=tuple(groups[first_row[t]] for t in table.texts))
    if symbols:
        fired = tuple(tuple(symbols.get(first_row[t], ())) for t in table.texts)
        table = dataclasses.replace(table, symbols=fired)
    return table


def _row_problem(text: str, label: str, declared: tuple[str, ...] | None) -> str | None:
    if not text:
        return "empty text"
    if not label:
        return "empty label"
    if declared is not None and label not in declared:
        return "label not in declared set"
    return None


def skip_row(report: LoadReport, reason: str, row: int, source: str, strict: bool) -> None:
    if strict:
        raise DataError(reason, path=source, row=row, hint="fix the row, or drop --strict")
    report.skip(reason, row)


def _finish(
    kept: dict[str, str], declared: tuple[str, ...] | None, source: str, report: LoadReport
) -> Table:
    if not kept:
        raise DataError("no usable rows", path=source, hint=skip_summary(report))
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


def skip_summary(report: LoadReport) -> str:
    if not report.skipped:
        return "the file has a header but no data rows"
    reasons = ", ".join(f"{n} × {why}" for why, n in report.skipped.most_common())
    return f"every row was skipped: {reasons}"


# --- splitting ----------------------------------------------------------------------------


# Source groups of generated data (``textgate.mail.synthetic``): training rows only.
TRAIN_ONLY_PREFIX = "synthetic-"
# Source groups of folded feedback (``textgate.feedback.fold``): capped and weighted there,
# so the trainer's per-group cap leaves them whole.
FEEDBACK_PREFIX = "feedback/"


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
        if table.groups and table.groups[i].startswith(TRAIN_ONLY_PREFIX):
            parts[0].append(i)  # generated rows: never in a split that reports a number
            continue
        u = int(text_hash(text)[:16], 16) / 2**64
        parts[0 if u < cut1 else 1 if u < cut2 else 2].append(i)
    names = ("train", "validation", "test")
    train, val, test = (
        table.subset(p, f"{table.source}#{n}") for p, n in zip(parts, names, strict=True)
    )
    return Splits(train=train, validation=val, test=test)
