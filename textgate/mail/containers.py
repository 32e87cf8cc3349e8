"""Mail containers: an eml directory, an mbox, a Maildir or a tar archive, read into
``MailItem``s with their label and source group; an unreadable message is named and
skipped with a count, or raises under ``strict``."""

from __future__ import annotations

import csv
import io
import mailbox
import os
import tarfile
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from textgate.errors import DataError

MAIL_SUFFIXES = (".mbox", ".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.xz", ".txz")
MAX_MESSAGE_BYTES = 1_048_576  # the gateway's max_body_bytes: bigger ones it would refuse


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
