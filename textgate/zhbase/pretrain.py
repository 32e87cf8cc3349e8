"""Masked-language-model pre-training of the compact Chinese encoder, in a time budget.

Sentences are tokenized once and packed greedily into sequences of up to ``seq_length``
tokens ([CLS] a [SEP] b [SEP] …); each step masks 15 % of the real tokens (80 % [MASK],
10 % a random token, 10 % kept), BERT's recipe. The vocabulary head runs on the masked
positions only: on this small encoder it is most of a step's arithmetic, and the other
positions carry no loss. The rate warms up, then decays linearly by the budget's clock so
the run ends annealed wherever the budget stops it. The run stops at the budget (or
``max_steps``) between steps and saves the weights; seeded, so one seed and one thread
count give one step sequence (the stopping step depends on the machine's speed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MASK_RATE = 0.15
CURVE_EVERY = 50  # steps between the points of the recorded loss curve


@dataclass(frozen=True, kw_only=True)
class PretrainOptions:
    minutes: float = 12.0
    seq_length: int = 128
    batch_size: int = 32
    lr: float = 5e-4
    warmup_steps: int = 200
    seed: int = 42
    max_steps: int | None = None  # a bound in steps as well as minutes (tests, short runs)


def pack(ids: Sequence[list[int]], seq_length: int, cls: int, sep: int) -> list[list[int]]:
    """Greedy packing of ``[CLS] s1 [SEP] s2 [SEP]``; a sentence never straddles two rows."""
    rows: list[list[int]] = []
    row = [cls]
    for sent in ids:
        piece = [*sent[: seq_length - 2], sep]
        if len(row) + len(piece) > seq_length:
            rows.append(row)
            row = [cls]
        row += piece
    if len(row) > 1:
        rows.append(row)
    return rows


def mask_batch(
    rows: Sequence[list[int]],
    rng: np.random.Generator,
    *,
    pad: int,
    mask: int,
    vocab: int,
    special: set[int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(input ids, attention mask, labels with -100 where no prediction is asked)."""
    width = max(len(r) for r in rows)
    ids = np.full((len(rows), width), pad, dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
    attn = (ids != pad).astype(np.int64)
    candidates = attn.astype(bool) & ~np.isin(ids, list(special))
    chosen = candidates & (rng.random(ids.shape) < MASK_RATE)
    labels = np.where(chosen, ids, -100)
    roll = rng.random(ids.shape)
    inputs = ids.copy()
    inputs[chosen & (roll < 0.8)] = mask
    swap = chosen & (roll >= 0.8) & (roll < 0.9)
    inputs[swap] = rng.integers(len(special), vocab, size=int(swap.sum()))
    return inputs, attn, labels


def masked_loss(model: Any, inputs: Any, attn: Any, labels: Any) -> Any:
    """The MLM loss of ``BertForMaskedLM``, with its vocabulary head on the masked rows only.

    Equal to ``model(..., labels=labels).loss`` (the other positions are ignored there too),
    at a fraction of the cost where the head is most of the model.
    """
    import torch

    hidden = model.bert(input_ids=inputs, attention_mask=attn).last_hidden_state
    chosen = labels != -100
    logits = model.cls(hidden[chosen])
    return torch.nn.functional.cross_entropy(logits, labels[chosen])


def _rate(opts: PretrainOptions, end: float) -> Callable[[int], float]:
    """Linear warm-up, then linear decay to zero at the budget's end (by the clock)."""
    budget = max(1e-9, opts.minutes * 60)

    def factor(step: int) -> float:
        left = max(0.0, (end - time.monotonic()) / budget)
        return min((step + 1) / max(1, opts.warmup_steps), left)

    return factor


def pretrain(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    out: Path,
    options: PretrainOptions | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> dict[str, Any]:
    """Train ``model`` (a ``BertForMaskedLM``) on ``texts`` for the budget; save it to ``out``.

    The report carries the loss curve (step, seconds, mean loss of the last
    ``CURVE_EVERY`` steps), so a budget that stops a still-falling loss shows it.
    """
    import torch

    opts = options or PretrainOptions()
    torch.manual_seed(opts.seed)
    rng = np.random.default_rng(opts.seed)
    enc = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    rows = pack(enc, opts.seq_length, tokenizer.cls_token_id, tokenizer.sep_token_id)
    special = set(tokenizer.all_special_ids)
    start = time.monotonic()
    end = start + opts.minutes * 60
    optim = torch.optim.AdamW(model.parameters(), lr=opts.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, _rate(opts, end))
    log(
        f"pre-training on {len(rows):,} packed rows of ≤ {opts.seq_length} tokens, "
        f"{opts.minutes:g} min budget"
    )
    model.train()
    steps, losses, epochs = 0, [], 0
    curve: list[list[float]] = []

    def done() -> bool:
        return time.monotonic() >= end or (opts.max_steps is not None and steps >= opts.max_steps)

    with _progress() as bar:
        task = bar.add_task("pre-train (MLM)", total=opts.minutes * 60, info="")
        while not done():
            epochs += 1
            order = rng.permutation(len(rows))
            for s in range(0, len(order), opts.batch_size):
                batch = [rows[i] for i in order[s : s + opts.batch_size]]
                inputs, attn, labels = mask_batch(
                    batch,
                    rng,
                    pad=tokenizer.pad_token_id,
                    mask=tokenizer.mask_token_id,
                    vocab=len(tokenizer),
                    special=special,
                )
                loss = masked_loss(
                    model,
                    torch.from_numpy(inputs),
                    torch.from_numpy(attn),
                    torch.from_numpy(labels),
                )
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optim.step()
                sched.step()
                optim.zero_grad(set_to_none=True)
                steps += 1
                losses.append(float(loss.item()))
                recent = float(np.mean(losses[-CURVE_EVERY:]))
                if steps % CURVE_EVERY == 0:
                    curve.append([steps, round(time.monotonic() - start, 1), round(recent, 4)])
                    log(f"MLM step {steps}: loss {recent:.3f}")
                bar.update(
                    task, completed=time.monotonic() - start, info=f"step {steps} loss {recent:.3f}"
                )
                if done():
                    break
    model.save_pretrained(str(out))
    report = {
        "steps": steps,
        "passes": epochs,
        "rows": len(rows),
        "final_loss": round(float(np.mean(losses[-CURVE_EVERY:])), 4) if losses else None,
        "minutes": opts.minutes,
        "seconds": round(time.monotonic() - start, 1),
        "curve": curve,
    }
    log(f"pre-training done: {steps} steps, loss {report['final_loss']}")
    return report


def _progress() -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[info]}"),
        console=Console(stderr=True),
    )
