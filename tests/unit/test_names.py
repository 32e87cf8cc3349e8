"""Triton model names: one spelling, used by the builder, the release store and the router."""

from __future__ import annotations

import pytest

from textgate import names
from textgate.errors import InvalidInput


def test_the_steps_of_an_ensemble() -> None:
    assert names.tokenize("spam") == "spam_tokenize"
    assert names.model("spam") == "spam_model"
    assert names.postprocess("spam") == "spam_postprocess"
    assert names.precise_model("spam") == "spam_model_fp32"
    assert names.precise_ensemble("spam") == "spam_fp32"
    assert names.is_precise("spam_v2_model_fp32") and not names.is_precise("spam_v2_model")


def test_release_versions_round_trip() -> None:
    assert names.version_ensemble("spam", 3) == "spam" + names.version_suffix(3) == "spam_v3"
    assert names.model(names.version_ensemble("spam", 3)) == "spam_v3_model"
    assert names.parse_version("spam_x_v12") == ("spam_x", 12)
    for plain in ("spam", "spam_v", "_v3", "spam_vx", "model_v2b"):
        assert names.parse_version(plain) is None, plain
        assert names.release_task(plain) == plain
    assert names.release_task("spam-sms_v7") == "spam-sms"


def test_the_builder_spec_uses_the_same_names() -> None:
    from pathlib import Path

    from textgate.repository.spec import TaskSpec

    spec = TaskSpec("spam", Path("."), {}, ("ham", "spam"), 64, (64,), "fp32", "m.onnx",
                    "tokenizer.json", None, name="spam_v4")  # fmt: skip
    assert (spec.tokenize, spec.model, spec.postprocess) == (
        names.tokenize("spam_v4"), names.model("spam_v4"), names.postprocess("spam_v4"),
    )  # fmt: skip
    assert (spec.precise_model, spec.precise_ensemble) == ("spam_v4_model_fp32", "spam_v4_fp32")


@pytest.mark.parametrize("bad", ["", "a/b", "..", "x\n", "-x", "a b"])
def test_a_model_name_is_a_directory_and_a_path_segment(bad: str) -> None:
    assert not names.is_model_name(bad)
    assert names.is_model_name("Spam.v1-x_2")


def test_a_task_name_is_checked_once() -> None:
    assert names.check_task("spam-sms") == "spam-sms"
    with pytest.raises(InvalidInput) as err:
        names.check_task("../x", field="bundle.task")
    assert err.value.field == "bundle.task" and err.value.reason == "invalid_name"


def test_the_glob_of_a_version_escapes_its_name() -> None:
    assert names.member_glob("s[p]am_v1") == "s[[]p]am_v1_*"


def test_names_triton_and_release_import_no_higher_layer() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, textgate.names, textgate.repository, textgate.triton, textgate.release; "
        "print(sorted(m for m in sys.modules if m.startswith(('textgate.gateway', "
        "'textgate.cli', 'textgate.commands', 'textgate.replicas'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    probe = (
        "import sys, textgate.names; "
        "print(sorted(m for m in sys.modules if m.startswith('textgate.')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['textgate.errors', 'textgate.names']"
