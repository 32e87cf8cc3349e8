"""The packaged e-mail corpus (``data/email``): pinned archives and a manifest, verified on
every read, the fine source groups of leave-one-source-out, and its normalized rows,
cached by everything that could change them."""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import os
import tarfile
from collections.abc import Iterator, Mapping
from email.parser import BytesHeaderParser
from email.utils import parsedate_to_datetime
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from textgate import normalize as normalize_module
from textgate import signals as signals_module
from textgate import sources
from textgate.errors import DataError, SourceError
from textgate.mail.containers import MailItem, MailReport
from textgate.mail.synthetic import REGISTRY
from textgate.mail.text import rows
from textgate.normalize import NormalizeSettings, fingerprint

# The packaged corpus (SOURCES.md beside it): three archives and a manifest, pinned.
EMAIL_ARCHIVES = {
    "ham.tar.xz": "7c92cc32fa2679dff11136b69d7f69159be175e85721ce2fd47d58bfbc709599",
    "spam.tar.xz": "5a44a34d73cf89b6ab28715c2aeca4fc9777a8565c0f7f9d8e66e8b7ab5d4be0",
    "phish.tar.xz": "8b5b21aa4d87f1ace337b9e3974c00c25c76571b34b2aa0694a3b4781c6c7c5c",
    "MANIFEST.tsv": "85b4217ab4c99ae2053d67e4313e77de138160a7164e5eb4d2e7ffcafdb0b8c5",
}
EMAIL_LABELS = ("ham", "spam", "phish")
EMAIL_SOURCES = (
    "enron-raw",
    "enron-spam-pre",
    "trec07p",
    "phishing-pot",
    *(generator.source for generator in REGISTRY),
)
NONCOMMERCIAL_SOURCES = {"phishing-pot": "CC BY-NC 4.0"}


def email_corpus_dir() -> Path:
    """``$TEXTGATE_EMAIL_CORPUS`` or the repository's ``data/email``."""
    env = os.environ.get("TEXTGATE_EMAIL_CORPUS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "data" / "email"


def _checked(path: Path) -> bytes:
    if not path.is_file():
        raise SourceError(
            f"the e-mail corpus file {path.name} is missing",
            path=path,
            hint="run from a checkout of the repository (data/email) or set TEXTGATE_EMAIL_CORPUS",
        )
    data = path.read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != EMAIL_ARCHIVES[path.name]:
        raise SourceError(
            f"SHA-256 {got[:16]}… of {path.name} does not match the pinned "
            f"{EMAIL_ARCHIVES[path.name][:16]}…",
            path=path,
            hint="restore data/email from the repository; the file was changed or corrupted",
        )
    return data


def manifest(folder: Path | None = None) -> dict[str, dict[str, str]]:
    """file -> the manifest row (label, source, form, origin, bytes, sha256)."""
    folder = folder or email_corpus_dir()
    text = _checked(folder / "MANIFEST.tsv").decode("utf-8")
    rows = csv.DictReader(io.StringIO(text), delimiter="\t")
    return {row["file"]: row for row in rows}


def iter_email_corpus(exclude_sources: tuple[str, ...] = ()) -> Iterator[MailItem]:
    """The corpus's messages with their fine source group (for leave-one-source-out)."""
    unknown = sorted(set(exclude_sources) - set(EMAIL_SOURCES))
    if unknown:
        raise DataError(
            f"unknown source(s) {', '.join(unknown)}",
            hint=f"the e-mail corpus's sources are {', '.join(EMAIL_SOURCES)}",
        )
    folder = email_corpus_dir()
    rows = manifest(folder)
    for archive_name in ("ham.tar.xz", "spam.tar.xz", "phish.tar.xz"):
        data = _checked(folder / archive_name)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:xz") as archive:
            for member in archive:
                row = rows.get(Path(member.name).name)
                handle = archive.extractfile(member) if member.isfile() else None
                if row is None or handle is None or row["source"] in exclude_sources:
                    continue
                raw = handle.read()
                yield MailItem(member.name, raw, row["label"], fine_group(row, raw))
    for generator in REGISTRY:  # generated mail: training rows only
        if generator.source not in exclude_sources:
            yield from generator.items()


def fine_group(row: Mapping[str, str], raw: bytes) -> str:
    """``source/subgroup``: each Enron mailbox or spam feed, TREC list vs other, honeypot year."""
    source, origin, label = row["source"], row["origin"], row["label"]
    if source == "enron-raw":
        return f"{source}/{origin.split('!')[-1].split('/')[0]}"
    if source == "enron-spam-pre":
        feed = "kitchen-l" if label == "ham" else origin.rsplit(".", 3)[-3]
        return f"{source}/{feed}"
    headers = BytesHeaderParser().parsebytes(raw[:65536])
    if source == "trec07p":
        kind = "list" if label == "ham" and headers.get("List-Id") else "other"
        return f"{source}/{label}-{kind}"
    try:
        year = parsedate_to_datetime(str(headers.get("Date", ""))).year
    except (TypeError, ValueError, IndexError, OverflowError):
        year = 0  # a few undated samples join the earliest bucket
    # Years before 2024 hold few samples each (75 in 2022, 4 before it): one bucket.
    bucket = "2019-2023" if year < 2024 else "2024" if year == 2024 else "2025-2026"
    return f"{source}/{bucket}"


def corpus_rows(
    exclude_sources: tuple[str, ...],
    settings: NormalizeSettings,
    symbols: dict[int, tuple[str, ...]] | None = None,
) -> tuple[list[tuple[int, str, str]], dict[int, str], MailReport]:
    """``rows`` of the packaged corpus, cached: normalizing 18,200 messages takes ~30 s.

    The cache key covers the pinned archives, the settings, the excluded sources and the
    code of the normalizer and of this package, so any change that could change a row
    misses the cache. The archives are verified on every call all the same.
    """
    folder = email_corpus_dir()
    for name in EMAIL_ARCHIVES:
        _checked(folder / name)
    normalizer = sorted(Path(normalize_module.__file__).parent.glob("*.py"))
    # this package with its subpackage: a changed generator (synthetic/) must miss the cache
    reader = sorted(Path(__file__).parent.rglob("*.py"))
    symbols_code = sorted(Path(signals_module.__file__).parent.glob("*.py"))
    code = b"".join(f.read_bytes() for f in (*normalizer, *reader, *symbols_code))
    key = hashlib.sha256(
        json.dumps([EMAIL_ARCHIVES, fingerprint(settings), sorted(exclude_sources)]).encode() + code
    ).hexdigest()[:24]
    path = sources.corpora_dir() / f"email-rows-{key}.json.gz"
    report = MailReport()
    try:
        cached = json.loads(gzip.decompress(path.read_bytes()))
        report.skipped.update(cached["skipped"])
        report.names.update(cached["names"])
        rows = [tuple(r) for r in cached["rows"]]
        if symbols is not None:
            symbols.update({int(k): tuple(v) for k, v in cached["symbols"].items()})
        return rows, {int(k): v for k, v in cached["groups"].items()}, report  # type: ignore[return-value]
    except (OSError, ValueError, KeyError, EOFError):
        pass  # no cache yet, or a damaged one: rebuild it
    items = iter_email_corpus(exclude_sources)
    fired: dict[int, tuple[str, ...]] = {}
    rows, groups = _rows_with_progress(items, settings, report, fired)
    if symbols is not None:
        symbols.update(fired)
    blob = {
        "rows": rows,
        "groups": groups,
        "symbols": fired,
        "skipped": report.skipped,
        "names": report.names,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(gzip.compress(json.dumps(blob).encode(), compresslevel=3))
    tmp.replace(path)
    return rows, groups, report


def _rows_with_progress(
    items: Iterator[MailItem],
    settings: NormalizeSettings,
    report: MailReport,
    symbols: dict[int, tuple[str, ...]],
) -> tuple[list[tuple[int, str, str]], dict[int, str]]:
    with Progress(transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task(
            "normalizing the e-mail corpus",
            total=18_200 + sum(generator.count for generator in REGISTRY),
        )

        def counted() -> Iterator[MailItem]:
            for item in items:
                bar.advance(task)
                yield item

        return rows(counted(), settings, report, scrub_leaks=True, symbols=symbols)
