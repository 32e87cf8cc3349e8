"""Locust users with the same seeded workload as ``textgate bench``, and the soak's load.

    locust -f benchmarks/suite/locustfile.py --host http://127.0.0.1:8080 --headless \
        -u 32 -r 8 -t 60s                                   # the gateway
    TEXTGATE_LOCUST_TARGET=v2 locust -f benchmarks/suite/locustfile.py \
        --host http://127.0.0.1:8000 --headless -u 32 -r 8 -t 60s   # Triton's v2 HTTP

Environment: TEXTGATE_LOCUST_TARGET (gateway | v2), TEXTGATE_LOCUST_TASK (default spam),
TEXTGATE_LOCUST_WORKLOAD (mix | short | long), TEXTGATE_LOCUST_N, TEXTGATE_LOCUST_SEED.

The soak (``make soak``, ``textgate/bench/soak.py``) sets TEXTGATE_LOCUST_MODE=soak: each
user mixes texts for every task in TEXTGATE_LOCUST_TASKS (comma-separated), raw mail from
TEXTGATE_LOCUST_MAIL_DIR (``*.eml``; ``hostile-*`` ones are the hostile corpus) and paces
itself to TEXTGATE_LOCUST_RATE / users requests per second (0: as fast as answers come, to
measure capacity). Every request carries its own ``X-Request-ID``; start time, latency and
status of each are written to TEXTGATE_LOCUST_LEDGER (JSON) when the run stops; the ids
start with TEXTGATE_LOCUST_ID_PREFIX (default ``soak-``), one prefix per run.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
from pathlib import Path
from typing import Any

TARGET = os.environ.get("TEXTGATE_LOCUST_TARGET", "gateway")
TASK = os.environ.get("TEXTGATE_LOCUST_TASK", "spam")
MODE = os.environ.get("TEXTGATE_LOCUST_MODE", "bench")


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


def mails() -> tuple[list[bytes], list[bytes]]:
    """(ordinary, hostile) raw messages of the soak's mail folder."""
    folder = Path(os.environ.get("TEXTGATE_LOCUST_MAIL_DIR", ""))
    files = sorted(folder.glob("*.eml")) if folder.name else []
    ordinary = [p.read_bytes() for p in files if not p.name.startswith("hostile-")]
    hostile = [p.read_bytes() for p in files if p.name.startswith("hostile-")]
    return ordinary, hostile


if "locust" in sys.modules and MODE == "bench":  # loaded by the locust command
    from locust import HttpUser, task

    _TEXTS = itertools.cycle(texts())

    class ClassifyUser(HttpUser):  # type: ignore[misc]
        @task
        def classify(self) -> None:
            path, body = request(next(_TEXTS))
            self.client.post(path, json=body, name=f"classify {TASK}")


if "locust" in sys.modules and MODE == "soak":
    from locust import HttpUser, between, constant_throughput, events, task

    _SOAK_TEXTS = itertools.cycle(texts())
    _ORDINARY, _HOSTILE = mails()
    _MAIL = itertools.cycle(_ORDINARY or [b"Subject: hi\r\n\r\nsee you\r\n"])
    _BAD = itertools.cycle(_HOSTILE or _ORDINARY or [b"Subject: x\r\n\r\nx\r\n"])
    _TASKS = [t for t in os.environ.get("TEXTGATE_LOCUST_TASKS", "spam").split(",") if t]
    _IDS = itertools.count()
    _PICK = itertools.count()
    _RECORDS: list[tuple[float, float, int, str]] = []  # start, latency ms, status, request id
    _ERRORS: list[tuple[str, str]] = []  # request id, the exception of a request not answered
    _RATE = float(os.environ.get("TEXTGATE_LOCUST_RATE", "0"))
    _USERS = int(os.environ.get("TEXTGATE_LOCUST_USERS", "1"))
    _PREFIX = os.environ.get("TEXTGATE_LOCUST_ID_PREFIX", "soak-")  # one per run: ids unique

    @events.request.add_listener
    def _record(
        response_time: float, response: Any, context: dict[str, Any], start_time: float, **_: Any
    ) -> None:
        status = getattr(response, "status_code", 0) or 0
        _RECORDS.append((start_time, response_time, status, context.get("rid", "")))
        if not status:
            exc = _.get("exception")
            _ERRORS.append((context.get("rid", ""), f"{type(exc).__name__}: {exc}"[:300]))

    @events.test_stop.add_listener
    def _write(**_: Any) -> None:
        out = os.environ.get("TEXTGATE_LOCUST_LEDGER")
        if out:
            Path(out).write_text(json.dumps(_RECORDS))
            Path(out).with_suffix(".errors.json").write_text(json.dumps(_ERRORS))

    class SoakUser(HttpUser):  # type: ignore[misc]
        wait_time = constant_throughput(_RATE / _USERS) if _RATE > 0 else between(0, 0)

        def _post(self, path: str, name: str, **kw: Any) -> None:
            rid = f"{_PREFIX}{next(_IDS)}"
            headers = {"X-Request-ID": rid, **kw.pop("headers", {})}
            self.client.post(path, name=name, headers=headers, context={"rid": rid}, **kw)

        @task(4)
        def text(self) -> None:
            name = _TASKS[next(_PICK) % len(_TASKS)]
            self._post(f"/v1/classify/{name}", f"text {name}", json={"text": next(_SOAK_TEXTS)})

        @task(3)
        def mail(self) -> None:
            headers = {"content-type": "message/rfc822"}
            self._post("/v1/classify/spam", "mail", content=next(_MAIL), headers=headers)

        @task(1)
        def hostile(self) -> None:
            headers = {"content-type": "message/rfc822"}
            self._post("/v1/classify/spam", "hostile mail", content=next(_BAD), headers=headers)
