"""Writing the checkpoint (layout: ``docs/formats.md``): weights and tokenizer, the
validation and test rows, reports, and the record of where the data and code came from;
built in a temporary folder that replaces the output only when complete."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from textgate import metrics
from textgate.errors import TrainError
from textgate.train.dataset import Part, Parts


def check_output(out: Path, *, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise TrainError(f"output '{out}' exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise TrainError(
                f"output directory '{out}' exists and is not empty",
                hint="choose another -o, or pass --force to replace it",
            )
        here = Path.cwd().resolve()
        target = out.resolve()
        # --force replaces the directory; never one that holds the user's work.
        if target in (here, *here.parents, Path.home().resolve()):
            raise TrainError(f"refusing to replace '{out}': it contains the working directory")


def save_model(model: Any, tokenizer: Any, tmp: Path) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    if not (tmp / "tokenizer.json").is_file():
        raise TrainError("the tokenizer did not save a tokenizer.json; serving needs one")


def write_data(folder: Path, parts: Parts, labels: Sequence[str]) -> None:
    """Validation and test rows, so export can gate variants on the same texts."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("validation", "test"):
        part: Part = getattr(parts, name)
        with (folder / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for n, (text, i) in enumerate(zip(part.texts, part.ids, strict=True)):
                row: dict[str, Any] = {"text": text, "label": labels[i]}
                if part.symbols:  # the combiner's inputs, for export's gates and calibration
                    row["symbols"] = list(part.symbols[n])
                fh.write(json.dumps(row, ensure_ascii=False))
                fh.write("\n")


def write_reports(
    tmp: Path, report: dict[str, Any], y: list[int], probs: np.ndarray, labels: list[str]
) -> None:
    write_json(tmp / "metrics.json", report)
    metrics.plot_confusion_matrix(
        report["confusion_matrix"], labels, tmp / "confusion_matrix.png", title="test split"
    )
    if len(labels) == 2:
        curve = metrics.threshold_curve(y, probs[:, 1])
        metrics.plot_threshold_curve(curve, tmp / "threshold.png", positive=labels[1])
    elif "ham" in labels:  # a mail model: the filter's view, spam + phish vs ham
        ham = labels.index("ham")
        truth = [int(i != ham) for i in y]
        curve = metrics.threshold_curve(truth, 1.0 - probs[:, ham])
        metrics.plot_threshold_curve(curve, tmp / "threshold.png", positive="not ham")


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def replace_dir(tmp: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)


def normalization_record() -> dict[str, Any]:
    """The normalizer the data went through (the gateway refuses a bundle that differs)."""
    from textgate.normalize import NormalizeSettings, fingerprint

    return fingerprint(NormalizeSettings())


def data_sources(source: str) -> dict[str, Any]:
    """Where the data came from, and a licence term the bundle inherits from it."""
    from textgate import mail

    info: dict[str, Any] = {"source": source}
    if source.startswith("data/email") and "phishing-pot" not in source:
        terms = mail.NONCOMMERCIAL_SOURCES
        info["licence_notes"] = [
            f"trained on {name} ({lic}): non-commercial use only; rebuild with "
            f"--exclude-source {name} for a model without it"
            for name, lic in terms.items()
        ]
    return info


def library_versions() -> dict[str, str]:
    found = {}
    for dist in ("textgate", "torch", "transformers", "tokenizers"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "unknown"
    return found
