"""Suite-wide settings: nothing in the tests may reach a model hub."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")

# Tiny random checkpoints and their exported bundles, built lazily once per session.
from tests.helpers.fixtures_models import tiny_bundle, tiny_checkpoint  # noqa: F401
