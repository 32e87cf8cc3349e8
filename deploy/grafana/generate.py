"""Generate textgate's Grafana dashboards (deploy/grafana/dashboards/*.json).

    python deploy/grafana/generate.py          # rewrite the JSON files
    python deploy/grafana/generate.py --check  # exit 1 when a checked-in file is stale

Built with grafana-foundation-sdk (the dev extra pins it). Every panel's PromQL is run
against a live Prometheus scraping a real gateway and Triton in
tests/integration/test_observability.py: a panel that would show "No data" fails there.
The datasource is the one deploy/grafana/provisioning/ declares (uid ``prometheus``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from grafana_foundation_sdk.builders import dashboard, prometheus, timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

OUT = Path(__file__).resolve().parent / "dashboards"
DATASOURCE = DataSourceRef(type_val="prometheus", uid="prometheus")
RATE = "$__rate_interval"


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    queries: tuple[tuple[str, str], ...]  # (PromQL, legend)
    description: str = ""


def _q(expr: str, legend: str) -> tuple[str, str]:
    return (" ".join(expr.split()), legend)


OVERVIEW = (
    Panel(
        "Traffic by task and action",
        "reqps",
        (
            _q(
                f'sum by (task, action) (rate(textgate_requests_total{{status="200"}}[{RATE}]))',
                "{{task}} {{action}}",
            ),
        ),
        "Classified items per second (a batch counts each text).",
    ),
    Panel(
        "Failed requests by status (4xx client, 429 queue full, 5xx ours)",
        "reqps",
        (
            _q(
                f'sum by (task, status) (rate(textgate_requests_total{{status!="200"}}[{RATE}]))',
                "{{task}} {{status}}",
            ),
            _q(f"sum(rate(textgate_overloaded_total[{RATE}]))", "429 overloaded"),
        ),
    ),
    Panel(
        "Latency P99 by stage",
        "s",
        (
            _q(
                f"histogram_quantile(0.99, sum by (stage, le) "
                f"(rate(textgate_stage_seconds_bucket[{RATE}])))",
                "{{stage}}",
            ),
        ),
        "normalize, queue (in-flight slot), triton, policy, total.",
    ),
    Panel(
        "Latency P50 by stage",
        "s",
        (
            _q(
                f"histogram_quantile(0.5, sum by (stage, le) "
                f"(rate(textgate_stage_seconds_bucket[{RATE}])))",
                "{{stage}}",
            ),
        ),
    ),
    Panel(
        "SLO error ratios (1 h): 5xx and requests over 500 ms",
        "percentunit",
        (
            _q("task:textgate_availability_errors:ratio_rate1h", "{{task}} 5xx"),
            _q("task:textgate_latency_slow:ratio_rate1h", "{{task}} slow"),
        ),
        "Objectives: 99.9 % answered, 99 % within 500 ms (deploy/prometheus/alerts.yaml).",
    ),
    Panel(
        "Re-scores with fp32 (uncertainty band)",
        "ops",
        (
            _q(
                f"sum by (task, changed) (rate(textgate_rescores_total[{RATE}]))",
                "{{task}} changed={{changed}}",
            ),
        ),
        "A jump means inputs drifted from training (alert TextgateRescoreRateJump).",
    ),
    Panel(
        "Canary vs serving: items by model version and variant",
        "reqps",
        (
            _q(
                f"sum by (task, version, variant) (rate(textgate_served_total[{RATE}]))",
                "{{task}} v{{version}} {{variant}}",
            ),
        ),
    ),
    Panel(
        "Outbox depth and publish lag",
        "short",
        (
            _q("sum by (instance) (textgate_outbox_depth)", "{{instance}} depth"),
            _q(
                "max by (instance) (textgate_outbox_oldest_unpublished_age_seconds)",
                "{{instance}} oldest unpublished (s)",
            ),
        ),
    ),
    Panel(
        "Events written, published, failed",
        "ops",
        (
            _q(f"sum(rate(textgate_events_written_total[{RATE}]))", "written"),
            _q(f"sum(rate(textgate_events_published_total[{RATE}]))", "published to Kafka"),
            _q(f"sum(rate(textgate_events_publish_failures_total[{RATE}]))", "publish failures"),
        ),
    ),
    Panel(
        "In flight and Triton endpoints in rotation",
        "short",
        (
            _q("sum(textgate_in_flight)", "in flight"),
            _q("sum by (endpoint) (textgate_triton_endpoint_healthy)", "{{endpoint}} healthy"),
        ),
    ),
)

TRITON = (
    Panel(
        "Inferences per second by model",
        "reqps",
        (
            _q(f"sum by (model) (rate(nv_inference_request_success[{RATE}]))", "{{model}}"),
            _q(f"sum by (model) (rate(nv_inference_request_failure[{RATE}]))", "{{model}} failed"),
        ),
    ),
    Panel(
        "Mean batch size by model (dynamic batcher)",
        "short",
        (
            _q(
                f"sum by (model) (rate(nv_inference_count[{RATE}])) / "
                f"sum by (model) (rate(nv_inference_exec_count[{RATE}]))",
                "{{model}}",
            ),
        ),
        "Items per execution: 1 means the batcher merges nothing.",
    ),
    Panel(
        "Queue time per request by model",
        "µs",
        (
            _q(
                f"sum by (model) (rate(nv_inference_queue_duration_us[{RATE}])) / "
                f"sum by (model) (rate(nv_inference_request_success[{RATE}]))",
                "{{model}}",
            ),
        ),
        "Time waiting for an instance: grows before latency does (scale Triton).",
    ),
    Panel(
        "Compute time per execution by model",
        "µs",
        (
            _q(
                f"sum by (model) (rate(nv_inference_compute_infer_duration_us[{RATE}])) / "
                f"sum by (model) (rate(nv_inference_exec_count[{RATE}]))",
                "{{model}}",
            ),
        ),
    ),
)

DASHBOARDS = {
    "textgate-overview": ("textgate: traffic, latency, SLOs, events", OVERVIEW),
    "textgate-triton": ("textgate: Triton batching and queue time", TRITON),
}


def build(uid: str, title: str, panels: tuple[Panel, ...]) -> dict[str, object]:
    board = (
        dashboard.Dashboard(title).uid(uid).tags(["textgate"]).refresh("30s")
        .time("now-1h", "now").timezone("browser")
    )  # fmt: skip
    for p in panels:
        ts = timeseries.Panel().title(p.title).unit(p.unit).datasource(DATASOURCE).span(12)
        ts = ts.height(8).description(p.description)
        for ref, (expr, legend) in zip("ABCDEFGH", p.queries, strict=False):
            ts = ts.with_target(prometheus.Dataquery().expr(expr).legend_format(legend).ref_id(ref))
        board = board.with_panel(ts)
    out: dict[str, object] = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    return out


def render() -> dict[str, str]:
    """File name -> JSON text, deterministic (sorted keys) so the check can compare."""
    return {
        f"{uid}.json": json.dumps(build(uid, title, panels), indent=2, sort_keys=True) + "\n"
        for uid, (title, panels) in DASHBOARDS.items()
    }


def main(argv: list[str]) -> int:
    files = render()
    if "--check" in argv:
        stale = [n for n, text in files.items() if _read(OUT / n) != text]
        for name in stale:
            print(f"{OUT / name}: stale; run python deploy/grafana/generate.py", file=sys.stderr)
        return 1 if stale else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (OUT / name).write_text(text, encoding="utf-8")
    return 0


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
