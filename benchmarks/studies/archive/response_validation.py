"""What FastAPI's response validation costs on the classify answer (issue 12 §4).

    python benchmarks/studies/archive/response_validation.py [--n 20000] [--texts 1]

Compares, per response, the path FastAPI takes with ``response_model=ClassifyResponse``
(validate the dict into the model, dump it to JSON) against serializing the service's
dict with orjson directly, on a typical answer of ``--texts`` results. Prints µs per
response and the ratio; the shape itself is proved by the gateway tests (the contract test
and the schemathesis run check every answer against the OpenAPI schema).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import orjson
from fastapi.encoders import jsonable_encoder

from textgate.gateway.http.schema import ClassifyResponse


def answer(n: int) -> dict[str, Any]:
    item = {
        "label": "spam",
        "probabilities": {"ham": 0.0312, "spam": 0.9688},
        "score": 0.9688,
        "action": "quarantine",
        "model": {"name": "spam", "version": "3", "variant": "int8"},
        "precision_path": "int8",
        "rescored": False,
        "request_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        "timings_ms": {"normalize": 0.21, "queue": 0.0, "triton": 4.1, "policy": 0.02},
        "normalization": {"chunks": 1, "truncated": False, "chars": 84},
    }
    return {"request_id": "4bf92f3577b34da6a3ce929d0e0e4736", "task": "spam", "results": [item] * n}


def per_call_us(fn: Any, n: int) -> float:
    for _ in range(min(n, 500)):
        fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--texts", type=int, default=1)
    args = p.parse_args()
    body = answer(args.texts)

    def validated() -> bytes:  # FastAPI: validate into the model, encode, dump
        model = ClassifyResponse.model_validate(body)
        return json.dumps(jsonable_encoder(model)).encode()

    def direct() -> bytes:
        return orjson.dumps(body)

    v, d = per_call_us(validated, args.n), per_call_us(direct, args.n)
    print(json.dumps({"texts": args.texts, "validated_us": round(v, 2), "orjson_us": round(d, 2),
                      "ratio": round(v / d, 1)}))  # fmt: skip


if __name__ == "__main__":
    main()
