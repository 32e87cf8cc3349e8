"""The SpamAssassin comparison's scoring code (against scikit-learn) and corpus sampling."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from sklearn.metrics import f1_score, precision_score, recall_score

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "studies" / "email" / "spamassassin_compare.py"
DATA = Path(__file__).resolve().parents[2] / "data" / "email"


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("spamassassin_compare", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sa = _module()


def test_score_matches_sklearn_with_phish_as_positive() -> None:
    truth = ["ham", "spam", "phish", "ham", "spam", "ham", "phish", "ham"]
    flagged = [False, True, False, True, True, None, True, False]
    s = sa.score(truth, flagged, cpu_s=2.0)
    y = [t != "ham" for t in truth]
    p = [bool(f) for f in flagged]
    assert s.precision == pytest.approx(precision_score(y, p))
    assert s.recall == pytest.approx(recall_score(y, p))
    assert s.f1 == pytest.approx(f1_score(y, p))
    assert s.fpr == pytest.approx(1 / 4) and s.errors == 1 and s.messages_per_cpu_s == 4.0
    with pytest.raises(ValueError):
        sa.score(["ham"], [], 1.0)


def test_spamc_verdicts() -> None:
    assert sa.spamc_verdict(1, b"7.2/5.0\n") is True
    assert sa.spamc_verdict(0, b"1.0/5.0\n") is False
    assert sa.spamc_verdict(0, b"0/0\n") is None  # spamc could not reach the daemon
    assert sa.spamc_verdict(69, b"") is None


def test_table_has_a_row_per_filter() -> None:
    s = sa.score(["ham", "spam"], [False, True], 0.5)
    text = sa.table({"a": s, "b": s})
    assert text.count("\n") == 3 and "| a | 2 | 1.000 | 1.000 | 1.000 | 0.000 |" in text


def _corpus(tmp: Path) -> Path:
    files = sorted(DATA.glob("*.eml"))
    labels = ["ham", "spam", "phish"]
    rows = ["file\tlabel\tsource\tform\torigin\tbytes\tsha256"]
    for k, lab in enumerate(labels):
        with tarfile.open(tmp / f"{lab}.tar.xz", "w:xz") as tar:
            for i, path in enumerate(files):
                if i % 3 != k:
                    continue
                name = f"{i + 1:06d}.eml"
                rows.append(f"{name}\t{lab}\tx\traw\tx\t0\tx")
                data = path.read_bytes()
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    (tmp / "MANIFEST.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return tmp


def test_sample_is_seeded_and_from_the_test_split_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import textgate.data

    # A test split of half the data, so that eleven messages put some on either side.
    monkeypatch.setattr(textgate.data, "SPLIT_FRACTIONS", (0.25, 0.25, 0.5))
    corpus = _corpus(tmp_path)
    messages = sa.load_messages(corpus, {f"{i:06d}.eml" for i in range(1, 40)})
    test = sa.test_split(messages)
    assert 0 < len(test) < len(messages) == 11
    one = sa.sample(corpus, 10, seed=1)
    assert {f for f, _, _ in one} == test  # every test-split file, none other
    assert [f for f, _, _ in sa.sample(corpus, 10, seed=1)] == [f for f, _, _ in one]
    assert all(raw == messages[f] for f, _, raw in one)


def test_missing_corpus_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="MANIFEST.tsv: not found"):
        sa.read_manifest(tmp_path)


def test_cpu_of_a_process_tree_counts_exited_children() -> None:
    before = sa.tree_cpu_s(os.getpid())
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    subprocess.run([sys.executable, "-c", burn], check=True)  # a child that works and exits
    assert sa.tree_cpu_s(os.getpid()) - before >= 0.25


def test_write_train_maps_phish_to_spam(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path)
    out = tmp_path / "train.jsonl"
    n = sa.write_train(corpus, {"ham": 2, "spam": 1, "phish": 9}, out)
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert n == len(rows) == 2 + 1 + 3  # three phish messages exist in the tiny corpus
    assert [r["label"] for r in rows].count("ham") == 2 and {r["label"] for r in rows} == {
        "ham",
        "spam",
    }
