"""The training loop: length-bucketed batches with per-batch padding, weighted loss,
warm-up then linear decay, a time budget, early stopping, the best epoch kept."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from textgate import metrics
from textgate.errors import TrainError
from textgate.train.dataset import Parts
from textgate.train.options import TrainOptions

EVAL_BATCH = 64


@dataclass
class History:
    """What a run did. ``stopped`` is ``time_budget`` only when the budget cut planned steps
    (a run whose last step lands after the deadline completed); readers of a result need to
    know whether it is the model the options describe or a budget's truncation of it."""

    epochs: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    best_f1: float = -1.0
    stopped: str = "completed"
    steps_planned: int = 0
    steps_run: int = 0
    seconds: float = 0.0

    def record(self) -> dict[str, Any]:
        """The run as a report carries it (``textgate.json``, ``evaluate``'s folds)."""
        return {
            "stopped": self.stopped,
            "steps_run": self.steps_run,
            "steps_planned": self.steps_planned,
            "epochs_run": len(self.epochs),
            "best_epoch": self.best_epoch,
            "seconds": round(self.seconds, 1),
            "history": self.epochs,
        }


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


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


def predict(model: Any, ids: list[list[int]], pad_id: int) -> np.ndarray:
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


def _optimizer(
    model: Any, opts: TrainOptions, total_steps: int, deadline: Deadline | None = None
) -> tuple[Any, Any]:
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
    return optim, torch.optim.lr_scheduler.LambdaLR(
        optim, schedule(total_steps, opts.warmup, deadline or Deadline(None))
    )


def schedule(total_steps: int, warmup: float, deadline: Deadline) -> Callable[[int], float]:
    """Linear warm-up, then linear decay to zero by the last step or the deadline, whichever
    comes first.

    A budget that stops a run part-way used to stop it before the rate had decayed (the
    runs are in docs/data.md, "The English sentiment model"); decaying by the clock as well
    ends every run annealed. Where the budget binds, the steps taken
    depend on the machine's speed, as the stopping point already did.
    """
    warm = max(1, int(total_steps * warmup))

    def factor(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        by_steps = (total_steps - step) / max(1, total_steps - warm)
        return max(0.0, min(by_steps, deadline.left()))

    return factor


class Deadline:
    """A time budget; ``None`` minutes never expires."""

    def __init__(self, minutes: float | None) -> None:
        self.minutes = minutes
        self.end = None if minutes is None else time.monotonic() + minutes * 60

    def passed(self) -> bool:
        return self.end is not None and time.monotonic() >= self.end

    def left(self) -> float:
        """The share of the budget still to run, 1.0 to 0.0 (always 1.0 without one)."""
        if self.end is None or self.minutes is None:
            return 1.0
        return max(0.0, (self.end - time.monotonic()) / (self.minutes * 60))


def fit(
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
    deadline = Deadline(opts.max_minutes)
    clock = deadline if opts.anneal_by_clock else None
    optim, sched = _optimizer(model, opts, epochs * steps_per_epoch, clock)
    weight = class_weights(parts.train.ids, len(labels), opts.class_weights or "balanced")
    loss_fn = torch.nn.CrossEntropyLoss(weight=torch.tensor(weight, dtype=torch.float32))
    targets = torch.tensor(parts.train.ids, dtype=torch.long)
    pad_id = model_pad_id(model)
    rng = np.random.default_rng(opts.seed)
    history, best_state = History(steps_planned=epochs * steps_per_epoch), None
    started = time.monotonic()
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
                history.steps_run += 1
                bar.update(task_id, advance=1, info=f"epoch {epoch} loss {np.mean(losses):.4f}")
                if deadline.passed():
                    break
            val = _validate(model, enc["validation"], parts.validation.ids, labels, pad_id)
            row = {
                "epoch": epoch,
                "loss": round(float(np.mean(losses)), 5),
                "val_macro_f1": round(val, 5),
                "steps": len(losses),
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
            if deadline.passed() and history.steps_run < history.steps_planned:
                history.stopped = "time_budget"
                break
            if epoch < epochs and epoch - history.best_epoch >= opts.patience:
                history.stopped = "early_stopping"
                break
    history.seconds = time.monotonic() - started
    if best_state is not None:
        model.load_state_dict(best_state)
    return history


def model_pad_id(model: Any) -> int:
    pad = getattr(model.config, "pad_token_id", None)
    return int(pad) if pad is not None else 0


def _validate(
    model: Any, ids: list[list[int]], y: list[int], labels: list[str], pad_id: int
) -> float:
    probs = predict(model, ids, pad_id)
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
