"""Leave-one-source-out folds and reports (the baselines run; the transformer is integration)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from textgate import data, evaluate
from textgate.errors import DataError


def _table(groups: dict[str, tuple[str, list[str]]]) -> data.Table:
    texts, labels, gs = [], [], []
    for group, (label, rows) in groups.items():
        for text in rows:
            texts.append(text)
            labels.append(label)
            gs.append(group)
    return data.Table(
        texts=tuple(texts),
        labels=tuple(labels),
        label_names=("ham", "spam"),
        source="t",
        groups=tuple(gs),
    )


SPAMMY = ["win cash prize now {}", "free offer claim {} today", "cheap pills {} click"]
HAMMY = ["meeting moved to {} tomorrow", "see the budget notes {}", "lunch at {} with the team"]


def _rows(templates: list[str], tag: str, n: int = 20) -> list[str]:
    return [templates[i % len(templates)].format(f"{tag}{i}") for i in range(n)]


def test_folds_hold_out_each_group_without_corpus_pairs() -> None:
    table = _table(
        {
            "a/ham": ("ham", _rows(HAMMY, "a")),
            "b/ham": ("ham", _rows(HAMMY, "b")),
            "c/spam": ("spam", _rows(SPAMMY, "c")),
            "d/spam": ("spam", _rows(SPAMMY, "d")),
        }
    )
    assert evaluate.folds(table) == [("a/ham",), ("b/ham",), ("c/spam",), ("d/spam",)]


def test_corpus_folds_pair_a_ham_and_a_spam_group() -> None:
    groups = {
        g: ("ham" if i == 0 else "spam", [f"{g} x{i}"])
        for p in evaluate.CORPUS_FOLDS
        for i, g in enumerate(p)
    }
    assert evaluate.folds(_table(groups)) == list(evaluate.CORPUS_FOLDS)


def test_no_groups_is_an_error() -> None:
    table = data.Table(
        texts=("a", "b"), labels=("ham", "spam"), label_names=("ham", "spam"), source="t"
    )
    with pytest.raises(DataError, match="source groups"):
        evaluate.folds(table)


def test_baselines_on_held_out_groups_report_fpr_and_recall() -> None:
    table = _table(
        {
            "a/ham": ("ham", _rows(HAMMY, "a")),
            "b/ham": ("ham", _rows(HAMMY, "b")),
            "c/spam": ("spam", _rows(SPAMMY, "c")),
            "d/spam": ("spam", _rows(SPAMMY, "d")),
        }
    )
    report = evaluate.by_source(table, models=("tfidf-lr", "naive-bayes"))
    assert len(report["folds"]) == 4
    ham_fold = report["folds"][0]["models"]["tfidf-lr"]
    assert ham_fold["groups"]["a/ham"]["fpr"] < 0.5
    spam_fold = report["folds"][2]["models"]["naive-bayes"]
    assert spam_fold["groups"]["c/spam"]["recall"] > 0.5
    assert "naive-bayes" in report["summary"]
    md = evaluate.markdown(report)
    assert md.count("\n") == 2 + 4 * 2 + 2


def test_binary_report_counts() -> None:
    y = np.array([True, True, False, False])
    rep = evaluate.binary_report(y, np.array([0.9, 0.4, 0.6, 0.1]))
    assert rep["precision"] == 0.5 and rep["recall"] == 0.5 and rep["fpr@0.5"] == 0.5
    assert rep["roc_auc"] == pytest.approx(0.75)


def test_unknown_model_is_named() -> None:
    table = _table({"a/ham": ("ham", ["x"]), "b/spam": ("spam", ["y"])})
    with pytest.raises(DataError, match="bert"):
        evaluate.by_source(table, models=("bert",))


def test_scores_out_keeps_every_held_out_row_and_its_score() -> None:
    table = _table(
        {
            "a/ham": ("ham", _rows(HAMMY, "a")),
            "b/ham": ("ham", _rows(HAMMY, "b")),
            "c/spam": ("spam", _rows(SPAMMY, "c")),
        }
    )
    kept: dict[str, np.ndarray] = {}
    report = evaluate.by_source(table, models=("naive-bayes",), scores_out=kept)
    # holding out the only spam group leaves one class to train on: that fold is skipped
    assert sorted(kept) == [f"fold{k}/naive-bayes/{p}" for k in range(2) for p in ("rows", "score")]
    rows = kept["fold1/naive-bayes/rows"]
    assert {table.groups[i] for i in rows} == {"b/ham"}
    # the stored scores are the ones the report measured: its FPR recomputes from them
    fpr = float((kept["fold1/naive-bayes/score"] >= 0.5).mean())
    assert fpr == report["folds"][1]["models"]["naive-bayes"]["fpr@0.5"]


def test_the_cli_trains_each_fold_as_the_build_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from textgate import cli, train
    from textgate.commands import training

    seen: list[evaluate.FoldOptions] = []

    def fake_by_source(table: data.Table, **kw: object) -> dict:
        seen.append(kw["options"])  # type: ignore[arg-type]
        return {"folds": [], "summary": {}, "options": {}}

    table = data.Table(texts=("a",), labels=("ham",), label_names=("ham",), source="t")
    monkeypatch.setattr(training, "load_table", lambda _args: table)
    monkeypatch.setattr(evaluate, "by_source", fake_by_source)
    assert cli.main(["evaluate", "--task", "spam", "--by-source"]) == 0
    spam = train.TASK_DEFAULTS["spam"]
    assert (seen[0].per_group, seen[0].minutes) == (spam.per_group, spam.max_minutes)
    assert cli.main(["evaluate", "--task", "mine", "--by-source", "--per-group", "7"]) == 0
    assert (seen[1].per_group, seen[1].minutes) == (7, 3.0)


def _four_groups() -> data.Table:
    return _table(
        {
            "a/ham": ("ham", _rows(HAMMY, "a")),
            "b/ham": ("ham", _rows(HAMMY, "b")),
            "c/spam": ("spam", _rows(SPAMMY, "c")),
            "d/spam": ("spam", _rows(SPAMMY, "d")),
        }
    )


def test_hold_out_runs_only_the_folds_holding_that_group() -> None:
    table = _four_groups()
    assert evaluate.folds(table, ("b/ham", "d/spam")) == [("b/ham",), ("d/spam",)]
    report = evaluate.by_source(table, models=("naive-bayes",), only=("c/spam",))
    assert [f["held_out"] for f in report["folds"]] == [["c/spam"]]
    assert report["only"] == ["c/spam"]


def test_hold_out_of_an_unknown_group_names_the_groups_there_are() -> None:
    with pytest.raises(DataError, match="trec07p/ham-list") as err:
        evaluate.folds(_four_groups(), ("trec07p/ham-list",))
    assert "a/ham" in (err.value.hint or "")


def test_worst_errors_are_the_highest_ham_and_lowest_positives() -> None:
    table = _four_groups()
    idx = np.array([0, 1, 2, 40, 41])  # three ham of a/ham, two spam of c/spam
    score = np.array([0.1, 0.9, 0.5, 0.2, 0.8])
    got = evaluate.worst(table, idx, score, n=2)
    assert [r["score"] for r in got["false_positive"]] == [0.9, 0.5]
    assert [r["text"] for r in got["false_positive"]] == [table.texts[1], table.texts[2]]
    assert [(r["group"], r["score"]) for r in got["false_negative"]] == [
        ("c/spam", 0.2),
        ("c/spam", 0.8),
    ]


def _captured_runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, object]]:
    """Stub the CLI's data and the evaluation; return the keyword arguments of each run."""
    from textgate.commands import training

    runs: list[dict[str, object]] = []

    def fake_by_source(table: data.Table, **kw: object) -> dict:
        runs.append(kw)
        return {"folds": [], "summary": {}, "options": {}}

    table = data.Table(texts=("a",), labels=("ham",), label_names=("ham",), source="t")
    monkeypatch.setattr(training, "load_table", lambda _args: table)
    monkeypatch.setattr(evaluate, "by_source", fake_by_source)
    return runs


def test_the_cli_passes_hold_out_to_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from textgate import cli

    runs = _captured_runs(monkeypatch)
    argv = ["evaluate", "--task", "spam", "--by-source", "--hold-out", "x/ham"]
    assert cli.main([*argv, "--hold-out", "y/spam"]) == 0
    assert [run["only"] for run in runs] == [("x/ham", "y/spam")]


@pytest.mark.parametrize(("extra", "want"), [([], 42), (["--seed", "7"], 7)])
def test_the_cli_passes_the_seed_to_every_fold(
    monkeypatch: pytest.MonkeyPatch, extra: list[str], want: int
) -> None:
    from textgate import cli

    runs = _captured_runs(monkeypatch)
    assert cli.main(["evaluate", "--task", "spam", "--by-source", *extra]) == 0
    options = [run["options"] for run in runs]
    assert all(isinstance(o, evaluate.FoldOptions) for o in options)
    assert [o.seed for o in options if isinstance(o, evaluate.FoldOptions)] == [want]


Scored = tuple[np.ndarray, dict[str, object]]


def _fake_transformer(stopped: str, steps_run: int) -> Callable[..., Scored]:
    def fake(table: data.Table, train_idx: np.ndarray, test_idx: np.ndarray, _o: object) -> Scored:
        record = {"stopped": stopped, "steps_run": steps_run, "steps_planned": 8, "seconds": 1.5}
        return np.full(len(test_idx), 0.5), record

    return fake


@pytest.mark.parametrize(("stopped", "steps_run"), [("completed", 8), ("time_budget", 3)])
def test_each_fold_keeps_its_transformer_run_and_a_cut_one_is_said(
    monkeypatch: pytest.MonkeyPatch, stopped: str, steps_run: int
) -> None:
    """A fold whose training the budget stopped reads like any other by F1 alone; the report
    and the log must say which folds they are."""
    table = _table(
        {
            "a/ham": ("ham", _rows(HAMMY, "a")),
            "b/spam": ("spam", _rows(SPAMMY, "b")),
            "c/ham": ("ham", _rows(HAMMY, "c")),
            "d/spam": ("spam", _rows(SPAMMY, "d")),
        }
    )
    monkeypatch.setattr(evaluate, "transformer", _fake_transformer(stopped, steps_run))
    said: list[str] = []
    report = evaluate.by_source(table, models=("transformer",), log=said.append)
    held = [" + ".join(f["held_out"]) for f in report["folds"]]
    assert held == ["a/ham", "b/spam", "c/ham", "d/spam"]
    assert all(f["training"]["steps_run"] == steps_run for f in report["folds"])
    cut = stopped == "time_budget"
    assert report["budget_cut"] == (held if cut else [])
    warned = [m for m in said if "budget stopped training after 3 of 8 steps" in m]
    assert len(warned) == (4 if cut else 0)
    md = evaluate.markdown(report)
    assert f"- a/ham: {steps_run}/8 steps, 2 s, {stopped}" in md
    assert ("cut by the budget" in md) == cut


def test_a_report_without_a_transformer_has_no_training_lines() -> None:
    table = _table({"a/ham": ("ham", _rows(HAMMY, "a")), "b/spam": ("spam", _rows(SPAMMY, "b"))})
    report = evaluate.by_source(table, models=("naive-bayes",), options=evaluate.FoldOptions())
    assert "budget_cut" not in report
    assert "Transformer training" not in evaluate.markdown(report)
