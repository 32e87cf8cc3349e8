"""Pure logic of textgate.triton: finding the binary, the stub check, arguments, ports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from textgate import triton
from textgate.config import TritonConfig
from textgate.errors import TritonError, TritonNotFound


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
    monkeypatch.setattr(triton, "stub_libpython", lambda _inst: Path("/usr/lib/libpython3.11.so"))
    monkeypatch.setattr(triton, "interpreter_libpython", lambda: None)
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


def test_check_before_start_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TritonError, match="never started"):
        triton.TritonServer(tmp_path).check()
    assert triton.TritonServer(tmp_path).stop() is None


def test_free_port_is_bindable() -> None:
    assert 0 < triton.free_port() < 65536
