"""``textgate build``: train → export → variants → verify, cached by input hash.

The cache key covers everything that decides the bundle's bytes: the cleaned data (its
hash), the base model, the resolved training and export options, and textgate's own build
code. Same inputs → the verified bundle from the cache, in seconds; any change → a new build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from textgate import bundle, data
from textgate.errors import BundleError

BUILD_CODE = ("data.py", "sources.py", "train.py", "metrics.py", "bundle.py", "export")


def builds_dir() -> Path:
    """``$TEXTGATE_CACHE_DIR/builds``, default ``~/.cache/textgate/builds``."""
    root = os.environ.get("TEXTGATE_CACHE_DIR")
    if root:
        return Path(root) / "builds"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "textgate" / "builds"


def code_hash() -> str:
    """SHA-256 over the build path's source files: changed code never reuses old bundles."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for name in BUILD_CODE:
        path = root / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(file.relative_to(root).as_posix().encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()


def base_hash(base_dir: Path) -> str:
    """SHA-256 over the base model's files: new weights under an old name still rebuild."""
    digest = hashlib.sha256()
    for file in sorted(p for p in base_dir.rglob("*") if p.is_file()):
        digest.update(file.relative_to(base_dir).as_posix().encode())
        digest.update(bundle.sha256_file(file).encode())
    return digest.hexdigest()


def build_key(task: str, table: data.Table, train_options: Any, export_options: dict) -> str:
    from textgate import train

    base_dir, base_name = train.resolve_base(None)
    inputs = {
        "task": task,
        "data_hash": table.data_hash(),
        "base": base_name,
        "base_files": base_hash(base_dir),
        "train": {
            k: v
            for k, v in asdict(train_options.resolved(task)).items()
            if k not in ("force", "progress", "threads")
        },
        "export": export_options,
        "code": code_hash(),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def build(
    task: str,
    out: Path,
    *,
    table: data.Table | None = None,
    train_options: Any = None,
    export_options: dict[str, Any] | None = None,
    rebuild: bool = False,
    force: bool = False,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Build (or reuse) the task's verified bundle and place a copy at ``out``."""
    from textgate import train
    from textgate.export import export_bundle

    _check_out(out, force)
    table = table or data.load_task(task)
    options = train_options or train.TrainOptions()
    export_options = export_options or {}
    key = build_key(task, table, options, export_options)
    cache = builds_dir() / f"{task}-{key[:16]}"
    cached = None if rebuild else _cached_bundle(cache / "bundle", log)
    if cached is None:
        log(f"building {task} (key {key[:16]}) in {cache}")
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        ckpt = cache / "checkpoint"
        train.train(table, None, ckpt, task=task, options=_with_force(options), log=log)
        export_bundle(ckpt, cache / "bundle", overwrite=True, **export_options)
        bundle.verify(cache / "bundle")
        (cache / "build.json").write_text(json.dumps({"key": key, "task": task}, indent=2))
    _place(cache / "bundle", out)
    return bundle.verify(out)


def _with_force(options: Any) -> Any:
    from dataclasses import replace

    return replace(options, force=True)


def _cached_bundle(path: Path, log: Callable[[str], None]) -> dict[str, Any] | None:
    if not (path / bundle.MANIFEST).is_file():
        return None
    try:
        manifest = bundle.verify(path)
    except BundleError as exc:
        log(f"cached bundle is damaged, rebuilding: {exc.message}")
        return None
    log(f"reusing the verified bundle cached at {path}")
    return manifest


def _check_out(out: Path, force: bool) -> None:
    if not out.exists():
        return
    if out.is_file():
        raise BundleError(f"{out} is a file; the output must be a directory", file=str(out))
    is_bundle = (out / bundle.MANIFEST).is_file()
    if any(out.iterdir()) and not is_bundle and not force:
        raise BundleError(
            f"{out} exists and is not a bundle; refusing to replace it",
            file=str(out),
            hint="choose another -o, or pass --force",
        )


def _place(src: Path, out: Path) -> None:
    """Copy the cached bundle to ``out`` atomically: a reader never sees half a bundle."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    if out.exists():
        out.rename(old)
    tmp.rename(out)
    shutil.rmtree(old, ignore_errors=True)
