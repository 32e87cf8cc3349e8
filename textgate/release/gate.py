"""The compare gate: may the candidate replace the serving version?

Serving and candidate run through Triton on the shadow log's texts plus an optional labelled
JSONL. The gate passes when argmax agreement >= ``agreement_min``, the candidate's F1 >=
serving F1 - ``f1_tolerance`` (on the labelled data when given, else on the two bundles'
recorded test metrics), and at least ``min_compare_texts`` texts were compared. F1 and
agreement are ``textgate.metrics``'s. Inference is paced (``compare_texts_per_s``) because
it shares Triton with live traffic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from textgate import metrics, names
from textgate.config import ReleaseConfig
from textgate.errors import ReleaseError
from textgate.release import samples
from textgate.release.shadow import ShadowLog
from textgate.release.state import TaskState

Infer = Callable[[str, Sequence[str]], np.ndarray]  # (ensemble, texts) -> probabilities
_BATCH = 8


def read_labelled(path: Path, labels: Sequence[str]) -> list[tuple[str, int]]:
    """JSONL ``{"text", "label"}`` (the checkpoint's data/test.jsonl) -> (text, class id)."""
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ReleaseError(f"{path}: cannot read ({exc.strerror})") from None
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append((str(row["text"]), list(labels).index(row["label"])))
        except (ValueError, KeyError, TypeError):
            raise ReleaseError(
                f"{path}: line {i} is not {{'text', 'label'}} with a label in {list(labels)}"
            ) from None
    return rows


def probs(
    infer: Infer, model: str, texts: Sequence[str], n_labels: int, rate: float = 0.0
) -> np.ndarray:
    """Batches of 8 texts, paced to ``rate`` texts/s (0: unpaced) to spare live traffic."""
    parts = []
    start = time.monotonic()
    for i in range(0, len(texts), _BATCH):
        parts.append(infer(model, texts[i : i + _BATCH]))
        if rate > 0:
            due = start + (i + _BATCH) / rate  # when the next batch may start
            time.sleep(max(0.0, due - time.monotonic()))
    return np.concatenate(parts) if parts else np.zeros((0, n_labels), np.float32)


def gate_report(
    serving: np.ndarray,
    candidate: np.ndarray,
    gold: Sequence[int],
    *,
    n_shadow: int,
    settings: ReleaseConfig,
    manifest_f1: tuple[Any, Any] = (None, None),
) -> dict[str, Any]:
    """Agreement and F1 of candidate vs serving; ``passed`` with every reason it did not."""
    n = len(serving)
    sp, cp = serving.argmax(axis=1), candidate.argmax(axis=1)
    agreement = metrics.agreement(sp, cp)
    reasons = []
    if n < settings.min_compare_texts:
        reasons.append(f"only {n} texts compared (< {settings.min_compare_texts})")
    if agreement < settings.agreement_min:
        reasons.append(f"argmax agreement {agreement:.4f} < {settings.agreement_min}")
    f1_s, f1_c, source = _f1s(sp, cp, gold, serving.shape[1], manifest_f1)
    if f1_s is not None and f1_c is not None and f1_c < f1_s - settings.f1_tolerance:
        reasons.append(f"F1 {f1_c:.4f} < serving {f1_s:.4f} - {settings.f1_tolerance}")
    return {
        "n": n,
        "n_shadow": n_shadow,
        "n_labelled": len(gold),
        "agreement": agreement,
        "agreement_min": settings.agreement_min,
        "f1_serving": f1_s,
        "f1_candidate": f1_c,
        "f1_source": source,
        "f1_tolerance": settings.f1_tolerance,
        "passed": not reasons,
        "reasons": reasons,
    }


def _f1s(
    sp: np.ndarray, cp: np.ndarray, gold: Sequence[int], k: int, manifest_f1: tuple[Any, Any]
) -> tuple[float | None, float | None, str]:
    """(serving F1, candidate F1, where from): the labelled rows (the last ``len(gold)``),
    else the bundles' recorded test F1, else none."""
    if gold:
        # A class absent from both truth and prediction counts 1.0: the gate's convention.
        f1_s = metrics.f1_score(gold, sp[-len(gold) :], k, zero_division=1.0)
        f1_c = metrics.f1_score(gold, cp[-len(gold) :], k, zero_division=1.0)
        return f1_s, f1_c, "data"
    if all(isinstance(x, int | float) for x in manifest_f1):
        return float(manifest_f1[0]), float(manifest_f1[1]), "bundle test metrics"
    return None, None, "none"


@dataclass(frozen=True)
class Comparison:
    """One compare of a task's candidate against its serving version."""

    task: str
    t: TaskState
    infer: Infer
    settings: ReleaseConfig

    @property
    def candidate(self) -> int:
        if self.t.candidate is None:
            raise ReleaseError(f"{self.task} has no candidate version to compare")
        return self.t.candidate

    @property
    def labels(self) -> list[str]:
        return list(self.t.versions[self.t.serving].labels)

    def run(self, shadow: ShadowLog, data: Path | None) -> dict[str, Any]:
        """Shadowed texts (re-run), text-less shadow rows (as recorded) + labelled data."""
        t, cand, labels = self.t, self.candidate, self.labels
        texts = shadow.texts(self.task)
        # Rows kept without their text (events.store_text: false) carry both outputs of
        # the shadow copy: those answers are compared as recorded, not re-run.
        rec_s, rec_c = shadow.outputs(self.task, t.serving, cand, len(labels))
        rows = read_labelled(data, labels) if data is not None else []
        all_texts = texts + [r[0] for r in rows]
        report = gate_report(
            np.concatenate([rec_s, self._probs(t.serving, all_texts)]),
            np.concatenate([rec_c, self._probs(cand, all_texts)]),
            [r[1] for r in rows],
            n_shadow=len(texts) + len(rec_s),
            settings=self.settings,
            manifest_f1=(
                t.versions[t.serving].metrics.get("f1"),
                t.versions[cand].metrics.get("f1"),
            ),
        )
        # Each configured sample (sentiment: English and Chinese) must agree on its own.
        return samples.apply(report, self.task, t.serving, cand, self._probs, self.settings)

    def feedback_accuracy(self, path: Path) -> dict[str, Any]:
        """Both versions' accuracy on the operators' corrections: reported, not gating
        (a handful of corrections is noise)."""
        from textgate import feedback as feedback_store

        labels = self.labels
        rows = [c for c in feedback_store.read_all(path, self.task) if c.label in labels]
        if not rows:
            return {"n": 0, "note": f"no corrections for {self.task} with a label in {labels}"}
        texts, gold = [c.text for c in rows], [labels.index(c.label) for c in rows]
        out: dict[str, Any] = {"n": len(rows)}
        for name, version in (("serving", self.t.serving), ("candidate", self.candidate)):
            pred = self._probs(version, texts).argmax(axis=1)
            out[f"accuracy_{name}"] = float(np.mean(_agrees(pred, gold, labels)))
        return out

    def _probs(self, version: int, texts: Sequence[str]) -> np.ndarray:
        model = names.version_ensemble(self.task, version)
        return probs(self.infer, model, texts, len(self.labels), self.settings.compare_texts_per_s)


def _agrees(pred: np.ndarray, gold: Sequence[int], labels: Sequence[str]) -> np.ndarray:
    """Correct per row; for a mail model only "ham or not" counts (a phish called spam is
    caught mail, as the operator's spam/ham correction means)."""
    gold_a = np.asarray(gold)
    if "ham" in labels:
        ham = list(labels).index("ham")
        return np.asarray((pred == ham) == (gold_a == ham))
    return np.asarray(pred == gold_a)
