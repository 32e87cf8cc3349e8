"""Write a Triton model repository from bundles: config.pbtxt + numeric version directories.

    REPO/<task>/config.pbtxt, <task>/<v>/                  ensemble (empty version dir)
    REPO/<task>_tokenize/<v>/model.py, tokenizer.json, ...  Python backend
    REPO/<task>_model/<v>/model.py, model.<variant>.onnx    embedded (Python backend + ORT)
    REPO/<task>_model/<v>/model.onnx                        triton-container (onnxruntime_onnx)
    REPO/<task>_postprocess/<v>/model.py, labels.json       Python backend
                                  [+ ngrams.npz, ngrams.py]  the lexical half, if any
                                  [+ combiner.json, .py]     the combiner, if any
    REPO/<task>_tokenize/<v>/[window.py]                    a head + tail window, if any
    REPO/<task>_cheap/<v>/model.py, ngrams.npz, ngrams.py   the cascade's first stage, if any

Every version directory holds a copy of the bundle's manifest.json, against which the
Python models verify the files they load.
"""

from __future__ import annotations

import importlib.resources
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textgate import ngrams, window
from textgate.bundle import MANIFEST
from textgate.config import RepositoryConfig
from textgate.errors import RepositoryError
from textgate.repository import render
from textgate.repository.spec import RepositorySpec, TaskSpec, describe
from textgate.repository.templates import SUPPORT, TEMPLATES
from textgate.signals import combiner

NGRAMS_CODE = "ngrams.py"  # textgate/ngrams.py, imported by the postprocess step
COMBINER_CODE = "combiner.py"  # textgate/signals/combiner.py, imported by postprocess too
WINDOW_CODE = "window.py"  # textgate/window.py, imported by the tokenize step (head + tail)


@dataclass(frozen=True)
class BuildResult:
    repository: Path
    spec: RepositorySpec
    models: tuple[str, ...]  # load order: steps before their ensemble


def build(
    bundles: Sequence[Path | str],
    out: Path | str,
    settings: RepositoryConfig | None = None,
    *,
    version: int = 1,
    overwrite: bool = False,
    suffix: str = "",
) -> BuildResult:
    """Verify the bundles and write (or add a version to) the repository at ``out``."""
    spec = describe(bundles, settings or RepositoryConfig(), version=version, suffix=suffix)
    return write(spec, Path(out), overwrite=overwrite)


def write(spec: RepositorySpec, out: Path, *, overwrite: bool = False) -> BuildResult:
    configs = render.render(spec)
    _check_free(out, configs, spec.version, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    for task in spec.tasks:
        for name, files in _files(task, spec).items():
            vdir = out / name / str(spec.version)
            if vdir.exists():
                shutil.rmtree(vdir)
            vdir.mkdir(parents=True)
            for local, source in files.items():
                _copy(source, vdir / local)
    for name, config in configs.items():
        # Written last: Triton never sees a config whose version directory is half-copied.
        (out / name / "config.pbtxt").write_text(render.to_text(config), encoding="utf-8")
    return BuildResult(out.resolve(), spec, tuple(configs))


def _check_free(out: Path, configs: dict[str, Any], version: int, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise RepositoryError(f"{out} exists and is not a directory")
    taken = [n for n in configs if (out / n / str(version)).exists()]
    if taken and not overwrite:
        raise RepositoryError(
            f"{out}: version {version} of {', '.join(taken)} already exists",
            hint="pass --version N for a new version, or --overwrite to replace it",
        )


def _files(task: TaskSpec, spec: RepositorySpec) -> dict[str, dict[str, Path | str]]:
    """Model name -> {file in its version dir: source (bundle path or template name)}."""
    b = task.bundle_dir
    for name in (task.model_file, task.tokenizer_file, task.labels_file or ""):
        if "/" in name:
            raise RepositoryError(f"{b}: bundle file {name} is not at the bundle's top level")
    manifest = {MANIFEST: b / MANIFEST}
    tokenizer: dict[str, Path | str] = {
        render._file_name(task.tokenizer_file): b / task.tokenizer_file
    }
    if task.tail_tokens:  # the window training used, imported by the tokenize step
        tokenizer[WINDOW_CODE] = Path(window.__file__)
    onnx = {task.model_file: b / task.model_file}
    files: dict[str, dict[str, Path | str]] = {}
    if spec.fused:
        files[task.model] = {**_python("fused"), **tokenizer, **onnx, **manifest}
    else:
        files[task.tokenize] = {**_python("tokenize"), **tokenizer, **manifest}
        if spec.target == "embedded":
            files[task.model] = {**_python("model"), **onnx, **manifest}
        else:
            model = {render.CONTAINER_MODEL_FILE: b / task.model_file}
            files[task.model] = {**model, **manifest}
    if task.precise_variant and task.precise_file:
        # Same model files with the fp32 ONNX file in place of the fast variant's.
        precise = dict(files[task.model])
        fast_name = render.CONTAINER_MODEL_FILE if spec.target != "embedded" else task.model_file
        precise.pop(fast_name, None)
        precise[fast_name if spec.target != "embedded" else task.precise_file] = (
            b / task.precise_file
        )
        files[task.precise_model] = precise
        files[task.precise_ensemble] = {}
    labels = {task.labels_file: b / task.labels_file} if task.labels_file else {}
    lexical: dict[str, Path | str] = {}
    if task.ngrams_file:  # the weights and the one featurizer training used, side by side
        lexical = {task.ngrams_file: b / task.ngrams_file, NGRAMS_CODE: Path(ngrams.__file__)}
    if task.combiner_file:  # its weights and the code that applies them
        lexical[task.combiner_file] = b / task.combiner_file
        lexical[COMBINER_CODE] = Path(combiner.__file__)
    files[task.postprocess] = {**_python("postprocess"), **labels, **lexical, **manifest}
    if task.cascade is not None and task.ngrams_file:  # the n-gram half alone, first
        ngram = {task.ngrams_file: b / task.ngrams_file, NGRAMS_CODE: Path(ngrams.__file__)}
        files[task.cheap] = {**_python("cheap"), **ngram, **manifest}
    files[task.ensemble] = {}
    return files


def _python(kind: str) -> dict[str, Path | str]:
    return {"model.py": f"template:{TEMPLATES[kind]}", SUPPORT: f"template:{SUPPORT}"}


def _copy(source: Path | str, dest: Path) -> None:
    if isinstance(source, str) and source.startswith("template:"):
        name = source.removeprefix("template:")
        text = importlib.resources.files("textgate.repository.templates").joinpath(name)
        dest.write_text(text.read_text(encoding="utf-8"), encoding="utf-8")
        return
    # A copy, never a link: a repository edited in place must not change the bundle.
    shutil.copyfile(source, dest)
