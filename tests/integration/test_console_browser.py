"""The review console in a real browser: Debian's headless Chromium, driven by Selenium
through Debian's chromedriver (no browser download), against a real gateway, a real
tritonserver and a real Kafka-protocol broker.

The tiny random models answer P(spam) near 0.5, so the tenants' thresholds are set low:
``acme``'s mail goes to review, ``globex``'s to quarantine, and both land in the store.
``TEXTGATE_SCREENSHOTS=docs/img`` also saves the screenshots there (for the README).
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from tests.helpers.gateway_fixtures import RunningGateway, run_gateway
from tests.helpers.kafka_fixtures import TansuBroker, running_tansu
from tests.helpers.servers import debian_tool
from textgate.triton import TritonServer, free_port

pytestmark = [pytest.mark.slow, pytest.mark.triton, pytest.mark.kafka]

DATA = Path(__file__).parents[1] / "data" / "email"
ADMIN = "console-admin-token-0123"
TOPIC = "textgate.console-test"
TENANTS = [
    {
        "name": "acme",
        "api_key": "acme-key-123",
        "tasks": [{"task": "spam", "review_at": 0.01, "quarantine_at": 0.999}],
    },
    {
        "name": "globex",
        "api_key": "globex-key-456",
        "tasks": [{"task": "spam", "review_at": 0.01, "quarantine_at": 0.02}],
    },
]
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)


# --- servers ---------------------------------------------------------------------------------


class Trap(http.server.BaseHTTPRequestHandler):
    """Stands in for the spammer's server: any request the browser makes here is counted."""

    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Trap.hits.append(self.path)
        self.send_response(200)
        self.send_header("content-type", "image/png")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def trap() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Trap)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def broker() -> Iterator[TansuBroker]:
    with running_tansu() as b:
        yield b


@pytest.fixture(scope="module")
def gateway(
    triton_server: TritonServer, broker: TansuBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("console")
    config = {
        "gateway": {"admin_token": ADMIN},
        "policy": {"tenants": TENANTS},
        "events": {
            "outbox_path": str(tmp / "events.sqlite3"),
            "kafka": {"bootstrap_servers": [broker.bootstrap], "topic": TOPIC},
        },
        "feedback": {"path": str(tmp / "feedback.sqlite3")},
        "review": {"path": str(tmp / "review.sqlite3"), "explain": 3},
        "mail": {"spamd_port": free_port()},
    }
    with run_gateway(config, [triton_server.grpc_url]) as gw:
        gw.tmp = tmp  # type: ignore[attr-defined]
        gw.spamd_port = config["mail"]["spamd_port"]  # type: ignore[attr-defined,index]
        yield gw


def classify(gw: RunningGateway, raw: bytes, key: str) -> dict[str, Any]:
    with gw.client() as c:
        r = c.post(
            "/v1/classify/spam",
            content=raw,
            headers={"content-type": "message/rfc822", "x-api-key": key},
        )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["results"][0]
    return result


# --- the browser -----------------------------------------------------------------------------


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = debian_tool("chromium")
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    service = Service(debian_tool("chromedriver"), log_output=str(tmp_path / "chromedriver.log"))
    driver = webdriver.Chrome(options=options, service=service)
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()


def wait(what: str, cond: Callable[[], Any], timeout_s: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = cond()
        except Exception:  # the element is not there yet
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def api_login(c: httpx.Client, key: str) -> None:
    """A login as the form does it: its one-time token from the page, then the POST."""
    form = re.search(r'name="csrf" value="([^"]+)"', c.get("/ui/").text)
    assert form is not None
    r = c.post("/ui/login", data={"key": key, "csrf": form.group(1)})
    assert r.status_code in (200, 303), r.text


def login(driver: Any, gw: RunningGateway, key: str) -> None:
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(f"{gw.url}/ui/")
    field = driver.find_element(By.ID, "key")
    field.send_keys(key)
    driver.find_element(By.ID, "login").click()
    wait("the console to start", lambda: driver.find_element(By.ID, "who").text)


def ready(driver: Any) -> bool:
    return bool(driver.execute_script("return document.body.dataset.ready === '1'"))


def press(driver: Any, key: str) -> None:
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).send_keys(key).perform()


def decided(driver: Any) -> str:
    return str(driver.execute_script("return document.body.dataset.lastDecision || ''"))


def selected(driver: Any) -> str:
    return str(
        driver.execute_script(
            "const r = document.querySelector('#queue tbody tr.selected');"
            "return r ? r.dataset.requestId : '';"
        )
    )


def save_screenshot(driver: Any, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    assert driver.save_screenshot(str(path)) and path.stat().st_size > 10_000
    target = os.environ.get("TEXTGATE_SCREENSHOTS")
    if target:
        shutil.copyfile(path, Path(target) / name)


def feedback_rows(gw: RunningGateway) -> list[tuple[str, str, str]]:
    path = gw.tmp / "feedback.sqlite3"  # type: ignore[attr-defined]
    if not path.exists():
        return []
    with sqlite3.connect(path) as db:
        return list(db.execute("SELECT request_id, label, source FROM corrections ORDER BY id"))


def review_events(gw: RunningGateway) -> list[dict[str, Any]]:
    with sqlite3.connect(gw.tmp / "events.sqlite3") as db:  # type: ignore[attr-defined]
        rows = [json.loads(r[0]) for r in db.execute("SELECT payload FROM events ORDER BY id")]
    return [e for e in rows if e["schema"] == "textgate.review-event/1"]


# --- the tests -------------------------------------------------------------------------------


def test_reviewer_decides_with_the_keyboard_and_each_decision_lands_once(
    gateway: RunningGateway, browser: Any, broker: TansuBroker, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    sent = [
        classify(gateway, (DATA / name).read_bytes(), "acme-key-123")
        for name in ("alternative.eml", "quoted_printable.eml", "base64_utf8.eml")
    ]
    assert {r["action"] for r in sent} == {"review"}
    login(browser, gateway, ADMIN)
    wait("the console", lambda: ready(browser))
    rows = browser.find_elements(By.CSS_SELECTOR, "#queue tbody tr")
    shown = [r.get_attribute("data-request-id") for r in rows]
    assert shown[:3] == [r["request_id"] for r in reversed(sent)]  # newest first
    assert "3 open" in browser.find_element(By.ID, "counts").text
    # The live panel, from the gateway's own counters since it started: at least our 3.
    assert float(browser.find_element(By.ID, "vpm").text) > 0
    assert browser.find_element(By.ID, "review-share").text == "100.0 %"
    save_screenshot(browser, tmp_path, "console-queue.png")

    first = shown[0]  # the selected row: "s" marks it spam from the queue
    press(browser, "s")
    wait("the spam decision", lambda: decided(browser) == f"{first}:spam")
    second = wait("the queue without the decided one", lambda: selected(browser) not in (first, ""))
    second = selected(browser)
    press(browser, Keys.ENTER)  # open it, then "h" marks it ham from the message view
    wait("the message view", lambda: browser.find_element(By.ID, "m-rid").text == second)
    assert browser.find_element(By.ID, "m-model").text.startswith("spam")
    assert "review" in browser.find_element(By.ID, "m-verdict").text
    # Trigger words: computed (one occlusion request) when the message is first opened.
    wait("trigger words", lambda: browser.find_elements(By.CSS_SELECTOR, "#m-triggers .span"))
    save_screenshot(browser, tmp_path, "console-message.png")
    press(browser, "h")
    wait("the ham decision", lambda: decided(browser) == f"{second}:ham")
    wait(
        "the decision shown",
        lambda: "ham by admin" in browser.find_element(By.ID, "m-decision").text,
    )

    assert feedback_rows(gateway) == [(first, "spam", "console"), (second, "ham", "console")]
    events = review_events(gateway)
    assert [(e["request_id"], e["decision"], e["label"]) for e in events] == [
        (first, "spam", "spam"),
        (second, "ham", "ham"),
    ]
    keys = wait(
        "both decisions on Kafka",
        lambda: (k := broker.keys(TOPIC)) and k[f"review/{second}"] and k,
    )
    review_keys = {k: n for k, n in keys.items() if k.startswith("review/")}
    assert review_keys == {f"review/{first}": 1, f"review/{second}": 1}


HOSTILE = """From: Prize Desk <prizes@winner.example>
To: you@example.org
Subject: You have WON a prize
MIME-Version: 1.0
Content-Type: text/html; charset=utf-8

<html><head><script>window.__pwned = 'script';</script></head>
<body onload="window.__pwned = 'onload'">
<p>Dear winner, claim your prize today.</p>
<img src="http://127.0.0.1:{port}/remote.png" onerror="window.__pwned = 'onerror'">
<a href="javascript:window.__pwned='link'">Click here</a> or visit
<a href="http://claim.prize-desk.example/login">our claim page</a>.
<svg onload="window.__pwned = 'svg'"></svg>
</body></html>
"""


def test_hostile_html_runs_no_script_and_fetches_nothing(
    gateway: RunningGateway, browser: Any, trap: int
) -> None:
    from selenium.webdriver.common.by import By

    raw = HOSTILE.format(port=trap).replace("\n", "\r\n").encode()
    rid = classify(gateway, raw, "acme-key-123")["request_id"]
    # The tiny model's occlusion moves no score; a stored explanation stands in for a real
    # model's, so that the highlighting is exercised (including a regex metacharacter).
    spans = [{"span": "prize", "kind": "word", "contribution": 0.31}]
    spans += [{"span": "here)(", "kind": "word", "contribution": 0.2}]
    with sqlite3.connect(gateway.tmp / "review.sqlite3") as db:  # type: ignore[attr-defined]
        db.execute(
            "UPDATE messages SET explanation = ? WHERE request_id = ?", (json.dumps(spans), rid)
        )
    login(browser, gateway, ADMIN)
    browser.get(f"{gateway.url}/ui/message/{rid}")
    wait("the message", lambda: browser.find_element(By.ID, "m-rid").text == rid)
    marks = [m.text.lower() for m in browser.find_elements(By.CSS_SELECTOR, "#m-text mark")]
    assert marks and set(marks) == {"prize"}
    assert browser.find_element(By.ID, "m-subject").text == "You have WON a prize"
    text = browser.find_element(By.ID, "m-text").text
    assert "claim your prize today" in text and "Click here" in text
    assert "claim.prize-desk.example" in browser.find_element(By.ID, "m-links").text
    browser.find_element(By.CSS_SELECTOR, "#m-source-box summary").click()
    source = wait("the source", lambda: browser.find_element(By.ID, "m-source").text)
    assert "<script>window.__pwned" in source and "onerror=" in source  # shown as text
    time.sleep(1.0)  # time for any image load or handler to have fired
    assert browser.execute_script("return window.__pwned === undefined")
    assert (
        browser.execute_script("return document.querySelectorAll('img, svg, iframe').length") == 0
    )
    assert browser.execute_script("return document.scripts.length") == 1  # console.js
    urls = [
        json.loads(entry["message"])["message"].get("params", {}).get("request", {}).get("url", "")
        for entry in browser.get_log("performance")
    ]
    assert any(u.endswith("/ui/static/console.js") for u in urls)  # the log does see requests
    assert not [u for u in urls if "remote.png" in u or "prize-desk" in u]
    assert Trap.hits == []


def test_a_tenant_key_cannot_open_another_tenants_message(
    gateway: RunningGateway, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    theirs = classify(gateway, (DATA / "html_only.eml").read_bytes(), "globex-key-456")
    assert theirs["action"] == "quarantine"
    ours = classify(gateway, (DATA / "attachments.eml").read_bytes(), "acme-key-123")
    login(browser, gateway, "acme-key-123")
    wait("the console", lambda: ready(browser))
    shown = [
        r.get_attribute("data-request-id")
        for r in browser.find_elements(By.CSS_SELECTOR, "#queue tbody tr")
    ]
    assert ours["request_id"] in shown and theirs["request_id"] not in shown
    browser.get(f"{gateway.url}/ui/message/{theirs['request_id']}")
    assert browser.find_element(By.ID, "forbidden").text == "403 Forbidden"
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/ui/api/messages/' + encodeURIComponent(arguments[0])).then(r => done(r.status));",
        theirs["request_id"],
    )
    assert status == 403
    with httpx.Client(base_url=gateway.url) as c:  # and the API with the same key's session
        api_login(c, "acme-key-123")
        assert c.get(f"/ui/api/messages/{theirs['request_id']}").status_code == 403
        assert c.get(f"/ui/api/messages/{ours['request_id']}").status_code == 200


def test_a_decision_without_the_csrf_token_is_refused(
    gateway: RunningGateway, browser: Any
) -> None:
    rid = classify(gateway, (DATA / "nested_rfc822.eml").read_bytes(), "acme-key-123")["request_id"]
    before = feedback_rows(gateway)
    login(browser, gateway, ADMIN)
    wait("the console", lambda: ready(browser))
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/ui/api/messages/' + encodeURIComponent(arguments[0]) + '/decision', {"
        "  method: 'POST', headers: {'content-type': 'application/json'},"
        "  body: JSON.stringify({decision: 'spam'})}).then(r => done(r.status));",
        rid,
    )
    assert status == 403
    assert feedback_rows(gateway) == before
    assert rid not in {e["request_id"] for e in review_events(gateway)}


def test_mail_scanned_over_spamd_is_kept_too(gateway: RunningGateway) -> None:
    import subprocess

    port = str(gateway.spamd_port)  # type: ignore[attr-defined]
    raw = (DATA / "quoted_printable.eml").read_bytes()
    cmd = [debian_tool("spamc"), "-d", "127.0.0.1", "-p", port, "-u", "globex", "-E", "-t", "30"]
    done = subprocess.run(cmd, input=raw, capture_output=True, timeout=60, check=False)
    assert done.returncode == 1, done.stderr  # -E: 1 = spam (globex quarantines everything)
    rid = next(
        line.split(b":", 1)[1].strip().decode()
        for line in done.stdout.splitlines()
        if line.lower().startswith(b"x-textgate-request-id:")
    )
    with httpx.Client(base_url=gateway.url) as c:
        api_login(c, ADMIN)
        m = c.get(f"/ui/api/messages/{rid}").json()
    assert m["tenant"] == "globex" and m["action"] == "quarantine" and m["subject"]
