"""The gateway's metric labels: what the rules and dashboards in deploy/ rely on."""

from __future__ import annotations

from textgate.gateway.records.prometheus import STAGE_BUCKETS, Metrics, task_label


def test_classified_counts_items_by_task_tenant_and_version() -> None:
    m = Metrics()
    result = {"action": "allow", "model": {"version": "3"}, "precision_path": "int8"}
    m.classified("spam", "acme", [result, {**result, "action": "review"}])
    m.classified("spam", None, [result])
    get = m.registry.get_sample_value
    labels = {"task": "spam", "tenant": "acme", "action": "allow", "status": "200"}
    assert get("textgate_requests_total", labels) == 1
    assert get("textgate_requests_total", {**labels, "action": "review"}) == 1
    assert get("textgate_requests_total", {**labels, "tenant": "none"}) == 1
    assert get("textgate_served_total", {"task": "spam", "version": "3", "variant": "int8"}) == 3


def test_failed_requests_keep_task_cardinality_bounded() -> None:
    m = Metrics()
    for i in range(50):  # 50 made-up task names: one series, not 50
        m.failed(f"nope{i}", {"spam"}, None, 404)
    m.failed("spam", {"spam"}, None, 503)
    samples = [s for f in m.registry.collect() if f.name == "textgate_requests" for s in f.samples]
    tasks = {s.labels["task"] for s in samples if s.name == "textgate_requests_total"}
    assert tasks == {"unknown", "spam"}
    assert task_label("spam", ("spam",)) == "spam"


def test_stage_histogram_has_task_and_slo_buckets() -> None:
    m = Metrics()
    m.observe_stages({"triton": 40.0, "total": 600.0, "bogus": 1.0}, "spam")
    get = m.registry.get_sample_value
    total = {"task": "spam", "stage": "total"}
    assert get("textgate_stage_seconds_bucket", {**total, "le": "0.5"}) == 0
    assert get("textgate_stage_seconds_bucket", {**total, "le": "0.75"}) == 1
    assert get("textgate_stage_seconds_count", {"task": "spam", "stage": "triton"}) == 1
    assert STAGE_BUCKETS[0] == 0.005 and STAGE_BUCKETS[-1] == 2.0
    assert list(STAGE_BUCKETS) == sorted(STAGE_BUCKETS)
    assert 'stage="bogus"' not in m.render().decode()
