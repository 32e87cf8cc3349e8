"""The ``textgate`` subcommands, one module per concern.

Each module has one ``register(subparsers)`` that adds its subcommands, each with a
``handler`` default: ``textgate.cli.main`` parses, calls the handler, and maps any
``TextgateError`` to its exit code. ``GROUPS`` is the order of ``textgate --help``.

Handlers import what they run (torch, fastapi, ...) inside themselves, so that
``textgate --help`` and the light commands stay fast: at import time a module here may
import only the standard library, rich, ``textgate.errors`` and ``commands.common``.
"""

from __future__ import annotations

from textgate.commands import bench, bundles, gateway, learning, release, serving, training

GROUPS = (training, bundles, serving, bench, gateway, learning, release)
