"""The e-mail model's path on real parts: the packaged mail corpus, a real fine-tune, the
leave-one-source-out command, calibration applied by real Triton, and the skew refusal."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.helpers.fixtures_models import bert_checkpoint as tiny_checkpoint
from tests.helpers.triton_settings import repo_settings, server_config
from textgate import bundle, cli, evaluate, mail, ngrams
from textgate.config import Config
from textgate.errors import ConfigError
from textgate.export import calibration, inference, quality
from textgate.repository import build
from textgate.signals import combiner as combiner_module
from textgate.signals import wire
from textgate.signals.combiner import Combiner
from textgate.triton import TritonServer

pytest.importorskip("torch")
pytest.importorskip("transformers")

# Four source groups, 24 real messages each, from the packaged corpus.
SLICE = {
    "enron-raw/farmer-d": "ham/enron",
    "trec07p/ham-list": "ham/lists",
    "trec07p/spam-other": "spam/trec",
    "phishing-pot/2024": "spam/phish",
}
PER_GROUP = 24


@pytest.fixture(scope="module")
def mail_slice(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``label/source/N.eml`` folders of real corpus mail (the user-mail layout)."""
    root = tmp_path_factory.mktemp("mail")
    counts = dict.fromkeys(SLICE, 0)
    for item in mail.iter_email_corpus():
        folder = SLICE.get(item.group)
        if folder is None or counts[item.group] >= PER_GROUP:
            continue
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / Path(item.name).name).write_bytes(item.raw)
        counts[item.group] += 1
        if all(n >= PER_GROUP for n in counts.values()):
            break
    assert all(n == PER_GROUP for n in counts.values()), counts
    return root


@pytest.mark.slow
def test_short_fine_tune_on_the_email_corpus_beats_the_majority(tmp_path: Path) -> None:
    out = tmp_path / "spam"
    # the fitted combiner (--combiner-folds 2; the spam default serves the join's fixed mix)
    argv = ["train", "--task", "spam", "--limit", "1200", "--epochs", "1", "--lr", "1e-4"]
    argv += ["--combiner-folds", "2"]
    assert cli.main([*argv, "--no-progress", "--json", "-o", str(out)]) == 0
    report = json.loads((out / "metrics.json").read_text())
    assert report["labels"] == ["ham", "spam", "phish"]
    counts = [row["support"] for row in report["per_class"].values()]
    assert report["accuracy"] > max(counts) / sum(counts)
    # The filter's view (spam + phish vs ham): always answering one class cannot reach this.
    assert report["not_ham"]["f1"] >= 0.8 and report["not_ham"]["roc_auc"] >= 0.9
    info = json.loads((out / "textgate.json").read_text())
    assert info["normalization"]["settings"]["head_chars"] == 384
    # the combiner: cross-fitted by source group on real mail, its symbols' signs kept
    combiner = info["combiner"]
    assert combiner["fitted"] and combiner["crossfit"]["by"] == "groups"
    assert (out / "combiner.json").is_file()
    assert combiner["features"]["content"] >= 0 and combiner["features"]["lexical"] >= 0
    from textgate import signals

    for name, weight in combiner["features"].items():
        if name in signals.SYMBOLS:
            assert weight * signals.SYMBOLS[name].direction >= 0, name
    folds = combiner["crossfit"]["fold_of_group"]
    assert len(set(folds.values())) == 2 and all(r["stopped"] for r in combiner["fold_training"])
    assert "CC BY-NC" in " ".join(info["data_sources"]["licence_notes"])
    assert (out / "threshold.png").is_file()


@pytest.mark.slow
def test_evaluate_by_source_on_a_tiny_model(tmp_path: Path, mail_slice: Path) -> None:
    base = tiny_checkpoint(tmp_path / "tiny", task="mine", labels=("ham", "spam"), seed=3)
    out = tmp_path / "by-source.json"
    argv = ["evaluate", "--task", "mine", "--data", str(mail_slice), "--by-source"]
    argv += ["--base", str(base), "--per-group", "12", "--test-per-group", "8"]
    # a budget the tiny model's epoch cannot reach, so each fold is the model the options say
    assert cli.main([*argv, "--minutes", "10", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["budget_cut"] == []
    held = [tuple(f["held_out"]) for f in report["folds"]]
    assert held == [(g,) for g in sorted(["ham/enron", "ham/lists", "spam/phish", "spam/trec"])]
    for fold in report["folds"]:
        assert set(fold["models"]) == set(evaluate.MODELS)
        # the served model's row joins the two halves on the transformer's rows
        joined = fold["models"]["transformer+ngrams"]
        assert joined["n"] == fold["models"]["transformer"]["n"]
        run = fold["training"]
        assert run["stopped"] == "completed" and run["steps_run"] == run["steps_planned"] > 0
        (group,) = fold["held_out"]
        key = "fpr" if group.startswith("ham") else "recall"
        for model in fold["models"].values():
            assert 0.0 <= model["groups"][group][key] <= 1.0
            # the errors a person reads come from the held-out group alone
            kinds = model["worst"]
            assert all(row["group"] == group for kind in kinds.values() for row in kind)
            assert kinds["false_positive" if group.startswith("ham") else "false_negative"]
    md = out.with_suffix(".md").read_text()
    assert "| **mean** | **tfidf-lr** |" in md and "Transformer training per fold" in md


# --- calibration and the skew check, through real Triton -------------------------------------


def _calibrated_bundle(root: Path, mail_slice: Path) -> Path:
    """A tiny checkpoint with real validation/test mail, exported: it gets a temperature."""
    from textgate import data
    from textgate.export import export_bundle

    table = data.load_task("mine", data=mail_slice)
    ckpt = tiny_checkpoint(root / "ckpt", task="spam", labels=("ham", "spam"), seed=5)
    (ckpt / "data").mkdir()
    for name, part in (("validation", table), ("test", table)):
        with (ckpt / "data" / f"{name}.jsonl").open("w", encoding="utf-8") as fh:
            for text, label in zip(part.texts, part.labels, strict=True):
                fh.write(json.dumps({"text": text, "label": label}) + "\n")
    meta = json.loads((ckpt / "textgate.json").read_text())
    from textgate.normalize import NormalizeSettings, fingerprint

    meta["normalization"] = fingerprint(NormalizeSettings())
    meta["ngrams"] = _fit_ngrams(table, ckpt)
    meta["combiner"] = _combiner(ckpt)
    (ckpt / "textgate.json").write_text(json.dumps(meta))
    export_bundle(ckpt, root / "spam", variants=())
    # The tiny model is under-confident, so its fitted T (< 1) is served as 1 (the floor:
    # calibration.served); a softening T, as a real over-confident model fits, must reach
    # Triton's postprocess, so the test sets one.
    manifest = bundle.read_manifest(root / "spam")
    assert manifest["calibration"]["temperature"] == calibration.served(
        manifest["calibration"]["fitted_temperature"]
    )
    manifest["calibration"]["temperature"] = 1.7
    bundle.write_manifest(root / "spam", manifest)
    return root / "spam"


def _fit_ngrams(table: Any, ckpt: Path) -> dict[str, Any]:
    """The lexical half as `textgate train` fits it for the spam task."""
    from textgate.train import ngram

    model, info = ngram.fit(table.texts, np.array(table.labels) != "ham", negative=0)
    model.save(ckpt / "ngrams.npz")
    return {**model.describe(), **info, "file": "ngrams.npz"}


# A combiner with weights chosen by hand: large enough that the symbols visibly move scores.
SYMBOL_WEIGHTS = {"LIST_ID": -2.0, "IN_REPLY_TO": -1.0, "SUBJECT_ALL_CAPS": 1.5}


def _combiner(ckpt: Path) -> dict[str, Any]:
    """What `textgate train` writes for the spam task's combiner (the fit is unit-tested)."""
    from textgate import signals
    from textgate.signals.combiner import Combiner

    names = signals.ORDER
    weights = [0.8, 0.6, *(SYMBOL_WEIGHTS.get(n, 0.0) for n in names)]
    model = Combiner(
        features=("content", "lexical", *names), weights=weights, intercept=0.1, negative=0
    )
    model.save(ckpt / "combiner.json")
    return {**model.describe(), "file": "combiner.json"}


def _skewed_copy(src: Path, out: Path) -> Path:
    shutil.copytree(src, out)
    manifest = bundle.read_manifest(out)
    manifest["task"] = "skewed"
    manifest["normalization"]["settings"]["head_chars"] = 200
    bundle.write_manifest(out, manifest)
    return out


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory, mail_slice: Path) -> Iterator[tuple]:
    root = tmp_path_factory.mktemp("calibrated")
    spam = _calibrated_bundle(root, mail_slice)
    skewed = _skewed_copy(spam, root / "skewed")
    repo = build([spam, skewed], root / "repo", repo_settings()).repository
    # the same bundle in the three-step shape (tokenize → model → postprocess) as spam_b
    build([spam], repo, repo_settings(shape_strategy="bucket"), suffix="_b")
    server = TritonServer(repo, config=server_config())
    server.start()
    try:
        server.wait_ready()
        yield spam, server
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.triton
def test_triton_applies_the_bundle_temperature(calibrated: tuple) -> None:
    spam, server = calibrated
    calib = bundle.read_manifest(spam)["calibration"]
    assert calib["method"] == "temperature" and calib["temperature"] == 1.7
    assert (spam / "reliability.png").is_file()
    texts = ["claim your free prize now", "minutes of the budget meeting", "verify your account"]
    tok = inference.load_tokenizer(spam / "tokenizer.json")
    raw = inference.predict(
        inference.session(spam / "model.onnx"), list(inference.encode(tok, texts))
    )
    import tritonclient.http as httpclient

    client = httpclient.InferenceServerClient(server.http_url)
    symbols = [("SUBJECT_ALL_CAPS",), ("LIST_ID", "IN_REPLY_TO"), ()]
    framed = [wire.frame(s, t) for s, t in zip(symbols, texts, strict=True)]
    data = np.array([[t.encode()] for t in framed], dtype=np.object_)
    inp = httpclient.InferInput("text", list(data.shape), "BYTES")
    inp.set_data_from_numpy(data)
    served = client.infer("spam", [inp]).as_numpy("probabilities")
    bucketed = client.infer("spam_b", [inp]).as_numpy("probabilities")
    np.testing.assert_allclose(bucketed, served, atol=1e-5)  # both shapes strip the frame
    # Triton's combiner joins the transformer, the bundle's n-gram half (scored by the very
    # module training used) and the symbols, as export measured it, then applies the
    # temperature fitted on the combined validation probabilities.
    lexical = ngrams.NgramModel.load(spam / "ngrams.npz")
    combiner = Combiner.load(spam / "combiner.json")
    joined = quality.joined(raw, lexical, tuple(texts), combiner, tuple(symbols))
    expected = calibration.apply(joined, float(calib["temperature"]))
    np.testing.assert_allclose(served, expected, atol=1e-5)
    assert not np.allclose(served, raw, atol=1e-4)  # the temperature really changed them
    assert not np.allclose(joined, raw, atol=1e-3)  # and so did the combiner
    # the frame reached the combiner alone: the same texts without symbols score otherwise
    plain = quality.joined(raw, lexical, tuple(texts), combiner, ((), (), ()))
    assert not np.allclose(plain[:2], joined[:2], atol=1e-3)
    post = Path(server.repository) / "spam_postprocess" / "1"
    assert (post / "ngrams.py").read_bytes() == Path(ngrams.__file__).read_bytes()
    assert (post / "combiner.py").read_bytes() == Path(combiner_module.__file__).read_bytes()


@pytest.mark.slow
@pytest.mark.triton
def test_gateway_refuses_a_bundle_trained_with_other_normalization(calibrated: tuple) -> None:
    from textgate.gateway.runtime import Gateway

    _, server = calibrated

    async def start(tasks: list[str]) -> None:
        events = {"outbox_path": str(Path(server.repository).parent / "skew-events.sqlite3")}
        cfg = Config.from_dict({"gateway": {"tasks": tasks}, "events": events})
        gw = Gateway(cfg, endpoints=[server.grpc_url])
        try:
            await gw.start()
        finally:
            await gw.stop()

    asyncio.run(start(["spam"]))  # the matching bundle serves
    with pytest.raises(ConfigError, match=r"'skewed'.*head_chars: trained with 200"):
        asyncio.run(start([]))


LIST_POST = b"""From: Ann Lee <ann@lists.example.org>
To: dev@lists.example.org
Subject: Re: build fails on arm64
Date: Tue, 03 Nov 2026 10:00:00 +0000
Message-ID: <abc123@lists.example.org>
In-Reply-To: <xyz789@lists.example.org>
List-Id: Developers <dev.lists.example.org>
X-Spam-Status: Yes, score=99.0 forged upstream

The linker error goes away with -fPIC; see my patch in the tracker.
"""


@pytest.mark.slow
@pytest.mark.triton
def test_the_gateway_sends_symbols_and_explains_them_through_http_and_spamc(
    calibrated: tuple, tmp_path: Path
) -> None:
    """Raw mail through the real gateway: its symbols reach Triton's combiner (the score is
    the combined one), the answer lists them with their weights, and spamc SYMBOLS names them."""
    import subprocess

    from tests.helpers.gateway_fixtures import run_gateway
    from tests.helpers.servers import debian_tool
    from textgate.triton import free_port

    spam, server = calibrated
    port = free_port()
    config = {
        "gateway": {"tasks": ["spam"]},
        "events": {"outbox_path": str(tmp_path / "events.sqlite3")},
        "mail": {"spamd_port": port, "milter_port": free_port()},
    }
    with run_gateway(config, [server.grpc_url]) as gw, gw.client() as client:
        answer = client.post(
            "/v1/classify/spam", content=LIST_POST, headers={"content-type": "message/rfc822"}
        )
        assert answer.status_code == 200, answer.text
        result = answer.json()["results"][0]
        fired = [s["symbol"] for s in result["symbols"]]
        assert {"LIST_ID", "IN_REPLY_TO"} <= set(fired)
        assert {s["symbol"]: s["weight"] for s in result["symbols"]}["LIST_ID"] == -2.0
        # the forged upstream X-Spam-Status is no symbol and no text the model reads
        assert not any("SPAM" in name for name in fired)
        text = client.post("/v1/classify/spam", json={"text": "see you at lunch"})
        assert text.status_code == 200 and "symbols" not in text.json()["results"][0]
        cmd = [debian_tool("spamc"), "-d", "127.0.0.1", "-p", str(port), "-t", "30", "-y"]
        out = subprocess.run(cmd, input=LIST_POST, capture_output=True, timeout=60, check=False)
        assert b"LIST_ID" in out.stdout and b"IN_REPLY_TO" in out.stdout, out
    # what Triton served is the combined score of the framed text, not the text alone
    lexical = ngrams.NgramModel.load(spam / "ngrams.npz")
    combiner = Combiner.load(spam / "combiner.json")
    from textgate.normalize import NormalizeSettings, normalize_email

    n = normalize_email(LIST_POST, NormalizeSettings())
    tok = inference.load_tokenizer(spam / "tokenizer.json")
    raw = inference.predict(
        inference.session(spam / "model.onnx"), list(inference.encode(tok, [n.pieces[0]]))
    )
    calib = bundle.read_manifest(spam)["calibration"]
    joined = quality.joined(raw, lexical, (n.pieces[0],), combiner, (n.notes.symbols,))
    expected = calibration.apply(joined, float(calib["temperature"]))[0]
    np.testing.assert_allclose(list(result["probabilities"].values()), expected, atol=1e-4)
