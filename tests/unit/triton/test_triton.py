"""Pure logic of textgate.triton: finding the binary, the stub check, arguments, ports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from textgate import triton
from textgate.config import TritonConfig
from textgate.errors import TritonError, TritonNotFound, TritonStartError
from textgate.triton import install
from textgate.triton import server as triton_server


def test_wheel_installation_found_for_this_interpreter() -> None:
    pytest.importorskip("pytriton")
    inst = triton.find_installation(TritonConfig(), env={})
    assert inst.binary.name == "tritonserver" and inst.binary.is_file()
    assert inst.stub is not None and inst.stub.is_file()
    assert inst.libs_dir is not None and inst.libs_dir.is_dir()


def test_config_path_wins_over_env(tmp_path: Path) -> None:
    binary = tmp_path / "bin" / "tritonserver"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    (tmp_path / "backends").mkdir()
    inst = triton.find_installation(TritonConfig(binary=binary), env={triton.BINARY_ENV: "/no"})
    assert inst.binary == binary and inst.source.startswith("config")
    assert inst.backend_dir == tmp_path / "backends"
    env_inst = triton.find_installation(TritonConfig(), env={triton.BINARY_ENV: str(binary)})
    assert env_inst.source == f"env {triton.BINARY_ENV}"


def test_missing_binary_is_not_found_with_a_fix(tmp_path: Path) -> None:
    with pytest.raises(TritonNotFound) as info:
        triton.find_installation(TritonConfig(binary=tmp_path / "nope"), env={})
    assert info.value.hint


def test_stub_python_matches_this_venv() -> None:
    pytest.importorskip("pytriton")
    inst = triton.find_installation(TritonConfig(), env={})
    if triton.stub_libpython(inst) is None:
        pytest.skip("ldd is not available")
    triton.check_stub_python(inst)  # this venv is made from the system python3.11


def test_stub_python_mismatch_is_refused_with_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    inst = triton.Installation(tmp_path, "x", None, None, None, tmp_path / "stub")
    monkeypatch.setattr(install, "stub_libpython", lambda _inst: Path("/usr/lib/libpython3.11.so"))
    monkeypatch.setattr(install, "interpreter_libpython", lambda: None)
    with pytest.raises(TritonNotFound) as info:
        triton.check_stub_python(inst)
    assert "venv" in (info.value.hint or "")


def test_arguments(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.pbtxt").write_text("")
    server = triton.TritonServer(tmp_path, config=TritonConfig(http_port=0, grpc_port=0))
    assert server.models == ["a"]
    server._pick_ports()
    ports = {server.http_port, server.grpc_port, server.metrics_port}
    assert len(ports) == 3 and server.metrics_port == 8002
    inst = triton.Installation(Path("/bin/true"), "x", None, tmp_path, None, None)
    args = server._args(inst, tmp_path / "backends")
    assert "--model-control-mode=explicit" in args and "--load-model=a" in args
    assert f"--backend-directory={tmp_path / 'backends'}" in args
    assert any(a.startswith("--backend-config=python,shm-region-prefix-name=") for a in args)
    env = server._env(inst)
    assert env["LD_LIBRARY_PATH"].split(os.pathsep)[0] == str(tmp_path)
    assert env[triton.SITE_PACKAGES_ENV]


def test_the_stubs_run_numpy_blas_on_one_thread_unless_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = triton.TritonServer(tmp_path, config=TritonConfig(http_port=0, grpc_port=0))
    inst = triton.Installation(Path("/bin/true"), "x", None, tmp_path, None, None)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert server._env(inst)["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert server._env(inst)["OPENBLAS_NUM_THREADS"] == "4"


def test_check_before_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TritonError, match="never started"):
        triton.TritonServer(tmp_path).check()
    assert triton.TritonServer(tmp_path).stop() is None


def test_free_port_is_bindable() -> None:
    assert 0 < triton.free_port() < 65536


def _fake_binary(tmp_path: Path, script: str) -> Path:
    binary = tmp_path / "bin" / "tritonserver"
    binary.parent.mkdir(exist_ok=True)
    binary.write_text(script)
    binary.chmod(0o755)
    return binary


def test_death_signal_is_set_without_loading_libraries_after_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # preexec_fn runs between fork and exec, where a lock held by another thread of the
    # parent can never be released: it must not look up libc (find_library runs ldconfig).
    import ctypes.util
    import signal
    import subprocess
    import sys

    def forbidden(*_a: object, **_k: object) -> None:
        raise AssertionError("library lookup after fork")

    monkeypatch.setattr(ctypes.util, "find_library", forbidden)
    monkeypatch.setattr(ctypes, "CDLL", forbidden)
    probe = (
        "import ctypes; sig = ctypes.c_int(); "
        "ctypes.CDLL(None).prctl(2, ctypes.byref(sig)); print(sig.value)"  # PR_GET_PDEATHSIG
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        preexec_fn=triton_server._die_with_parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert int(out) == signal.SIGTERM


def test_a_binary_that_cannot_be_executed_is_a_start_error_and_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tempfile

    binary = _fake_binary(tmp_path, "#!/nonexistent/interpreter\n")
    (tmp_path / "repo").mkdir()
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    server = triton.TritonServer(tmp_path / "repo", config=TritonConfig(binary=binary))
    with pytest.raises(TritonStartError) as info:
        server.start()
    assert str(binary) in info.value.message
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_second_stop_signals_no_process_group(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # After the first stop the group id is free for reuse by an unrelated process.
    binary = _fake_binary(tmp_path, "#!/bin/sh\nexec sleep 30\n")
    (tmp_path / "repo").mkdir()
    server = triton.TritonServer(tmp_path / "repo", config=TritonConfig(binary=binary))
    server.start()
    assert server.stop() is not None and not server.alive
    killed: list[int] = []
    monkeypatch.setattr(os, "killpg", lambda pgid, sig: killed.append(pgid))
    server.stop()
    assert killed == []


def test_restricted_api_covers_http_and_grpc(tmp_path: Path) -> None:
    server = triton.TritonServer(tmp_path, models=[], api_key="k" * 16)
    args = server._args(triton.Installation(Path("/bin/true"), "x", None, None, None, None), None)
    want = f"model-repository:{triton.API_KEY_HEADER}={'k' * 16}"
    assert f"--http-restricted-api={want}" in args
    assert f"--grpc-restricted-protocol={want}" in args


class _SlowHandler:
    """A loopback HTTP server that records paths and answers after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        import contextlib
        import http.server
        import threading
        import time

        self.paths: list[str] = []
        paths = self.paths

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                paths.append(self.path)
                time.sleep(delay)
                with contextlib.suppress(OSError):  # the client gave up: a broken pipe
                    self.send_response(200)
                    self.send_header("Content-Length", "2")
                    self.end_headers()
                    self.wfile.write(b"{}")

            def log_message(self, *_a: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _server_on(tmp_path: Path, port: int, timeout_s: float = 5.0) -> triton.TritonServer:
    server = triton.TritonServer(
        tmp_path, models=[], config=TritonConfig(startup_timeout_s=timeout_s)
    )
    server.http_port = port
    return server


def test_load_and_unload_on_a_dead_server_are_named_errors(tmp_path: Path) -> None:
    server = _server_on(tmp_path, triton.free_port())  # nothing listens there
    for call in (server.load_model, server.unload_model):
        with pytest.raises(TritonError, match=r"of model 'spam' failed: .* not reachable"):
            call("spam")


def test_a_slow_load_is_a_named_timeout_and_names_are_quoted(tmp_path: Path) -> None:
    slow = _SlowHandler(delay=1.0)
    try:
        server = _server_on(tmp_path, slow.port, timeout_s=0.2)
        with pytest.raises(TritonError, match=r"load of model 'a/b\?c#d'.*0\.2 s"):
            server.load_model("a/b?c#d")
        assert slow.paths == ["/v2/repository/models/a%2Fb%3Fc%23d/load"]
    finally:
        slow.close()


def test_log_text_quotes_only_this_run(tmp_path: Path) -> None:
    log = tmp_path / "triton.log"
    log.write_text("E model 'spam' failed in an earlier run\n")
    binary = _fake_binary(tmp_path, '#!/bin/sh\necho "I this run\'s line"\n')
    (tmp_path / "repo").mkdir()
    server = triton.TritonServer(
        tmp_path / "repo", config=TritonConfig(binary=binary, log_file=log, exit_timeout_s=0)
    )
    server.start()
    try:
        assert server._proc is not None
        server._proc.wait(timeout=10)
        text = server.log_text()
        assert "this run's line" in text and "earlier run" not in text
        assert "earlier run" in log.read_text()  # the file keeps its history
    finally:
        server.stop()


def test_tritonserver_gets_a_scrubbed_environment() -> None:
    from textgate.triton import scrubbed_env

    env = {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "OMP_NUM_THREADS": "2",
        "CUDA_VISIBLE_DEVICES": "0",
        "TEXTGATE_GATEWAY__ADMIN_TOKEN": "secret-admin-token",
        "TEXTGATE_EVENTS__KAFKA__PASSWORD": "secret",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "PYTHONPATH": "/somewhere",
    }
    assert scrubbed_env(env) == {
        "PATH": "/usr/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "OMP_NUM_THREADS": "2",
        "CUDA_VISIBLE_DEVICES": "0",
    }


def test_trace_settings_become_triton_flags(tmp_path: Path) -> None:
    inst = triton.Installation(Path("/bin/true"), "x", None, None, None, None)
    off = triton.TritonServer(tmp_path, models=[])
    assert "--trace-config" not in off._args(inst, None)
    cfg = TritonConfig(trace_mode="triton", trace_rate=10)
    server = triton.TritonServer(tmp_path, models=[], config=cfg)
    server._log_path = tmp_path / "log" / "tritonserver.log"
    args = server._args(inst, None)
    flags = [args[i + 1] for i, a in enumerate(args) if a == "--trace-config"]
    assert flags[:3] == ["mode=triton", "rate=10", "level=TIMESTAMPS"]
    assert f"triton,file={tmp_path / 'log' / 'triton-trace.json'}" in flags
    otel = TritonConfig(trace_mode="opentelemetry", trace_url="http://c:4318/v1/traces")
    args = triton.TritonServer(tmp_path, models=[], config=otel)._args(inst, None)
    assert "opentelemetry,url=http://c:4318/v1/traces" in args


def test_opentelemetry_tracing_needs_a_collector_url() -> None:
    from textgate.errors import ConfigError

    with pytest.raises(ConfigError, match="trace_url"):
        TritonConfig(trace_mode="opentelemetry")
    with pytest.raises(ConfigError, match="trace_rate"):
        TritonConfig(trace_rate=0)


FORKS_WHILE_GRPC_IS_BUSY = """
import asyncio, subprocess, threading, time
import textgate  # sets GRPC_ENABLE_FORK_SUPPORT before grpc is imported
import grpc.aio
from textgate.triton import server

def busy():
    async def calls():
        while True:
            channel = grpc.aio.insecure_channel("127.0.0.1:9")
            try:
                await channel.unary_unary("/x.Y/Z")(b"", timeout=0.01)
            except Exception:
                pass
            await channel.close()
    asyncio.run(calls())

threading.Thread(target=busy, daemon=True).start()
time.sleep(0.3)
codes = [subprocess.Popen(["true"], preexec_fn=server._die_with_parent).wait() for _ in range(150)]
print(sum(c != 0 for c in codes))
"""


def test_children_survive_a_fork_while_the_grpc_client_is_busy() -> None:
    # With gRPC's fork handlers on (its default), about 1 child in 4 started with a
    # preexec_fn aborted in them while another thread was in a gRPC call: a tritonserver
    # restarted beside a busy gateway died before exec.
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    out = subprocess.run(
        [sys.executable, "-c", FORKS_WHILE_GRPC_IS_BUSY],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip() == "0", out.stderr[-2000:]
