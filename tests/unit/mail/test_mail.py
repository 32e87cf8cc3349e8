"""Labelled mail in every container, the packaged corpus's groups, and the leak scrubber."""

from __future__ import annotations

import io
import mailbox
import tarfile
from pathlib import Path

import pytest

from textgate import data, mail
from textgate.errors import DataError

FIXTURES = Path(__file__).resolve().parents[2] / "data" / "email"
SPAM = b"From: a@b.example\r\nSubject: win a prize\r\n\r\nclaim your free prize now\r\n"
HAM = b"From: c@d.example\r\nSubject: lunch\r\n\r\nsee you at noon for the budget review\r\n"


def _eml_dir(root: Path) -> Path:
    for label, raw in (("spam", SPAM), ("ham", HAM)):
        (root / label).mkdir(parents=True)
        for i in range(3):
            (root / label / f"{i}.eml").write_bytes(raw + b"message %d\r\n" % i)
    return root


def test_eml_directory_labels_come_from_folders(tmp_path: Path) -> None:
    table = data.load_task("mine", data=_eml_dir(tmp_path / "mail"))
    assert table.counts() == {"ham": 3, "spam": 3}
    assert set(table.groups) == {"ham", "spam"}
    assert any("claim your free prize" in t for t in table.texts)


def test_label_map_csv_names_each_file(tmp_path: Path) -> None:
    root = tmp_path / "flat"
    root.mkdir()
    (root / "a.eml").write_bytes(SPAM)
    (root / "b.eml").write_bytes(HAM)
    (root / "c.eml").write_bytes(HAM.replace(b"noon", b"one"))
    labels = tmp_path / "labels.csv"
    labels.write_text("file,label\na.eml,spam\nb.eml,ham\n", encoding="utf-8")
    table = data.load_task("mine", data=root, label_map=labels)
    assert table.counts() == {"ham": 1, "spam": 1}
    assert table.report.skipped["no label (not in the label map, no label folder)"] == 1
    with pytest.raises(DataError, match="c.eml"):
        data.load_task("mine", data=root, label_map=labels, strict=True)


def test_mbox_with_a_broken_message_is_named_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "boxes"
    root.mkdir()
    for label, raw in (("spam", SPAM), ("ham", HAM)):
        box = mailbox.mbox(root / f"{label}.mbox")
        box.add(raw)
        box.add(raw.replace(b"Subject:", b"Subject: again"))
        box.add(b"From: x@y.example\r\nContent-Type: text/plain\r\n\r\n   \r\n")  # empty body
        box.close()
    table = data.load_task("mine", data=root)
    assert table.counts() == {"ham": 2, "spam": 2}
    (reason,) = [r for r in table.report.skipped if r.startswith("not classifiable")]
    assert any("#2" in str(name) for name in table.report.examples[reason])


def test_single_mbox_takes_its_label_from_its_name(tmp_path: Path) -> None:
    box = mailbox.mbox(tmp_path / "spam.mbox")
    box.add(SPAM)
    box.close()
    items = list(mail.iter_mail(tmp_path / "spam.mbox"))
    assert [(i.name, i.label) for i in items] == [("spam.mbox#0", "spam")]


def test_mbox_and_tar_inside_label_folders(tmp_path: Path) -> None:
    (tmp_path / "spam").mkdir()
    box = mailbox.mbox(tmp_path / "spam" / "box.mbox")
    box.add(SPAM)
    box.close()
    (tmp_path / "ham").mkdir()
    with tarfile.open(tmp_path / "ham" / "a.tar", "w") as tar:
        info = tarfile.TarInfo("1.eml")
        info.size = len(HAM)
        tar.addfile(info, io.BytesIO(HAM))
    (tmp_path / "ham" / "trec.eml").write_bytes(b"From x@y Mon Apr  9 2007\n" + HAM)
    items = sorted((i.name, i.label) for i in mail.iter_mail(tmp_path))
    assert items == [("ham/1.eml", "ham"), ("ham/trec.eml", "ham"), ("spam/box.mbox#0", "spam")]


def test_empty_maildir_has_no_messages(tmp_path: Path) -> None:
    for sub in ("cur", "new", "tmp"):
        (tmp_path / "ham" / sub).mkdir(parents=True)
    assert list(mail.iter_mail(tmp_path)) == []
    with pytest.raises(DataError, match="no labelled messages"):
        data.load_task("mine", data=tmp_path)


def test_maildir_messages_are_read(tmp_path: Path) -> None:
    box = mailbox.Maildir(tmp_path / "spam")
    box.add(SPAM)
    items = list(mail.iter_mail(tmp_path))
    assert len(items) == 1 and items[0].label == "spam" and b"prize" in items[0].raw


@pytest.mark.parametrize("suffix,mode", [(".tar", "w"), (".tar.gz", "w:gz"), (".tar.xz", "w:xz")])
def test_tar_members_are_read_by_folder(tmp_path: Path, suffix: str, mode: str) -> None:
    path = tmp_path / f"mail{suffix}"
    with tarfile.open(path, mode) as tar:
        for name, raw in (("spam/1.eml", SPAM), ("ham/1.eml", HAM)):
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    items = {i.name: i.label for i in mail.iter_mail(path)}
    assert items == {"spam/1.eml": "spam", "ham/1.eml": "ham"}


def test_corrupt_tar_keeps_what_was_read_and_names_the_archive(tmp_path: Path) -> None:
    path = tmp_path / "mail.tar"
    with tarfile.open(path, "w") as tar:
        for i in range(4):
            raw = SPAM + b"x" * 2048 + str(i).encode()
            info = tarfile.TarInfo(f"spam/{i}.eml")
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    blob = path.read_bytes()
    path.write_bytes(blob[: len(blob) // 2])  # cut in the middle of a member
    report = mail.MailReport()
    items = list(mail.iter_mail(path, report=report))
    assert 1 <= len(items) < 4
    assert any("corrupt" in r for r in report.skipped)
    with pytest.raises(DataError, match=r"mail\.tar"):
        list(mail.iter_mail(path, strict=True))


def test_not_a_tar_at_all_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "mail.tar.gz"
    path.write_bytes(b"this is not gzip")
    with pytest.raises(DataError, match="not a readable tar"):
        list(mail.iter_mail(path))


def test_real_messages_from_the_test_corpus_load(tmp_path: Path) -> None:
    root = tmp_path / "real"
    (root / "ham").mkdir(parents=True)
    for path in sorted(FIXTURES.glob("*.eml")):
        (root / "ham" / path.name).write_bytes(path.read_bytes())
    (root / "spam").mkdir()
    (root / "spam" / "s.eml").write_bytes(SPAM)
    table = data.load_task("mine", data=root)
    assert table.counts()["ham"] >= 3


# --- leaks and groups --------------------------------------------------------------------


def test_scrub_neutralizes_the_corpus_leaks() -> None:
    text = "Hi phishing@pot, mail ktwarwic@speedy.uwaterloo.ca or ktwarwic; see phishing@pot.org"
    out = mail.scrub(text, "m1")
    assert "phishing@pot" not in out and "ktwarwic" not in out
    assert out.count("recipient@example.com") == 3


def test_scrub_redraws_years_deterministically() -> None:
    text = "Copyright 2025. Sent in 2001, updated 2024."
    a, b = mail.scrub(text, "k"), mail.scrub(text, "k")
    assert a == b
    years = [int(w.strip(".,")) for w in a.split() if w.strip(".,").isdigit()]
    assert len(years) == 3 and all(1995 <= y < 2030 for y in years)
    assert {mail.scrub(text, f"k{i}") for i in range(10)} != {a}  # depends on the key


def test_fine_groups_follow_the_origin_column() -> None:
    row = {"source": "enron-raw", "label": "ham", "origin": "r:raw/spam/x.tar.gz!lokay-m/inbox/1"}
    assert mail.fine_group(row, b"") == "enron-raw/lokay-m"
    row = {
        "source": "enron-spam-pre",
        "label": "spam",
        "origin": "r:enron4/spam/0001.2004.GP.spam.txt",
    }
    assert mail.fine_group(row, b"") == "enron-spam-pre/GP"
    row = {"source": "trec07p", "label": "ham", "origin": "r:x"}
    assert mail.fine_group(row, b"List-Id: <r-help.r-project.org>\n\nhi") == "trec07p/ham-list"
    assert mail.fine_group(row, b"Subject: hi\n\nhi") == "trec07p/ham-other"
    row = {"source": "phishing-pot", "label": "phish", "origin": "r:x"}
    assert mail.fine_group(row, b"Date: Tue, 2 Jan 2024 10:00:00 +0000\n\nx") == "phishing-pot/2024"
    assert mail.fine_group(row, b"Subject: undated\n\nx") == "phishing-pot/2019-2023"


def test_unknown_excluded_source_is_named() -> None:
    with pytest.raises(DataError, match="nope"):
        list(mail.iter_email_corpus(("nope",)))


def test_exclude_source_only_applies_to_the_email_corpus() -> None:
    with pytest.raises(DataError, match="exclude-source"):
        data.load_task("sentiment", exclude_sources=("phishing-pot",))
