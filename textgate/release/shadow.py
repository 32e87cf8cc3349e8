"""The shadow log: texts the gateway copied to the candidate, with both answers.

    REPO/.textgate-release/shadow/T.jsonl   one row per shadowed text (bounded, rotates)

A row holds the text, or only its hash when ``events.store_text`` is false; then its two
recorded answers are what compare judges (there is nothing to re-run). The log holds request
texts and lives beside the models, with the models' permissions (docs/lifecycle.md).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from textgate.release.state import write_text_atomic


class ShadowLog:
    def __init__(self, directory: Path, max_rows: int) -> None:
        self.directory = directory
        self.max_rows = max_rows

    def path(self, task: str) -> Path:
        return self.directory / f"{task}.jsonl"

    def record(self, task: str, row: Mapping[str, object]) -> None:
        """Append one shadowed text; the log rotates at its bound."""
        path = self.path(task)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        if path.stat().st_size > self.max_rows * 512:
            lines = path.read_text(encoding="utf-8").splitlines()[-self.max_rows :]
            write_text_atomic(path, "\n".join(lines) + "\n")

    def _lines(self, task: str) -> list[str]:
        path = self.path(task)
        return path.read_text(encoding="utf-8").splitlines() if path.is_file() else []

    def texts(self, task: str) -> list[str]:
        out = []
        for line in self._lines(task):
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                text = json.loads(line).get("text")
                if isinstance(text, str):  # rows of events.store_text: false hold a hash only
                    out.append(text)
        return out[-self.max_rows :]

    def outputs(
        self, task: str, serving: int, candidate: int, n_labels: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Recorded (serving, candidate) probabilities of the text-less rows that were made
        by this very pair of versions."""
        s_rows: list[list[float]] = []
        c_rows: list[list[float]] = []
        for line in self._lines(task)[-self.max_rows :]:
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                row = json.loads(line)
                if isinstance(row.get("text"), str):
                    continue  # re-run by compare from its text
                pair = (int(row["serving"]), int(row["candidate"]))
                s = [float(x) for x in row["serving_probs"]]
                c = [float(x) for x in row["candidate_probs"]]
                if pair == (serving, candidate) and len(s) == len(c) == n_labels:
                    s_rows.append(s)
                    c_rows.append(c)
        shape = (len(s_rows), n_labels)
        return (
            np.asarray(s_rows, np.float32).reshape(shape),
            np.asarray(c_rows, np.float32).reshape(shape),
        )
