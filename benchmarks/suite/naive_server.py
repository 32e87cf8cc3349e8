"""The naive baseline the seeds warn about: FastAPI + a transformers ``pipeline`` (PyTorch),
one request at a time, no batching.

    python benchmarks/suite/naive_server.py CHECKPOINT --port 8101 --threads 2

``POST /classify {"text": ...}`` -> ``{"label", "score"}``; ``GET /health``. The endpoint is
``async`` and calls the pipeline directly, so requests run strictly one after another, as a
first FastAPI wrapper around a model does.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pydantic import BaseModel


class Item(BaseModel):  # module level: FastAPI resolves the annotation by name
    text: str


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoint", type=Path)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--max-length", type=int, default=128)
    args = p.parse_args()

    import torch
    import uvicorn
    from fastapi import FastAPI
    from transformers import pipeline

    torch.set_num_threads(args.threads)
    clf = pipeline("text-classification", model=str(args.checkpoint), device=-1)
    app = FastAPI()

    @app.post("/classify")
    async def classify(item: Item) -> dict[str, object]:
        out = clf(item.text, truncation=True, max_length=args.max_length)[0]
        return {"label": out["label"], "score": float(out["score"])}

    @app.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
