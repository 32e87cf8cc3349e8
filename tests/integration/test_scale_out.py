"""Scale-out on one machine: two tritonserver processes, two gateway processes (``textgate
serve``), one Kafka-protocol broker (Tansu). One Triton is killed under open-loop load at
70 % of the measured capacity and restarted on its ports: no request may fail (retry on the
other endpoint, ejection, re-admission), and the topic must hold every answered request's
event exactly once by request id (each gateway has its own outbox).

The load is small and bounded (2 shared cores): capacity from 3 s of closed-loop load, then
at most 60 requests/s for about 12 s. The numbers are printed (run with -s) and written to
``$TEXTGATE_SCALE_REPORT`` when set (docs/deploy.md quotes them).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers.kafka_fixtures import TansuBroker, tansu_broker  # noqa: F401  (the fixture)
from tests.helpers.load_fixtures import TOPIC, OpenLoop, capacity, gateway_process
from tests.helpers.servers import start_triton
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.kafka]

MAX_RATE = 60.0


def triton_successes(server: TritonServer) -> float:
    try:
        text = httpx.get(server.metrics_url, timeout=2).text
    except httpx.HTTPError:
        return 0.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("nv_inference_request_success{")
    )


def test_kill_one_triton_under_load_fails_nothing_and_loses_no_event(
    embedded_repo: Path,
    tansu_broker: TansuBroker,  # noqa: F811
    tmp_path: Path,
) -> None:
    tritons = [start_triton(embedded_repo), start_triton(embedded_repo)]
    report: dict[str, Any] = {}
    try:
        endpoints = [t.grpc_url for t in tritons]
        with (
            gateway_process(tmp_path, "gw-a", endpoints, tansu_broker.bootstrap) as a,
            gateway_process(tmp_path, "gw-b", endpoints, tansu_broker.bootstrap) as b,
        ):
            gateways = [a, b]
            rps, ids = capacity(gateways)
            report["capacity_rps"] = round(rps, 1)
            rate = min(MAX_RATE, 0.7 * report["capacity_rps"])
            report["load_rps"] = round(rate, 1)
            victim = tritons[0]
            with OpenLoop(gateways, rate) as load:
                time.sleep(3.0)
                assert victim.pid is not None
                os.killpg(victim.pid, signal.SIGKILL)
                killed_at = time.monotonic()
                time.sleep(2.0)
                victim.stop()
                ports = {"http_port": victim.http_port, "grpc_port": victim.grpc_port,
                         "metrics_port": victim.metrics_port}  # fmt: skip
                tritons[0] = victim = start_triton(embedded_repo, **ports)
                back_at = time.monotonic()
                while triton_successes(victim) == 0 and time.monotonic() - back_at < 30:
                    time.sleep(0.05)
                first_at = time.monotonic()
                time.sleep(2.0)  # traffic on both again
            outcomes = load.outcomes()
            report["requests"] = len(outcomes)
            report["down_s"] = round(back_at - killed_at, 2)
            report["return_to_first_request_s"] = round(first_at - back_at, 2)
            report["served_by_returned_replica"] = triton_successes(victim)
            failed = [o for o in outcomes if o.status != 200]
            report["failed"] = len(failed)
            report["retries"] = sum(g.metric("textgate_triton_retries") for g in gateways)
            for g in gateways:  # every event published before reading the topic
                deadline = time.monotonic() + 30
                while g.metric("textgate_outbox_depth") > 0 and time.monotonic() < deadline:
                    time.sleep(0.2)
        ids += [o.request_id for o in outcomes if o.status == 200]
        # Kafka keys are the server's event ids; the request id is a field of each event.
        keys = tansu_broker.keys(TOPIC, field="request_id")
        report["events_expected"] = len(ids)
        report["events_lost"] = len(set(ids) - set(keys))
        report["events_duplicated"] = sum(n - 1 for n in keys.values() if n > 1)
        report["events_unexpected"] = len(set(keys) - set(ids))
    finally:
        for t in tritons:
            t.stop()
    print("\nscale-out:", json.dumps(report))
    if os.environ.get("TEXTGATE_SCALE_REPORT"):
        Path(os.environ["TEXTGATE_SCALE_REPORT"]).write_text(json.dumps(report, indent=2))
    assert failed == [], failed[:5]
    assert report["served_by_returned_replica"] > 0, "the restarted Triton got no traffic"
    assert len(set(ids)) == len(ids) > report["requests"] > 0  # server ids, all distinct
    assert (report["events_lost"], report["events_duplicated"], report["events_unexpected"]) == (
        0,
        0,
        0,
    ), report
