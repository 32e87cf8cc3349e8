"""A version's files: the verified bundle copy and the Triton models built from it.

    REPO/.textgate-release/bundles/T/N/   the verified copy of version N's bundle
    REPO/T_vN/ REPO/T_vN_model/ ...        its Triton models (``textgate.names``)

The copy is verified again after the copy (a bad transfer is caught), and its manifest's
hash is recorded so that a manifest edited later is never loaded (``verify_installed``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from textgate import bundle, names
from textgate.config import RepositoryConfig
from textgate.errors import BundleError
from textgate.release.state import VersionInfo


def version_models(repo: Path, task: str, version: int) -> list[str]:
    """The version's Triton models, in load order (steps before ensembles)."""
    base = names.version_ensemble(task, version)
    found = sorted(p.parent.name for p in repo.glob(f"{names.member_glob(base)}/config.pbtxt"))
    steps = [n for n in found if not names.is_precise(n)]
    precise = [n for n in found if names.is_precise(n)]
    tail = [base] if (repo / base / "config.pbtxt").is_file() else []
    return steps + tail + precise


def bundle_dir(state_dir: Path, task: str, version: int) -> Path:
    return state_dir / "bundles" / task / str(version)


def remove_models(repo: Path, task: str, version: int) -> None:
    for name in version_models(repo, task, version):
        shutil.rmtree(repo / name, ignore_errors=True)


def remove_bundle(state_dir: Path, task: str, version: int) -> None:
    dest = bundle_dir(state_dir, task, version)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.rmtree(dest.with_name(f"{version}.tmp"), ignore_errors=True)


def check_bundle(
    src: Path, manifest: Mapping[str, Any], task: str, serving: VersionInfo | None
) -> None:
    """A bundle of another task, or with another label order than serving, is refused."""
    if manifest.get("task") not in (None, task):
        raise BundleError(
            f"{src / bundle.MANIFEST}: bundle is task '{manifest.get('task')}', not '{task}'",
            file=bundle.MANIFEST,
        )
    if serving is not None and list(manifest["labels"]) != list(serving.labels):
        raise BundleError(
            f"{src / bundle.MANIFEST}: labels {manifest['labels']} differ from the serving "
            f"version's {serving.labels}",
            file=bundle.MANIFEST,
            hint="a new version must keep the label order; release it as a new task",
        )


def install(
    repo: Path, state_dir: Path, settings: RepositoryConfig, src: Path, task: str, version: int
) -> VersionInfo:
    """Copy ``src`` in, verify the copy, build the version's models; what to record."""
    from textgate.repository import build  # heavy (protobuf); only adds need it

    dest = bundle_dir(state_dir, task, version)
    tmp = dest.with_name(f"{version}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, tmp)
    manifest = bundle.verify(tmp)  # the copy, not the source: catches a bad transfer
    manifest_sha256 = bundle.sha256_file(tmp / bundle.MANIFEST)
    os.replace(tmp, dest)
    remove_models(repo, task, version)  # leftovers of an add that crashed
    result = build([dest], repo, settings, suffix=names.version_suffix(version))
    spec = result.spec.tasks[0]
    return VersionInfo(
        bundle_hash=hashlib.sha256(
            json.dumps(manifest["files"], sort_keys=True).encode()
        ).hexdigest(),
        variant=spec.variant,
        labels=list(spec.labels),
        metrics=dict(manifest.get("metrics", {}).get("test", {})),
        models=list(result.models),
        added=time.time(),
        # The manifest lists every file's hash but not its own: its hash lives here,
        # outside the bundle, and is checked before a version is loaded again.
        manifest_sha256=manifest_sha256,
    )


def verify_installed(state_dir: Path, task: str, version: int, info: VersionInfo | None) -> None:
    """The installed bundle's manifest is the one recorded at add (BundleError if not)."""
    want = info.manifest_sha256 if info is not None else ""
    if not want:  # added before manifests were recorded
        return
    path = bundle_dir(state_dir, task, version) / bundle.MANIFEST
    try:
        have = bundle.sha256_file(path)
    except OSError as exc:
        raise BundleError(f"{path}: cannot be read ({exc.strerror})", file=bundle.MANIFEST) from exc
    if have != want:
        raise BundleError(
            f"{path}: changed since the version was added (sha256 {have[:12]}…, "
            f"recorded {want[:12]}…)",
            file=bundle.MANIFEST,
            hint="re-add the bundle as a new version; do not edit installed bundles",
        )
