"""train.py on tiny randomly initialised BERT and DistilBERT bases: layout, options, errors."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from textgate import cli, errors, train

pytest.importorskip("torch")
pytest.importorskip("transformers")

LABELS = ("neg", "pos")
POS_WORDS = ["good", "great", "fine", "love", "nice", "happy", "best"]
NEG_WORDS = ["bad", "awful", "poor", "hate", "sad", "worst", "ugly"]


@dataclass(frozen=True)
class FakeTable:
    """The slice of data.Table that train() uses, so these tests need no corpus."""

    texts: tuple[str, ...]
    labels: tuple[str, ...]
    label_names: tuple[str, ...] = LABELS
    source: str = "fake"

    def label_ids(self) -> list[int]:
        return [self.label_names.index(x) for x in self.labels]

    def data_hash(self) -> str:
        pairs = sorted(zip(self.texts, self.labels, strict=True))
        return hashlib.sha256(repr(pairs).encode()).hexdigest()


@dataclass(frozen=True)
class FakeSplits:
    train: FakeTable
    validation: FakeTable
    test: FakeTable


def _table(n: int, seed: int) -> FakeTable:
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    for i in range(n):
        label = LABELS[i % 2]
        words = POS_WORDS if label == "pos" else NEG_WORDS
        texts.append(" ".join(rng.choice(words, size=int(rng.integers(2, 9)))) + f" {i}")
        labels.append(label)
    return FakeTable(tuple(texts), tuple(labels))


@pytest.fixture(scope="module")
def splits() -> FakeSplits:
    return FakeSplits(_table(48, 1), _table(16, 2), _table(16, 3))


def _copy_tokenizer(dst: Path) -> None:
    src = train.packaged_base()
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (src / name).is_file():
            shutil.copy(src / name, dst / name)


def _tiny(kind: str, root: Path, *, tokenizer: bool = True) -> Path:
    import torch
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        DistilBertConfig,
        DistilBertForSequenceClassification,
    )

    torch.manual_seed(0)
    path = root / kind
    if kind == "bert":
        cfg = BertConfig(
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=128,
        )
        model = BertForSequenceClassification(cfg)
    else:
        cfg = DistilBertConfig(dim=32, n_layers=2, n_heads=2, hidden_dim=64)
        model = DistilBertForSequenceClassification(cfg)
    model.save_pretrained(str(path))
    if tokenizer:
        _copy_tokenizer(path)
    return path


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bases")
    return {
        "bert": _tiny("bert", root),
        "distilbert": _tiny("distilbert", root),
        "no-tokenizer": _tiny("bert", root / "nt", tokenizer=False),
    }


QUICK = train.TrainOptions(epochs=2, batch_size=8, lr=1e-3, max_length=16, progress=False)


@pytest.mark.parametrize("kind", ["bert", "distilbert"])
def test_writes_the_checkpoint_layout(
    kind: str, bases: dict[str, Path], splits: FakeSplits, tmp_path: Path
) -> None:
    out = tmp_path / "ckpt"
    result = train.train(splits, bases[kind], out, task="toy", options=QUICK)
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "textgate.json",
        "metrics.json",
        "confusion_matrix.png",
        "threshold.png",
        "data/validation.jsonl",
        "data/test.jsonl",
    ):
        assert (out / name).is_file(), name
    info = json.loads((out / "textgate.json").read_text())
    assert info["task"] == "toy" and info["labels"] == list(LABELS)
    assert info["max_length"] == 16 and info["seed"] == 42
    assert info["split_counts"] == {"train": 48, "validation": 16, "test": 16}
    assert 1 <= info["best_epoch"] <= info["epochs_run"] <= 2
    for key in ("base", "data_hash", "data_source", "train_seconds"):
        assert info[key] is not None
    config = json.loads((out / "config.json").read_text())
    assert config["id2label"] == {"0": "neg", "1": "pos"}
    assert json.loads((out / "metrics.json").read_text()) == result
    assert set(result) >= {"accuracy", "macro_f1", "f1", "roc_auc", "per_class", "n"}
    rows = [json.loads(x) for x in (out / "data/test.jsonl").read_text().splitlines()]
    assert [r["text"] for r in rows] == list(splits.test.texts)
    assert [r["label"] for r in rows] == list(splits.test.labels)
    assert not list(tmp_path.glob(".ckpt.partial-*"))


def test_same_seed_same_model(bases: dict[str, Path], splits: FakeSplits, tmp_path: Path) -> None:
    a = train.train(splits, bases["bert"], tmp_path / "a", task="toy", options=QUICK)
    b = train.train(splits, bases["bert"], tmp_path / "b", task="toy", options=QUICK)
    assert a == b
    assert (tmp_path / "a/model.safetensors").read_bytes() == (
        tmp_path / "b/model.safetensors"
    ).read_bytes()


def test_time_budget_stops_and_keeps_a_model(
    bases: dict[str, Path], splits: FakeSplits, tmp_path: Path
) -> None:
    opts = train.TrainOptions(epochs=5, batch_size=8, max_minutes=1e-6, progress=False)
    train.train(splits, bases["bert"], tmp_path / "c", task="toy", options=opts)
    info = json.loads((tmp_path / "c/textgate.json").read_text())
    assert info["stopped"] == "time_budget"
    assert info["epochs_run"] == 1 and info["best_epoch"] == 1
    # 48 rows in batches of 8 over 5 epochs: the budget ran out after the first step
    assert (info["steps_run"], info["steps_planned"]) == (1, 30)
    assert info["history"][0]["steps"] == 1


def test_a_run_whose_last_step_ends_past_the_budget_completed(
    bases: dict[str, Path], splits: FakeSplits, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch holds every row: the budget is spent only after the planned step ran, so the
    run is the model its options describe and must not be reported as cut."""
    from textgate.train import loop

    monkeypatch.setattr(loop.Deadline, "passed", lambda _self: True)
    opts = train.TrainOptions(epochs=1, batch_size=64, max_minutes=1.0, progress=False)
    train.train(splits, bases["bert"], tmp_path / "f", task="toy", options=opts)
    info = json.loads((tmp_path / "f/textgate.json").read_text())
    assert (info["stopped"], info["steps_run"], info["steps_planned"]) == ("completed", 1, 1)


def test_fit_predict_returns_scores_and_the_run(bases: dict[str, Path], splits: FakeSplits) -> None:
    opts = train.TrainOptions(epochs=2, batch_size=8, progress=False)
    texts = list(splits.test.texts)
    probs, history = train.fit_predict(splits, texts, task="toy", options=opts, base=bases["bert"])
    assert probs.shape == (len(texts), 2) and np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)
    record = history.record()
    assert record["steps_planned"] == 12 and 0 < record["steps_run"] <= 12
    assert record["stopped"] in ("completed", "early_stopping")
    assert record["steps_run"] == sum(row["steps"] for row in record["history"])


def test_limit_samples_every_split(
    bases: dict[str, Path], splits: FakeSplits, tmp_path: Path
) -> None:
    opts = train.TrainOptions(epochs=1, batch_size=8, limit=40, progress=False)
    train.train(splits, bases["bert"], tmp_path / "d", task="toy", options=opts)
    info = json.loads((tmp_path / "d/textgate.json").read_text())
    assert info["split_counts"] == {"train": 24, "validation": 8, "test": 8}


def test_force_replaces_and_refuses_without(
    bases: dict[str, Path], splits: FakeSplits, tmp_path: Path
) -> None:
    out = tmp_path / "e"
    out.mkdir()
    (out / "old.txt").write_text("x")
    with pytest.raises(errors.TrainError, match="not empty"):
        train.train(splits, bases["bert"], out, task="toy", options=QUICK)
    opts = train.TrainOptions(epochs=1, batch_size=8, force=True, progress=False)
    train.train(splits, bases["bert"], out, task="toy", options=opts)
    assert not (out / "old.txt").exists() and (out / "textgate.json").is_file()


def test_empty_output_dir_is_fine(
    bases: dict[str, Path], splits: FakeSplits, tmp_path: Path
) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    opts = train.TrainOptions(epochs=1, batch_size=8, progress=False)
    train.train(splits, bases["bert"], out, task="toy", options=opts)
    assert (out / "metrics.json").is_file()


# --- bad inputs ------------------------------------------------------------------------------


def _fails(match: str, splits: FakeSplits, base: Path | None, out: Path) -> None:
    with pytest.raises(errors.TrainError, match=match):
        train.train(splits, base, out, task="toy", options=QUICK)
    assert not out.exists() or not any(out.iterdir())


def test_missing_base_dir(splits: FakeSplits, tmp_path: Path) -> None:
    _fails("does not exist", splits, tmp_path / "nope", tmp_path / "o")


def test_base_that_is_not_a_checkpoint(splits: FakeSplits, tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain/readme.txt").write_text("hi")
    _fails("no config.json", splits, tmp_path / "plain", tmp_path / "o")


def test_base_that_is_a_file(splits: FakeSplits, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    _fails("not a directory", splits, tmp_path / "f", tmp_path / "o")


def test_base_without_tokenizer(bases: dict[str, Path], splits: FakeSplits, tmp_path: Path) -> None:
    _fails("tokenizer", splits, bases["no-tokenizer"], tmp_path / "o")


def test_base_without_weights(splits: FakeSplits, tmp_path: Path, bases: dict[str, Path]) -> None:
    base = tmp_path / "cfg-only"
    base.mkdir()
    shutil.copy(bases["bert"] / "config.json", base / "config.json")
    _copy_tokenizer(base)
    _fails("cannot load", splits, base, tmp_path / "o")


def test_base_with_broken_config(splits: FakeSplits, tmp_path: Path) -> None:
    base = tmp_path / "broken"
    base.mkdir()
    (base / "config.json").write_text("{not json")
    _copy_tokenizer(base)
    _fails("cannot load", splits, base, tmp_path / "o")


def test_slow_tokenizer_is_refused(monkeypatch: pytest.MonkeyPatch, bases: dict[str, Path]) -> None:
    import transformers

    class Slow:
        is_fast = False
        pad_token_id = 0

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: Slow())
    with pytest.raises(errors.TrainError, match="not a fast"):
        train.load_tokenizer(bases["bert"])


def test_one_class_train_split(bases: dict[str, Path], tmp_path: Path) -> None:
    one = FakeTable(("a b", "c d"), ("pos", "pos"))
    _fails("one class", FakeSplits(one, one, one), bases["bert"], tmp_path / "o")


def test_empty_split(bases: dict[str, Path], splits: FakeSplits, tmp_path: Path) -> None:
    empty = FakeTable((), ())
    bad = FakeSplits(splits.train, empty, splits.test)
    _fails("validation split is empty", bad, bases["bert"], tmp_path / "o")


def test_output_is_a_file(bases: dict[str, Path], splits: FakeSplits, tmp_path: Path) -> None:
    (tmp_path / "o").write_text("x")
    with pytest.raises(errors.TrainError, match="not a directory"):
        train.train(splits, bases["bert"], tmp_path / "o", task="toy", options=QUICK)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epochs": 0},
        {"lr": -1.0},
        {"batch_size": 0},
        {"patience": 0},
        {"limit": 0},
        {"class_weights": "heavy"},
        {"pooling": "max"},
    ],
)
def test_bad_options(kwargs: dict[str, float]) -> None:
    with pytest.raises(errors.TrainError, match="must be"):
        train.TrainOptions(**kwargs)  # type: ignore[arg-type]


def test_cli_errors_are_messages_not_tracebacks(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out/x").write_text("x")
    cases = [
        (["--base", str(tmp_path / "missing"), "-o", str(tmp_path / "o1")], "does not exist"),
        (["-o", str(tmp_path / "out")], "--force"),
        (["--epochs", "0", "-o", str(tmp_path / "o2")], "--epochs must be positive"),
        (["--per-group", "0", "-o", str(tmp_path / "o3")], "--per-group must be positive"),
    ]
    for extra, expected in cases:
        proc = subprocess.run(
            [sys.executable, "-m", "textgate.cli", "train", "--task", "spam-sms", *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == cli.EXIT_CODES[errors.TrainError], proc.stderr
        assert "Traceback" not in proc.stderr
        assert expected in " ".join(proc.stderr.split())  # rich wraps long lines


# --- pure helpers ----------------------------------------------------------------------------


def test_length_batches_cover_every_row_once_and_group_lengths() -> None:
    lengths = list(np.random.default_rng(0).integers(3, 60, size=203))
    batches = train.length_batches(lengths, 16, np.random.default_rng(1))
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(203))
    assert all(len(b) == 16 for b in batches if len(b) != 203 % 16)
    # Sorted by length: a batch spans a narrow range, far below the data's 57.
    spans = [np.ptp(np.asarray(lengths)[b]) for b in batches]
    assert np.median(spans) <= 6
    again = train.length_batches(lengths, 16, np.random.default_rng(1))
    assert all((x == y).all() for x, y in zip(batches, again, strict=True))
    other = train.length_batches(lengths, 16, np.random.default_rng(2))
    assert any(not np.array_equal(x, y) for x, y in zip(batches, other, strict=True))


def test_class_weights_balance_classes() -> None:
    w = train.class_weights([0, 0, 0, 1], 2)
    assert w.tolist() == pytest.approx([4 / 6, 2.0])
    assert (w * np.bincount([0, 0, 0, 1])).tolist() == pytest.approx([2.0, 2.0])
    assert train.class_weights([0, 0, 0, 1], 2, "sqrt").tolist() == pytest.approx(np.sqrt(w))
    assert train.class_weights([0, 0, 0, 1], 2, "none").tolist() == [1.0, 1.0]


def test_options_fall_back_to_task_defaults() -> None:
    spam = train.TrainOptions().resolved("spam")
    d = train.TASK_DEFAULTS["spam"]
    assert (spam.epochs, spam.lr, spam.max_length) == (d.epochs, d.lr, d.max_length)
    assert train.TrainOptions(epochs=7).resolved("spam").epochs == 7
    assert train.TrainOptions().resolved("anything").max_length == train.GENERIC.max_length
    assert (spam.threads or 0) >= 1
    assert (
        spam.pooling == "cls" and train.TrainOptions(pooling="mean").resolved("x").pooling == "mean"
    )
    args = cli.build_parser().parse_args(
        ["train", "--task", "spam", "-o", "x", "--pooling", "mean"]
    )
    assert args.pooling == "mean"


def test_train_is_registered_in_the_cli() -> None:
    args = cli.build_parser().parse_args(["train", "--task", "spam", "-o", "x"])
    from textgate.commands import training

    assert args.handler is training._run_train


def test_train_and_build_take_a_cap_on_rows_a_source_group() -> None:
    parser = cli.build_parser()
    assert parser.parse_args(["train", "--task", "spam", "-o", "x"]).per_group is None
    args = parser.parse_args(["train", "--task", "spam", "-o", "x", "--per-group", "250"])
    assert args.per_group == 250
    assert parser.parse_args(["build", "spam", "-o", "x", "--per-group", "250"]).per_group == 250
    # unset, the task's recipe decides; set, it overrides it
    assert train.TrainOptions().resolved("spam").per_group == train.TASK_DEFAULTS["spam"].per_group
    assert train.TrainOptions(per_group=250).resolved("spam").per_group == 250


def test_schedule_decays_by_the_clock_when_a_budget_binds() -> None:
    from textgate.train.loop import Deadline, schedule

    free = schedule(100, 0.1, Deadline(None))
    assert [round(free(s), 2) for s in (0, 9, 10, 55, 100)] == [0.1, 1.0, 1.0, 0.5, 0.0]
    half_spent = Deadline(1.0)
    assert half_spent.end is not None
    half_spent.end -= 30  # 30 of 60 seconds gone
    tight = schedule(100, 0.1, half_spent)
    assert tight(20) == pytest.approx(0.5, abs=0.01)  # the clock, not the steps, decides
    assert tight(95) == pytest.approx(5 / 90)  # and the steps, when they are nearer the end
    half_spent.end -= 60
    assert tight(20) == 0.0 and half_spent.left() == 0.0


@dataclass(frozen=True)
class FakeMail(FakeTable):
    """FakeTable with what mail adds: each row's structure symbols and source group."""

    symbols: tuple[tuple[str, ...], ...] = ()
    groups: tuple[str, ...] = ()


def _mail(table: FakeTable) -> FakeMail:
    fired = tuple(
        ("LIST_ID",) if i % 3 else ("HTML_ONLY", "LINK_SHORTENER") for i in range(len(table.texts))
    )
    groups = tuple(f"box-{i % 4}" for i in range(len(table.texts)))
    return FakeMail(table.texts, table.labels, symbols=fired, groups=groups)


def test_mail_without_fitted_folds_gets_the_join_combiner_with_silent_symbols(
    bases: dict[str, Path], splits: FakeSplits, tmp_path: Path
) -> None:
    from textgate import signals
    from textgate.signals.combiner import Combiner

    mail = FakeSplits(*(_mail(t) for t in (splits.train, splits.validation, splits.test)))
    out = tmp_path / "ckpt"
    opts = dataclasses.replace(QUICK, ngrams=True, combiner_folds=0)
    train.train(mail, bases["bert"], out, task="toy", options=opts)
    record = json.loads((out / "textgate.json").read_text())["combiner"]
    assert record["fitted"] is False and record["cut_by_time_budget"] is False
    weight = json.loads((out / "textgate.json").read_text())["ngrams"]["weight"]
    assert record["features"]["content"] == 1 - weight and record["features"]["lexical"] == weight
    model = Combiner.load(out / record["file"])
    assert model.symbols == tuple(signals.ORDER) and not model.weights[2:].any()
    # no fold trainings were run for it, and the spam recipe asks for none
    assert "fold_training" not in record
    assert train.TrainOptions().resolved("spam").combiner_folds == 0
    with pytest.raises(errors.TrainError, match="combiner-folds"):
        train.TrainOptions(combiner_folds=1)


def test_the_ngram_half_learns_a_lexical_signal() -> None:
    import numpy as np

    from textgate.train import ngram

    spam = ["claim your free prize now", "win cash now, reply to claim", "free entry win"]
    ham = ["see you at lunch tomorrow", "the meeting moved to noon", "thanks for the notes"]
    texts = (spam + ham) * 5
    y = np.tile(np.array([True, True, True, False, False, False]), 5)
    model, info = ngram.fit(texts, y, negative=0)
    assert info["rows"] == 30
    z = model.scores(["free prize, claim now", "lunch meeting notes tomorrow"])
    assert z[0] > 0 > z[1]
    assert model.weight == ngram.WEIGHT
    heavier, _ = ngram.fit(texts, y, negative=0, recipe=ngram.Recipe(weight=0.8))
    assert heavier.weight == 0.8  # the recipe's weight is what the saved model joins with


def test_each_task_fits_its_lexical_half_with_its_own_recipe() -> None:
    from textgate import ngrams
    from textgate.train import ngram

    spam, zh = train.TASK_DEFAULTS["spam"], train.TASK_DEFAULTS["sentiment-zh"]
    assert spam.ngrams and spam.ngram_recipe == ngram.Recipe(ngrams.DEFAULT, 10.0)
    assert ngrams.Features((3, 5), "wb", True) == ngrams.DEFAULT  # the e-mail model's, as /1
    zh_features = ngrams.Features((1, 3), "char", False)
    assert zh.ngrams and zh.ngram_recipe == ngram.Recipe(zh_features, weight=0.4)
    assert train.TrainOptions().resolved("sentiment-zh").ngrams
    assert not train.TrainOptions(ngrams=False).resolved("sentiment-zh").ngrams
    assert not train.TASK_DEFAULTS["sentiment"].ngrams and not train.GENERIC.ngrams


def test_only_chinese_sentiment_reads_the_tail_of_a_long_text_by_default() -> None:
    assert train.TrainOptions().resolved("sentiment-zh").tail_tokens == 64
    for task in ("spam", "sentiment", "anything"):
        assert train.TrainOptions().resolved(task).tail_tokens == 0
    assert train.TrainOptions(tail_tokens=0).resolved("sentiment-zh").tail_tokens == 0
    # a shorter window keeps the task's proportion; a tail asked for is checked as given
    assert train.TrainOptions(max_length=64).resolved("sentiment-zh").tail_tokens == 32
    opts = train.TrainOptions(tail_tokens=65).resolved("sentiment-zh")
    with pytest.raises(errors.TrainError, match="tail-tokens 65.*0..64"):
        train.tail_of(opts, 128)
    with pytest.raises(errors.TrainError, match="must be 0 or more"):
        train.TrainOptions(tail_tokens=-1)


@dataclass
class _Table:
    texts: tuple[str, ...]
    ids: list[int]

    def label_ids(self) -> list[int]:
        return self.ids


def test_the_chinese_ngram_half_scores_not_negative_and_records_its_features(
    tmp_path: Path,
) -> None:
    from textgate import ngrams

    neg = ["质量很差, 非常失望", "太差了, 不推荐", "很失望, 退货"]
    pos = ["质量很好, 非常满意", "很好, 推荐", "满意, 好评"]
    table = _Table(tuple((neg + pos) * 5), [0, 0, 0, 1, 1, 1] * 5)
    recipe = train.TASK_DEFAULTS["sentiment-zh"].ngram_recipe
    info = train._fit_ngrams(
        table, None, ["negative", "positive"], train.TrainOptions(), recipe, tmp_path, print
    )
    assert info["char_mode"] == "char" and info["char_ngrams"] == [1, 3]
    assert info["word_block"] is False and info["negative"] == 0 and info["C"] == 10.0
    model = ngrams.NgramModel.load(tmp_path / info["file"])
    assert model.features == recipe.features
    z = model.scores(["非常满意, 好评", "非常失望, 太差"])
    assert z[0] > 0 > z[1]  # log-odds of "not negative": positive reviews score above 0


def test_the_small_recipe_is_a_fixed_smaller_one_and_only_where_defined() -> None:
    full, small = train.TrainOptions(), train.TrainOptions(recipe="small")
    assert small.resolved("spam").per_group == train.SMALL_RECIPES["spam"]["per_group"] == 250
    assert full.resolved("spam").per_group == 500
    # only the rows change: the rest of the recipe, the budget's role included, is the full one
    assert small.resolved("spam").epochs == full.resolved("spam").epochs
    assert not small.resolved("spam").anneal_by_clock
    assert train.TrainOptions(recipe="small", per_group=300).resolved("spam").per_group == 300
    with pytest.raises(errors.TrainError, match="no small recipe"):
        small.resolved("sentiment")
    with pytest.raises(errors.TrainError, match="recipe must be one of"):
        train.TrainOptions(recipe="tiny")
