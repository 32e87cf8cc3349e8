"""Uniform weight averages of a fine-tune's epochs, against its best single epoch.

    S=benchmarks/studies/archive/epoch_average.py
    python $S [--task sentiment] [--dir DIR] [--out FILE]
    python $S --lr 3e-5 --epochs 5 --dir DIR2   # another run
    python $S --soup DIR DIR2 ...   # the runs' best epochs, averaged

Averaging the weights of late checkpoints (stochastic weight averaging, "model soups")
often gains a point of accuracy at no serving cost. The script trains the task's default
recipe once, keeping each epoch's weights (a hook on the loop's per-epoch validation, so
the run is the build's own), then scores every single epoch and the averages of the last
2, 3 and 4 epochs on validation and test. A winner would be chosen on validation only.
``--soup`` averages the best epochs of several runs (a "uniform soup" of fine-tunes: with
one seed every run starts from the same weights, the new head included, and runs with
another rate or length may still share a basin).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from textgate import data, train
from textgate.train import loop
from textgate.train.base import encode, load_tokenizer

ROOT = Path(__file__).resolve().parents[3]


def run_training(task: str, work: Path, **options: Any) -> Path:
    """Train the task's default recipe into ``work / ckpt``, saving each epoch's weights."""
    import torch

    validate = loop._validate
    saved: list[Path] = []

    def keep(model: Any, *args: Any) -> float:
        path = work / f"epoch{len(saved) + 1}.pt"
        torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, path)
        saved.append(path)
        return validate(model, *args)

    loop._validate = keep  # type: ignore[assignment]  # the hook: same call, weights kept
    try:
        opts = train.TrainOptions(**options, force=True)
        train.train(data.load_task(task), None, work / "ckpt", task=task, options=opts, log=print)
    finally:
        loop._validate = validate
    return work / "ckpt"


def _rows(ckpt: Path, tok: Any, labels: list[str], name: str, max_length: int) -> Any:
    rows = [json.loads(line) for line in (ckpt / "data" / f"{name}.jsonl").open()]
    ids = encode(tok, [r["text"] for r in rows], max_length)
    return ids, np.array([labels.index(r["label"]) for r in rows])


def average(states: list[dict[str, Any]]) -> dict[str, Any]:
    """The uniform mean of floating-point tensors; integer buffers from the last state."""
    return {
        k: sum(s[k].float() for s in states) / len(states) if v.is_floating_point() else v
        for k, v in states[-1].items()
    }


def score_all(work: Path, ckpt: Path) -> dict[str, dict[str, float]]:
    import torch

    paths = sorted(work.glob("epoch*.pt"), key=lambda p: int(p.stem[5:]))
    states = [torch.load(p) for p in paths]
    candidates = {f"epoch {i}": [s] for i, s in enumerate(states, 1)}
    for k in range(2, len(states) + 1):
        candidates[f"mean of the last {k}"] = states[-k:]
    return score(ckpt, candidates)


def soup(runs: list[Path]) -> dict[str, dict[str, float]]:
    """Each run's best epoch (by validation, as the build keeps it) and their mean."""
    import torch

    best = []
    for run in runs:
        info = json.loads((run / "ckpt" / "textgate.json").read_text())
        best.append(torch.load(run / f"epoch{info['best_epoch']}.pt"))
    candidates = {f"best epoch of {run.name}": [s] for run, s in zip(runs, best, strict=True)}
    candidates[f"mean of the {len(best)} best epochs"] = best
    return score(runs[0] / "ckpt", candidates)


def score(ckpt: Path, candidates: dict[str, list[Any]]) -> dict[str, dict[str, float]]:
    from transformers import AutoModelForSequenceClassification

    info = json.loads((ckpt / "textgate.json").read_text())
    tok = load_tokenizer(ckpt)
    model = AutoModelForSequenceClassification.from_pretrained(ckpt)
    labels = info["labels"]
    splits = {n: _rows(ckpt, tok, labels, n, info["max_length"]) for n in ("validation", "test")}
    out = {}
    for name, group in candidates.items():
        model.load_state_dict(average(group))
        out[name] = {
            split: round(float((loop.predict(model, ids, 0).argmax(1) == y).mean()), 4)
            for split, (ids, y) in splits.items()
        }
        print(name, out[name], flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--task", default="sentiment")
    ap.add_argument("--dir", type=Path, default=ROOT / "artifacts" / "epoch-average")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--lr", type=float, help="default: the task's")
    ap.add_argument("--epochs", type=int, help="default: the task's")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--soup", type=Path, nargs="+", help="run directories to average")
    args = ap.parse_args()
    if args.soup:
        result = {"task": args.task, "soup": soup(args.soup)}
        out = args.out or ROOT / "benchmarks" / "results" / f"soup_{args.task}.json"
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {out}")
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    options = {"seed": args.seed, "lr": args.lr, "epochs": args.epochs, "patience": 5}
    ckpt = run_training(args.task, args.dir, **options)
    result = {"task": args.task, **options, "accuracy": score_all(args.dir, ckpt)}
    out = args.out or ROOT / "benchmarks" / "results" / f"epoch_average_{args.task}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
