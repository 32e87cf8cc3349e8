"""A parse target for the worker-pool tests: hangs on a marker, like an undiscovered
pathological input would (spawned workers import it by name: the repository root is on sys.path)."""

from __future__ import annotations

import time

from textgate.normalize import Normalized, NormalizeSettings, normalize_email

MARKER = b"X-Hang: forever"


def normalize_or_hang(raw: bytes, settings: NormalizeSettings) -> Normalized:
    if MARKER in raw:
        time.sleep(3600)
    return normalize_email(raw, settings)


def exit_at_once(raw: bytes, settings: NormalizeSettings) -> Normalized:
    """A worker whose first parse (the warm-up) ends its process: it never starts."""
    import os

    os._exit(3)


def blas_threads(raw: bytes, settings: NormalizeSettings) -> Normalized:
    """The worker's OPENBLAS_NUM_THREADS and the threads numpy's BLAS really uses, as text."""
    import os

    import numpy as np
    from threadpoolctl import threadpool_info

    np.ones((64, 64)) @ np.ones((64, 64))  # BLAS is loaded and has started its threads
    used = max((p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"), default=0)
    said = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    return normalize_email(b"Subject: blas\r\n\r\nenv " + f"{said} used {used}".encode(), settings)
