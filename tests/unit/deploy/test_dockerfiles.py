"""deploy/*.Dockerfile: hadolint-clean, non-root, pinned base images."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from deploy_checks import DOCKERFILES, hadolint


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
