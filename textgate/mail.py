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

Past 400 lines on purpose, for now: containers, the corpus and the scrubber are one flow of
``MailItem``s; the split planned with the restructure issue is containers vs the corpus.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import mailbox
import os
import re
import tarfile
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from email.utils import parsedate_to_datetime
from pathlib import Path

from rich.console import Console
from rich.progress import Progress

from textgate import normalize as normalize_module
from textgate import sources
from textgate.errors import DataError, InputError, SourceError
from textgate.normalize import NormalizeSettings, fingerprint, normalize_email

MAIL_SUFFIXES = (".mbox", ".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz")
MAX_MESSAGE_BYTES = 1_048_576  # the gateway's max_body_bytes: bigger ones it would refuse

# The packaged corpus (SOURCES.md beside it): three archives and a manifest, pinned.
EMAIL_ARCHIVES = {
    "ham.tar.xz": "7c92cc32fa2679dff11136b69d7f69159be175e85721ce2fd47d58bfbc709599",
    "spam.tar.xz": "5a44a34d73cf89b6ab28715c2aeca4fc9777a8565c0f7f9d8e66e8b7ab5d4be0",
    "phish.tar.xz": "8b5b21aa4d87f1ace337b9e3974c00c25c76571b34b2aa0694a3b4781c6c7c5c",
    "MANIFEST.tsv": "85b4217ab4c99ae2053d67e4313e77de138160a7164e5eb4d2e7ffcafdb0b8c5",
}
EMAIL_LABELS = ("ham", "spam", "phish")
EMAIL_SOURCES = ("enron-raw", "enron-spam-pre", "trec07p", "phishing-pot")
NONCOMMERCIAL_SOURCES = {"phishing-pot": "CC BY-NC 4.0"}

_NEUTRAL_ADDRESS = "recipient@example.com"
_LEAKS = (
    # The honeypot's placeholder, also inside URLs and "phishing@pot=hotmail.com" bounces.
    (re.compile(r"phishing@pot(?:\.[a-z]{2,6})?", re.I), _NEUTRAL_ADDRESS),
    # The TREC mailbox owner, as an address and as a bare name.
    (re.compile(r"ktwarwic@[\w.-]+", re.I), _NEUTRAL_ADDRESS),
    (re.compile(r"\bktwarwic\w*", re.I), "recipient"),  # also "ktwarwicd, take a look"
)
_YEAR = re.compile(r"\b(19[89]\d|20[0-3]\d)\b")
_YEAR_SPAN = (1995, 2030)


@dataclass(frozen=True)
class MailItem:
    """One message: where it came from, its bytes, its label and its source group."""

    name: str
    raw: bytes
    label: str | None
    group: str = ""


@dataclass
class MailReport:
    """Messages read, and those skipped by reason, with the first few names each."""

    read: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    names: dict[str, list[str]] = field(default_factory=dict)

    def skip(self, reason: str, name: str, strict: bool) -> None:
        if strict:
            raise DataError(f"{name}: {reason}", hint="fix or remove the message, or drop --strict")
        self.skipped[reason] += 1
        names = self.names.setdefault(reason, [])
        if len(names) < 5:
            names.append(name)


# --- containers ---------------------------------------------------------------------------


def is_mail_path(path: Path) -> bool:
    """Whether ``path`` is read as mail (not as a CSV/TSV/JSONL table)."""
    name = path.name.lower()
    return path.is_dir() or name.endswith(MAIL_SUFFIXES) or _starts_like_mbox(path)


def _starts_like_mbox(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(5) == b"From "
    except OSError:
        return False


def read_label_map(path: Path) -> dict[str, str]:
    """A ``file,label`` CSV (header optional) as a mapping."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the label map ({exc})", path=path) from None
    mapping: dict[str, str] = {}
    for n, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip():
            continue
        if len(row) < 2:
            raise DataError("expected 'file,label'", path=path, row=n)
        key, label = row[0].strip(), row[1].strip()
        if n == 1 and (key.lower(), label.lower()) == ("file", "label"):
            continue
        mapping[key] = label
    if not mapping:
        raise DataError("the label map has no rows", path=path, hint="write lines 'file,label'")
    return mapping


def iter_mail(
    root: Path,
    *,
    label_map: Mapping[str, str] | None = None,
    report: MailReport | None = None,
    strict: bool = False,
) -> Iterator[MailItem]:
    """Every message under ``root`` (a directory, mbox, Maildir or tar), labelled."""
    report = report if report is not None else MailReport()
    if not root.exists():
        raise DataError("no such file or directory", path=root, hint="check the path to --data")
    for item in _walk(root, report, strict):
        report.read += 1
        label = _label(item, root, label_map)
        if label is None:
            report.skip("no label (not in the label map, no label folder)", item.name, strict)
            continue
        if not item.raw.strip():
            report.skip("empty message", item.name, strict)
            continue
        if len(item.raw) > MAX_MESSAGE_BYTES:
            report.skip("over 1 MiB (the gateway's max_body_bytes)", item.name, strict)
            continue
        yield MailItem(item.name, item.raw, label, item.group or _group(item.name, label))


def _walk(root: Path, report: MailReport, strict: bool, prefix: str = "") -> Iterator[MailItem]:
    """``prefix``: the container's folder under the walked root (where its label lives)."""
    name = root.name.lower()
    if root.is_dir():
        yield from _walk_dir(root, report, strict)
    elif name.endswith(TAR_SUFFIXES):
        yield from _walk_tar(root, report, strict, prefix)
    else:
        yield from _walk_mbox(root, report, strict, prefix)


def _walk_dir(root: Path, report: MailReport, strict: bool) -> Iterator[MailItem]:
    if _is_maildir(root):
        yield from _walk_maildir(root, root, report, strict)
        return
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if _is_maildir(here) and here != root:
            dirnames.clear()
            yield from _walk_maildir(here, root, report, strict)
            continue
        dirnames.sort()
        for fname in sorted(filenames):
            path = here / fname
            if fname.startswith("."):
                continue
            # Inside a folder only a .mbox or tar is a container: a single message may well
            # start with an mbox "From " line (TREC's do) and is still one message.
            if fname.lower().endswith(MAIL_SUFFIXES):
                rel = here.relative_to(root)
                yield from _walk(path, report, strict, f"{rel}/" if rel.parts else "")
                continue
            try:
                yield MailItem(str(path.relative_to(root)), path.read_bytes(), None)
            except OSError as exc:
                report.skip(f"cannot be read ({exc.strerror or exc})", str(path), strict)


def _is_maildir(path: Path) -> bool:
    return all((path / sub).is_dir() for sub in ("cur", "new", "tmp"))


def _walk_maildir(path: Path, root: Path, report: MailReport, strict: bool) -> Iterator[MailItem]:
    rel = path.relative_to(root) if path != root else Path(path.name)
    for sub in ("new", "cur"):
        for file in sorted((path / sub).iterdir()):
            if file.name.startswith(".") or not file.is_file():
                continue
            try:
                yield MailItem(str(rel / sub / file.name), file.read_bytes(), None)
            except OSError as exc:
                report.skip(f"cannot be read ({exc.strerror or exc})", str(file), strict)


def _walk_mbox(path: Path, report: MailReport, strict: bool, prefix: str) -> Iterator[MailItem]:
    try:
        box = mailbox.mbox(path, create=False)
        keys = box.keys()
    except (OSError, mailbox.Error) as exc:
        raise DataError(f"not a readable mbox ({exc})", path=path) from None
    for index, key in enumerate(keys):
        where = f"{prefix}{path.name}#{index}"
        try:
            raw = box.get_bytes(key)
        except (OSError, mailbox.Error, ValueError) as exc:
            report.skip(f"broken mbox entry ({exc})", where, strict)
            continue
        yield MailItem(where, raw, None)


def _walk_tar(path: Path, report: MailReport, strict: bool, prefix: str) -> Iterator[MailItem]:
    try:
        archive = tarfile.open(path, mode="r:*")  # noqa: SIM115 - closed by the with below
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise DataError(f"not a readable tar archive ({exc})", path=path) from None
    with archive:
        try:
            for member in archive:
                if not member.isfile():
                    continue
                where = f"{path.name}!{member.name}"
                handle = archive.extractfile(member)
                if handle is None:
                    report.skip("not a regular file", where, strict)
                    continue
                yield MailItem(f"{prefix}{member.name}", handle.read(), None)
        except (OSError, tarfile.TarError, EOFError, ValueError) as exc:
            # A truncated or corrupt archive: what was read before stays, the rest is named.
            report.skip(f"archive ends in a corrupt block ({exc})", path.name, strict)


def _group(name: str, label: str) -> str:
    """``label/source`` for ``label/source/.../x.eml`` (a source to hold out), else the label."""
    parts = Path(name.split("#")[0]).parts
    return f"{parts[0]}/{parts[1]}" if len(parts) >= 3 and parts[0] == label else label


def _label(item: MailItem, root: Path, label_map: Mapping[str, str] | None) -> str | None:
    if label_map is not None:
        for key in (item.name, Path(item.name).name, item.name.split("#")[0]):
            if key in label_map:
                return label_map[key]
        return None
    parts = Path(item.name.split("#")[0]).parts
    if len(parts) >= 2:
        return parts[0]
    if root.is_file() or "#" in item.name:  # a single mbox: its own name is the label
        stem = Path(item.name.split("#")[0]).name
        return stem.split(".")[0] or None
    return None


# --- messages -> rows ----------------------------------------------------------------------


def model_text(raw: bytes, settings: NormalizeSettings) -> str:
    """What the model sees of a message at serving time: its first piece (head + tail)."""
    return normalize_email(raw, settings).pieces[0]


def rows(
    items: Iterator[MailItem],
    settings: NormalizeSettings,
    report: MailReport,
    *,
    scrub_leaks: bool = False,
    strict: bool = False,
) -> tuple[list[tuple[int, str, str]], dict[int, str]]:
    """(row, text, label) per message, normalized as the gateway does, and row -> group."""
    out: list[tuple[int, str, str]] = []
    groups: dict[int, str] = {}
    for n, item in enumerate(items, start=1):
        try:
            text = model_text(item.raw, settings)
        except InputError as exc:
            report.skip(f"not classifiable ({exc.message})", item.name, strict)
            continue
        if scrub_leaks:
            text = scrub(text, item.name)
        out.append((n, text, item.label or ""))
        groups[n] = item.group
    return out, groups


# --- the packaged e-mail corpus -----------------------------------------------------------


def email_corpus_dir() -> Path:
    """``$TEXTGATE_EMAIL_CORPUS`` or the repository's ``data/email``."""
    env = os.environ.get("TEXTGATE_EMAIL_CORPUS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1] / "data" / "email"


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
    exclude_sources: tuple[str, ...], settings: NormalizeSettings
) -> tuple[list[tuple[int, str, str]], dict[int, str], MailReport]:
    """``rows`` of the packaged corpus, cached: normalizing 18,200 messages takes ~30 s.

    The cache key covers the pinned archives, the settings, the excluded sources and the
    code of the normalizer and of this module, so any change that could change a row
    misses the cache. The archives are verified on every call all the same.
    """
    folder = email_corpus_dir()
    for name in EMAIL_ARCHIVES:
        _checked(folder / name)
    normalizer = sorted(Path(normalize_module.__file__).parent.glob("*.py"))
    code = b"".join(f.read_bytes() for f in (*normalizer, Path(__file__)))
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
        return rows, {int(k): v for k, v in cached["groups"].items()}, report  # type: ignore[return-value]
    except (OSError, ValueError, KeyError, EOFError):
        pass  # no cache yet, or a damaged one: rebuild it
    items = iter_email_corpus(exclude_sources)
    rows, groups = _rows_with_progress(items, settings, report)
    blob = {"rows": rows, "groups": groups, "skipped": report.skipped, "names": report.names}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(gzip.compress(json.dumps(blob).encode(), compresslevel=3))
    tmp.replace(path)
    return rows, groups, report


def _rows_with_progress(
    items: Iterator[MailItem], settings: NormalizeSettings, report: MailReport
) -> tuple[list[tuple[int, str, str]], dict[int, str]]:
    with Progress(transient=True, console=Console(stderr=True)) as bar:
        task = bar.add_task("normalizing the e-mail corpus", total=18_200)

        def counted() -> Iterator[MailItem]:
            for item in items:
                bar.advance(task)
                yield item

        return rows(counted(), settings, report, scrub_leaks=True)


# --- leaks ---------------------------------------------------------------------------------


def scrub(text: str, key: str) -> str:
    """The text with the corpus's label-leaking strings neutralized (see the module doc).

    Years are re-drawn from a hash of ``key`` and the position, so the same message always
    gets the same years (stable splits and caches) while years carry no label information.
    """
    for pattern, neutral in _LEAKS:
        text = pattern.sub(neutral, text)
    counter = 0

    def redraw(match: re.Match[str]) -> str:
        nonlocal counter
        counter += 1
        digest = hashlib.sha256(f"{key}:{counter}".encode()).digest()
        low, high = _YEAR_SPAN
        return str(low + int.from_bytes(digest[:4], "big") % (high - low))

    return _YEAR.sub(redraw, text)
