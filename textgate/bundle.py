"""The bundle on disk: manifest read/write, file hashing, integrity verification.

A bundle is a directory of ONNX files, a tokenizer, labels and ``manifest.json``, which
records the SHA-256 and size of every other file (``docs/formats.md`` is the contract).
This is a low-layer module: the Triton repository builder imports it, so it needs only the
standard library — never torch, transformers or the exporter.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from textgate.errors import BundleError

FORMAT = "textgate-bundle/1"
MANIFEST = "manifest.json"
STATUSES = ("accepted", "rejected", "unverified")
# Keys later stages read; a manifest without them is not a bundle.
REQUIRED_KEYS = ("format", "files", "labels", "max_length", "metrics", "parity", "variants")
_CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def list_files(bundle_dir: Path) -> list[str]:
    """Every file under the bundle except the manifest, as sorted POSIX relative paths."""
    return sorted(
        p.relative_to(bundle_dir).as_posix()
        for p in _walk(bundle_dir)
        if p.relative_to(bundle_dir).as_posix() != MANIFEST
    )


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            yield Path(dirpath) / name


def write_manifest(bundle_dir: Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Hash every file now in ``bundle_dir``, add ``files``/``sizes``, write the manifest.

    Written to a temporary name first and renamed, so a crash never leaves a manifest that
    describes files it has not seen.
    """
    bundle_dir = Path(bundle_dir)
    tmp = bundle_dir / (MANIFEST + ".tmp")
    tmp.unlink(missing_ok=True)  # a crashed earlier write's leftover is not a bundle file
    names = list_files(bundle_dir)
    data = dict(manifest)
    data.setdefault("format", FORMAT)
    data["files"] = {n: sha256_file(bundle_dir / n) for n in names}
    data["sizes"] = {n: (bundle_dir / n).stat().st_size for n in names}
    _check_keys(data)
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(bundle_dir / MANIFEST)
    return data


def read_manifest(bundle_dir: Path) -> dict[str, Any]:
    """Parse and shape-check ``manifest.json``; no hashing (see ``verify``)."""
    bundle_dir = Path(bundle_dir)
    if not bundle_dir.is_dir():
        raise BundleError(
            f"{bundle_dir}: not a directory",
            file=str(bundle_dir),
            hint="pass the directory that `textgate export` wrote",
        )
    path = bundle_dir / MANIFEST
    if not path.is_file():
        raise BundleError(
            f"{path}: missing — {bundle_dir} is not a bundle (or its export did not finish)",
            file=MANIFEST,
            hint="re-run `textgate export CHECKPOINT -o BUNDLE`",
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    # ValueError covers bad UTF-8, bad JSON and ints over 4300 digits; RecursionError: the
    # decoder recurses per nesting level, so "[[[[..." exhausts the stack.
    except (ValueError, RecursionError) as exc:
        raise BundleError(
            f"{path}: not valid JSON ({exc})",
            file=MANIFEST,
            hint="the manifest was edited or corrupted; re-export the bundle",
        ) from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: must hold a JSON object", file=MANIFEST)
    _check_keys(data, path)
    return data


def _check_keys(data: Mapping[str, Any], path: Path | str = MANIFEST) -> None:
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise BundleError(
            f"{path}: missing required keys {missing}",
            file=MANIFEST,
            hint="re-export the bundle with this textgate version",
        )
    if data["format"] != FORMAT:
        raise BundleError(
            f"{path}: format {data['format']!r} is not {FORMAT!r}",
            file=MANIFEST,
            hint="re-export the bundle with this textgate version",
        )
    _check_types(data, path)
    for name, variant in data["variants"].items():
        if not isinstance(variant, dict) or variant.get("status") not in STATUSES:
            raise BundleError(
                f"{path}: variant {name!r} needs a status in {STATUSES}", file=MANIFEST
            )
        if not isinstance(variant.get("file"), str):
            raise BundleError(f"{path}: variants.{name}.file must be a file name", file=MANIFEST)
        if variant["file"] not in data["files"]:
            raise BundleError(
                f"{path}: variant {name!r} names file {variant.get('file')!r}, "
                "which is not listed in 'files'",
                file=str(variant.get("file")),
            )
    for device, name in (data.get("default_variant") or {}).items():
        if not isinstance(name, str) or data["variants"].get(name, {}).get("status") != "accepted":
            raise BundleError(
                f"{path}: default_variant.{device} is {name!r}, which is not an accepted variant",
                file=MANIFEST,
            )


# Shapes of the keys later stages read: a wrong type is refused here, not a crash there.
_TYPES: dict[str, tuple[type, str]] = {
    "files": (dict, "an object {path: sha256}"),
    "sizes": (dict, "an object {path: bytes}"),
    "variants": (dict, "an object"),
    "metrics": (dict, "an object"),
    "default_variant": (dict, "an object {device: variant}"),
    "labels": (list, "a list of label names"),
    "max_length": (int, "an integer"),
}


def _check_types(data: Mapping[str, Any], path: Path | str) -> None:
    for key, (kind, what) in _TYPES.items():
        value = data.get(key, kind())
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BundleError(f"{path}: '{key}' must be {what}", file=MANIFEST)
    checks = (
        ("files", all(isinstance(v, str) for v in data["files"].values())),
        ("sizes", all(_is_int(v) for v in data.get("sizes", {}).values())),
        ("labels", all(isinstance(v, str) for v in data["labels"])),
        ("metrics.test", isinstance(data["metrics"].get("test"), dict)),
    )
    for key, ok in checks:
        if not ok:
            raise BundleError(f"{path}: '{key}' is missing or has the wrong type", file=MANIFEST)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def problems(bundle_dir: Path, manifest: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every (file, what is wrong) found by rehashing; empty when the bundle is intact."""
    bundle_dir = Path(bundle_dir)
    expected: Mapping[str, str] = manifest["files"]
    sizes: Mapping[str, int] = manifest.get("sizes", {})
    found = set(list_files(bundle_dir))
    out: list[tuple[str, str]] = []
    for name in sorted(expected):
        path = bundle_dir / name
        if name not in found:
            out.append((name, "missing"))
            continue
        size = path.stat().st_size
        if name in sizes and size != sizes[name]:
            verb = "truncated" if size < sizes[name] else "grown"
            out.append((name, f"{verb}: {size} bytes, manifest says {sizes[name]}"))
        elif sha256_file(path) != expected[name]:
            out.append((name, "changed: SHA-256 differs from the manifest"))
    extra = sorted(found - set(expected))
    out.extend((name, "extra: not listed in the manifest") for name in extra)
    return out


def verify(bundle_dir: Path | str) -> dict[str, Any]:
    """Recompute every hash; return the manifest or raise ``BundleError`` naming the file.

    All problems are collected first so one run reports every bad file; ``file`` on the
    error is the first of them.
    """
    bundle_dir = Path(bundle_dir)
    manifest = read_manifest(bundle_dir)
    bad = problems(bundle_dir, manifest)
    if bad:
        lines = "\n".join(f"  - {name}: {why}" for name, why in bad)
        raise BundleError(
            f"{bundle_dir}: {len(bad)} file(s) do not match the manifest\n{lines}",
            file=bad[0][0],
            hint="the bundle was modified after export; re-export it or restore the files",
        )
    return manifest


def servable(manifest: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The variants that may be served by default: only ``accepted`` ones."""
    return {n: v for n, v in manifest["variants"].items() if v.get("status") == "accepted"}


def cascade_problem(lo: object, hi: object, n_labels: int | None = None) -> tuple[str, str] | None:
    """(the field, why) when confidence-cascade bounds cannot work, else None: the one check
    the exporter, the repository builder and the gateway's router share (issue 42).
    ``n_labels`` None: the label count is not known there (the builder checked it)."""

    def prob(x: object) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    if not prob(lo) or not 0.0 <= lo < 1.0:  # type: ignore[operator]
        return "allow_at_or_below", f"must be a probability in [0, 1), got {lo!r}"
    if hi is not None and (not prob(hi) or not lo < hi <= 1.0):  # type: ignore[operator]
        return (
            "quarantine_at_or_above",
            f"must be above allow_at_or_below and at most 1 (or null), got {hi!r}",
        )
    if hi is not None and n_labels is not None and n_labels != 2:
        return (
            "quarantine_at_or_above",
            f"needs two labels; a task with {n_labels} labels cannot use it: the n-gram half "
            "says 'not the negative label' and cannot name which of the others",
        )
    return None
