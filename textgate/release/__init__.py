"""Model versions of a task: add, canary, shadow, compare, promote, rollback, gc.

Every version N of task T is its own set of Triton models, ``T_vN`` (ensemble) with
``T_vN_tokenize``, ``T_vN_model``, ``T_vN_postprocess`` (each at Triton version 1): Triton
ensembles are unversioned and unloading a member unloads its ensemble, so versions that share
names cannot serve side by side. Which version answers is the gateway's choice, read from one
state file; a switch is one atomic rename of that file (docs/lifecycle.md).

    REPO/T_vN*/                            the version's Triton models (``install``)
    REPO/.textgate-release/state.json      which version serves, canary %, history (``state``)
    REPO/.textgate-release/journal.json    the operation in progress (``manager``)
    REPO/.textgate-release/bundles/T/N/    the verified copy of the version's bundle
    REPO/.textgate-release/shadow/T.jsonl  texts scored by serving and candidate (``shadow``)
    REPO/.textgate-release/reports/        compare reports (``gate``)

    state.py    ReleaseState / TaskState / VersionInfo: typed, checked, atomic file I/O
    manager.py  Releases: the operations, the journal, crash recovery, reconcile
    install.py  a version's files: bundle copy, models, the installed-manifest check
    picker.py   StateView: which version answers a request (the gateway's version picker)
    gate.py     compare: agreement and F1 (textgate.metrics) -> passed, reasons
    samples.py  compare: agreement on each configured sample (e.g. English, Chinese) alone
    watch.py    CanaryWatch: the automatic rollback of a canary
    shadow.py   the shadow log
    ops.py      OPERATIONS: the one table the CLI (offline, remote) and the admin API iterate

A low layer: errors, config, names, bundle, repository, metrics and triton -- never the
gateway.
"""

from textgate.names import TASK_PATTERN, check_task
from textgate.names import version_ensemble as ensemble
from textgate.release.gate import Infer, gate_report, read_labelled
from textgate.release.install import version_models
from textgate.release.manager import CRASH_ENV, Releases
from textgate.release.ops import BY_NAME, OPERATIONS, Operation, Param
from textgate.release.picker import STATE_DIR, StateView, bucket, pick
from textgate.release.state import (
    FORMAT,
    KEYS,
    ReleaseState,
    TaskState,
    VersionInfo,
    check_invariants,
    read_state,
    write_json_atomic,
    write_state,
)
from textgate.release.watch import CanaryWatch, psi
from textgate.triton.control import HttpControl, ModelControl, http_infer

__all__ = [
    "BY_NAME",
    "CRASH_ENV",
    "FORMAT",
    "KEYS",
    "OPERATIONS",
    "STATE_DIR",
    "TASK_PATTERN",
    "CanaryWatch",
    "HttpControl",
    "Infer",
    "ModelControl",
    "Operation",
    "Param",
    "ReleaseState",
    "Releases",
    "StateView",
    "TaskState",
    "VersionInfo",
    "bucket",
    "check_invariants",
    "check_task",
    "ensemble",
    "gate_report",
    "http_infer",
    "pick",
    "psi",
    "read_labelled",
    "read_state",
    "version_models",
    "write_json_atomic",
    "write_state",
]
