"""Checkpoint -> bundle: ONNX export, parity gate, tokenizer lock, variants, manifest.

The one public entry point is ``export_bundle``; the bundle layout and manifest keys are
the contract in ``docs/formats.md``. Torch and transformers are imported lazily so that
``import textgate.export`` (and ``textgate verify``) work without the ``train`` extra.

Just over 400 lines: the export's stages in the order they run, each a short function;
the gates and variants they call are their own modules (``parity``, ``quantize``, ``variants``).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console

from textgate import bundle
from textgate.errors import ConfigError, ExportError, ParityError, require
from textgate.export import convert, coverage, inference, parity, quality, texts, variants
from textgate.export.cascade import bounds as cascade_bounds
from textgate.export.cascade import record as record_cascade
from textgate.export.checkpoint import Checkpoint, load_checkpoint

__all__ = ["eval_set", "export_bundle", "load_checkpoint", "training_record"]

_VERSIONED = ("textgate", "torch", "transformers", "onnx", "onnxruntime", "tokenizers", "numpy")
MIN_PARITY_N = 500
_FP32 = variants.FILES["fp32"]


def export_bundle(
    checkpoint: Path | str,
    out: Path | str,
    *,
    max_f1_drop: float = 0.005,
    min_agreement: float = 0.995,
    parity_n: int = MIN_PARITY_N,
    opset: int = 17,
    variants: Sequence[str] = variants.OPTIONAL,
    overwrite: bool = False,
    console: Console | None = None,
    cascade: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Export ``checkpoint`` into the bundle directory ``out``; return the manifest.
    ``cascade``: the bounds of the confidence cascade (``export.cascade``), if any.

    Raises ``ParityError`` (every mismatch listed, report left in ``out/reports``) when
    ONNX Runtime disagrees with PyTorch or the bundle tokenizer with the checkpoint's.
    """
    gate = _validate(max_f1_drop, min_agreement, parity_n, opset, variants)
    ckpt = load_checkpoint(checkpoint)
    if cascade is not None:  # checked before the minutes of export, not after
        cascade_bounds(cascade, len(ckpt.labels))
    require("torch", "train")
    require("transformers", "train")
    out = _prepare(Path(out), overwrite)
    step = _Steps(console or Console(stderr=True))
    (out / "labels.json").write_text(json.dumps(list(ckpt.labels)) + "\n", encoding="utf-8")
    with step("tokenizer"):
        tok = _write_tokenizer(ckpt, out)
    with step("vocabulary coverage ([UNK] share of the test split)"):
        tok["coverage"] = _coverage(ckpt, out)
    with step(f"ONNX export (opset {opset})"):
        convert.to_onnx(ckpt, out / _FP32, opset=opset)
    report = _parity(ckpt, out, step, parity_n)
    tok.update(ids_match=report["tokenizer"]["ids_match"], n=report["tokenizer"]["n"])
    table, test_metrics, test_probs = _variants(ckpt, out, step, gate, variants)
    lexical = _ngrams(ckpt, out)
    combiner = _combiner(ckpt, out)
    if (lexical is not None or combiner is not None) and ckpt.has_test_split:
        what = "combiner" if combiner is not None else "n-gram half"
        with step(f"{what} joined on the test split"):
            test_probs = quality.joined(
                test_probs, lexical, ckpt.test_texts, combiner, ckpt.test_symbols
            )
            test_metrics = _joined_metrics(ckpt, test_probs, test_metrics, combiner is not None)
    with step("calibration (temperature on the validation split)"):
        calib = quality.calibrate(ckpt, out, test_probs, lexical, combiner)
    _copy_checkpoint_reports(ckpt, out)
    manifest = _manifest(ckpt, report, tok, table, test_metrics, opset)
    manifest["calibration"] = calib
    if calib.get("temperature") and ckpt.has_test_split:
        manifest["metrics"]["operating"] = quality.operating(ckpt, out, test_probs, calib)
    for key in ("normalization", "data_sources", "base_provenance", "ngrams", "combiner"):
        if key in ckpt.textgate:
            manifest[key] = ckpt.textgate[key]
    if cascade is not None:
        manifest["cascade"] = record_cascade(
            cascade, lexical, ckpt.labels, ckpt.test_texts, test_probs
        )
    training = training_record(ckpt.textgate)
    if training is not None:
        manifest["training"] = training
    return bundle.write_manifest(out, manifest)


def training_record(meta: dict[str, Any]) -> dict[str, Any] | None:
    """How the checkpoint's training ended, from its textgate.json (None: not recorded).

    Whoever serves the bundle must be able to tell the model its recipe describes from a
    time budget's truncation of it: ``cut_by_time_budget`` (issue 38).
    """
    if "stopped" not in meta:
        return None
    options = meta.get("options") or {}
    return {
        "recipe": options.get("recipe", "full"),
        "stopped": meta["stopped"],
        "cut_by_time_budget": meta["stopped"] == "time_budget",
        "steps_run": meta.get("steps_run"),
        "steps_planned": meta.get("steps_planned"),
        "max_minutes": options.get("max_minutes"),
    }


def _validate(
    max_f1_drop: float, min_agreement: float, parity_n: int, opset: int, chosen: Sequence[str]
) -> variants.Gate:
    if not 0.0 <= max_f1_drop < 1.0:
        raise ConfigError(
            "max_f1_drop",
            f"must be a fraction in [0, 1), got {max_f1_drop}",
            hint="pass --max-f1-drop 0.005 (half a point of F1)",
        )
    if not 0.0 < min_agreement <= 1.0:
        raise ConfigError(
            "min_agreement",
            f"must be a fraction in (0, 1], got {min_agreement}",
            hint="pass --min-agreement 0.995",
        )
    if parity_n < MIN_PARITY_N:
        raise ConfigError(
            "parity_n",
            f"must be at least {MIN_PARITY_N} texts, got {parity_n}",
            hint=f"pass --parity-n {MIN_PARITY_N} or more",
        )
    if opset < 17:
        raise ConfigError("opset", f"must be 17 or higher, got {opset}", hint="pass --opset 17")
    unknown = [v for v in chosen if v not in variants.OPTIONAL]
    if unknown:
        raise ConfigError(
            "variants",
            f"unknown variant(s) {unknown}",
            hint=f"choose from {', '.join(variants.OPTIONAL)} (fp32 is always built)",
        )
    return variants.Gate(max_f1_drop=max_f1_drop, min_agreement=min_agreement)


def _prepare(out: Path, overwrite: bool) -> Path:
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out}: exists and is not a directory", hint="choose another -o")
    if out.is_dir() and any(out.iterdir()):
        # A bundle, or what a failed export left (labels.json is written first, with reports/).
        ours = (out / bundle.MANIFEST).is_file() or (
            (out / "labels.json").is_file() and (out / "reports").is_dir()
        )
        if not overwrite or not ours:
            raise ExportError(
                f"{out}: directory is not empty",
                hint="pass --force to replace a previous bundle there"
                if ours
                else "choose an empty or new directory for -o",
            )
        shutil.rmtree(out)
    (out / "reports").mkdir(parents=True, exist_ok=True)
    return out


class _Steps:
    """One spinner line per long step, then a tick and its duration."""

    def __init__(self, console: Console) -> None:
        self.console = console

    @contextmanager
    def __call__(self, what: str) -> Iterator[None]:
        t0 = time.perf_counter()
        with self.console.status(f"{what} ..."):
            yield
        self.console.print(f"[green]✓[/] {what} [dim]{time.perf_counter() - t0:.1f} s[/]")


def _write_tokenizer(ckpt: Checkpoint, out: Path) -> dict[str, Any]:
    """Copy tokenizer.json with truncation and padding set as the checkpoint tokenizer does.

    Serving then gets the same ids from ``tokenizers`` alone; the parity child checks it.
    """
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    try:
        hf = AutoTokenizer.from_pretrained(str(ckpt.path))
    except (OSError, ValueError) as exc:
        raise ExportError(
            f"{ckpt.tokenizer_file}: the tokenizer cannot be loaded ({exc})",
            hint="re-save it with AutoTokenizer.from_pretrained(BASE).save_pretrained(CHECKPOINT)",
        ) from None
    if hf.pad_token_id is None:
        raise ExportError(
            f"{ckpt.tokenizer_file}: the tokenizer has no padding token",
            hint="set one (tokenizer.pad_token = ...) and save the checkpoint again",
        )
    tok = Tokenizer.from_file(str(ckpt.tokenizer_file))
    if ckpt.tail_tokens:  # head + tail: cut by textgate.window after encoding, not here
        tok.no_truncation()
    else:
        tok.enable_truncation(max_length=ckpt.max_length, direction=hf.truncation_side)
    tok.enable_padding(pad_id=hf.pad_token_id, pad_token=hf.pad_token, direction=hf.padding_side)
    tok.save(str(out / "tokenizer.json"))
    return {
        "file": "tokenizer.json",
        "pad_id": int(hf.pad_token_id),
        "pad_token": str(hf.pad_token),
        "truncation": ckpt.max_length,
        **({"tail": ckpt.tail_tokens} if ckpt.tail_tokens else {}),
    }


def _coverage(ckpt: Checkpoint, out: Path) -> dict[str, Any]:
    """Refuse a tokenizer that cannot read the model's own data (``VocabularyError``)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    return coverage.check(tok, ckpt.test_texts, where=str(ckpt.tokenizer_file), task=ckpt.task)


def _parity(ckpt: Checkpoint, out: Path, step: _Steps, n: int) -> dict[str, Any]:
    parity_texts = texts.parity_set(ckpt.extra_texts + ckpt.test_texts, n, ckpt.max_length)
    with step(f"parity gate: PyTorch vs ONNX Runtime on {len(parity_texts)} texts"):
        report = parity.run(
            checkpoint=ckpt.path,
            onnx_path=out / variants.FILES["fp32"],
            tokenizer=out / "tokenizer.json",
            texts=parity_texts,
            max_length=ckpt.max_length,
            tail=ckpt.tail_tokens,
        )
    report["texts_hash"] = texts.texts_hash(parity_texts)
    _write_json(out / "reports" / "parity.json", report)
    if not report["passed"]:
        raise ParityError(
            f"{out / variants.FILES['fp32']}: ONNX disagrees with the checkpoint on "
            f"{len(report['mismatches'])} check(s) (tolerance {report['atol']}; "
            "full report in reports/parity.json)",
            report["mismatches"],
            hint="export with attention 'eager' and opset >= 17; compare the report's lengths",
        )
    return report


def eval_set(ckpt: Checkpoint, out: Path, rows: int = 0) -> variants.EvalSet:
    """What every variant is gated on: the test split under the bundle tokenizer in ``out``
    (its first ``rows`` only, when given), batched by length."""
    tok = inference.load_tokenizer(out / "tokenizer.json", ckpt.max_length, ckpt.tail_tokens)
    if ckpt.has_test_split:
        chosen, labels, source = list(ckpt.test_texts), ckpt.test_labels, "test split"
    else:
        chosen, labels, source = texts.generate(MIN_PARITY_N, ckpt.max_length), (), "generated"
    if rows and rows < len(chosen):
        chosen, labels, source = chosen[:rows], labels[:rows], f"{source}, first {rows} rows"
    batches, order = inference.by_length(tok, chosen)
    return variants.EvalSet(
        batches=batches,
        labels=labels,
        label_names=ckpt.labels,
        max_length=ckpt.max_length,
        source=source,
        order=order,
    )


def _variants(
    ckpt: Checkpoint, out: Path, step: _Steps, gate: variants.Gate, chosen: Sequence[str]
) -> tuple[dict[str, dict[str, Any]], dict[str, Any], Any]:
    data = eval_set(ckpt, out)
    with step(f"fp32 on {data.n} {data.source} texts"):
        fp32, ref = variants.evaluate(out / variants.FILES["fp32"], data, None, gate)
    if fp32["status"] != "accepted":
        raise ExportError(f"{variants.FILES['fp32']}: ONNX Runtime cannot run the fp32 model")
    table = {"fp32": fp32}
    source = out / variants.FILES["fp32"]
    for name in (v for v in variants.OPTIONAL if v in chosen):
        with step(f"variant {name}"):
            facts = variants.build(name, out, ckpt, source)
            row, _ = variants.evaluate(out / variants.FILES[name], data, ref, gate)
        table[name] = {**row, **facts}
        if name == "fp32-opt":
            source = out / variants.FILES[name]  # fp16 and int8 start from the fused graph
        if name == "fp16" and row["status"] != "unverified":
            row_note = (
                "evaluated on CPU: ONNX Runtime runs fp16 nodes without CPU kernels in fp32 "
                "through inserted casts, so GPU numbers can differ; re-check on the target GPU"
            )
            table[name]["note"] = row_note
        mark = {"accepted": "green", "rejected": "red"}.get(table[name]["status"], "yellow")
        step.console.print(f"  {name}: [{mark}]{table[name]['status']}[/]", highlight=False)
    _write_json(out / "reports" / "variants.json", table)
    return table, _test_metrics(fp32), ref


def _ngrams(ckpt: Checkpoint, out: Path) -> Any:
    """Copy the checkpoint's n-gram half into the bundle and load it from there (None: none)."""
    source = ckpt.ngrams_file
    if source is None:
        return None
    from textgate import ngrams

    if not source.is_file():
        raise ExportError(
            f"{source}: missing — textgate.json names an n-gram model",
            hint="re-train the checkpoint (textgate train), or train with --no-ngrams",
        )
    shutil.copyfile(source, out / source.name)
    try:
        return ngrams.NgramModel.load(out / source.name)
    except (OSError, ValueError, KeyError) as exc:
        raise ExportError(f"{source}: not a readable n-gram model: {exc}") from None


def _joined_metrics(
    ckpt: Checkpoint, probs: Any, neural: dict[str, Any], combined: bool = False
) -> dict[str, Any]:
    scores = variants.f1_score(ckpt.labels, ckpt.test_labels, probs)
    transformer = {k: v for k, v in neural.items() if k != "model"}
    return {
        **scores,
        "n": len(ckpt.test_labels),
        "model": "fp32 ONNX + n-grams + symbols (combiner)" if combined else "fp32 ONNX + n-grams",
        "transformer_only": transformer,
    }


def _combiner(ckpt: Checkpoint, out: Path) -> Any:
    """Copy the checkpoint's combiner into the bundle and load it from there (None: none)."""
    source = ckpt.combiner_file
    if source is None:
        return None
    from textgate.signals.combiner import Combiner

    if not source.is_file():
        raise ExportError(
            f"{source}: missing — textgate.json names a combiner",
            hint="re-train the checkpoint (textgate train)",
        )
    shutil.copyfile(source, out / source.name)
    try:
        return Combiner.load(out / source.name)
    except (OSError, ValueError) as exc:
        raise ExportError(f"{source}: not a readable combiner: {exc}") from None


def _test_metrics(fp32: dict[str, Any]) -> dict[str, Any]:
    if "metrics" in fp32:
        return {**fp32["metrics"], "n": fp32["n"], "model": "fp32 ONNX"}
    return {"accuracy": None, "f1": None, "macro_f1": None, "n": 0, "note": "no test split"}


def _copy_checkpoint_reports(ckpt: Checkpoint, out: Path) -> None:
    for path in [ckpt.path / "metrics.json", *sorted(ckpt.path.glob("*.png"))]:
        if path.is_file():
            shutil.copy2(path, out / path.name)


def _default_variant(table: dict[str, dict[str, Any]]) -> dict[str, str]:
    def first(*names: str) -> str:
        return next(n for n in names if table.get(n, {}).get("status") == "accepted")

    return {"cpu": first("int8", "fp32-opt", "fp32"), "gpu": first("fp16", "fp32-opt", "fp32")}


def _manifest(
    ckpt: Checkpoint,
    report: dict[str, Any],
    tok: dict[str, Any],
    table: dict[str, dict[str, Any]],
    test_metrics: dict[str, Any],
    opset: int,
) -> dict[str, Any]:
    keep = ("n", "max_abs_diff", "mean_abs_diff", "argmax_agreement", "argmax_ties", "atol")
    return {
        "format": bundle.FORMAT,
        "task": ckpt.task,
        "labels": list(ckpt.labels),
        "max_length": ckpt.max_length,
        "model_type": ckpt.model_type,
        "inputs": list(convert.INPUTS),
        "outputs": list(convert.OUTPUTS),
        "opset": opset,
        "exporter": "torch.onnx TorchScript (dynamo=False), eager attention",
        "metrics": {"test": test_metrics},
        "parity": {**{k: report[k] for k in keep}, "passed": report["passed"]},
        "tokenizer": tok,
        "variants": table,
        "default_variant": _default_variant(table),
        "data_hash": ckpt.data_hash,
        "parity_texts_hash": report["texts_hash"],
        "source": {"checkpoint": ckpt.path.name, "textgate_checkpoint": bool(ckpt.textgate)},
        "versions": {name: _version(name) for name in _VERSIONED},
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
