from __future__ import annotations

from pathlib import Path

import pytest

from textgate.bench import workload
from textgate.errors import ConfigError

POOL = [f"message {i} " + "word " * (i % 30) for i in range(400)]


def test_mix_has_the_declared_proportions_exactly() -> None:
    texts = workload.make("mix", 1000, seed=3, pool=POOL).texts
    shares = workload.band_shares(texts)
    assert shares == {"1-99": 0.7, "100-500": 0.2, "501-2000": 0.1}
    assert all(1 <= len(t) <= 2000 for t in texts)


def test_same_seed_same_texts_other_seed_other_order() -> None:
    a = workload.make("mix", 300, seed=1, pool=POOL).texts
    assert a == workload.make("mix", 300, seed=1, pool=POOL).texts
    assert a != workload.make("mix", 300, seed=2, pool=POOL).texts


def test_long_items_are_real_messages_joined() -> None:
    texts = workload.make("long", 20, seed=0, pool=POOL).texts
    assert all(501 <= len(t) <= 2000 for t in texts)
    assert all(t.startswith("message ") for t in texts)


@pytest.mark.parametrize("n", [1, 7, 33])
def test_small_n_still_exact(n: int) -> None:
    assert len(workload.make("mix", n, seed=0, pool=POOL).texts) == n


def test_packaged_corpus_mix() -> None:
    w = workload.make("mix", 200, seed=0)
    assert w.describe()["share_by_band"]["1-99"] == 0.7


def test_user_file_lines_and_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "w.txt"
    f.write_text('plain line\n{"text": "from json"}\n\n')
    w = workload.make("file", 10, seed=0, file=f)
    assert sorted(set(w.texts)) == ["from json", "plain line"]
    assert len(w.texts) == 10


def test_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="workload"):
        workload.make("bursty", 10, pool=POOL)
    with pytest.raises(ConfigError, match="file"):
        workload.make("file", 10)
    with pytest.raises(ConfigError, match="n"):
        workload.make("mix", 0, pool=POOL)
