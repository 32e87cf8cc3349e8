"""The replay store: requests whose outputs look anomalous, saved to re-run later.

Anomalous: a NaN or infinite probability, or the fast and fp32 variants disagreeing by more
than ``gateway.replay_disagreement``. A record holds everything needed to reproduce the
answer: the normalized pieces the model saw, the model, version and variant, the tokenizer's
SHA-256 and the normalization settings. ``textgate replay FILE`` re-runs one.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from textgate.errors import DataError

FORMAT = "textgate-replay/1"


def anomaly(fast: Sequence[float], precise: Sequence[float] | None, limit: float) -> str | None:
    """Why an output is anomalous, or None."""
    if any(not math.isfinite(p) for p in fast):
        return "non-finite probability from the fast variant"
    if precise is None:
        return None
    if any(not math.isfinite(p) for p in precise):
        return "non-finite probability from the fp32 variant"
    diff = max((abs(a - b) for a, b in zip(fast, precise, strict=True)), default=0.0)
    return f"fast and fp32 variants differ by {diff:.4f}" if diff > limit else None


class ReplayStore:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def save(self, record: dict[str, Any]) -> Path:
        """Write one record atomically; the file name starts with the request id."""
        rid = "".join(c if c.isalnum() or c in "-_." else "_" for c in record["request_id"])
        path = self.directory / f"{rid}-{time.time_ns()}.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"format": FORMAT, **record}, indent=2), encoding="utf-8")
        os.replace(tmp, path)
        return path


def load(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"not a readable replay record: {exc}", path=path) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DataError(f"not a {FORMAT} record", path=path)
    for key in ("task", "model", "pieces", "outputs"):
        if key not in data:
            raise DataError(f"replay record lacks '{key}'", path=path)
    return data
