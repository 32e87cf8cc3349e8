"""Locust users with the same seeded workload as ``textgate bench`` (for those who prefer
Locust; the seeds use Locust/k6). Locust is not a textgate dependency: install it yourself.

    locust -f benchmarks/locustfile.py --host http://127.0.0.1:8080 --headless \
        -u 32 -r 8 -t 60s                                   # the gateway
    TEXTGATE_LOCUST_TARGET=v2 locust -f benchmarks/locustfile.py \
        --host http://127.0.0.1:8000 --headless -u 32 -r 8 -t 60s   # Triton's v2 HTTP

Environment: TEXTGATE_LOCUST_TARGET (gateway | v2), TEXTGATE_LOCUST_TASK (default spam),
TEXTGATE_LOCUST_WORKLOAD (mix | short | long), TEXTGATE_LOCUST_N, TEXTGATE_LOCUST_SEED.
Locust's users are closed-loop; for open-loop latency use `textgate bench --mode open`.
"""

from __future__ import annotations

import itertools
import os
import sys
from typing import Any

TARGET = os.environ.get("TEXTGATE_LOCUST_TARGET", "gateway")
TASK = os.environ.get("TEXTGATE_LOCUST_TASK", "spam")


def texts() -> tuple[str, ...]:
    from textgate.bench import workload

    name = os.environ.get("TEXTGATE_LOCUST_WORKLOAD", "mix")
    n = int(os.environ.get("TEXTGATE_LOCUST_N", "2000"))
    return workload.make(name, n, seed=int(os.environ.get("TEXTGATE_LOCUST_SEED", "0"))).texts


def request(text: str) -> tuple[str, dict[str, Any]]:
    """(path, JSON body) of one classification for the chosen target."""
    if TARGET == "v2":
        body = {"inputs": [{"name": "text", "shape": [1, 1], "datatype": "BYTES", "data": [text]}]}
        return f"/v2/models/{TASK}/infer", body
    return f"/v1/classify/{TASK}", {"text": text}


if "locust" in sys.modules:  # loaded by the locust command: define the users
    from locust import HttpUser, task

    _TEXTS = itertools.cycle(texts())

    class ClassifyUser(HttpUser):  # type: ignore[misc]
        @task
        def classify(self) -> None:
            path, body = request(next(_TEXTS))
            self.client.post(path, json=body, name=f"classify {TASK}")
