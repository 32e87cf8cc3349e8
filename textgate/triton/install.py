"""Where a usable ``tritonserver`` lives and what it needs to run.

The embedded default runs the binary inside the ``nvidia-pytriton`` wheel. Its Python-backend
stub embeds the system ``libpython`` and ignores ``PYTHONPATH``; the server therefore exports
``TEXTGATE_SITE_PACKAGES`` (this interpreter's site-packages), which every generated
``model.py`` puts on ``sys.path`` before importing numpy. A stub whose libpython is not the one
this interpreter runs on is refused up front (``check_stub_python``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from textgate.config import TritonConfig
from textgate.errors import TritonNotFound

BINARY_ENV = "TEXTGATE_TRITONSERVER"
SITE_PACKAGES_ENV = "TEXTGATE_SITE_PACKAGES"


@dataclass(frozen=True)
class Installation:
    """Where a usable tritonserver lives and what it needs to run."""

    binary: Path
    source: str  # "config", "env TEXTGATE_TRITONSERVER" or "nvidia-pytriton wheel"
    backend_dir: Path | None  # an install's own backends; None: prepare from the wheel
    libs_dir: Path | None  # shared libraries the wheel's binary and stub link against
    python_backend: Path | None  # the wheel's backends/python (libtriton_python.so, utils)
    stub: Path | None  # the wheel's stub for this interpreter's major.minor


def _wheel_root() -> Path | None:
    try:
        import pytriton
    except ImportError:
        return None
    return Path(pytriton.__file__).resolve().parent


def find_installation(
    config: TritonConfig | None = None, env: Mapping[str, str] | None = None
) -> Installation:
    """Config path, then ``$TEXTGATE_TRITONSERVER``, then the nvidia-pytriton wheel."""
    config = config or TritonConfig()
    env = os.environ if env is None else env
    if config.binary is not None:
        return _external(config.binary, "config triton.binary", config.backend_dir)
    if env.get(BINARY_ENV):
        return _external(Path(env[BINARY_ENV]), f"env {BINARY_ENV}", config.backend_dir)
    root = _wheel_root()
    if root is None:
        raise TritonNotFound(
            "no tritonserver: the nvidia-pytriton wheel is not installed and neither "
            f"triton.binary nor {BINARY_ENV} is set",
            hint="pip install 'textgate[serve]', or point triton.binary at a tritonserver",
        )
    dist = root / "tritonserver"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    stub = dist / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        have = sorted(p.name for p in (dist / "python_backend_stubs").glob("*"))
        raise TritonNotFound(
            f"the nvidia-pytriton wheel has no Python-backend stub for Python {version} "
            f"(it has {', '.join(have)})",
            hint="run textgate from a venv made with one of those Python versions",
        )
    return Installation(
        binary=dist / "bin" / "tritonserver",
        source="nvidia-pytriton wheel",
        backend_dir=config.backend_dir,
        libs_dir=root.parent / "nvidia_pytriton.libs",
        python_backend=dist / "backends" / "python",
        stub=stub,
    )


def _external(binary: Path, source: str, backend_dir: Path | None) -> Installation:
    binary = binary.expanduser()
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise TritonNotFound(
            f"{source} names {binary}, which is not an executable file",
            hint="fix the path or unset it to use the nvidia-pytriton wheel",
        )
    if backend_dir is None:
        guess = binary.resolve().parent.parent / "backends"  # layout of /opt/tritonserver
        backend_dir = guess if guess.is_dir() else None
    return Installation(binary, source, backend_dir, None, None, None)


def library_path(inst: Installation, env: Mapping[str, str]) -> str:
    parts = [str(inst.libs_dir)] if inst.libs_dir else []
    if env.get("LD_LIBRARY_PATH"):
        parts.append(env["LD_LIBRARY_PATH"])
    return os.pathsep.join(parts)


def interpreter_libpython() -> Path | None:
    """The shared libpython this interpreter runs on, or None for a static build."""
    libdir = sysconfig.get_config_var("LIBDIR")
    soname = sysconfig.get_config_var("INSTSONAME")
    if not libdir or not soname:
        return None
    path = Path(libdir) / soname
    return path.resolve() if path.exists() else None


def stub_libpython(inst: Installation) -> Path | None:
    """The libpython the dynamic loader gives the stub (via ldd), or None if unknown."""
    if inst.stub is None or shutil.which("ldd") is None:
        return None
    env = dict(os.environ, LD_LIBRARY_PATH=library_path(inst, os.environ))
    try:
        out = subprocess.run(
            ["ldd", str(inst.stub)], capture_output=True, text=True, env=env, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"libpython\S*\s*=>\s*(\S+)", out)
    if match is None or match.group(1) == "not":
        return None
    return Path(match.group(1)).resolve()


def check_stub_python(inst: Installation) -> None:
    """Refuse a stub that would embed a different Python than this interpreter."""
    if inst.stub is None:
        return
    stub_lib = stub_libpython(inst)
    ours = interpreter_libpython()
    if stub_lib is None:
        raise TritonNotFound(
            f"the Python-backend stub {inst.stub.name} finds no libpython"
            f"{sys.version_info.major}.{sys.version_info.minor}",
            hint=f"install the system package libpython{sys.version_info.major}."
            f"{sys.version_info.minor}",
        )
    if ours is None or ours != stub_lib:
        raise TritonNotFound(
            f"the Python-backend stub embeds {stub_lib}, but this interpreter "
            f"({sys.executable}, Python {sys.version.split()[0]}) runs on "
            f"{ours or 'a static libpython'}; models would import packages built for another "
            "Python",
            hint="recreate the venv from the system interpreter that owns that libpython "
            "(e.g. `/usr/bin/python3.11 -m venv .venv`) and reinstall textgate",
        )


def site_packages() -> list[str]:
    paths = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    return list(dict.fromkeys(p for p in paths if Path(p).is_dir()))
