"""`textgate bench` for a few seconds against the session's real tritonserver (tiny bundle).

A smoke test of the harness only: it must run end to end and report; no speed is asserted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from textgate import cli
from textgate.triton import TritonServer

pytest.importorskip("tritonclient.grpc.aio")
# Generous: a ramp on a loaded 2-core box took 120 s once (49 s when it is quieter).
pytestmark = [pytest.mark.triton, pytest.mark.timeout(400)]


def test_bench_ramp_over_grpc_reports_stats_and_plot(
    triton_server: TritonServer, tmp_path: Path
) -> None:
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    argv = ["bench", "--target", "triton", "--url", triton_server.grpc_url, "--model", "spam"]
    argv += ["--mode", "ramp", "--rate", "20", "--ramp-factor", "2", "--ramp-steps", "2"]
    argv += ["--duration", "1.5", "--n", "100", "--pid", f"triton={triton_server.pid}"]
    argv += ["-o", str(out), "--plot", str(png), "--no-progress"]
    assert cli.main(argv) == 0
    report = json.loads(out.read_text())
    assert [s["offered_rate"] for s in report["steps"]] == [20.0, 40.0]
    step = report["steps"][0]
    assert step["ok"] > 0 and step["errors"] == {}
    assert step["p50_ms"] <= step["p99_ms"] <= step["max_ms"]
    assert step["triton"]["spam"]["requests"] == step["requests"]
    assert step["processes"]["triton"]["processes"] >= 2  # server + Python-backend stubs
    assert report["workload"]["share_by_band"]["1-99"] == 0.7
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_bench_closed_loop_over_v2_http(triton_server: TritonServer, tmp_path: Path) -> None:
    out = tmp_path / "v2.json"
    argv = ["bench", "--target", "v2", "--url", triton_server.http_url, "--model", "sentiment"]
    argv += ["--mode", "closed", "--concurrency", "4", "--duration", "1", "--max-requests", "40"]
    argv += ["--workload", "short", "--n", "20", "-o", str(out), "--no-progress"]
    assert cli.main(argv) == 0
    step = json.loads(out.read_text())["steps"][0]
    assert step["ok"] == 40 and step["error_rate"] == 0.0


def test_bench_stops_with_one_message_for_an_unknown_model(
    triton_server: TritonServer, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["bench", "--url", triton_server.grpc_url, "--model", "nope", "--mode", "closed"]
    argv += ["--concurrency", "2", "--max-requests", "6", "--duration", "1", "--n", "5"]
    assert cli.main([*argv, "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "warm-up requests failed" in err and "Traceback" not in err
