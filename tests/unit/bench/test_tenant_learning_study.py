"""The tenant-learning study's own logic: reading ``--scores``, choosing the weight, rates."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

SCRIPT = Path(__file__).parents[3] / "benchmarks/studies/email/tenant_learning.py"


@pytest.fixture(scope="module")
def study() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tenant_learning_study", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_scores_from_evaluate_prefer_the_combined_model(study: ModuleType, tmp_path: Path) -> None:
    fold = 4
    groups = study.CORPUS_FOLDS[fold]
    table = SimpleNamespace(groups=("other", groups[0], groups[1], "other", groups[0]))
    path = tmp_path / "scores.npz"
    np.savez(
        path,
        **{
            f"fold{fold}/combined/rows": np.array([4, 1, 2]),
            f"fold{fold}/combined/score": np.array([0.4, 0.1, 0.2]),
            f"fold{fold}/ngrams/rows": np.array([1, 2, 4]),
            f"fold{fold}/ngrams/score": np.array([0.9, 0.9, 0.9]),
        },
    )
    score, source = study.global_scores(table, fold, path)
    assert score.tolist() == [0.1, 0.2, 0.4] and source == "scores.npz: combined"


def test_rates_and_the_choice_follow_the_issues_targets(study: ModuleType) -> None:
    spam = np.array([False, False, True, True])
    assert study.rates(np.array([0.9, 0.1, 0.9, 0.5]), spam, 0.85) == {
        "ham_flag_rate": 0.5,
        "spam_recall": 0.5,
    }

    def at50(ham: float, recall: float) -> dict:
        s = {"global_ham_flag_rate": 0.02, "global_spam_recall": 0.9}
        return {"sizes": {"50": s | {"layer_ham_flag_rate": ham, "layer_spam_recall": recall}}}

    tuning = {
        (0.0, 1.0): at50(0.015, 0.95),
        (1.0, 3.0): at50(0.001, 0.80),  # fewest false alarms, but 10 points of recall: out
        (0.5, 2.0): at50(0.008, 0.89),
    }
    assert study._best(tuning) == (0.5, 2.0)


def test_with_scores_the_tenant_is_the_rows_the_run_scored(
    study: ModuleType, tmp_path: Path
) -> None:
    fold = 4
    groups = study.CORPUS_FOLDS[fold]
    table = SimpleNamespace(groups=(groups[0], groups[1], groups[0], "other", groups[1]))
    path = tmp_path / "scores.npz"
    np.savez(
        path,
        **{f"fold{fold}/combined/rows": np.array([4, 0]),
           f"fold{fold}/combined/score": np.array([0.7, 0.2])},
    )  # fmt: skip
    assert study.fold_rows(table, fold, path) == [0, 4]  # evaluate scored 2 of the 4
    assert study.fold_rows(table, fold) == [0, 1, 2, 4]
    score, _ = study.global_scores(table, fold, path)
    assert score.tolist() == [0.2, 0.7]
