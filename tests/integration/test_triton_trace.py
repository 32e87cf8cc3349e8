"""The Triton leg is traceable (issue 41 §5): with ``triton.trace_mode`` set, the gateway's
request id and the W3C traceparent reach a real tritonserver — its own trace file names the
request id, and in OpenTelemetry mode its spans join the caller's trace under the gateway's
span (read from what Triton exports to a collector started here)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.helpers.gateway_fixtures import run_gateway
from tests.helpers.triton_settings import server_config
from textgate.triton import TritonServer

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.timeout(300)]

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def _classify(triton: TritonServer, tmp: Path, rid: str) -> tuple[dict[str, object], str]:
    """One classification through a gateway; its answer and the gateway's span id."""
    config = {
        "gateway": {"parse_workers": 0},
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
    }
    with run_gateway(config, [triton.grpc_url]) as gw, gw.client() as c:
        r = c.post(
            "/v1/classify/spam",
            json={"text": "claim your prize"},
            headers={"X-Request-ID": rid, "traceparent": TRACEPARENT},
        )
        assert r.status_code == 200, r.text
        _, trace_id, span_id, _ = r.headers["traceparent"].split("-")
        assert trace_id == TRACE_ID  # the caller's trace goes on through the gateway
        return dict(r.json()), span_id


def test_triton_trace_file_names_the_gateway_request_id(
    embedded_repo: Path, tmp_path: Path
) -> None:
    trace = tmp_path / "trace.json"
    config = server_config(trace_mode="triton", trace_rate=1, trace_file=trace)
    with TritonServer(embedded_repo, config=config) as triton:
        _classify(triton, tmp_path, "trace-me-1")
    files = sorted(tmp_path.glob("trace.json*"))
    traces = [t for f in files for t in json.loads(f.read_text() or "[]")]
    ours = [t for t in traces if t.get("request_id") == "trace-me-1"]
    assert ours, f"no Triton trace names the request id; ids seen: {traces[:3]}"
    assert {t.get("model_name") for t in ours} & {"spam", "spam_model", "spam_tokenize"}


class _Collector(http.server.BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        n = int(self.headers.get("content-length") or 0)
        type(self).bodies.append(self.rfile.read(n))
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    """An OTLP/HTTP endpoint that keeps what it is sent (the spans, protobuf-encoded)."""
    _Collector.bodies = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", _Collector.bodies
    finally:
        server.shutdown()


def test_triton_spans_join_the_callers_trace(
    embedded_repo: Path, tmp_path: Path, collector: tuple[str, list[bytes]]
) -> None:
    address, bodies = collector
    url = f"http://{address}/v1/traces"
    config = server_config(trace_mode="opentelemetry", trace_rate=1, trace_url=url)
    with TritonServer(embedded_repo, config=config) as triton:
        gateway_span = _classify(triton, tmp_path, "trace-me-2")[1]
        deadline = time.monotonic() + 20
        while not any(b'"InferRequest"' in b for b in bodies):
            if time.monotonic() > deadline:
                break
            time.sleep(0.2)
    spans = [
        span
        for body in bodies
        for rs in json.loads(body)["resourceSpans"]  # OTLP/HTTP JSON, as Triton sends it
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]
    assert spans, "Triton exported no spans"
    foreign = [
        (s["name"], [a["value"] for a in s.get("attributes", [])][:4])
        for s in spans
        if s["traceId"] != TRACE_ID
    ]
    assert not foreign, f"spans outside the caller's trace: {foreign}"
    roots = [s for s in spans if s["name"] == "InferRequest"]
    assert roots and {s["parentSpanId"] for s in roots} == {gateway_span}  # under the gateway's
    ids = {a["value"].get("stringValue") for s in spans for a in s.get("attributes", [])
           if a["key"] == "triton.request_id"}  # fmt: skip
    assert ids == {"trace-me-2"}
