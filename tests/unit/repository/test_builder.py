from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from textgate.config import Config
from textgate.errors import RepositoryError
from textgate.repository import build, parse


def _s(**kw: object):  # type: ignore[no-untyped-def]
    return Config.from_dict({"repository": kw}).repository


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_embedded_layout(fake_bundle: Callable[..., Path], tmp_path: Path) -> None:
    result = build([fake_bundle()], tmp_path / "repo", _s(shape_strategy="bucket"))
    files = _tree(result.repository)
    assert {
        "spam/config.pbtxt",
        "spam_tokenize/config.pbtxt",
        "spam_tokenize/1/model.py",
        "spam_tokenize/1/textgate_support.py",
        "spam_tokenize/1/tokenizer.json",
        "spam_tokenize/1/manifest.json",
        "spam_model/1/model.py",
        "spam_model/1/model.int8.onnx",
        "spam_postprocess/1/labels.json",
    } <= files
    assert (result.repository / "spam" / "1").is_dir()
    for cfg in result.repository.glob("*/config.pbtxt"):
        assert parse(cfg.read_text(encoding="utf-8")).name == cfg.parent.name


def test_container_layout_renames_the_model(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    b = fake_bundle()
    result = build([b], tmp_path / "repo", _s(target="triton-container"))
    files = _tree(result.repository)
    assert "spam_model/1/model.onnx" in files and "spam_model/1/model.py" not in files
    onnx = (result.repository / "spam_model/1/model.onnx").read_bytes()
    assert onnx == (b / "model.int8.onnx").read_bytes()


def test_existing_version_needs_overwrite_new_version_adds(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    b = fake_bundle()
    out = tmp_path / "repo"
    build([b], out, _s())
    with pytest.raises(RepositoryError, match="already exists"):
        build([b], out, _s())
    build([b], out, _s(), version=2)
    assert (out / "spam_model/1").is_dir() and (out / "spam_model/2").is_dir()
    build([b], out, _s(), overwrite=True)


def test_templates_import_only_the_allowed_modules(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    import ast

    allowed = {"numpy", "tokenizers", "onnxruntime", "triton_python_backend_utils"}
    allowed |= {"textgate_support", "hashlib", "json", "os", "sys", "__future__", "typing"}
    # the n-gram module copied beside postprocess (its own imports are checked below)
    allowed |= {"ngrams", "itertools", "math", "re", "zlib", "collections", "pathlib"}
    allowed |= {"window"}  # copied beside the tokenizer when a bundle reads a head + tail
    allowed |= {"combiner"}  # copied beside postprocess when a bundle has one
    result = build([fake_bundle()], tmp_path / "repo", _s())
    for path in result.repository.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path}: imports {name}"


def test_manifest_copy_matches_bundle(fake_bundle: Callable[..., Path], tmp_path: Path) -> None:
    b = fake_bundle()
    result = build([b], tmp_path / "repo", _s())
    copied = json.loads((result.repository / "spam_model/1/manifest.json").read_text())
    assert copied == json.loads((b / "manifest.json").read_text())


def test_suffix_names_every_model_of_a_version(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    # Release versions live side by side as spam_v2, spam_v2_tokenize, ... (docs/lifecycle.md)
    result = build(
        [fake_bundle()],
        tmp_path / "repo",
        _s(rescore_variant="fp32", shape_strategy="bucket"),
        suffix="_v2",
    )
    names = {p.parent.name for p in result.repository.glob("*/config.pbtxt")}
    assert names == {
        "spam_v2",
        "spam_v2_tokenize",
        "spam_v2_model",
        "spam_v2_postprocess",
        "spam_v2_model_fp32",
        "spam_v2_fp32",
    }
    ensemble = parse((result.repository / "spam_v2" / "config.pbtxt").read_text("utf-8"))
    steps = [s.model_name for s in ensemble.ensemble_scheduling.step]
    assert steps == ["spam_v2_tokenize", "spam_v2_model", "spam_v2_postprocess"]
    precise = parse((result.repository / "spam_v2_fp32" / "config.pbtxt").read_text("utf-8"))
    assert "spam_v2_model_fp32" in [s.model_name for s in precise.ensemble_scheduling.step]
    assert result.spec.tasks[0].task == "spam"


def _with_ngrams(b: Path) -> Path:
    """A fake bundle with a real (tiny) n-gram half, as export leaves it."""
    import numpy as np

    from textgate import bundle, ngrams

    size = 2 * ngrams.BUCKETS
    ngrams.NgramModel(np.ones(size), np.zeros(size), 0.0, 0, 0.5).save(b / "ngrams.npz")
    manifest = bundle.read_manifest(b)
    manifest["ngrams"] = {"file": "ngrams.npz", "weight": 0.5}
    bundle.write_manifest(b, manifest)
    return b


@pytest.mark.parametrize("strategy", ["bucket", "fused"])
def test_a_bundle_with_ngrams_gets_them_in_postprocess_with_the_text(
    fake_bundle: Callable[..., Path], tmp_path: Path, strategy: str
) -> None:
    from textgate import ngrams

    b = _with_ngrams(fake_bundle())
    result = build([b], tmp_path / "repo", _s(shape_strategy=strategy))
    post = result.repository / "spam_postprocess" / "1"
    assert (post / "ngrams.npz").read_bytes() == (b / "ngrams.npz").read_bytes()
    # the very featurizer training used, not a second implementation
    assert (post / "ngrams.py").read_bytes() == Path(ngrams.__file__).read_bytes()
    config = parse((result.repository / "spam_postprocess/config.pbtxt").read_text())
    assert [t.name for t in config.input] == ["logits", "text"]
    assert config.parameters["ngrams_file"].string_value == "ngrams.npz"
    ensemble = parse((result.repository / "spam/config.pbtxt").read_text())
    last = ensemble.ensemble_scheduling.step[-1]
    assert last.model_name == "spam_postprocess" and dict(last.input_map)["text"] == "text"


def _with_combiner(b: Path) -> Path:
    """A fake bundle with a combiner (``textgate.signals.combiner``), as export leaves it."""
    from textgate import bundle
    from textgate.signals.combiner import Combiner

    model = Combiner(
        features=("content", "lexical", "LIST_ID", "ATTACH_EXECUTABLE"),
        weights=[1.0, 0.5, -1.5, 2.0],
        intercept=0.0,
        negative=0,
    )
    model.save(b / "combiner.json")
    manifest = bundle.read_manifest(b)
    manifest["combiner"] = {**model.describe(), "file": "combiner.json"}
    bundle.write_manifest(b, manifest)
    return b


@pytest.mark.parametrize("strategy", ["bucket", "fused"])
def test_a_bundle_with_a_combiner_gets_it_in_postprocess_with_the_text(
    fake_bundle: Callable[..., Path], tmp_path: Path, strategy: str
) -> None:
    import json

    from textgate.signals import combiner

    b = _with_combiner(_with_ngrams(fake_bundle()))
    result = build([b], tmp_path / "repo", _s(shape_strategy=strategy))
    post = result.repository / "spam_postprocess" / "1"
    assert (post / "combiner.json").read_bytes() == (b / "combiner.json").read_bytes()
    assert (post / "combiner.py").read_bytes() == Path(combiner.__file__).read_bytes()
    config = parse((result.repository / "spam_postprocess/config.pbtxt").read_text())
    assert [t.name for t in config.input] == ["logits", "text"]
    assert config.parameters["combiner_file"].string_value == "combiner.json"
    # the symbol weights ride in the config, for the gateway's explanations
    weights = json.loads(config.parameters["combiner_symbols"].string_value)
    assert weights == {"ATTACH_EXECUTABLE": 2.0, "LIST_ID": -1.5}


def test_a_combiner_alone_still_gives_postprocess_the_text(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    b = _with_combiner(fake_bundle())
    result = build([b], tmp_path / "repo", _s(shape_strategy="fused"))
    config = parse((result.repository / "spam_postprocess/config.pbtxt").read_text())
    assert [t.name for t in config.input] == ["logits", "text"]
    assert "ngrams_file" not in config.parameters


def test_ngrams_module_imports_only_the_allowed_modules() -> None:
    import ast

    from textgate import ngrams

    allowed = {"numpy", "itertools", "math", "re", "zlib", "collections", "pathlib"}
    allowed |= {"__future__", "typing"}
    for node in ast.walk(ast.parse(Path(ngrams.__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for name in names:
                assert str(name).split(".")[0] in allowed, f"ngrams.py imports {name}"


def test_a_manifest_naming_ngrams_it_does_not_list_is_refused(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    b = fake_bundle(ngrams={"file": "ngrams.npz"})
    with pytest.raises(RepositoryError, match="does not list it"):
        build([b], tmp_path / "repo", _s())


@pytest.mark.parametrize("strategy", ["bucket", "fused"])
def test_a_head_and_tail_bundle_gets_the_window_beside_its_tokenizer(
    fake_bundle: Callable[..., Path], tmp_path: Path, strategy: str
) -> None:
    from textgate import window

    b = fake_bundle(tokenizer={"file": "tokenizer.json", "tail": 64})
    result = build([b], tmp_path / "repo", _s(shape_strategy=strategy))
    step = "spam_model" if strategy == "fused" else "spam_tokenize"
    # the very cut training made, not a second implementation
    assert (result.repository / step / "1" / "window.py").read_bytes() == Path(
        window.__file__
    ).read_bytes()
    config = parse((result.repository / step / "config.pbtxt").read_text())
    assert config.parameters["tail_tokens"].string_value == "64"


def test_a_head_only_bundle_renders_as_before(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    result = build([fake_bundle()], tmp_path / "repo", _s())
    assert not list(result.repository.rglob("window.py"))
    for path in result.repository.glob("*/config.pbtxt"):
        assert "tail_tokens" not in parse(path.read_text()).parameters


def _with_cascade(b: Path, allow: float, high: float | None = None) -> Path:
    from textgate import bundle

    manifest = bundle.read_manifest(b)
    manifest["cascade"] = {"allow_at_or_below": allow, "quarantine_at_or_above": high}
    bundle.write_manifest(b, manifest)
    return b


def test_a_bundle_with_cascade_bounds_gets_its_cheap_stage_with_them(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    from textgate import ngrams

    b = _with_cascade(_with_ngrams(fake_bundle()), 0.12)
    result = build([b], tmp_path / "repo", _s(), version=2, suffix="_v2")
    cheap = result.repository / "spam_v2_cheap"
    assert (cheap / "2" / "ngrams.npz").read_bytes() == (b / "ngrams.npz").read_bytes()
    assert (cheap / "2" / "ngrams.py").read_bytes() == Path(ngrams.__file__).read_bytes()
    config = parse((cheap / "config.pbtxt").read_text())
    params = {k: v.string_value for k, v in config.parameters.items()}
    assert params["allow_at_or_below"] == "0.12" and params["quarantine_at_or_above"] == ""
    assert params["negative_label"] == "ham" and params["ngrams_file"] == "ngrams.npz"
    assert [t.name for t in config.output] == ["label", "probabilities"]  # the ensemble's
    assert "spam_v2_cheap" in result.models
    # without bounds, no cheap stage
    plain = build([_with_ngrams(fake_bundle("plain"))], tmp_path / "plain", _s())
    assert not (plain.repository / "plain_cheap").exists() and plain.models


def test_cascade_bounds_that_cannot_work_are_refused(
    fake_bundle: Callable[..., Path], tmp_path: Path
) -> None:
    with pytest.raises(RepositoryError, match="cascade"):  # no n-gram half to run
        build([_with_cascade(fake_bundle("a"), 0.1)], tmp_path / "a", _s())
    with pytest.raises(RepositoryError, match="cascade"):
        build([_with_cascade(_with_ngrams(fake_bundle("b")), 1.2)], tmp_path / "b", _s())
    with pytest.raises(RepositoryError, match="cascade"):  # allow above quarantine
        build([_with_cascade(_with_ngrams(fake_bundle("c")), 0.5, 0.4)], tmp_path / "c", _s())
    three = fake_bundle("d", labels=("ham", "spam", "phish"))
    with pytest.raises(RepositoryError, match="two labels"):  # spam vs phish: not named
        build([_with_cascade(_with_ngrams(three), 0.1, 0.99)], tmp_path / "d", _s())
