"""deploy/*.Dockerfile: hadolint-clean, non-root, pinned base images."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.deploy_checks import DOCKERFILES, hadolint


@pytest.mark.parametrize("path", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_is_lint_clean_non_root_and_pinned(path: Path) -> None:
    hadolint(path)
    text = path.read_text()
    users = re.findall(r"^USER\s+(\S+)", text, re.M)
    assert users and users[-1] not in ("root", "0"), "the image must not run as root"
    for image in re.findall(r"^FROM\s+(\S+)", text, re.M):
        assert re.search(r":\d[\w.-]*$", image), f"{image}: pin a version tag"
    assert "HEALTHCHECK" in text


def test_gateway_image_pins_every_python_package() -> None:
    text = DOCKERFILES[0].read_text()
    block = text.split("pip install", 1)[1].split("&&", 1)[0]  # the dependency install
    wanted = re.findall(r'"([^"]+)"', block)
    assert len(wanted) >= 9 and all(re.fullmatch(r"[\w.\-\[\],]+==[\w.]+", w) for w in wanted)


def test_a_bad_dockerfile_fails_naming_file_and_rule(tmp_path: Path) -> None:
    bad = tmp_path / "bad.Dockerfile"
    bad.write_text("FROM python:latest\nRUN apt-get install -y curl\n")
    with pytest.raises(AssertionError) as err:
        hadolint(bad)
    message = str(err.value)
    assert str(bad) in message and "DL3007" in message  # latest tag


def _closure(names: list[str]) -> set[str]:
    """Distributions the given ones pull in (their non-extra requirements, recursively)."""
    import importlib.metadata as md

    from packaging.requirements import Requirement

    seen: set[str] = set()
    todo = [n.lower().replace("_", "-") for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            reqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for text in reqs:
            req = Requirement(text)
            extras = {"grpc", "http"} if name == "tritonclient" else set()
            env = [{"extra": e} for e in extras] or [{"extra": ""}]
            if req.marker is None or any(req.marker.evaluate(e) for e in env):
                todo.append(req.name.lower().replace("_", "-"))
    return seen


def test_the_gateway_image_holds_everything_textgate_serve_imports() -> None:
    """The image installs textgate --no-deps plus its own pins: an import of, say,
    onnxruntime on the serving path would break the image; this catches it here."""
    import importlib.metadata as md
    import subprocess
    import sys

    block = DOCKERFILES[0].read_text().split("pip install", 1)[1].split("&&", 1)[0]
    pinned = [re.split(r"[\[=]", w)[0] for w in re.findall(r'"([^"]+)"', block)]
    allowed = _closure(pinned) | {"pip", "setuptools"}  # what `python -m venv` puts there
    # Imported only where installed (try/except ImportError), so absent from the image is
    # fine: anyio tries sniffio (the dev extra's selenium brings it, via trio), and
    # fastapi.responses tries orjson.
    allowed |= {"sniffio", "orjson"}
    code = (
        "import sys, textgate.cli, textgate.gateway.server, textgate.gateway.records.publisher\n"
        "from textgate.gateway.app import create_app; create_app()\n"
        "print('\\n'.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    dists = md.packages_distributions()
    missing = {
        mod: dists[mod]
        for mod in out.stdout.split()
        if mod in dists and mod != "textgate"
        and not {d.lower().replace("_", "-") for d in dists[mod]} & allowed
    }  # fmt: skip
    assert missing == {}, f"imported on the serving path but not in the image: {missing}"
