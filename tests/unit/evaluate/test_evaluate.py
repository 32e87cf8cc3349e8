"""Leave-one-source-out folds and reports (the baselines run; the transformer is integration)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    assert sum(line.startswith("| ") for line in md.splitlines()) == 1 + 4 * 2 + 2


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


# --- per group, worst fold, ham groups, seeds: fake fold results, no training ---------------


def test_a_ham_group_reports_its_rates_at_review_and_quarantine() -> None:
    table = _four_groups()
    idx = np.array([0, 1, 2, 3, 40, 41])  # four ham of a/ham, two spam of c/spam
    score = np.array([0.1, 0.6, 0.9, 0.97, 0.8, 0.9])
    got = evaluate.by_group(table, idx, score)
    assert got["a/ham"] == {"n": 4, "fpr": 0.75, "fpr@review": 0.5, "fpr@quarantine": 0.25}
    assert got["c/spam"] == {"n": 2, "recall": 1.0, "recall@review": 0.5}


def _model(f1: float, **extra: object) -> dict[str, object]:
    """A model's fold report as ``by_source`` writes it, the keys the summary reads."""
    rep: dict[str, object] = {"n": 10, "positives": 5, "f1": f1, "precision": f1, "recall": f1}
    rep |= {"roc_auc": 0.9, "fpr@0.5": 0.1, "fpr@review": 0.05, "fpr@quarantine": 0.01}
    return rep | extra


def _ham(review: float, quarantine: float) -> dict[str, object]:
    return {"n": 5, "fpr": review + 0.1, "fpr@review": review, "fpr@quarantine": quarantine}


def _folds(f1s: tuple[float, float], reviews: tuple[float, float]) -> list[dict[str, object]]:
    """Two folds of one ham and one spam group each, for the model ``m``."""
    return [
        {
            "held_out": [f"h{k}/ham", f"s{k}/spam"],
            "models": {
                "m": _model(
                    f1,
                    groups={
                        f"h{k}/ham": _ham(review, review / 2),
                        f"s{k}/spam": {"n": 5, "recall": 0.9, "recall@review": 0.8},
                    },
                )
            },
        }
        for k, (f1, review) in enumerate(zip(f1s, reviews, strict=True))
    ]


def test_the_summary_names_the_worst_fold_and_every_ham_groups_rates() -> None:
    s = evaluate.summarize(_folds((0.9, 0.7), (0.02, 0.2)), ["m", "absent"])
    assert list(s) == ["m"]
    m = s["m"]
    assert m["f1"] == pytest.approx(0.8) and m["fpr@review"] == pytest.approx(0.05)
    assert (m["worst_fold_f1"], m["worst_fold"]) == (0.7, ["h1/ham", "s1/spam"])
    assert m["ham_groups"] == {
        "h0/ham": {"fpr@review": 0.02, "fpr@quarantine": 0.01},
        "h1/ham": {"fpr@review": 0.2, "fpr@quarantine": 0.1},
    }
    assert m["max_ham_fpr@review"] == 0.2


def test_a_one_class_fold_is_never_the_worst_fold() -> None:
    """A ham-only fold's F1 is 0 whatever the model does; it must not read as the worst."""
    folds = _folds((0.9, 0.7), (0.0, 0.1))
    ham_only = {"held_out": ["h2/ham"], "models": {"m": _model(0.0, positives=0)}}
    got = evaluate.summarize([*folds, ham_only], ["m"])["m"]
    assert got["worst_fold"] == ["h1/ham", "s1/spam"]


def test_the_table_has_fpr_at_review_and_the_ham_groups_worst_first() -> None:
    results = _folds((0.9, 0.7), (0.02, 0.2))
    report = {"folds": results, "summary": evaluate.summarize(results, ["m"]), "options": {}}
    lines = evaluate.markdown(report).splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[-3:] == ["FPR@0.5", "FPR@review", "FPR@quarantine"]
    assert lines[2].endswith("| 0.100 | 0.050 | 0.010 |")
    assert "Ham groups flagged at review (≥ 0.85) / quarantine (≥ 0.95), worst first:" in lines
    assert "- m: h1/ham 0.200 / 0.100, h0/ham 0.020 / 0.010" in lines


def _seed_run(seed: int, f1s: tuple[float, float], reviews: tuple[float, float]) -> dict:
    results = _folds(f1s, reviews)
    return {
        "folds": results,
        "summary": evaluate.summarize(results, ["m"]),
        "options": {"seed": seed, "minutes": 3.0},
        "budget_cut": ["h1/ham + s1/spam"] if seed == 1 else [],
    }


def _three_seeds() -> list[dict]:
    return [
        _seed_run(42, (0.9, 0.7), (0.02, 0.2)),
        _seed_run(1, (0.9, 0.9), (0.04, 0.1)),
        _seed_run(2, (0.8, 0.6), (0.0, 0.3)),
    ]


def test_join_seeds_gives_mean_spread_and_the_worst_over_seeds() -> None:
    runs = _three_seeds()
    joined = evaluate.join_seeds(runs)
    assert joined["seeds"] == [42, 1, 2] and joined["runs"] == runs
    assert joined["options"] == {"minutes": 3.0, "seeds": [42, 1, 2]}
    m = joined["summary"]["m"]
    assert m["f1_per_seed"] == pytest.approx([0.8, 0.9, 0.7])
    assert m["f1_mean"] == pytest.approx(0.8) and m["f1_std"] == pytest.approx(0.1)
    assert m["worst_fold_f1_mean"] == pytest.approx((0.7 + 0.9 + 0.6) / 3)
    assert m["max_ham_fpr@review_max"] == 0.3
    assert m["roc_auc_mean"] == pytest.approx(0.9) and m["roc_auc_std"] == 0.0
    assert m["ham_groups"]["h1/ham"]["fpr@review"] == pytest.approx(0.2)
    assert m["ham_groups"]["h0/ham"]["fpr@quarantine"] == pytest.approx(0.01)
    assert joined["budget_cut"] == {"1": ["h1/ham + s1/spam"]}


def test_join_seeds_of_one_seed_has_no_spread_and_skips_a_missing_key() -> None:
    run = _seed_run(42, (0.9, 0.7), (0.02, 0.2))
    del run["summary"]["m"]["roc_auc"], run["budget_cut"]
    m = evaluate.join_seeds([run])["summary"]["m"]
    assert m["f1_mean"] == pytest.approx(0.8) and m["f1_std"] == 0.0
    assert "roc_auc_mean" not in m
    assert "budget_cut" not in evaluate.join_seeds([run])


def test_the_seeds_markdown_puts_the_means_first_then_each_seed() -> None:
    md = evaluate.markdown(evaluate.join_seeds(_three_seeds()))
    lines = md.splitlines()
    assert lines[0].startswith("Over seeds 42, 1, 2:")
    assert lines[2].startswith("| model | F1 | worst fold F1 |")
    assert lines[4].startswith("| m | 0.800 ± 0.100 | 0.733 ± 0.153 |")
    assert "- m: h1/ham 0.200 / 0.100, h0/ham 0.020 / 0.010" in lines  # means over seeds
    assert [line for line in lines if line.startswith("### Seed")] == [
        "### Seed 42",
        "### Seed 1",
        "### Seed 2",
    ]
    assert md.index("### Seed 42") < md.index("| h0/ham + s0/spam | m | 0.900")


def test_the_default_models_include_the_served_combined_scorer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textgate import cli

    runs = _captured_runs(monkeypatch)
    assert cli.main(["evaluate", "--task", "spam", "--by-source"]) == 0
    models = runs[0]["models"]
    assert isinstance(models, list)
    assert models[models.index("transformer+ngrams") + 1] == "combined"
    assert set(models) == set(evaluate.MODELS)


def test_the_cli_runs_every_seed_and_writes_one_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from textgate import cli
    from textgate.commands import training

    fakes = {r["options"]["seed"]: r for r in _three_seeds()}
    seen: list[int] = []

    def fake_by_source(table: data.Table, **kw: Any) -> dict:
        seed = kw["options"].seed
        seen.append(seed)
        kw["scores_out"]["fold0/m/score"] = np.array([seed / 100])
        return fakes[seed]

    table = data.Table(texts=("a",), labels=("ham",), label_names=("ham",), source="t")
    monkeypatch.setattr(training, "load_table", lambda _args: table)
    monkeypatch.setattr(evaluate, "by_source", fake_by_source)
    out, npz = tmp_path / "seeds.json", tmp_path / "s.npz"
    argv = ["evaluate", "--task", "spam", "--by-source", "--seeds", "42,1,2"]
    assert cli.main([*argv, "-o", str(out), "--scores", str(npz)]) == 0
    assert seen == [42, 1, 2]
    report = json.loads(out.read_text())
    assert report["seeds"] == [42, 1, 2] and len(report["runs"]) == 3
    assert report["summary"]["m"]["f1_mean"] == pytest.approx(0.8)
    assert out.with_suffix(".md").read_text().startswith("Over seeds 42, 1, 2:")
    assert sorted(np.load(npz)) == [
        "seed1/fold0/m/score",
        "seed2/fold0/m/score",
        "seed42/fold0/m/score",
    ]


@pytest.mark.parametrize(
    "bad", [["--seeds", "42,x"], ["--seeds", "1,1"], ["--seed", "1", "--seeds", "2"]]
)
def test_the_cli_refuses_bad_seeds(monkeypatch: pytest.MonkeyPatch, bad: list[str]) -> None:
    from textgate import cli

    runs = _captured_runs(monkeypatch)
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", "--task", "spam", "--by-source", *bad])
    assert info.value.code == 2 and runs == []


def _written(tmp_path: Path, name: str, report: dict, inputs: str = "same") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(report | {"inputs": {"data_hash": inputs, "code": "c"}}))
    return path


def test_the_cli_joins_seed_runs_written_by_earlier_sessions(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from textgate import cli
    from textgate.commands import training

    def no_data(_args: object) -> None:
        raise AssertionError("--join must not load data or run folds")

    monkeypatch.setattr(training, "load_table", no_data)
    runs = _three_seeds()
    one = _written(tmp_path, "s42.json", runs[0])
    two = tmp_path / "s1-2.json"  # an earlier join is read as its runs
    two.write_text(json.dumps(evaluate.join_seeds([_written_run(r) for r in runs[1:]])))
    out = tmp_path / "seeds.json"
    argv = ["evaluate", "--task", "spam", "--by-source", "--join", str(one), "--join", str(two)]
    assert cli.main([*argv, "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["seeds"] == [42, 1, 2]
    assert report["summary"]["m"]["f1_mean"] == pytest.approx(0.8)
    assert [r["file"] for r in report["runs"]] == [str(one), str(two), str(two)]


def _written_run(run: dict) -> dict:
    return run | {"inputs": {"data_hash": "same", "code": "c"}}


def test_join_refuses_runs_of_other_code_options_or_a_repeated_seed(tmp_path: Path) -> None:
    a, b, c = _three_seeds()
    first = _written(tmp_path, "a.json", a)
    other_code = _written(tmp_path, "b.json", b, inputs="else")
    with pytest.raises(DataError, match="b.json was run on other data or code"):
        evaluate.load_runs([first, other_code])
    c["options"]["minutes"] = 9.0
    with pytest.raises(DataError, match=r"other options \(minutes\)"):
        evaluate.load_runs([first, _written(tmp_path, "c.json", c)])
    with pytest.raises(DataError, match="a seed appears twice"):
        evaluate.load_runs([first, first])


@pytest.mark.parametrize("text", ["{not json", '{"folds": []}', "[1, 2]"])
def test_join_names_a_file_that_is_not_a_report(tmp_path: Path, text: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    with pytest.raises(DataError, match="bad.json") as info:
        evaluate.load_runs([bad])
    assert "evaluate --by-source -o" in (info.value.hint or "")


def test_a_run_records_the_data_and_code_it_ran_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from textgate import cli

    _captured_runs(monkeypatch)
    out = tmp_path / "r.json"
    assert cli.main(["evaluate", "--task", "spam", "--by-source", "-o", str(out)]) == 0
    inputs = json.loads(out.read_text())["inputs"]
    assert set(inputs) == {"data_hash", "code"} and len(inputs["code"]) == 64


def test_join_and_scores_cannot_be_asked_together(monkeypatch: pytest.MonkeyPatch) -> None:
    from textgate import cli

    _captured_runs(monkeypatch)
    with pytest.raises(SystemExit) as info:
        cli.main(["evaluate", "--task", "spam", "--by-source", "--join", "a", "--scores", "b"])
    assert info.value.code == 2
