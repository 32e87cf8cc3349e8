"""RepositorySpec -> Triton ``ModelConfig`` messages -> config.pbtxt text.

Every config.pbtxt is built as a protobuf message (Triton's own schema, shipped inside
tritonclient) and printed with ``text_format``: a misspelt field fails here, at build time,
not when Triton loads the model. Two targets from one spec differ only in the model step:

    embedded          <task>_model is a Python-backend model running ONNX Runtime
    triton-container  <task>_model is platform "onnxruntime_onnx" (optionally TensorRT/CUDA)
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from google.protobuf import text_format

from textgate.config import RepositoryConfig
from textgate.errors import RepositoryError
from textgate.repository.spec import RepositorySpec, TaskSpec

try:
    from tritonclient.grpc import model_config_pb2 as _schema
except ImportError:  # pragma: no cover - tritonclient is part of the serve extra
    _schema = None  # type: ignore[assignment]
pb: Any = _schema

CONTAINER_MODEL_FILE = "model.onnx"  # the name Triton's ORT backend looks for


def _pb() -> Any:
    if pb is None:
        from textgate.errors import DependencyError

        raise DependencyError(
            "building a repository needs tritonclient (Triton's model config schema)",
            hint="pip install 'textgate[serve]'",
        )
    return pb


def render(spec: RepositorySpec) -> dict[str, Any]:
    """Model name -> ModelConfig, in load order (steps before their ensemble)."""
    configs: dict[str, Any] = {}
    for task in spec.tasks:
        if not spec.fused:
            configs[task.tokenize] = tokenize_config(task, spec.settings)
        if spec.fused:
            configs[task.model] = fused_config(task, spec.settings)
        elif spec.target == "embedded":
            configs[task.model] = python_model_config(task, spec.settings)
        else:
            configs[task.model] = onnx_platform_config(task, spec.settings)
        configs[task.postprocess] = postprocess_config(task, spec.settings)
        configs[task.ensemble] = ensemble_config(task, spec)
        if task.precise_variant:
            configs.update(precise_configs(task, spec))
        if task.cascade is not None:
            configs[task.cheap] = cheap_config(task, spec.settings)
    return configs


def to_text(config: Any) -> str:
    return str(text_format.MessageToString(config))


def parse(text: str) -> Any:
    """config.pbtxt text -> ModelConfig; raises RepositoryError on anything Triton would reject."""
    message = _pb().ModelConfig()
    try:
        text_format.Parse(text, message)
    except text_format.ParseError as exc:
        raise RepositoryError(f"config.pbtxt does not parse: {exc}") from None
    return message


# --- steps ---------------------------------------------------------------------------


def tokenize_config(task: TaskSpec, s: RepositoryConfig) -> Any:
    c = _base(task.tokenize, s, backend="python")
    _tensor(c.input, "text", "TYPE_STRING", [1])
    _tensor(c.output, "input_ids", "TYPE_INT64", [-1])
    _tensor(c.output, "attention_mask", "TYPE_INT64", [-1])
    _helper_scheduling(c, s)
    _params(c, _tokenizer_params(task))
    return c


def python_model_config(task: TaskSpec, s: RepositoryConfig) -> Any:
    c = _base(task.model, s, backend="python")
    _model_io(c, task)
    _model_scheduling(c, s)
    _params(c, _onnx_params(task, s, _file_name(task.model_file)))
    return c


def fused_config(task: TaskSpec, s: RepositoryConfig) -> Any:
    c = _base(task.model, s, backend="python")
    _tensor(c.input, "text", "TYPE_STRING", [1])
    _tensor(c.output, "logits", "TYPE_FP32", [task.num_labels])
    _model_scheduling(c, s)
    _params(c, {**_tokenizer_params(task), **_onnx_params(task, s, _file_name(task.model_file))})
    return c


def onnx_platform_config(task: TaskSpec, s: RepositoryConfig) -> Any:
    c = _base(task.model, s, platform="onnxruntime_onnx")
    c.default_model_filename = CONTAINER_MODEL_FILE
    _model_io(c, task)
    _model_scheduling(c, s)
    # Parameters of Triton's onnxruntime backend (not of textgate's Python models).
    threads = {
        "intra_op_thread_count": str(s.intra_op_threads()),
        "inter_op_thread_count": str(s.ort_inter_op_threads),
    }
    _params(c, threads)
    _accelerator(c, s)
    return c


def postprocess_config(task: TaskSpec, s: RepositoryConfig) -> Any:
    c = _base(task.postprocess, s, backend="python")
    _tensor(c.input, "logits", "TYPE_FP32", [task.num_labels])
    if task.reads_text:  # the lexical half and the combiner read the text (and its frame)
        _tensor(c.input, "text", "TYPE_STRING", [1])
    _tensor(c.output, "label", "TYPE_STRING", [1])
    _tensor(c.output, "probabilities", "TYPE_FP32", [task.num_labels])
    _helper_scheduling(c, s)
    params = {
        "labels": json.dumps(list(task.labels), ensure_ascii=False),
        "temperature": repr(task.temperature),
    }
    if task.normalization:
        params["normalization"] = task.normalization
    if task.labels_file:
        params["labels_file"] = task.labels_file
    if task.ngrams_file:
        params["ngrams_file"] = task.ngrams_file
    if task.combiner_file:
        params["combiner_file"] = task.combiner_file
        # the symbol weights, for the gateway's explanations (the file is what scores)
        params["combiner_symbols"] = task.combiner_symbols
    _params(c, params)
    return c


def cheap_config(task: TaskSpec, s: RepositoryConfig) -> Any:
    """The cascade's first stage: answers like the ensemble, from the n-gram half alone."""
    assert task.cascade is not None and task.ngrams_file
    lo, hi = task.cascade
    c = _base(task.cheap, s, backend="python")
    _tensor(c.input, "text", "TYPE_STRING", [1])
    _tensor(c.output, "label", "TYPE_STRING", [1])
    _tensor(c.output, "probabilities", "TYPE_FP32", [task.num_labels])
    _helper_scheduling(c, s)
    _params(
        c,
        {
            "labels": json.dumps(list(task.labels), ensure_ascii=False),
            "ngrams_file": task.ngrams_file,
            # the label the n-gram half scores against (the gateway checks the policy's)
            "negative_label": task.ngrams_negative,
            "allow_at_or_below": repr(lo),
            "quarantine_at_or_above": "" if hi is None else repr(hi),
        },
    )
    return c


def ensemble_config(task: TaskSpec, spec: RepositorySpec) -> Any:
    m = _pb()
    c = m.ModelConfig(name=task.ensemble, platform="ensemble")
    c.max_batch_size = spec.settings.max_batch_size
    _tensor(c.input, "text", "TYPE_STRING", [1])
    _tensor(c.output, "label", "TYPE_STRING", [1])
    _tensor(c.output, "probabilities", "TYPE_FP32", [task.num_labels])
    steps = c.ensemble_scheduling.step
    if spec.fused:
        _step(steps, task.model, {"text": "text"}, {"logits": "logits"})
    else:
        ids = {"input_ids": "input_ids", "attention_mask": "attention_mask"}
        _step(steps, task.tokenize, {"text": "text"}, ids)
        _step(steps, task.model, ids, {"logits": "logits"})
    outs = {"label": "label", "probabilities": "probabilities"}
    post_in = {"logits": "logits", **({"text": "text"} if task.reads_text else {})}
    _step(steps, task.postprocess, post_in, outs)
    return c


def precise_configs(task: TaskSpec, spec: RepositorySpec) -> dict[str, Any]:
    """<task>_model_fp32 and the ensemble <task>_fp32: the same steps around the fp32 file."""
    assert task.precise_variant and task.precise_file
    precise = dataclasses.replace(task, variant=task.precise_variant, model_file=task.precise_file)
    if spec.fused:
        model = fused_config(precise, spec.settings)
    elif spec.target == "embedded":
        model = python_model_config(precise, spec.settings)
    else:
        model = onnx_platform_config(precise, spec.settings)
    model.name = task.precise_model
    ensemble = ensemble_config(precise, spec)
    ensemble.name = task.precise_ensemble
    for step in ensemble.ensemble_scheduling.step:
        if step.model_name == task.model:
            step.model_name = task.precise_model
    return {task.precise_model: model, task.precise_ensemble: ensemble}


# --- pieces --------------------------------------------------------------------------


def _file_name(path: str) -> str:
    """A bundle file's name in a version directory (bundle files are flat)."""
    return path.rsplit("/", 1)[-1]


def _base(name: str, s: RepositoryConfig, *, backend: str = "", platform: str = "") -> Any:
    c = _pb().ModelConfig(name=name, max_batch_size=s.max_batch_size)
    if backend:
        c.backend = backend
    if platform:
        c.platform = platform
    _version_policy(c, s)
    return c


def _model_io(c: Any, task: TaskSpec) -> None:
    _tensor(c.input, "input_ids", "TYPE_INT64", [-1])
    _tensor(c.input, "attention_mask", "TYPE_INT64", [-1])
    _tensor(c.output, "logits", "TYPE_FP32", [task.num_labels])


def _tensor(field: Any, name: str, dtype: str, dims: list[int]) -> None:
    tensor = field.add()
    tensor.name = name
    tensor.data_type = _pb().DataType.Value(dtype)
    tensor.dims.extend(dims)


def _step(steps: Any, model: str, inputs: dict[str, str], outputs: dict[str, str]) -> None:
    step = steps.add()
    step.model_name = model
    step.model_version = -1  # the newest version the model's version_policy serves
    step.input_map.update(inputs)
    step.output_map.update(outputs)


def _version_policy(c: Any, s: RepositoryConfig) -> None:
    vp = s.version_policy
    if vp.policy == "all":
        c.version_policy.all.SetInParent()
    elif vp.policy == "specific":
        c.version_policy.specific.versions.extend(vp.versions)
    else:
        c.version_policy.latest.num_versions = vp.latest


def _model_scheduling(c: Any, s: RepositoryConfig) -> None:
    db = s.dynamic_batching
    if db.enabled:
        c.dynamic_batching.preferred_batch_size.extend(db.preferred_batch_sizes)
        c.dynamic_batching.max_queue_delay_microseconds = db.max_queue_delay_microseconds
    group = c.instance_group.add()
    group.count = s.model_instances()
    group.kind = _kind(s.instance_group.kind)
    group.gpus.extend(s.instance_group.gpus)


def _helper_scheduling(c: Any, s: RepositoryConfig) -> None:
    # Tokenize and postprocess batch whatever is queued but never wait for more: a delay
    # here would be paid on every request a second and third time.
    if s.dynamic_batching.enabled:
        c.dynamic_batching.SetInParent()
    group = c.instance_group.add()
    group.count = s.helper_instances
    group.kind = _pb().ModelInstanceGroup.KIND_CPU


def _kind(kind: str) -> int:
    groups = _pb().ModelInstanceGroup
    return int(groups.KIND_GPU if kind == "gpu" else groups.KIND_CPU)


def _params(c: Any, params: dict[str, str]) -> None:
    for key, value in params.items():
        c.parameters[key].string_value = value


def _tokenizer_params(task: TaskSpec) -> dict[str, str]:
    return {
        "tokenizer_file": _file_name(task.tokenizer_file),
        "max_length": str(task.max_length),
        "bucket_lengths": ",".join(str(b) for b in task.buckets),
        # Lets the gateway record which tokenizer produced an output (replay store).
        "tokenizer_sha256": str(task.manifest.get("files", {}).get(task.tokenizer_file, "")),
        # head + tail (textgate.window, copied beside model.py); absent: the head only
        **({"tail_tokens": str(task.tail_tokens)} if task.tail_tokens else {}),
    }


def _onnx_params(task: TaskSpec, s: RepositoryConfig, onnx_file: str) -> dict[str, str]:
    providers = ["CPUExecutionProvider"]
    if s.instance_group.kind == "gpu":
        providers.insert(0, "CUDAExecutionProvider")
    return {
        "onnx_file": onnx_file,
        "num_labels": str(task.num_labels),
        "intra_op_threads": str(s.intra_op_threads()),
        "inter_op_threads": str(s.ort_inter_op_threads),
        "allow_spinning": "1" if s.ort_allow_spinning else "0",
        "providers": ",".join(providers),
        "variant": task.variant,
    }


def _accelerator(c: Any, s: RepositoryConfig) -> None:
    if s.accelerator == "none":
        return
    if s.instance_group.kind != "gpu":
        raise RepositoryError(
            f"accelerator '{s.accelerator}' needs GPU instances",
            hint="set repository.instance_group.kind: gpu",
        )
    acc = c.optimization.execution_accelerators.gpu_execution_accelerator.add()
    acc.name = s.accelerator
    if s.accelerator == "tensorrt":
        acc.parameters["precision_mode"] = s.tensorrt_precision.upper()
        acc.parameters["max_workspace_size_bytes"] = str(s.tensorrt_max_workspace_bytes)
