"""Triton, from textgate's side: the process, model control + the v2 HTTP client, doctor.

    install.py   where a usable tritonserver lives; the Python-backend stub check
    server.py    TritonServer: one tritonserver process (start, wait ready, stop)
    control.py   HttpControl: repository index, load, unload, health, inference over HTTP
    doctor.py    diagnose(): every serving check, as rows

Model names (``T_vN_model``...) are spelled in ``textgate.names``, one layer down: the
repository builder needs them too.
"""

from textgate.triton.control import (
    API_KEY_HEADER,
    GRPC_API_KEY_HEADER,
    HttpControl,
    ModelControl,
    ModelState,
    http_infer,
)
from textgate.triton.doctor import diagnose
from textgate.triton.install import (
    BINARY_ENV,
    SITE_PACKAGES_ENV,
    Installation,
    check_stub_python,
    find_installation,
    interpreter_libpython,
    library_path,
    site_packages,
    stub_libpython,
)
from textgate.triton.server import (
    TritonServer,
    free_port,
    repository_models,
    scrubbed_env,
)

__all__ = [
    "API_KEY_HEADER",
    "BINARY_ENV",
    "GRPC_API_KEY_HEADER",
    "SITE_PACKAGES_ENV",
    "HttpControl",
    "Installation",
    "ModelControl",
    "ModelState",
    "TritonServer",
    "check_stub_python",
    "diagnose",
    "find_installation",
    "free_port",
    "http_infer",
    "interpreter_libpython",
    "library_path",
    "repository_models",
    "scrubbed_env",
    "site_packages",
    "stub_libpython",
]
