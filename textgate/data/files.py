"""The user's labelled files: CSV, TSV and JSON Lines, read strictly, decoded by BOM or
UTF-8, every unreadable row counted by reason."""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

from textgate.data.table import LoadReport, Row, Table, build_table, skip_row
from textgate.errors import DataError

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
    text = decode_text(_read_bytes(path), str(path))
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


def decode_text(raw: bytes, where: str) -> str:
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
            skip_row(report, f"not a JSON object ({why})", n, str(path), strict)
            continue
        if not isinstance(obj, dict):
            skip_row(report, "not a JSON object", n, str(path), strict)
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
