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
