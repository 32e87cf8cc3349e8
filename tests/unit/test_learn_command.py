"""``textgate learn``: mail folders become a tenant's corrections; --forget removes them."""

from __future__ import annotations

import mailbox
from email.message import EmailMessage
from pathlib import Path

import pytest

from textgate import cli, feedback


def message(subject: str, body: str) -> EmailMessage:
    m = EmailMessage()
    m["From"], m["To"], m["Subject"] = "a@example.org", "b@example.com", subject
    m.set_content(body)
    return m


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    spam = mailbox.mbox(tmp_path / "junk.mbox")
    for i in range(3):
        spam.add(message(f"prize {i}", f"claim your free prize number {i} now"))
    spam.close()
    ham = tmp_path / "inbox"  # a folder of .eml files
    ham.mkdir()
    for i in range(2):
        (ham / f"{i}.eml").write_bytes(bytes(message(f"minutes {i}", f"board minutes {i}")))
    config = tmp_path / "textgate.yaml"
    config.write_text(
        f"feedback:\n  path: {tmp_path / 'fb.sqlite3'}\n"
        "policy:\n  tenants:\n    - name: example.com\n"
    )
    return config, tmp_path / "junk.mbox", ham


def corrections(config: Path) -> list[feedback.Correction]:
    return feedback.read_all(config.parent / "fb.sqlite3")


def test_learn_writes_the_tenants_corrections_and_forget_removes_them(
    setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, spam, ham = setup
    args = ["learn", "--config", str(config), "--tenant", "example.com"]
    assert cli.main([*args, "--spam", str(spam), "--ham", str(ham)]) == 0
    printed = capsys.readouterr().out
    assert "learned_spam: 3\n" in printed and "learned_ham: 2\n" in printed
    rows = corrections(config)
    assert sorted(r.label for r in rows) == ["ham", "ham", "spam", "spam", "spam"]
    assert {(r.tenant, r.source, r.task) for r in rows} == {("example.com", "learn", "spam")}
    assert "prize" in next(r.text for r in rows if r.label == "spam")  # normalized text
    assert cli.main([*args, "--spam", str(spam)]) == 0  # sa-learn learns a message once
    assert "already_spam: 3\n" in capsys.readouterr().out and len(corrections(config)) == 5
    assert cli.main([*args, "--ham", str(spam)]) == 0  # ... and relearns it as the other
    assert "relearned_ham: 3\n" in capsys.readouterr().out
    assert sorted(r.label for r in corrections(config)) == ["ham"] * 5
    assert cli.main([*args, "--spam", str(spam)]) == 0
    assert "relearned_spam: 3\n" in capsys.readouterr().out
    assert cli.main([*args, "--spam", str(spam), "--forget"]) == 0
    assert "forgot_spam: 3\n" in capsys.readouterr().out
    assert [r.label for r in corrections(config)] == ["ham", "ham"]


def test_a_bad_path_is_one_message_naming_it(
    setup: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, _, _ = setup
    missing = config.parent / "nope.mbox"
    assert cli.main(["learn", "--config", str(config), "--spam", str(missing)]) == 3
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err


def test_an_unknown_tenant_is_refused(setup: tuple[Path, Path, Path]) -> None:
    config, spam, _ = setup
    assert cli.main(["learn", "--config", str(config), "--tenant", "x", "--spam", str(spam)]) == 2
    assert not (config.parent / "fb.sqlite3").exists()
