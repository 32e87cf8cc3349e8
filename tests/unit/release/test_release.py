"""Release state: add/list/canary/promote/rollback/gc, the gate, the canary watch, and crash
consistency (the process is killed after every step of every operation, then reopened)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from textgate import bundle, names, release
from textgate.config import Config, ReleaseConfig
from textgate.errors import BundleError, GateFailed, InvalidInput, ModelLoadError, ReleaseError
from textgate.release import gate

HERE = Path(__file__).resolve().parent


class _S:
    def __init__(self, state: str) -> None:
        self.state = state


class FileControl:
    """A stand-in for Triton's model control whose loaded set survives the process."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _get(self) -> set[str]:
        return set(json.loads(self.path.read_text())) if self.path.is_file() else set()

    def _put(self, names: set[str]) -> None:
        self.path.write_text(json.dumps(sorted(names)))

    def load_model(self, name: str) -> None:
        self._put(self._get() | {name})

    def unload_model(self, name: str) -> None:
        self._put(self._get() - {name})

    def model_states(self) -> Mapping[str, Any]:
        return {n: _S("READY") for n in self._get()}


def make_bundle(root: Path, name: str, *, task: str = "spam", f1: float = 0.9) -> Path:
    """A bundle with placeholder files: enough for the builder, never for inference."""
    out = root / name
    out.mkdir(parents=True)
    (out / "model.onnx").write_bytes(name.encode())
    (out / "tokenizer.json").write_text("{}", encoding="utf-8")
    (out / "labels.json").write_text('["ham", "spam"]', encoding="utf-8")
    bundle.write_manifest(
        out,
        {
            "task": task,
            "labels": ["ham", "spam"],
            "max_length": 64,
            "metrics": {"test": {"f1": f1, "accuracy": 0.9}},
            "parity": {"passed": True},
            "tokenizer": {"file": "tokenizer.json"},
            "variants": {"fp32": {"file": "model.onnx", "status": "accepted"}},
            "default_variant": {"cpu": "fp32", "gpu": "fp32"},
        },
    )
    return out


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return tmp_path / "repo"


@pytest.fixture
def control(tmp_path: Path) -> FileControl:
    return FileControl(tmp_path / "loaded.json")


def _open(repo: Path, control: FileControl, **cfg: Any) -> release.Releases:
    return release.Releases(repo, ReleaseConfig(**cfg), control=control)


def _passing(rel: release.Releases, task: str = "spam") -> None:
    """Run compare with an infer where both versions answer the same."""

    def infer(model: str, texts: Any) -> np.ndarray:
        return np.tile([[0.9, 0.1]], (len(texts), 1)).astype(np.float32)

    for i in range(60):
        rel.record_shadow(task, {"text": f"t{i}"})
    assert rel.compare(task, infer)["passed"]


def test_first_add_serves_second_is_candidate_loaded_beside(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    rel = _open(repo, control)
    assert rel.add(make_bundle(tmp_path, "b1"), "spam")["version"] == 1
    rel.add(make_bundle(tmp_path, "b2"), "spam")
    rows = {r["version"]: r for r in rel.list_versions()}
    assert rows[1]["state"] == "serving" and rows[2]["state"] == "standby"
    assert rows[1]["load"] == rows[2]["load"] == "READY"
    assert rows[2]["metrics"]["f1"] == 0.9 and rows[2]["variant"] == "fp32"
    assert {"spam_v1", "spam_v1_model", "spam_v2", "spam_v2_model"} <= control._get()
    assert release.pick(rel.state, "spam", "anyone") == 1  # nothing changed for traffic


@pytest.mark.parametrize("damage", ["corrupt", "truncate", "mismatch", "labels"])
def test_bad_bundle_refused_naming_the_file(
    tmp_path: Path, repo: Path, control: FileControl, damage: str
) -> None:
    rel = _open(repo, control)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    bad = make_bundle(tmp_path, "bad", task="sentiment" if damage == "mismatch" else "spam")
    if damage == "corrupt":
        (bad / "model.onnx").write_bytes(b"tampered")
    elif damage == "truncate":
        (bad / "tokenizer.json").write_text("{", encoding="utf-8")
    elif damage == "labels":
        m = bundle.read_manifest(bad)
        (bad / "labels.json").write_text('["spam", "ham"]', encoding="utf-8")
        bundle.write_manifest(bad, {**m, "labels": ["spam", "ham"]})
    before = rel.state
    with pytest.raises(BundleError) as err:
        rel.add(bad, "spam")
    named = {"corrupt": "model.onnx", "truncate": "tokenizer.json"}.get(damage, "manifest.json")
    assert named in str(err.value)
    assert rel.state == before and release.pick(rel.state, "spam", "k") == 1
    assert not (repo / "spam_v2").exists()


def test_promote_needs_gate_or_forced_reason_then_rollback(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    rel = _open(repo, control)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    rel.add(make_bundle(tmp_path, "b2"), "spam")
    with pytest.raises(GateFailed):
        rel.promote("spam")
    with pytest.raises(GateFailed):
        rel.promote("spam", force=True)  # no reason
    rel.promote("spam", force=True, reason="hotfix for a known false positive")
    t = rel.task("spam")
    assert t["serving"] == 2 and t["history"][-1]["forced"] is True
    assert "hotfix" in t["history"][-1]["reason"]
    rel.rollback("spam", reason="regression")
    assert rel.task("spam")["serving"] == 1
    with pytest.raises(ReleaseError):
        rel.rollback("spam")  # v1 was never preceded


def test_compare_gate_agreement_and_f1(tmp_path: Path, repo: Path, control: FileControl) -> None:
    rel = _open(repo, control, min_compare_texts=10)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    rel.add(make_bundle(tmp_path, "b2", f1=0.5), "spam")
    data = tmp_path / "test.jsonl"
    rows = [{"text": f"x{i}", "label": "spam" if i % 2 else "ham"} for i in range(40)]
    data.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")

    def infer(model: str, texts: Any) -> np.ndarray:
        flip = model == "spam_v2"
        out = [
            [0.1, 0.9] if (int(t[1:]) % 2) ^ (flip and int(t[1:]) < 4) else [0.9, 0.1]
            for t in texts
        ]
        return np.asarray(out, np.float32)

    report = rel.compare("spam", infer, data=data)
    assert not report["passed"] and report["agreement"] == pytest.approx(0.9)
    assert report["f1_serving"] == 1.0 and report["f1_candidate"] < 1.0
    assert (repo / report["report"]).is_file()
    with pytest.raises(GateFailed, match="agreement"):
        rel.promote("spam")


def test_compare_reports_accuracy_on_the_feedback_store(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    from textgate.feedback import FeedbackStore

    rel = _open(repo, control, min_compare_texts=1)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    rel.add(make_bundle(tmp_path, "b2"), "spam")
    store = FeedbackStore(tmp_path / "fb.sqlite3")
    for i in range(10):  # operators said: the texts x0..x9 are spam
        store.add(task="spam", label="spam", text=f"x{i}", source="http")
    store.add(task="other", label="spam", text="not this task", source="http")
    store.close()

    def infer(model: str, texts: Any) -> np.ndarray:
        # serving calls x0..x9 ham; the candidate learnt from the corrections: spam
        spam = model == "spam_v2"
        return np.asarray([[0.1, 0.9] if spam else [0.9, 0.1] for _ in texts], np.float32)

    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"text": "y", "label": "ham"}), encoding="utf-8")
    report = rel.compare("spam", infer, data=data, feedback=tmp_path / "fb.sqlite3")
    assert report["feedback"] == {"n": 10, "accuracy_serving": 0.0, "accuracy_candidate": 1.0}


def test_canary_is_sticky_and_near_the_share(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    rel = _open(repo, control)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    with pytest.raises(ReleaseError):
        rel.canary("spam", 10)  # no candidate yet
    rel.add(make_bundle(tmp_path, "b2"), "spam")
    rel.canary("spam", 10, key="tenant")
    state = rel.state
    picks = [release.pick(state, "spam", f"tenant-{i}") for i in range(5000)]
    assert 0.08 < picks.count(2) / 5000 < 0.12
    assert all(release.pick(state, "spam", f"tenant-{i}") == picks[i] for i in range(200))
    assert {r["version"]: r["state"] for r in rel.list_versions()}[2] == "canary 10 %"
    rel.shadow("spam")
    shadowed = rel.state.tasks["spam"]
    assert (shadowed.mode, shadowed.candidate) == ("shadow", 2)
    assert release.pick(rel.state, "spam", "tenant-1") == 1


def test_keep_three_loadable_retire_older_and_gc(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    rel = _open(repo, control)
    for i in range(1, 6):
        rel.add(make_bundle(tmp_path, f"b{i}"), "spam")
        if i > 1:
            _passing(rel)
            rel.promote("spam")
    states = {r["version"]: r["state"] for r in rel.list_versions()}
    assert states == {1: "retired", 2: "retired", 3: "standby", 4: "standby", 5: "serving"}
    assert not any(n.startswith(("spam_v1", "spam_v2")) for n in control._get())
    assert (repo / "spam_v1").is_dir()  # files kept until gc
    assert rel.gc() == ["spam_v1", "spam_v2"]
    assert (
        not (repo / "spam_v1").exists()
        and not (repo / release.STATE_DIR / "bundles/spam/1").exists()
    )
    rel.rollback("spam")
    assert rel.task("spam")["serving"] == 4


def test_state_view_picks_up_a_commit(tmp_path: Path, repo: Path, control: FileControl) -> None:
    rel = _open(repo, control)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    rel.add(make_bundle(tmp_path, "b2"), "spam")
    view = release.StateView(repo, min_interval_s=0)
    assert view.pick("spam", "k") == 1
    rel.promote("spam", force=True, reason="test")
    assert view.pick("spam", "k") == 2


def test_canary_watch_rolls_back_on_each_bound() -> None:
    cfg = ReleaseConfig(watch_min_requests=20)
    rng = np.random.default_rng(0)

    def fill(
        w: release.CanaryWatch, v: int, *, err: float = 0, lat: float = 0.01, spam: float = 0.2
    ) -> None:
        for _ in range(300):
            s = float(rng.random() < spam) * 0.8 + rng.random() * 0.2
            w.record(v, ok=rng.random() >= err, latency_s=lat, score=s)

    cases: list[tuple[dict[str, float], str | None]] = [
        ({}, None),
        ({"err": 0.1}, "error rate"),
        ({"lat": 0.05}, "P99"),
        ({"spam": 0.6}, "positive rate"),
    ]
    for canary, expect in cases:
        w = release.CanaryWatch(cfg)
        fill(w, 1)
        fill(w, 2, **canary)
        verdict = w.verdict(1, 2)
        assert (verdict is None) if expect is None else (expect in (verdict or "")), verdict
    assert release.psi([0.1] * 100, [0.9] * 100) > 1 > release.psi([0.1, 0.9] * 50, [0.9, 0.1] * 50)


# --- crash consistency -----------------------------------------------------------------------

_SCRIPT = """
import sys
sys.path.insert(0, {here!r})
from pathlib import Path
from test_release import FileControl, make_bundle
from textgate import release
from textgate.config import Config, ReleaseConfig
rel = release.Releases({repo!r}, ReleaseConfig(), control=FileControl(Path({loaded!r})))
op = {op!r}
if op == "add":
    rel.add(make_bundle(Path({tmp!r}), "crash-bundle"), "spam")
elif op == "promote":
    rel.promote("spam", force=True, reason="crash test")
else:
    rel.rollback("spam")
"""


def _prepare(tmp_path: Path, op: str) -> tuple[Path, FileControl]:
    repo, control = tmp_path / "repo", FileControl(tmp_path / "loaded.json")
    rel = release.Releases(repo, control=control)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    rel.add(make_bundle(tmp_path, "b2"), "spam")
    rel.promote("spam", force=True, reason="setup")
    rel.add(make_bundle(tmp_path, "b3"), "spam")  # v2 serves, v1 previous, v3 candidate
    return repo, control


@pytest.mark.parametrize(
    ("op", "step"),
    [("add", k) for k in (1, 2, 3, 4)]
    + [("promote", k) for k in (1, 2, 3, 4)]
    + [("rollback", k) for k in (1, 2, 3, 4)],
)
def test_killed_after_each_step_reopens_consistent(tmp_path: Path, op: str, step: int) -> None:
    repo, control = _prepare(tmp_path, op)
    before = release.read_state(repo / release.STATE_DIR / "state.json")
    script = _SCRIPT.format(
        here=str(HERE), repo=str(repo), loaded=str(control.path), tmp=str(tmp_path), op=op
    )
    env = {**os.environ, release.CRASH_ENV: f"{op}:{step}"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 77, proc.stderr
    # Reopen as a restarted gateway would: recover the journal, then reconcile with Triton.
    rel = release.Releases(repo, control=control)
    rel.reconcile()
    state = rel.state
    assert release.check_invariants(state) == []
    assert not rel.journal_path.exists()
    serving = state.tasks["spam"].serving
    committed = state.seq > before.seq
    if op == "add":
        assert committed == (step >= 4)
        assert (repo / "spam_v4").is_dir() == committed
        assert (repo / release.STATE_DIR / "bundles/spam/4").is_dir() == committed
    else:
        assert serving == ({"promote": 3, "rollback": 1}[op] if step >= 3 else 2)
    loaded = {m for m in control._get() if m.startswith("spam_v") and "_" not in m[6:]}
    assert loaded == {
        f"spam_v{v}" for v, i in state.tasks["spam"].versions.items() if not i.retired
    }
    # and the store still works after the crash
    rel.add(make_bundle(tmp_path, "after"), "spam")


def test_unfinished_journal_blocks_nothing_after_recovery(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    rel = _open(repo, control)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    release.write_json_atomic(rel.journal_path, {"op": "promote", "task": "spam", "seq": 99})
    rel2 = _open(repo, control)
    assert not rel2.journal_path.exists() and rel2.task("spam")["serving"] == 1


def test_check_invariants_flags_a_broken_state() -> None:
    bad = {"tasks": {"spam": {"serving": 3, "candidate": 3, "mode": "x", "versions": {"3": {}}}}}
    problems = release.check_invariants(bad)
    assert len(problems) == 2 and "candidate" in problems[0] + problems[1]


def test_names_round_trip() -> None:
    assert names.parse_version(release.ensemble("spam_x", 12)) == ("spam_x", 12)
    assert names.parse_version("spam") is None
    assert callable(release.Releases.list_versions)
    _: Callable[..., Any] = release.bucket


def test_cli_offline_add_list_promote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from textgate.cli import main

    repo = tmp_path / "repo"
    assert (
        main(["release", "add", str(repo), str(make_bundle(tmp_path, "b1")), "--task", "spam"]) == 0
    )
    assert (
        main(["release", "add", str(repo), str(make_bundle(tmp_path, "b2")), "--task", "spam"]) == 0
    )
    assert main(["release", "promote", "--repo", str(repo), "--task", "spam"]) == 13
    assert "gate failed" in capsys.readouterr().err
    args = ["release", "promote", "--repo", str(repo), "--task", "spam", "--force"]
    assert main([*args, "--reason", "known good"]) == 0
    capsys.readouterr()
    assert main(["release", "list", "--repo", str(repo), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["versions"]
    assert [(r["version"], r["state"], r["load"]) for r in rows] == [
        (1, "standby", "unknown"),
        (2, "serving", "unknown"),
    ]
    bad = make_bundle(tmp_path, "b3")
    (bad / "model.onnx").write_bytes(b"x")
    assert main(["release", "add", str(repo), str(bad), "--task", "spam"]) == 6
    assert "model.onnx" in capsys.readouterr().err


def test_cli_read_only_ops_refuse_a_path_without_releases(tmp_path: Path) -> None:
    from textgate import cli

    missing = tmp_path / "nowhere"
    assert cli.main(["release", "list", "--repo", str(missing)]) == 13
    assert not missing.exists()  # looking never creates a repository


def test_compare_paces_its_inference_to_the_configured_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A fake clock: the pacing is checked by the sleeps it asks for, not by wall time.
    now = [0.0]
    slept: list[float] = []
    monkeypatch.setattr(gate.time, "monotonic", lambda: now[0])

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    monkeypatch.setattr(gate.time, "sleep", sleep)
    calls: list[int] = []

    def infer(model: str, texts: Sequence[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.full((len(texts), 2), 0.5, np.float32)

    out = gate.probs(infer, "spam_v1", ["t"] * 40, 2, rate=20.0)
    assert out.shape == (40, 2)
    assert calls == [8] * 5
    assert now[0] == pytest.approx(40 / 20.0)  # 40 texts at 20/s take 2 s
    assert gate.probs(infer, "spam_v1", ["t"] * 16, 2, rate=0.0).shape == (16, 2)
    assert len(slept) == 5  # the unpaced call asked for no sleep


# --- hostile names and bundles (issue 10 §4) ---------------------------------------------
# Traversal and glob names refused at every entry point, the serving models survive, a
# failed add leaves no journal, and an installed manifest that changed is not loaded.

HOSTILE_NAMES = [
    "../../../escape",
    "*",
    "spam_v1_*",
    "a/b",
    "..",
    "",
    "Spam",
    "x" * 65,
    "a b",
    "sp?m",
]


@pytest.fixture
def served(tmp_path: Path) -> tuple[release.Releases, FileControl, Path]:
    control = FileControl(tmp_path / "loaded.json")
    rel = _open(tmp_path / "repo", control)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    return rel, control, tmp_path


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_task_name_is_refused_before_anything_is_touched(
    served: tuple[release.Releases, FileControl, Path], name: str
) -> None:
    rel, control, tmp = served
    before = sorted(p.name for p in rel.repo.iterdir())
    loaded = control._get()
    src = make_bundle(tmp, f"evil{abs(hash(name))}", task=name or "spam")
    with pytest.raises(InvalidInput) as err:
        rel.add(src, name)
    assert err.value.field == "task" and err.value.reason == "invalid_name"
    assert sorted(p.name for p in rel.repo.iterdir()) == before  # serving models survive
    assert control._get() == loaded and not rel.journal_path.exists()
    assert not (tmp / "escape").exists()
    rel.add(make_bundle(tmp, f"ok{abs(hash(name))}"), "spam")  # nothing is blocked


def test_the_task_pattern_accepts_ordinary_names() -> None:
    for name in ("spam", "spam-sms", "sentiment_zh", "a", "0" + "x" * 63):
        assert release.check_task(name) == name


def test_version_models_escapes_glob_characters(
    served: tuple[release.Releases, FileControl, Path],
) -> None:
    rel, _, _ = served
    assert release.version_models(rel.repo, "spam", 1)
    assert release.version_models(rel.repo, "*", 1) == []  # not every *_v1_* model
    assert release.version_models(rel.repo, "s[p]am", 1) == []


def test_a_failed_add_leaves_no_journal_and_blocks_nothing(
    served: tuple[release.Releases, FileControl, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rel, control, tmp = served

    def fail(name: str) -> None:
        raise ModelLoadError(name, "out of memory")

    monkeypatch.setattr(control, "load_model", fail)
    with pytest.raises(ModelLoadError):
        rel.add(make_bundle(tmp, "b2"), "spam")
    assert not rel.journal_path.exists()
    assert not (rel.dir / "bundles" / "spam" / "2").exists()
    assert release.version_models(rel.repo, "spam", 2) == []
    monkeypatch.undo()
    assert rel.add(make_bundle(tmp, "b3"), "spam")["version"] == 2  # the next add works


def test_a_hostile_journal_steers_no_delete(
    served: tuple[release.Releases, FileControl, Path],
) -> None:
    rel, control, _ = served
    models = sorted(p.name for p in rel.repo.iterdir())
    release.write_json_atomic(rel.journal_path, {"op": "add", "task": "*", "version": 1, "seq": 99})
    reopened = _open(rel.repo, control)
    assert not reopened.journal_path.exists()
    assert sorted(p.name for p in rel.repo.iterdir()) == models
    assert reopened.task("spam")["serving"] == 1


def test_a_changed_installed_manifest_is_not_loaded(
    served: tuple[release.Releases, FileControl, Path],
) -> None:
    rel, control, _ = served
    info = rel.state.tasks["spam"].versions[1]
    installed = rel.dir / "bundles" / "spam" / "1" / bundle.MANIFEST
    assert info.manifest_sha256 == bundle.sha256_file(installed)
    rel.verify_installed("spam", 1)
    data = json.loads(installed.read_text(encoding="utf-8"))
    data["labels"] = ["spam", "ham"]  # every listed file's hash still matches
    installed.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BundleError, match="changed since the version was added") as err:
        rel.verify_installed("spam", 1)
    assert err.value.file == bundle.MANIFEST
    control._put(set())  # a restarted Triton: reconcile would load the version again
    with pytest.raises(BundleError):
        rel.reconcile()
    assert control._get() == set()


def test_compare_uses_recorded_outputs_of_text_less_shadow_rows(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    # events.store_text: false keeps no text in the shadow log; the shadow copy's own two
    # answers are what compare judges (nothing to re-run).
    rel = _open(repo, control, min_compare_texts=50)
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    rel.add(make_bundle(tmp_path, "b2"), "spam")

    def row(i: int, candidate: int, s: list[float], c: list[float]) -> dict[str, Any]:
        return {"text_sha256": f"{i:064x}", "serving": "1", "candidate": candidate,
                "serving_probs": s, "candidate_probs": c}  # fmt: skip

    for i in range(60):
        rel.record_shadow("spam", row(i, 2, [0.9, 0.1], [0.8, 0.2]))
    rel.record_shadow("spam", row(99, 7, [0.1, 0.9], [0.9, 0.1]))  # another pair: not used

    def infer(model: str, texts: Any) -> np.ndarray:
        raise AssertionError("nothing to re-run: no shadow row has a text")

    report = rel.compare("spam", infer)
    assert report["passed"] and report["n_shadow"] == 60 and report["agreement"] == 1.0


def test_compare_gates_each_language_sample_on_its_own(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    """Sentiment's canary gate runs on an English and a Chinese sample; a candidate that
    disagrees on more than 0.5 % of either is refused even where the pooled texts agree."""
    en, zh = tmp_path / "en.jsonl", tmp_path / "zh.jsonl"
    en.write_text("\n".join(json.dumps({"text": f"en{i}"}) for i in range(1000)), "utf-8")
    zh.write_text("\n".join(json.dumps({"text": f"zh{i}"}) for i in range(200)), "utf-8")
    samples = [
        {"task": "sentiment", "name": "en", "path": str(en)},
        {"task": "sentiment", "name": "zh", "path": str(zh)},
    ]
    unpaced = {"compare_samples": samples, "min_compare_texts": 50, "compare_texts_per_s": 0}
    cfg = Config.from_dict({"release": unpaced})
    rel = release.Releases(repo, cfg.release, control=control)
    rel.add(make_bundle(tmp_path, "b1", task="sentiment"), "sentiment")
    rel.add(make_bundle(tmp_path, "b2", task="sentiment"), "sentiment")
    for i in range(60):
        rel.record_shadow("sentiment", {"text": f"shadow{i}"})
    flipped: set[str] = set()

    def infer(model: str, texts: Any) -> np.ndarray:
        rows = [[0.1, 0.9] if model.endswith("_v2") and t in flipped else [0.9, 0.1] for t in texts]
        return np.asarray(rows, np.float32)

    flipped.update({"zh0", "en0"})  # 1 of 200 Chinese (0.5 %), 1 of 1000 English
    report = rel.compare("sentiment", infer)
    assert report["passed"], report["reasons"]
    assert [(s["name"], s["n"]) for s in report["samples"]] == [("en", 1000), ("zh", 200)]
    assert report["samples"][1]["agreement"] == pytest.approx(0.995)

    flipped.add("zh1")  # 2 of 200: 99.0 % on Chinese; pooled with English it is 99.75 %
    report = rel.compare("sentiment", infer)
    assert not report["passed"]
    assert report["reasons"] == ["sample zh: argmax agreement 0.9900 < 0.995"]
    assert rel.task("sentiment")["versions"]["2"]["gate"]["samples"][1]["passed"] is False
    with pytest.raises(GateFailed, match="sample zh"):
        rel.promote("sentiment")


def test_a_missing_compare_sample_is_a_clear_error(
    tmp_path: Path, repo: Path, control: FileControl
) -> None:
    sample = {"task": "spam", "name": "zh", "path": str(tmp_path / "nope.jsonl")}
    assert ReleaseConfig().compare_samples == ()  # none unless configured
    rel = release.Releases(
        repo,
        Config.from_dict(
            {"release": {"compare_samples": [sample], "compare_texts_per_s": 0}}
        ).release,
        control=control,
    )
    rel.add(make_bundle(tmp_path, "b1"), "spam")
    rel.add(make_bundle(tmp_path, "b2"), "spam")
    with pytest.raises(ReleaseError, match="nope.jsonl"):
        _passing(rel)
