from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from textgate.bench import measurement
from textgate.triton.server import free_port

METRICS = b"""# HELP textgate_cascade_total Items scored, by the cascade's path
textgate_cascade_total{task="spam",path="cheap"} 3.0
textgate_cascade_total{task="sms",path="cheap"} 2.0
textgate_cascade_total{task="spam",path="full"} 4.0
textgate_campaign_memory_total{task="spam",result="hit"} 1.0
textgate_campaign_memory_created{task="spam",result="hit"} 1.7e9
textgate_best_effort_total{reason="time_budget"} 5.0
"""


@pytest.fixture
def gateway() -> Iterator[str]:
    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/metrics" else 404)
            self.end_headers()
            self.wfile.write(METRICS)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def test_gateway_counts_sum_each_counter_over_its_other_labels(gateway: str) -> None:
    assert measurement.gateway_counts(gateway) == {
        "path_cheap": 5.0,
        "path_full": 4.0,
        "result_hit": 1.0,
        "reason_time_budget": 5.0,
    }  # fmt: skip  (the _created series is not a count)


def test_an_unreachable_gateway_counts_nothing() -> None:
    assert measurement.gateway_counts(f"http://127.0.0.1:{free_port()}") == {}
