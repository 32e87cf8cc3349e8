"""Triton model names: the one place they are spelled.

    task T (no release)        T  T_tokenize  T_model  T_postprocess  [T_fp32  T_model_fp32]
                               [T_cheap: the cascade's n-gram stage]
    release version N of T     T_vN  T_vN_tokenize  T_vN_model  ...   (each at Triton version 1)

The repository builder writes these names, the release store loads and unloads them, and the
gateway's router finds tasks by them. This module sits at the bottom of the layers (beside
``errors`` and ``config``) because the builder (``repository``) is below ``triton`` and the
release store, and all of them need the same rules.
"""

from __future__ import annotations

import glob
import re

from textgate.errors import InvalidInput

# A Triton model name becomes a directory name and a URL path segment.
MODEL_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
_MODEL = re.compile(MODEL_PATTERN)

# One pattern for a released task's name, wherever one arrives (API, CLI, a bundle's
# manifest, the journal): it becomes a directory and a Triton model name, so no "/", "..",
# glob characters or upper case. A manifest with task "../../../escape" wrote files outside
# the repository; "*" made a glob delete every serving spam_v1_* model.
TASK_PATTERN = r"[a-z0-9][a-z0-9_-]{0,63}"
_TASK = re.compile(TASK_PATTERN)

_PRECISE = "_fp32"


def is_model_name(name: str) -> bool:
    return _MODEL.fullmatch(name) is not None


def check_task(task: object, *, field: str = "task") -> str:
    """``task`` when it is a valid released task name, else an ``InvalidInput`` (a 422)."""
    if not isinstance(task, str) or not _TASK.fullmatch(task):
        shown = repr(task)[:80]
        raise InvalidInput(
            f"{shown} is not a task name (lower-case letters, digits, '_' and '-'; "
            "at most 64; starting with a letter or digit)",
            field=field,
            reason="invalid_name",
        )
    return task


# --- release versions ------------------------------------------------------------------------


def version_suffix(version: int) -> str:
    """What the builder appends to every model name of release version ``version``."""
    return f"_v{version}"


def version_ensemble(task: str, version: int) -> str:
    """``spam``, 3 -> ``spam_v3``: the ensemble of one release version."""
    return task + version_suffix(version)


def parse_version(name: str) -> tuple[str, int] | None:
    """``spam_v3`` -> ("spam", 3); anything else -> None."""
    task, sep, num = name.rpartition("_v")
    return (task, int(num)) if sep and task and num.isdigit() else None


def release_task(name: str) -> str:
    """``spam_v3`` -> ``spam``; other names unchanged."""
    parsed = parse_version(name)
    return parsed[0] if parsed else name


# --- the steps of one ensemble ---------------------------------------------------------------


def tokenize(ensemble: str) -> str:
    return f"{ensemble}_tokenize"


def model(ensemble: str) -> str:
    return f"{ensemble}_model"


def postprocess(ensemble: str) -> str:
    return f"{ensemble}_postprocess"


def cheap(ensemble: str) -> str:
    """The cascade's first stage: the n-gram half alone (docs/gateway.md, "Confidence cascade")."""
    return f"{ensemble}_cheap"


def precise_model(ensemble: str) -> str:
    """The fp32 model step of the re-score ensemble."""
    return model(ensemble) + _PRECISE


def precise_ensemble(ensemble: str) -> str:
    """The fp32 ensemble the gateway re-scores uncertain answers with."""
    return ensemble + _PRECISE


def is_precise(name: str) -> bool:
    """One of the re-score models (loaded after the fast ensemble)."""
    return name.endswith(_PRECISE)


def member_glob(ensemble: str) -> str:
    """A glob for the step directories of ``ensemble`` (``ensemble`` itself escaped)."""
    return f"{glob.escape(ensemble)}_*"
