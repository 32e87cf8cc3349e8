"""Which int8 recipe passes the export gate, and at what speed.

    PYTHONPATH=$PWD python benchmarks/studies/export/int8_recipes.py --bundle artifacts/spam \
        --checkpoint CKPT [--rows 400] [--recipes today,matmul-attn] [--out FILE]

Builds one int8 file per recipe (``textgate.export.quantize``, the code ``build_int8``
runs) from the bundle's fp32 or fused fp32-opt graph, scores each with the export's own
``evaluate`` and ``Gate`` on the export's own ``eval_set`` (the checkpoint's test split
under the bundle tokenizer; static recipes calibrate on its validation split only), and
times batch 1 and batch 32 at 64 tokens interleaved with fp32-opt in the same process, so
load from other work hits both alike. Prints the table and writes it as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from textgate.export import eval_set, inference, load_checkpoint, quantize, variants
from textgate.export.quantize import Int8Recipe

SOURCES = {"fp32": variants.FILES["fp32"], "fp32-opt": variants.FILES["fp32-opt"]}
_MM_ATT = ("MatMul", "Attention")
# (graph it starts from, recipe); "today" is build_int8 before this benchmark.
RECIPES: tuple[tuple[str, Int8Recipe], ...] = (
    ("fp32-opt", Int8Recipe(name="today")),
    ("fp32", Int8Recipe(name="today-unfused")),
    ("fp32-opt", Int8Recipe(name="no-range-cut", reduce_range=False)),
    ("fp32-opt", Int8Recipe(name="matmul-attn", op_types=_MM_ATT)),
    ("fp32-opt", Int8Recipe(name="matmul-only", op_types=("MatMul",))),
    ("fp32-opt", Int8Recipe(name="matmul-attn-head", op_types=_MM_ATT, exclude=("head",))),
    ("fp32-opt", Int8Recipe(name="no-head", exclude=("head",))),
    ("fp32-opt", Int8Recipe(name="no-last-ffn", exclude=("last-ffn",))),
    ("fp32-opt", Int8Recipe(name="no-ffn-out", exclude=("ffn-out",))),
    ("fp32-opt", Int8Recipe(name="matmul-attn-no-ffn-out", op_types=_MM_ATT, exclude=("ffn-out",))),
    ("fp32-opt", Int8Recipe(name="no-ffn", exclude=("ffn-in", "ffn-out"))),
    ("fp32-opt", Int8Recipe(name="no-ffn-out-head", exclude=("ffn-out", "head"))),
    ("fp32-opt", Int8Recipe(name="no-ffn-head", exclude=("ffn-in", "ffn-out", "head"))),
    (
        "fp32-opt",
        Int8Recipe(name="no-ffn-last-layer", exclude=("ffn-in", "ffn-out", "last-layer")),
    ),
    (
        "fp32-opt",
        Int8Recipe(name="no-ffn-asym", exclude=("ffn-in", "ffn-out"), weight_symmetric=False),
    ),
    ("fp32-opt", Int8Recipe(name="attention-only", op_types=("Attention",))),
    (
        "fp32-opt",
        Int8Recipe(name="no-ffn-out-first-last", exclude=("ffn-out", "first-layer", "last-layer")),
    ),
    ("fp32-opt", Int8Recipe(name="no-first-last", exclude=("first-layer", "last-layer"))),
    ("fp32-opt", Int8Recipe(name="const-b-only", matmul_const_b_only=True)),
    ("fp32-opt", Int8Recipe(name="asym-weights", weight_symmetric=False)),
    ("fp32-opt", Int8Recipe(name="sym-activations", activation_symmetric=True)),
    ("fp32", Int8Recipe(name="static-qdq-minmax", static=True)),
    ("fp32", Int8Recipe(name="static-qop-minmax", static=True, qdq=False)),
    ("fp32", Int8Recipe(name="static-qdq-percentile", static=True, calibrate="percentile")),
    ("fp32", Int8Recipe(name="static-qdq-entropy", static=True, calibrate="entropy")),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", type=Path, required=True)
    ap.add_argument("--checkpoint", type=Path, help="its checkpoint (test + validation split)")
    ap.add_argument("--rows", type=int, default=0, help="first N test rows only (0: all)")
    ap.add_argument("--recipes", help="comma-separated names (default: all)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--work", type=Path, help="where the int8 files go (default: a temp dir)")
    results = Path(__file__).resolve().parents[2] / "results"  # benchmarks/results
    ap.add_argument("--out", type=Path, default=results / "int8_recipes.json")
    args = ap.parse_args()
    chosen = _chosen(args.recipes)
    ckpt = load_checkpoint(args.checkpoint) if args.checkpoint else None
    data, feeds = _data(args.bundle, ckpt, args.rows)
    gate = variants.Gate()
    _, ref = variants.evaluate(args.bundle / SOURCES["fp32"], data, None, gate)
    with tempfile.TemporaryDirectory(prefix="int8-recipes-", dir=args.work) as tmp:
        rows = []
        for src, recipe in chosen:
            rows.append(_row(args.bundle, Path(tmp), src, recipe, data, feeds, ref, gate))
            rows[-1].update(
                _interleaved(args.bundle, Path(tmp) / f"{recipe.name}.onnx", data, args.rounds)
            )
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    task = json.loads((args.bundle / "manifest.json").read_text(encoding="utf-8"))["task"]
    result = {
        "task": task,
        "n": data.n,
        "evaluated_on": data.source,
        "gate": {"min_agreement": gate.min_agreement, "max_f1_drop": gate.max_f1_drop},
        "threads": inference.threads(),
        "recipes": rows,
    }
    _print(result)
    _save(args.out, task, result)


def _save(out: Path, task: str, result: dict[str, Any]) -> None:
    """One entry per task, so runs on several bundles share one file; a run of some
    ``--recipes`` on the same rows replaces those recipes' rows and keeps the others."""
    table = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    old = table.get(task, {})
    if old.get("n") == result["n"] and old.get("evaluated_on") == result["evaluated_on"]:
        mine = {r["recipe"] for r in result["recipes"]}
        kept = [r for r in old["recipes"] if r["recipe"] not in mine]
        result = {**result, "recipes": kept + result["recipes"]}
    table[task] = result
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")


def _chosen(names: str | None) -> list[tuple[str, Int8Recipe]]:
    if not names:
        return list(RECIPES)
    wanted = names.split(",")
    known = {r.name for _, r in RECIPES}
    if unknown := [n for n in wanted if n not in known]:
        sys.exit(f"unknown recipe(s) {unknown}; known: {sorted(known)}")
    return [(s, r) for s, r in RECIPES if r.name in wanted]


def _data(bundle: Path, ckpt: Any, rows: int) -> tuple[variants.EvalSet, list[quantize.Feed]]:
    if ckpt is None:  # no split: the export's generated texts, agreement only
        from textgate.export import texts

        tok = inference.load_tokenizer(bundle / "tokenizer.json")
        gen = texts.generate(500, 128)
        data = variants.EvalSet(
            batches=list(inference.encode(tok, gen)),
            labels=(),
            label_names=tuple(json.loads((bundle / "labels.json").read_text())),
            max_length=128,
            source="generated",
        )
        return data, quantize.calibration_feeds(tok, texts.generate(256, 128, seed=1))
    data = eval_set(ckpt, bundle, rows)
    tok = inference.load_tokenizer(bundle / "tokenizer.json")
    return data, quantize.calibration_feeds(tok, ckpt.extra_texts)


def _row(
    bundle: Path,
    tmp: Path,
    source: str,
    recipe: Int8Recipe,
    data: variants.EvalSet,
    feeds: list[quantize.Feed],
    ref: np.ndarray,
    gate: variants.Gate,
) -> dict[str, Any]:
    dst = tmp / f"{recipe.name}.onnx"
    print(f"{recipe.name}: building from {SOURCES[source]}", file=sys.stderr, flush=True)
    quantize.quantize(bundle / SOURCES[source], dst, recipe, feeds if recipe.static else ())
    row, _ = variants.evaluate(dst, data, ref, gate)
    return {
        "recipe": recipe.name,
        "source": source,
        "status": row["status"],
        "agreement": row["agreement"],
        "flips": round((1 - row["agreement"]) * data.n) if row["agreement"] is not None else None,
        "f1_delta": row["f1_delta"],
        "max_abs_diff": row.get("max_abs_diff"),
        "mean_abs_diff": row.get("mean_abs_diff"),
        "size_mb": round(dst.stat().st_size / 1e6, 1),
        "reason": row.get("reason"),
    }


def _interleaved(bundle: Path, cand: Path, data: variants.EvalSet, rounds: int) -> dict[str, float]:
    """Medians over alternating rounds; the ratio is per round, then the median."""
    opt = bundle / SOURCES["fp32-opt"]
    sample = np.concatenate([ids[mask.astype(bool)] for ids, mask in data.batches])
    seq = min(64, data.max_length)
    sessions = {"opt": inference.session(opt), "int8": inference.session(cand)}
    got: dict[str, list[float]] = {f"{k}_{b}": [] for k in sessions for b in (1, 32)}
    for _ in range(rounds):
        for key, sess in sessions.items():
            for batch in (1, 32):
                got[f"{key}_{batch}"].append(inference.latency_ms(sess, sample, batch, seq))
    med = {k: statistics.median(v) for k, v in got.items()}
    ratios = [o / i for o, i in zip(got["opt_1"], got["int8_1"], strict=True)]
    return {
        "batch1_ms": round(med["int8_1"], 2),
        "batch32_texts_s": round(32_000 / med["int8_32"], 1),
        "opt_batch1_ms": round(med["opt_1"], 2),
        "opt_batch32_texts_s": round(32_000 / med["opt_32"], 1),
        "speedup_batch1": round(statistics.median(ratios), 2),
    }


def _print(result: dict[str, Any]) -> None:
    print(f"{result['task']}: {result['n']} texts ({result['evaluated_on']})")
    head = ("recipe", "source", "status", "agree", "flips", "F1 Δ", "max|Δp|", "b1 ms",
            "opt b1", "b32 t/s", "opt b32", "MB")  # fmt: skip
    print(" | ".join(head))
    for r in result["recipes"]:
        f1 = "-" if r["f1_delta"] is None else f"{r['f1_delta']:+.4f}"
        agree = "-" if r["agreement"] is None else f"{r['agreement']:.4f}"
        cells = (r["recipe"], r["source"], r["status"], agree, str(r["flips"]), f1,
                 f"{r['max_abs_diff'] or 0:.3f}", f"{r['batch1_ms']:.2f}",
                 f"{r['opt_batch1_ms']:.2f}", f"{r['batch32_texts_s']:.0f}",
                 f"{r['opt_batch32_texts_s']:.0f}", f"{r['size_mb']:.1f}")  # fmt: skip
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
