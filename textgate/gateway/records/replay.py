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

from textgate.config import ClientConfig
from textgate.errors import DataError
from textgate.triton_client import TritonClient

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


async def rerun(
    record: dict[str, Any], endpoints: Sequence[str], config: ClientConfig | None = None
) -> dict[str, Any]:
    """Send the record's pieces to its model(s) again; recorded vs now, per output."""
    client = TritonClient(endpoints, config)
    try:
        now: dict[str, Any] = {}
        for key, model in (("fast", record["model"]), ("precise", record.get("precise_model"))):
            if not model or record["outputs"].get(key) is None:
                continue
            pred = await client.infer(model, record["pieces"], request_id=record["request_id"])
            now[key] = _max_row(pred.probabilities)
    finally:
        await client.close()
    report: dict[str, Any] = {
        "file_request_id": record["request_id"],
        "reason": record.get("reason"),
        "model": record["model"],
        "model_version": record.get("model_version"),
        "tokenizer_sha256": record.get("tokenizer_sha256"),
        "outputs": {},
    }
    for key, probs in now.items():
        then = record["outputs"][key]
        diff = max((abs(a - b) for a, b in zip(then, probs, strict=False)), default=0.0)
        report["outputs"][key] = {"recorded": then, "now": probs, "max_abs_diff": diff}
    return report


def _max_row(probs: Any) -> list[float]:
    # Chunked inputs were max-pooled on the positive (last) label; replay does the same.
    rows = [[float(x) for x in row] for row in probs]
    return max(rows, key=lambda r: r[-1] if math.isfinite(r[-1]) else math.inf)


def format_report(report: dict[str, Any]) -> list[str]:
    lines = [
        f"request {report['file_request_id']} ({report.get('reason') or 'no reason recorded'})",
        f"  model {report['model']} version {report.get('model_version')}, tokenizer "
        f"{str(report.get('tokenizer_sha256') or '?')[:12]}",
    ]
    for key, out in report["outputs"].items():
        lines.append(
            f"  {key:8} recorded {_fmt(out['recorded'])}  now {_fmt(out['now'])}  "
            f"max |diff| {out['max_abs_diff']:.6f}"
        )
    return lines


def _fmt(probs: Sequence[float | None]) -> str:
    return "[" + ", ".join("nan" if p is None else f"{p:.4f}" for p in probs) + "]"
