"""The compare gate's per-sample check: agreement on each configured sample by itself.

One pooled agreement lets a candidate that drifts on a small language hide behind a large
one: 1,000 English texts at 100 % and 100 Chinese ones at 95 % pool to 99.5 %. Each sample in
``release.compare_samples`` for the task is therefore scored by serving and candidate and
must reach ``agreement_min`` on its own; its rows are texts (a ``label`` is ignored: for a
sample in a script the model has not seen, agreement is the only meaningful measure).

Numpy, config, errors and metrics only; ``gate.Comparison.run`` calls ``apply``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from textgate import metrics
from textgate.config import CompareSample, ReleaseConfig
from textgate.errors import ReleaseError

Scores = Callable[[int, Sequence[str]], np.ndarray]  # (version, texts) -> probabilities


def read_texts(path: Path) -> list[str]:
    """The ``text`` of every JSONL row; an unreadable file or row is a ReleaseError."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ReleaseError(f"compare sample {path}: cannot read ({exc.strerror})") from None
    texts = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            text = json.loads(line)["text"]
        except (ValueError, KeyError, TypeError):
            text = None
        if not isinstance(text, str) or not text:
            raise ReleaseError(f"compare sample {path}: line {i} has no 'text'")
        texts.append(text)
    return texts


def sample_gate(
    sample: CompareSample,
    serving: int,
    candidate: int,
    score: Scores,
    settings: ReleaseConfig,
) -> dict[str, Any]:
    """{n, agreement, passed, reasons} of one sample, serving vs candidate version."""
    texts = read_texts(sample.path)
    sp = score(serving, texts).argmax(axis=1)
    cp = score(candidate, texts).argmax(axis=1)
    n = len(texts)
    agreement = metrics.agreement(sp, cp)
    reasons = []
    if n < settings.min_compare_texts:
        reasons.append(f"sample {sample.name}: only {n} texts (< {settings.min_compare_texts})")
    if agreement < settings.agreement_min:
        reasons.append(
            f"sample {sample.name}: argmax agreement {agreement:.4f} < {settings.agreement_min}"
        )
    return {
        "name": sample.name,
        "path": str(sample.path),
        "n": n,
        "agreement": agreement,
        "passed": not reasons,
        "reasons": reasons,
    }


def apply(
    report: dict[str, Any],
    task: str,
    serving: int,
    candidate: int,
    score: Scores,
    settings: ReleaseConfig,
) -> dict[str, Any]:
    """``report`` with ``samples`` added; any failing sample fails the whole gate."""
    rows = [sample_gate(s, serving, candidate, score, settings) for s in settings.samples_for(task)]
    if not rows:
        return report
    reasons = list(report["reasons"]) + [r for row in rows for r in row["reasons"]]
    return {**report, "samples": rows, "reasons": reasons, "passed": not reasons}
