"""What a model repository holds, as data: one ``TaskSpec`` per bundle.

The spec is target-neutral; ``render.py`` turns it into config.pbtxt messages for the
embedded server or for NVIDIA's Triton container, and ``builder.py`` writes files.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textgate import bundle, names
from textgate.config import RepositoryConfig
from textgate.errors import RepositoryError


@dataclass(frozen=True)
class TaskSpec:
    """One task (one bundle): the ensemble ``<task>`` and its steps."""

    task: str
    bundle_dir: Path
    manifest: Mapping[str, Any]
    labels: tuple[str, ...]
    max_length: int
    buckets: tuple[int, ...]  # effective bucket lengths, all <= max_length
    variant: str
    model_file: str  # the variant's ONNX file, relative to the bundle
    tokenizer_file: str
    labels_file: str | None  # labels.json when the bundle has one
    # The fp32 variant served beside the fast one for the gateway's re-score (None: off).
    precise_variant: str | None = None
    precise_file: str | None = None
    # Triton name of the ensemble, prefix of its steps' names; empty: the task's name.
    # A release gives each version its own names (``spam_v3``) so versions load side by side.
    name: str = ""

    @property
    def tail_tokens(self) -> int:
        """The last tokens a long text keeps after its head (``textgate.window``; 0: none)."""
        return int((self.manifest.get("tokenizer") or {}).get("tail", 0))

    @property
    def temperature(self) -> float:
        """The bundle's calibration temperature; 1.0 (plain softmax) when it has none."""
        calib = self.manifest.get("calibration") or {}
        value = float(calib.get("temperature") or 1.0)
        if not 0.01 <= value <= 100.0:
            raise RepositoryError(
                f"{self.bundle_dir}: calibration temperature {value} is outside 0.01..100",
                hint="re-export the bundle; its manifest is damaged",
            )
        return value

    @property
    def ngrams_file(self) -> str | None:
        """The bundle's lexical half (``textgate.ngrams``) that postprocess joins, if any."""
        name = (self.manifest.get("ngrams") or {}).get("file")
        if not name:
            return None
        if name not in self.manifest.get("files", {}):
            raise RepositoryError(
                f"{self.bundle_dir}: the manifest names {name} but does not list it",
                hint="re-export the bundle; its manifest is damaged",
            )
        return str(name)

    @property
    def combiner_file(self) -> str | None:
        """The bundle's combiner (``textgate.signals.combiner``) that postprocess applies."""
        name = (self.manifest.get("combiner") or {}).get("file")
        if not name:
            return None
        if name not in self.manifest.get("files", {}):
            raise RepositoryError(
                f"{self.bundle_dir}: the manifest names {name} but does not list it",
                hint="re-export the bundle; its manifest is damaged",
            )
        return str(name)

    @property
    def cascade(self) -> tuple[float, float | None] | None:
        """The bundle's cascade bounds (allow at or below, quarantine at or above; None: that
        side off), or None without a cascade. A cascade needs the n-gram half it runs."""
        raw = self.manifest.get("cascade")
        if not raw:
            return None
        lo, hi = raw.get("allow_at_or_below"), raw.get("quarantine_at_or_above")
        if self.ngrams_file is None:
            raise RepositoryError(
                f"{self.bundle_dir}: the manifest has a cascade but no n-gram half to run it",
                hint="re-export the bundle; its manifest is damaged",
            )
        if problem := bundle.cascade_problem(lo, hi, len(self.labels)):
            raise RepositoryError(
                f"{self.bundle_dir}: the manifest's cascade {problem[0]} {problem[1]}",
                hint="re-export the bundle with usable bounds (textgate export --cascade-allow)",
            )
        return float(lo), None if hi is None else float(hi)

    @property
    def ngrams_negative(self) -> str:
        """The label the n-gram half's score is "not" (ham; negative for sentiment)."""
        index = (self.manifest.get("ngrams") or {}).get("negative", 0)
        if not isinstance(index, int) or not 0 <= index < len(self.labels):
            raise RepositoryError(
                f"{self.bundle_dir}: the n-gram half's negative label {index!r} is not a label",
                hint="re-export the bundle; its manifest is damaged",
            )
        return self.labels[index]

    @property
    def cheap(self) -> str:
        return names.cheap(self.ensemble)

    @property
    def combiner_symbols(self) -> str:
        """Symbol -> weight of the bundle's combiner, as compact JSON ('' without one)."""
        weights = (self.manifest.get("combiner") or {}).get("features") or {}
        fired = {k: v for k, v in weights.items() if k not in ("content", "lexical")}
        return json.dumps(fired, sort_keys=True, separators=(",", ":")) if fired else ""

    @property
    def reads_text(self) -> bool:
        """Postprocess needs the text: an n-gram half or a combiner (symbols ride on it)."""
        return bool(self.ngrams_file or self.combiner_file)

    @property
    def normalization(self) -> str:
        """The normalizer fingerprint the bundle was trained under, as JSON ('' if none)."""
        value = self.manifest.get("normalization")
        return json.dumps(value, sort_keys=True) if value else ""

    @property
    def ensemble(self) -> str:
        return self.name or self.task

    @property
    def tokenize(self) -> str:
        return names.tokenize(self.ensemble)

    @property
    def model(self) -> str:
        return names.model(self.ensemble)

    @property
    def postprocess(self) -> str:
        return names.postprocess(self.ensemble)

    @property
    def precise_model(self) -> str:
        return names.precise_model(self.ensemble)

    @property
    def precise_ensemble(self) -> str:
        return names.precise_ensemble(self.ensemble)

    @property
    def num_labels(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class RepositorySpec:
    tasks: tuple[TaskSpec, ...]
    settings: RepositoryConfig
    version: int

    @property
    def target(self) -> str:
        return self.settings.target

    @property
    def fused(self) -> bool:
        return self.settings.strategy == "fused"

    def model_names(self) -> list[str]:
        names = []
        for t in self.tasks:
            steps = [t.model, t.postprocess] if self.fused else [t.tokenize, t.model, t.postprocess]
            names += [*steps, t.ensemble]
            if t.precise_variant:
                names += [t.precise_model, t.precise_ensemble]
            if t.cascade is not None:
                names.append(t.cheap)
        return names


def effective_buckets(settings: RepositoryConfig, max_length: int) -> tuple[int, ...]:
    """Configured lengths clipped to max_length; max_length always closes the list."""
    if settings.strategy == "fixed":
        return (max_length,)
    return tuple(sorted({b for b in settings.bucket_lengths if b < max_length} | {max_length}))


def choose_variant(manifest: Mapping[str, Any], settings: RepositoryConfig) -> str:
    variants: Mapping[str, Any] = manifest["variants"]
    if settings.variant == "auto":
        device = "gpu" if settings.instance_group.kind == "gpu" else "cpu"
        name = (manifest.get("default_variant") or {}).get(device) or "fp32"
    else:
        name = settings.variant
    if name not in variants:
        raise RepositoryError(
            f"variant '{name}' is not in the bundle (it has {', '.join(sorted(variants))})",
            hint="set repository.variant to one of those, or 'auto'",
        )
    if variants[name].get("status") == "rejected":
        raise RepositoryError(
            f"variant '{name}' was rejected by the export gate: "
            f"{variants[name].get('reason', 'no reason recorded')}",
            hint="serve an accepted variant (repository.variant: auto)",
        )
    return name


def choose_precise(
    manifest: Mapping[str, Any], settings: RepositoryConfig, served: str
) -> str | None:
    """The fp32 variant to serve beside ``served``; None when off or when it is the same."""
    name = settings.rescore_variant
    if name == "none" or name == served:
        return None
    variants: Mapping[str, Any] = manifest["variants"]
    if name not in variants or variants[name].get("status") == "rejected":
        raise RepositoryError(
            f"rescore_variant '{name}' is not a servable variant of the bundle "
            f"(it has {', '.join(sorted(variants))})",
            hint="set repository.rescore_variant to an accepted fp32 variant, or none",
        )
    return name


def task_spec(
    bundle_dir: Path, manifest: Mapping[str, Any], settings: RepositoryConfig
) -> TaskSpec:
    task = str(manifest.get("task") or "")
    if not names.is_model_name(task):
        raise RepositoryError(
            f"{bundle_dir}: task name {task!r} cannot name a Triton model",
            hint="use letters, digits, '_', '-' or '.'",
        )
    labels = tuple(str(x) for x in manifest["labels"])
    if len(labels) < 2:
        raise RepositoryError(f"{bundle_dir}: a classifier needs at least two labels")
    max_length = int(manifest["max_length"])
    variant = choose_variant(manifest, settings)
    precise = choose_precise(manifest, settings, variant)
    tokenizer_file = str((manifest.get("tokenizer") or {}).get("file") or "tokenizer.json")
    if tokenizer_file not in manifest["files"]:
        raise RepositoryError(f"{bundle_dir}: the bundle lists no {tokenizer_file}")
    return TaskSpec(
        task=task,
        bundle_dir=bundle_dir,
        manifest=manifest,
        labels=labels,
        max_length=max_length,
        buckets=effective_buckets(settings, max_length),
        variant=variant,
        model_file=str(manifest["variants"][variant]["file"]),
        tokenizer_file=tokenizer_file,
        labels_file="labels.json" if "labels.json" in manifest["files"] else None,
        precise_variant=precise,
        precise_file=str(manifest["variants"][precise]["file"]) if precise else None,
    )


def describe(
    bundles: Sequence[Path | str],
    settings: RepositoryConfig,
    *,
    version: int = 1,
    suffix: str = "",
) -> RepositorySpec:
    """Verify every bundle (full rehash) and describe the repository they make.

    ``suffix`` is appended to every model name (``spam`` -> ``spam_v3``, ``spam_v3_model``).
    """
    if not bundles:
        raise RepositoryError("no bundles given")
    if version < 1:
        raise RepositoryError(f"version {version}: Triton versions are integers >= 1")
    tasks: list[TaskSpec] = []
    for path in bundles:
        bundle_dir = Path(path).resolve()
        spec = task_spec(bundle_dir, bundle.verify(bundle_dir), settings)
        if suffix:
            spec = dataclasses.replace(spec, name=f"{spec.task}{suffix}")
            if not names.is_model_name(spec.name):
                raise RepositoryError(f"model name {spec.name!r} is not a valid Triton name")
        clash = next((t for t in tasks if t.task == spec.task), None)
        if clash is not None:
            raise RepositoryError(
                f"two bundles are task '{spec.task}': {clash.bundle_dir} and {bundle_dir}",
                hint="one repository serves one bundle per task; build versions separately",
            )
        tasks.append(spec)
    return RepositorySpec(tasks=tuple(tasks), settings=settings, version=version)
