"""``textgate doctor``: every check that serving needs, as rows; never raises."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from textgate.config import TritonConfig
from textgate.errors import TritonError, TritonNotFound
from textgate.triton.install import check_stub_python, find_installation, stub_libpython
from textgate.triton.server import TritonServer


def diagnose(config: TritonConfig | None = None, *, start: bool = True) -> list[dict[str, Any]]:
    """Every serving check as {check, ok, detail, fix, optional}; never raises."""
    config = config or TritonConfig()
    checks: list[dict[str, Any]] = []

    def add(name: str, ok: bool, detail: str, fix: str = "", optional: bool = False) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail, "fix": fix, "optional": optional})

    try:
        inst = find_installation(config)
        add("tritonserver", True, f"{inst.binary} ({inst.source})")
    except TritonNotFound as exc:
        add("tritonserver", False, exc.message, exc.hint or "")
        inst = None
    if inst is not None and inst.stub is not None:
        try:
            check_stub_python(inst)
            add("stub python", True, f"{stub_libpython(inst)} = this interpreter's libpython")
        except TritonNotFound as exc:
            add("stub python", False, exc.message, exc.hint or "")
    if inst is not None and start:
        add(*_version_check(config))
    _runtime_checks(add)
    return checks


def _version_check(config: TritonConfig) -> tuple[str, bool, str, str]:
    with tempfile.TemporaryDirectory(prefix="textgate-doctor-") as empty:
        cfg = TritonConfig(
            binary=config.binary,
            backend_dir=config.backend_dir,
            http_port=0,
            grpc_port=0,
            metrics_port=0,
            exit_timeout_s=1,
            startup_timeout_s=60,
        )
        server = TritonServer(empty, models=[], config=cfg)
        try:
            with server:
                meta = server.metadata()
            return ("tritonserver version", True, f"{meta.get('name')} {meta.get('version')}", "")
        except TritonError as exc:
            return ("tritonserver version", False, exc.message.splitlines()[0], exc.hint or "")


def _runtime_checks(add: Any) -> None:
    from importlib import metadata

    for dist, fix in (
        ("onnxruntime", "pip install onnxruntime"),
        ("tokenizers", "pip install tokenizers"),
        ("tritonclient", "pip install 'textgate[serve]'"),
    ):
        try:
            add(dist, True, metadata.version(dist))
        except metadata.PackageNotFoundError:
            add(dist, False, "not installed", fix)
    try:
        import onnxruntime as ort

        providers = ort.get_available_providers()
        add("onnxruntime providers", True, ", ".join(providers))
    except ImportError:
        providers = []
    gpu = shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()
    add(
        "gpu",
        gpu,
        "NVIDIA device present" if gpu else "none: the embedded server runs on CPU",
        "" if gpu else "only needed for target triton-container with instance kind gpu",
        optional=True,
    )
    if gpu and "CUDAExecutionProvider" not in providers:
        add(
            "onnxruntime CUDA",
            False,
            "a GPU is present but onnxruntime has no CUDAExecutionProvider",
            "pip install onnxruntime-gpu (in place of onnxruntime)",
            optional=True,
        )
