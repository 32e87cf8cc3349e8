"""Postfix end to end: Debian's postfix with the gateway as its milter (``smtpd_milters``),
mail sent by Postfix's own ``smtp-source`` and received by ``smtp-sink``, configured from
the recipes in docs/operators.md (the blocks marked ``recipe:``), so the page stays true.

The tiny random model answers P(spam) near 0.5, so each verdict is steered by the tenant
that the recipient's domain chooses (``policy.tenants[].domains``, read from the milter's
RCPT): ``hold.test`` quarantines everything, ``review.test`` reviews everything, other
domains get the default policy (allow). Two SMTP listeners front two gateways that differ
only in ``mail.milter_quarantine``: the recipe's ``quarantine`` (Postfix's hold queue) and
``reject`` (a 5xx at SMTP time) — the two ways an operator chooses.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.helpers.gateway_fixtures import run_gateway
from tests.helpers.postfix import Postfix, installed, run_postfix
from textgate.triton import TritonServer, free_port

pytestmark = [pytest.mark.slow, pytest.mark.triton]
if installed() is not None:
    pytestmark.append(pytest.mark.skip(reason=str(installed())))

ROOT = Path(__file__).parents[2]
MESSAGE = (ROOT / "tests" / "data" / "email" / "alternative.eml").read_bytes()
RECIPE_PORT = 8891  # the milter port the recipes name
TENANTS = [
    {
        "name": "holder",
        "domains": ["hold.test"],
        "tasks": [{"task": "spam", "review_at": 0.01, "quarantine_at": 0.02}],
    },
    {
        "name": "reviewer",
        "domains": ["review.test"],
        "tasks": [{"task": "spam", "review_at": 0.01, "quarantine_at": 0.999}],
    },
]


def recipe(name: str) -> str:
    """The fenced block after ``<!-- recipe: NAME -->`` in docs/operators.md."""
    page = (ROOT / "docs" / "operators.md").read_text(encoding="utf-8")
    found = re.search(rf"<!-- recipe: {re.escape(name)} -->\n```[a-z]*\n(.*?)```", page, re.S)
    assert found, f"docs/operators.md has no recipe {name!r}"
    return found.group(1)


def _config(tmp: Path, quarantine: str | None = None) -> dict[str, Any]:
    """The recipe's mail section on a free port (``quarantine`` overrides its reply) and the
    steering tenants in place of its example one."""
    mail = yaml.safe_load(recipe("textgate.yaml"))["mail"]
    assert mail["milter_port"] == RECIPE_PORT
    mail["milter_port"] = free_port()
    if quarantine:
        mail["milter_quarantine"] = quarantine
    return {
        "policy": {"tenants": TENANTS},
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
        "mail": mail,
    }


ADMIN = "postfix-test-admin-token"


@pytest.fixture(scope="module")
def postfix(
    triton_server: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Postfix]:
    tmp = tmp_path_factory.mktemp("postfix")
    (tmp / "h").mkdir()
    (tmp / "r").mkdir()
    holds, rejects = _config(tmp / "h"), _config(tmp / "r", "reject")
    assert holds["mail"]["milter_quarantine"] == "quarantine"
    main_cf = recipe("main.cf").replace(str(RECIPE_PORT), str(holds["mail"]["milter_port"]))
    milters = {"hold": None, "reject": rejects["mail"]["milter_port"]}  # None: main.cf's
    urls = [triton_server.grpc_url]
    with run_postfix(milters, main_cf) as box:
        # the recipe's release command: the shipped script, on this instance (-c its config)
        review = yaml.safe_load(recipe("release_command"))["review"]
        program, *args = review["release_command"]
        assert program.endswith("/postfix-release") and args == ["{queue_id}"]
        script = str(ROOT / "scripts" / "postfix-release")
        review["release_command"] = [script, "-c", str(box.config_dir), *args]
        holds["review"] = review | {"path": str(tmp / "h" / "review.sqlite3")}
        holds["feedback"] = {"path": str(tmp / "h" / "feedback.sqlite3")}
        holds["gateway"] = {"admin_token": ADMIN}
        with run_gateway(holds, urls) as gw, run_gateway(rejects, urls):
            box.gateway_url = gw.url  # type: ignore[attr-defined]
            yield box


def _arrived(box: Postfix, marker: bytes, timeout_s: float = 30) -> bytes:
    """The delivered message carrying ``marker``, once smtp-sink has it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for raw in box.delivered():
            if marker in raw:
                return raw
        time.sleep(0.2)
    raise AssertionError(f"{marker!r} never reached smtp-sink; postfix log:\n{box.log()[-3000:]}")


def _tagged(tag: str) -> bytes:
    return f"X-Test-Tag: {tag}\r\n".encode() + MESSAGE


def _held(box: Postfix, timeout_s: float = 15) -> list[dict[str, object]]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        held = [m for m in box.queue() if m.get("queue_name") == "hold"]
        if held:
            return held
        time.sleep(0.2)
    return []


def test_allowed_mail_is_delivered_with_the_verdict_headers(postfix: Postfix) -> None:
    out = postfix.send(_tagged("allow-1"), rcpt="someone@example.org", listener="hold")
    assert "250 2.0.0 Ok: queued as" in out, out
    raw = _arrived(postfix, b"allow-1")
    assert b"X-Textgate-Action: allow" in raw and b"X-Spam-Flag: NO" in raw


def test_review_is_delivered_with_the_spam_headers(postfix: Postfix) -> None:
    out = postfix.send(_tagged("review-1"), rcpt="clerk@review.test", listener="hold")
    assert "250 2.0.0 Ok: queued as" in out, out
    raw = _arrived(postfix, b"review-1")
    assert b"X-Textgate-Action: review" in raw and b"X-Spam-Flag: YES" in raw
    assert b"X-Spam-Status: Yes" in raw


def test_quarantine_is_held_in_postfix_and_released_by_postsuper(postfix: Postfix) -> None:
    out = postfix.send(_tagged("hold-1"), rcpt="clerk@hold.test", listener="hold")
    assert "250 2.0.0 Ok: queued as" in out, out
    queue_id = out.split("queued as", 1)[1].split()[0]
    held = _held(postfix)
    assert [m["queue_id"] for m in held] == [queue_id]
    postfix.flush()
    time.sleep(1)
    assert not any(b"hold-1" in raw for raw in postfix.delivered())  # a flush keeps it held
    for argv in _release_recipe(queue_id, postfix):
        subprocess.run(argv, check=True, timeout=30)
    raw = _arrived(postfix, b"hold-1")
    assert b"X-Textgate-Action: quarantine" in raw


def _release_recipe(queue_id: str, box: Postfix) -> list[list[str]]:
    """The recipe's release lines (not its delete line) for this instance's config."""
    lines = [line.split("#")[0].split() for line in recipe("release").splitlines()]
    release = [argv for argv in lines if argv and "-d" not in argv]
    assert [argv[:2] for argv in release] == [["postsuper", "-H"], ["postqueue", "-i"]]
    config = ["-c", str(box.config_dir)]
    return [[a[0], *config, *(queue_id if w == "QUEUE_ID" else w for w in a[1:])] for a in release]


def test_reject_is_a_5xx_at_smtp_time_and_nothing_is_queued(postfix: Postfix) -> None:
    before = len(postfix.queue())
    out = postfix.send(_tagged("reject-1"), rcpt="clerk@hold.test", listener="reject")
    assert "550 5.7.1 Message rejected as spam by textgate" in out, out
    assert "queued as" not in out
    assert len(postfix.queue()) == before
    time.sleep(1)
    assert not any(b"reject-1" in raw for raw in postfix.delivered())


def _console(url: str) -> tuple[httpx.Client, str]:
    """A logged-in console session (cookie) and its CSRF token, as the browser gets them."""
    client = httpx.Client(base_url=url, timeout=30)
    page = client.get("/ui/").text
    token = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    login = client.post("/ui/login", data={"key": ADMIN, "csrf": token})
    assert login.status_code in (200, 303), login.text
    return client, client.get("/ui/api/session").json()["csrf"]


def test_a_console_release_releases_the_held_message_from_postfix(postfix: Postfix) -> None:
    out = postfix.send(_tagged("hold-console"), rcpt="clerk@hold.test", listener="hold")
    queue_id = out.split("queued as", 1)[1].split()[0]
    assert queue_id in [m["queue_id"] for m in _held(postfix)]
    client, csrf = _console(postfix.gateway_url)  # type: ignore[attr-defined]
    try:
        items = client.get("/ui/api/queue", params={"action": "quarantine"}).json()["items"]
        mine = [i for i in items if i["queue_id"] == queue_id]
        assert len(mine) == 1, items  # the milter kept Postfix's queue id with the message
        rid = mine[0]["request_id"]
        decided = client.post(
            f"/ui/api/messages/{rid}/decision",
            json={"decision": "release"},
            headers={"x-csrf-token": csrf},
        )
    finally:
        client.close()
    assert decided.status_code == 200, decided.text
    assert decided.json()["mta_released"] == queue_id
    raw = _arrived(postfix, b"hold-console")
    assert b"X-Textgate-Action: quarantine" in raw and rid.encode() in raw
    assert queue_id not in [m["queue_id"] for m in postfix.queue()]
