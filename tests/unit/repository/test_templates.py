"""The stdlib-only helpers the generated Python models share (no Triton needed)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from textgate.repository.templates import textgate_support as support


def test_bucket_for() -> None:
    assert support.bucket_for(1, [16, 32]) == 16
    assert support.bucket_for(16, [16, 32]) == 16
    assert support.bucket_for(17, [16, 32]) == 32
    assert support.bucket_for(99, [16, 32]) == 32


def test_decode_never_raises() -> None:
    assert support.decode(b"caf\xc3\xa9") == "café"
    assert support.decode(b"\xff") == "\ufffd"
    assert support.decode("x") == "x"


def test_verify_files(tmp_path: Path) -> None:
    (tmp_path / "a.onnx").write_bytes(b"abc")
    digest = support.sha256_file(str(tmp_path / "a.onnx"))
    (tmp_path / "manifest.json").write_text(json.dumps({"files": {"a.onnx": digest}}))
    support.verify_files(str(tmp_path), {"a.onnx": "a.onnx"})
    (tmp_path / "a.onnx").write_bytes(b"abd")
    with pytest.raises(RuntimeError, match=r"a\.onnx.*does not match"):
        support.verify_files(str(tmp_path), {"a.onnx": "a.onnx"})


def test_add_site_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", ["/x"])
    monkeypatch.setenv(support.SITE_PACKAGES_ENV, os.pathsep.join(["/a", "/b"]))
    support.add_site_packages()
    assert sys.path == ["/a", "/b", "/x"]


def test_settings_reads_parameters(tmp_path: Path) -> None:
    config = {"parameters": {"bucket_lengths": {"string_value": "16,32"}}}
    args = {
        "model_name": "m",
        "model_config": json.dumps(config),
        "model_repository": str(tmp_path),
        "model_version": "3",
    }
    s = support.Settings(args)
    assert s.ints("bucket_lengths") == [16, 32]
    assert s.version_dir == os.path.join(str(tmp_path), "3")
    with pytest.raises(RuntimeError, match="'missing'"):
        s.get("missing")


def test_every_template_imports_only_what_the_triton_stub_has() -> None:
    # They run in Triton's Python-backend stub, outside textgate; import-linter cannot see
    # their absolute `import textgate_support`, so this reads every template, whichever
    # shape strategy would copy it.
    import ast

    from textgate.repository import templates

    allowed = {"numpy", "tokenizers", "onnxruntime", "triton_python_backend_utils"}
    from textgate import ngrams, window
    from textgate.signals import combiner

    allowed |= {Path(templates.SUPPORT).stem} | set(sys.stdlib_module_names)
    allowed |= {"ngrams", "window", "combiner"}
    here = Path(templates.__file__).parent
    # textgate/ngrams.py is copied beside postprocess as ngrams.py when a bundle has one,
    # textgate/window.py beside the tokenize step when it reads a head + tail
    files = [*(here / n for n in templates.TEMPLATES.values()), here / templates.SUPPORT]
    copied = [Path(ngrams.__file__), Path(window.__file__), Path(combiner.__file__)]
    for path in [*files, *copied]:
        name = path.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{name}: relative import"
                modules = [node.module or ""]
            elif isinstance(node, ast.Import):
                modules = [a.name for a in node.names]
            else:
                continue
            for module in modules:
                assert module.split(".")[0] in allowed, f"{name} imports {module}"


@pytest.mark.parametrize("spin", ["0", "1"])
def test_onnx_classifier_passes_spinning_to_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spin: str
) -> None:
    import onnxruntime as ort

    version = tmp_path / "1"
    version.mkdir()
    (version / "m.onnx").write_bytes(b"not read: the session is replaced")
    digest = support.sha256_file(str(version / "m.onnx"))
    (version / "manifest.json").write_text(json.dumps({"files": {"m.onnx": digest}}))
    params = {"onnx_file": "m.onnx", "intra_op_threads": "2", "allow_spinning": spin}
    config = {"parameters": {k: {"string_value": v} for k, v in params.items()}}
    args = {"model_name": "m", "model_config": json.dumps(config),
            "model_repository": str(tmp_path), "model_version": "1"}  # fmt: skip
    seen: dict[str, object] = {}

    class Session:
        def __init__(self, path: str, options: ort.SessionOptions, providers: list[str]) -> None:
            seen["intra"] = options.intra_op_num_threads
            seen["spin"] = options.get_session_config_entry("session.intra_op.allow_spinning")

        def get_inputs(self) -> list[object]:
            return []

    monkeypatch.setattr(ort, "InferenceSession", Session)
    support.OnnxClassifier(support.Settings(args))
    assert seen == {"intra": 2, "spin": spin}


@pytest.mark.parametrize("tail", [0, 12])
def test_text_encoder_reads_the_window_training_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: int
) -> None:
    """Triton's tokenize step cuts a long text as ``textgate.window.hf_ids`` does in training."""
    import shutil

    from transformers import AutoTokenizer

    from tests.helpers.fixtures_models import minilm_tokenizer_dir
    from textgate import window

    version = tmp_path / "1"
    version.mkdir()
    shutil.copyfile(minilm_tokenizer_dir() / "tokenizer.json", version / "tokenizer.json")
    shutil.copyfile(window.__file__, version / "window.py")  # as the builder copies it
    digest = support.sha256_file(str(version / "tokenizer.json"))
    (version / "manifest.json").write_text(json.dumps({"files": {"tokenizer.json": digest}}))
    params = {"tokenizer_file": "tokenizer.json", "max_length": "32", "bucket_lengths": "16,32"}
    if tail:
        params["tail_tokens"] = str(tail)
    config = {"parameters": {k: {"string_value": v} for k, v in params.items()}}
    args = {"model_name": "m", "model_config": json.dumps(config),
            "model_repository": str(tmp_path), "model_version": "1"}  # fmt: skip
    monkeypatch.syspath_prepend(str(version))  # model.py puts its own directory first
    monkeypatch.delitem(sys.modules, "window", raising=False)
    encoder = support.TextEncoder(support.Settings(args))
    texts = ["the plot starts slowly " * 20 + "overall i would never buy this again", "fine"]
    hf = AutoTokenizer.from_pretrained(str(minilm_tokenizer_dir()))
    assert encoder.encode(texts) == window.hf_ids(hf, texts, 32, tail)


@pytest.mark.parametrize(
    "symbols, text",
    [((), "plain text"), (("LIST_ID", "IN_REPLY_TO"), "hello"), (("A",), ""), ((), "")],
)
def test_the_gateways_frame_is_read_back_by_triton(symbols: tuple[str, ...], text: str) -> None:
    # two halves of one format: textgate.signals.wire writes it, the templates read it
    from textgate.signals import wire

    framed = wire.frame(symbols, text)
    assert support.unframe(framed) == (symbols, text)
    assert support.text_of(framed.encode()) == text
    assert wire.unframe(framed) == (symbols, text)


def test_an_unterminated_frame_is_text() -> None:
    value = "\x00LIST_ID no end"
    assert support.unframe(value) == ((), value)
