"""The ``tritonserver`` process as a lifecycle object: find, start, wait ready, stop.

    with TritonServer(repo, config=cfg.triton) as server:   # start() + wait_ready()
        server.http_url, server.grpc_url, server.metrics_url
        server.load_model("spam_model")                     # through server.control

Readiness is polled over HTTP with the standard library only (``control.HttpControl``), so
this module needs no tritonclient and shares no client across threads.

Just over 400 lines: one process's whole life (locate, command line, start, readiness,
crash report, stop) on one page; the HTTP calls already live in ``control``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from textgate.config import TritonConfig
from textgate.config.serving import serial_blas
from textgate.errors import ModelLoadError, TritonError, TritonStartError
from textgate.triton.control import API_KEY_HEADER, HttpControl, ModelState
from textgate.triton.install import (
    SITE_PACKAGES_ENV,
    Installation,
    check_stub_python,
    find_installation,
    library_path,
    site_packages,
)

_PR_SET_PDEATHSIG = 1
_POLL_S = 0.2
# The repository index is quick; a load may take as long as a start.
_INDEX_TIMEOUT_S = 30.0


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


# Resolved once in the parent: between fork and exec a lock held by another thread can
# never be released, so the child must not load libraries (find_library runs ldconfig).
_PRCTL = getattr(ctypes.CDLL(None, use_errno=True), "prctl", None)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel sends SIGTERM to tritonserver
    # when the thread that started it exits, so no server outlives a crashed parent.
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


# What tritonserver and its Python-backend stubs get of our environment: locale, paths and
# the thread/device knobs of ONNX Runtime and CUDA. Not the rest: TEXTGATE_* overrides carry
# the admin token, tenant API keys and broker credentials, which models never need.
_ENV_KEEP = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "SHELL"})
_ENV_PREFIXES = ("LC_", "OMP_", "MKL_", "OPENBLAS_", "CUDA_", "NVIDIA_", "ORT_", "TRITON_")


def scrubbed_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k in _ENV_KEEP or k.startswith(_ENV_PREFIXES)}


class TritonServer:
    """One tritonserver process serving one model repository in explicit control mode."""

    def __init__(
        self,
        repository: Path | str,
        *,
        models: Sequence[str] | None = None,
        config: TritonConfig | None = None,
        extra_args: Sequence[str] = (),
        api_key: str | None = None,
    ) -> None:
        self.repository = Path(repository).resolve()
        # With a key, Triton's model-repository API (index, load, unload) over HTTP and gRPC
        # answers only requests carrying it (the restricted-API flags); this object sends it.
        self.api_key = api_key
        self.config = config or TritonConfig()
        self.models = list(models) if models is not None else repository_models(self.repository)
        self.extra_args = list(extra_args)
        self.installation: Installation | None = None
        self.http_port = self.grpc_port = self.metrics_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._log_path: Path | None = None
        self._log_offset = 0  # where this run starts in a (possibly shared) log file
        self._final_log = ""
        self._stopped = False

    # --- lifecycle -------------------------------------------------------------------

    def start(self) -> TritonServer:
        if self._proc is not None and self._proc.poll() is None:
            raise TritonError(f"tritonserver is already running (pid {self._proc.pid})")
        if not self.repository.is_dir():
            raise TritonStartError(f"model repository {self.repository} is not a directory")
        inst = find_installation(self.config)
        check_stub_python(inst)
        self.installation = inst
        self._workdir = Path(tempfile.mkdtemp(prefix="textgate-triton-"))
        self._log_path = self.config.log_file or self._workdir / "tritonserver.log"
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        self._pick_ports()
        try:
            self._spawn(inst)
        except OSError as exc:  # e.g. a script whose interpreter is missing
            self._remove_workdir()
            raise TritonStartError(
                f"cannot run {inst.binary}: {exc}",
                hint="point triton.binary at a working tritonserver",
            ) from None
        self._stopped = False
        return self

    def _spawn(self, inst: Installation) -> None:
        assert self._log_path is not None
        cmd = [str(inst.binary), *self._args(inst, self._prepare_backends(inst))]
        with open(self._log_path, "ab") as log:
            # A configured log_file outlives runs: mark where this one starts, so failure
            # excerpts (log_text) never quote an earlier run's lines for the same model.
            self._log_offset = log.tell()
            log.write(f"--- textgate: tritonserver start {time.time():.3f}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env(inst),
                start_new_session=True,  # own process group: stop() reaches the stubs too
                preexec_fn=_die_with_parent,
            )

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Block until the server is live and every model settled; raise on any failure."""
        timeout = self.config.startup_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout
        while True:
            self.check()
            if self._get("/v2/health/live") is not None:
                states = self.model_states()
                pending = [m for m in self.models if _pending(states.get(m))]
                if not pending:
                    self._raise_failed(states)
                    return
            if time.monotonic() > deadline:
                raise TritonStartError(
                    f"tritonserver was not ready after {timeout:.0f} s\n{self.log_tail(20)}",
                    hint=f"raise triton.startup_timeout_s, or read the log: {self._log_path}",
                )
            time.sleep(_POLL_S)

    def stop(self) -> int | None:
        """SIGINT (Triton drains in-flight requests), then SIGKILL the process group."""
        proc = self._proc
        if proc is None or self._stopped:
            # Once stopped, the group id may already belong to an unrelated process.
            return None if proc is None else proc.returncode
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=self.config.exit_timeout_s + 5)
            except subprocess.TimeoutExpired:
                self._kill_group(proc.pid)
                proc.wait(timeout=30)
        # Stubs are Triton's children in our process group; none may outlive the server.
        self._kill_group(proc.pid)
        self._stopped = True
        self._final_log = self.log_tail(200)
        self._remove_workdir()
        return proc.returncode

    def _remove_workdir(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __enter__(self) -> TritonServer:
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- state -----------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def check(self) -> None:
        """Raise ``TritonStartError`` if the process has exited (killed, crashed)."""
        if self._proc is None:
            raise TritonError("tritonserver was never started")
        code = self._proc.poll()
        if code is None:
            return
        how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
        raise TritonStartError(f"tritonserver (pid {self._proc.pid}) {how}\n{self.log_tail(20)}")

    @property
    def http_url(self) -> str:
        return f"{self._host()}:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"{self._host()}:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self._host()}:{self.metrics_port}/metrics"

    @property
    def log_path(self) -> Path | None:
        return self._log_path

    def log_tail(self, lines: int = 50) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def log_text(self) -> str:
        """This run's log (from its start marker on)."""
        if self._log_path is not None and self._log_path.is_file():
            with open(self._log_path, "rb") as fh:
                fh.seek(self._log_offset)
                return fh.read().decode("utf-8", errors="replace")
        return self._final_log

    def metadata(self) -> dict[str, Any]:
        """Server metadata (name, version, extensions)."""
        data = self._get("/v2")
        if not isinstance(data, dict):
            raise TritonError("tritonserver did not answer GET /v2")
        return data

    @property
    def control(self) -> HttpControl:
        """Model control of this process (read per call: the ports are picked at start)."""
        return HttpControl(
            self.http_url,
            self.api_key,
            timeout_s=self.config.startup_timeout_s,
            index_timeout_s=_INDEX_TIMEOUT_S,
            explain=self._excerpt,
        )

    def model_states(self) -> dict[str, ModelState]:
        """Repository index: one state per model; empty while the server does not answer."""
        try:
            return self.control.model_states()
        except TritonError:
            return {}

    def load_model(self, name: str) -> None:
        """Load (or reload) one model; ``ModelLoadError`` with Triton's reason and the log
        lines naming the model. A load gets ``startup_timeout_s`` (the Python stubs import
        ONNX Runtime); a dead server or a load past that is a ``TritonError``."""
        self.control.load_model(name)

    def unload_model(self, name: str) -> None:
        self.control.unload_model(name)

    # --- internals -------------------------------------------------------------------

    def _pick_ports(self) -> None:
        cfg = self.config
        taken: set[int] = set()
        ports = []
        for wanted in (cfg.http_port, cfg.grpc_port, cfg.metrics_port):
            port = wanted
            while port == 0 or port in taken:
                port = free_port(cfg.address)
            taken.add(port)
            ports.append(port)
        self.http_port, self.grpc_port, self.metrics_port = ports

    def _prepare_backends(self, inst: Installation) -> Path | None:
        """Copy the wheel's Python backend with the stub for this interpreter."""
        if inst.backend_dir is not None:
            return inst.backend_dir
        if inst.python_backend is None or inst.stub is None or self._workdir is None:
            return None
        dest = self._workdir / "backends" / "python"
        shutil.copytree(inst.python_backend, dest, ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy2(inst.stub, dest / "triton_python_backend_stub")
        return dest.parent

    def _args(self, inst: Installation, backends: Path | None) -> list[str]:
        cfg = self.config
        # A unique shared-memory prefix: several servers on one machine must not collide.
        shm = f"textgate{os.getpid()}_{secrets.token_hex(3)}_"
        args = [
            f"--model-repository={self.repository}",
            "--model-control-mode=explicit",
            *(f"--load-model={m}" for m in self.models),
            f"--http-address={cfg.address}",
            f"--http-port={self.http_port}",
            f"--grpc-address={cfg.address}",
            f"--grpc-port={self.grpc_port}",
            f"--metrics-address={cfg.address}",
            f"--metrics-port={self.metrics_port}",
            "--allow-metrics=true",
            "--allow-gpu-metrics=false",
            # One broken model must not take the others down; wait_ready reports it.
            "--exit-on-error=false",
            "--strict-readiness=false",
            "--disable-auto-complete-config",
            f"--exit-timeout-secs={cfg.exit_timeout_s}",
            f"--log-verbose={cfg.log_verbose}",
            f"--backend-config=python,shm-region-prefix-name={shm}",
        ]
        if self.api_key:
            # Both protocols: repository index, load and unload need the key header (the
            # gateway's gRPC client and the release control send it).
            restricted = f"model-repository:{API_KEY_HEADER}={self.api_key}"
            args.append(f"--http-restricted-api={restricted}")
            args.append(f"--grpc-restricted-protocol={restricted}")
        if backends is not None:
            args.append(f"--backend-directory={backends}")
        if inst.libs_dir is not None:
            args.append("--pinned-memory-pool-byte-size=0")  # the wheel's server is CPU-only
        return args + self._trace_args() + self.extra_args

    def _trace_args(self) -> list[str]:
        cfg = self.config
        if cfg.trace_mode == "off":
            return []
        args = ["--trace-config", f"mode={cfg.trace_mode}", "--trace-config",
                f"rate={cfg.trace_rate}", "--trace-config", "level=TIMESTAMPS"]  # fmt: skip
        if cfg.trace_mode == "triton":
            assert self._log_path is not None
            file = cfg.trace_file or self._log_path.with_name("triton-trace.json")
            return [*args, "--trace-config", f"triton,file={file}",
                    "--trace-config", "triton,log-frequency=1"]  # fmt: skip
        return [*args, "--trace-config", f"opentelemetry,url={cfg.trace_url}"]

    def _env(self, inst: Installation) -> dict[str, str]:
        env = scrubbed_env(os.environ)
        serial_blas(env)  # the Python-backend stubs' numpy
        env["LD_LIBRARY_PATH"] = library_path(inst, os.environ)
        env[SITE_PACKAGES_ENV] = os.pathsep.join(site_packages())
        return env

    def _raise_failed(self, states: dict[str, ModelState]) -> None:
        failed = [m for m in self.models if states.get(m, _MISSING).state != "READY"]
        if not failed:
            return
        first = failed[0]
        reason = states.get(first, _MISSING).reason
        others = f"\n(also not ready: {', '.join(failed[1:])})" if failed[1:] else ""
        raise ModelLoadError(
            first,
            self._excerpt(first, reason) + others,
            hint=f"full log: {self._log_path}",
        )

    def _excerpt(self, model: str, reason: str) -> str:
        # Lines naming the model; the stub's Python traceback arrives as its own lines.
        quoted = [
            line
            for line in self.log_text().splitlines()
            if f"'{model}'" in line or "textgate:" in line
        ]
        lines = ([f"  reason: {reason}"] if reason else []) + [f"  | {q}" for q in quoted[-15:]]
        return "\n".join(lines) or "  (no log lines)"

    def _host(self) -> str:
        return "127.0.0.1" if self.config.address in ("0.0.0.0", "") else self.config.address

    def _get(self, path: str) -> Any:
        return self.control.get(path)

    @staticmethod
    def _kill_group(pgid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)


_MISSING = ModelState("", "", "MISSING", "not in the repository index")


def _pending(state: ModelState | None) -> bool:
    return state is not None and state.state in ("LOADING", "UNLOADING")


def repository_models(repository: Path) -> list[str]:
    """Every model directory (one holding config.pbtxt), ensembles last."""
    if not repository.is_dir():
        return []
    names = sorted(p.parent.name for p in repository.glob("*/config.pbtxt"))
    return names
