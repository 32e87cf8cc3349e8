from __future__ import annotations

import pytest

from textgate.bench import padding, tune
from textgate.config import Config, RepositoryConfig


def test_padding_ratios_per_strategy() -> None:
    lengths = [10, 20, 30, 60]  # 120 real tokens
    buckets = [16, 32, 64, 128]
    assert padding.ratio(lengths, "fixed", buckets, 128) == pytest.approx(512 / 120)
    assert padding.ratio(lengths, "bucket", buckets, 128) == pytest.approx(
        (16 + 32 + 32 + 64) / 120
    )
    # fused, one batch of 4: groups {16: [10], 32: [20, 30], 64: [60]} padded to their longest.
    assert padding.ratio(lengths, "fused", buckets, 128, {4: 1}) == pytest.approx(
        (10 + 60 + 60) / 120
    )
    assert padding.ratio(lengths, "fused", buckets, 128, None) == pytest.approx(1.0)
    assert padding.ratio([5, 50, 6, 60], "sorted", buckets, 128, {2: 1}) == pytest.approx(
        (12 + 120) / 121
    )


def test_batches_cover_every_arrival_once() -> None:
    cut = padding.batches(100, {1: 3, 8: 5}, seed=4)
    assert [i for b in cut for i in b] == list(range(100))
    assert {len(b) for b in cut[:-1]} <= {1, 8}


def test_tune_grid_is_bounded_and_choose_respects_the_slo() -> None:
    cands = tune.Grid(max_points=5).candidates(RepositoryConfig())
    assert len(cands) == 5
    points = [
        {"at_load": {"p99_ms": 100, "error_rate": 0}, "throughput": 100},
        {"at_load": {"p99_ms": 900, "error_rate": 0}, "throughput": 300},
        {"at_load": {"p99_ms": 100, "error_rate": 0.05}, "throughput": 250},
        {"at_load": {"p99_ms": 200, "error_rate": 0}, "throughput": 150},
    ]
    assert tune.choose(points, 300)["throughput"] == 150  # type: ignore[index]
    assert tune.choose(points[1:3], 300) is None


def test_tuned_config_file_reads_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    best = {
        "knobs": {
            "max_queue_delay_microseconds": 4000,
            "preferred_batch_sizes": [8],
            "bucket_lengths": [32, 64, 128],
            "instances": 2,
        }
    }
    settings = tune.chosen_config(RepositoryConfig(), best)
    path = tune.write_config(settings, tmp_path / "tuned.yaml", "test")
    back = Config.from_file(path).repository
    assert back == settings
    assert back.dynamic_batching.max_queue_delay_microseconds == 4000
    assert back.instance_group.count == 2
