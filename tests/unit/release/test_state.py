"""The typed release state: its rules refused with a message naming them, the state files
of the dict-based store still load, and an atomic write never leaves half a file."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from textgate.errors import ReleaseError
from textgate.release import state as st

# A state file exactly as the dict-based store (before the typed state) wrote it.
OLD_FILE: dict[str, Any] = {
    "format": "textgate-release/1",
    "seq": 7,
    "tasks": {
        "spam": {
            "serving": 2,
            "candidate": 3,
            "mode": "canary",
            "percent": 5.0,
            "key": "tenant",
            "previous": [1],
            "history": [{"seq": 7, "op": "canary", "time": 1.0, "version": 3}],
            "versions": {
                "1": {"bundle_hash": "a" * 64, "variant": "fp32", "labels": ["ham", "spam"],
                      "metrics": {"f1": 0.9}, "models": ["spam_v1"], "added": 1.0,
                      "retired": False, "active": 2.0},
                "2": {"bundle_hash": "b" * 64, "variant": "int8", "labels": ["ham", "spam"],
                      "metrics": {"f1": 0.91}, "models": ["spam_v2"], "added": 2.0,
                      "retired": False, "active": 3.0, "manifest_sha256": "c" * 64,
                      "gate": {"passed": True, "reasons": []}},
                "3": {"bundle_hash": "d" * 64, "variant": "int8", "labels": ["ham", "spam"],
                      "metrics": {}, "models": ["spam_v3"], "added": 3.0, "retired": False,
                      "active": 3.0, "manifest_sha256": "e" * 64, "a_newer_field": 1},
            },
        }
    },
}  # fmt: skip


def _write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_an_old_state_file_loads_typed_and_writes_back_the_same(tmp_path: Path) -> None:
    state = st.read_state(_write(tmp_path / "state.json", OLD_FILE))
    spam = state.tasks["spam"]
    assert (spam.serving, spam.candidate, spam.mode, spam.percent) == (2, 3, "canary", 5.0)
    assert spam.versions[2].gate == {"passed": True, "reasons": []}
    assert spam.versions[1].manifest_sha256 == ""  # added before it was recorded
    assert spam.version_state(3) == "canary 5 %" and spam.version_state(1) == "standby"
    assert spam.versions[3].extra == {"a_newer_field": 1}  # kept for a newer textgate
    assert state.to_dict() == OLD_FILE  # the layout on disk is unchanged


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"serving": 9}, "serving version 9 is not a live version"),
        ({"candidate": 2}, "candidate 2 is not a live version other than serving"),
        ({"mode": "blue-green"}, "mode 'blue-green'"),
        ({"mode": "shadow", "candidate": None}, "mode shadow without a candidate"),
        ({"percent": 150.0}, "canary percent 150.0 outside 0..100"),
        ({"key": "ip"}, "canary key 'ip' is not one of tenant, sender, request_id"),
        ({"previous": [5]}, "previous serving versions [5] are not versions"),
    ],
)
def test_a_broken_rule_is_refused_on_read_and_on_write(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    data = json.loads(json.dumps(OLD_FILE))
    data["tasks"]["spam"].update(change)
    with pytest.raises(ReleaseError, match="inconsistent release state") as err:
        st.read_state(_write(tmp_path / "state.json", data))
    assert message in err.value.message
    state = st.ReleaseState.from_dict(data)  # types fine, rules broken
    with pytest.raises(ReleaseError, match="refusing to write") as err:
        st.write_state(tmp_path / "new.json", state)
    assert message in err.value.message and not (tmp_path / "new.json").exists()


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("serving",), "two", "tasks.spam.serving"),
        (("versions", "1", "retired"), None, None),  # null reads as the default
        (("versions", "1", "labels"), "ham", "tasks.spam.versions.1.labels"),
        (("versions", "1", "active"), "soon", "tasks.spam.versions.1.active"),
        (("history",), {}, "tasks.spam.history"),
    ],
)
def test_a_wrong_type_names_its_key(
    tmp_path: Path, path: tuple[str, ...], value: Any, named: str | None
) -> None:
    data = json.loads(json.dumps(OLD_FILE))
    node = data["tasks"]["spam"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    file = _write(tmp_path / "state.json", data)
    if named is None:
        assert st.read_state(file).tasks["spam"].versions[1].retired is False
        return
    with pytest.raises(ReleaseError) as err:
        st.read_state(file)
    assert named in err.value.message


def test_another_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReleaseError, match="not a textgate-release/1 state file"):
        st.read_state(_write(tmp_path / "state.json", {**OLD_FILE, "format": "x/2"}))


def test_an_atomic_write_that_fails_leaves_the_old_file_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "state.json"
    st.write_state(path, st.ReleaseState.from_dict(OLD_FILE))
    before = path.read_bytes()

    def crash(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError):
        st.write_state(path, st.ReleaseState())
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_history_is_bounded_and_drops_empty_fields() -> None:
    spam = st.ReleaseState.from_dict(OLD_FILE).tasks["spam"]
    for i in range(st.HISTORY_MAX + 5):
        spam.record({"seq": i, "op": "x", "reason": "", "forced": False})
    history = spam.history
    assert len(history) == st.HISTORY_MAX and history[-1] == {"seq": st.HISTORY_MAX + 4, "op": "x"}
