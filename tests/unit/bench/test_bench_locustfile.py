"""The Locust file imports without Locust installed and speaks both HTTP targets."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

LOCUSTFILE = Path(__file__).resolve().parents[3] / "benchmarks" / "suite" / "locustfile.py"


def test_locustfile_needs_no_locust_outside_locust() -> None:
    spec = importlib.util.spec_from_file_location("textgate_locustfile", LOCUSTFILE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert "locust" not in sys.modules
    path, body = module.request("hello")
    assert path == "/v1/classify/spam" and body == {"text": "hello"}
    module.TARGET = "v2"
    path, body = module.request("hello")
    assert path == "/v2/models/spam/infer" and body["inputs"][0]["data"] == ["hello"]
