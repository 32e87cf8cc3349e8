"""Real mail clients against the gateway + a real tritonserver: Debian's ``spamc`` (spamd
protocol) and ``miltertest`` (milter protocol), on the real messages of tests/data/email.

The tiny random models answer P(spam) near 0.5, so verdicts are steered by tenants (spamc
``-u``, the milter's ``{auth_authen}`` macro): ``strict`` flags everything (quarantine),
``reviewer`` reviews everything, the default policy allows everything.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers.gateway_fixtures import RunningGateway, run_gateway
from tests.helpers.mailtools import run_miltertest, script
from tests.helpers.servers import debian_tool
from textgate import feedback
from textgate.triton import TritonServer, free_port

pytestmark = [pytest.mark.slow, pytest.mark.triton]

DATA = Path(__file__).parents[1] / "data" / "email"
MESSAGES = sorted(p for p in DATA.glob("*.eml") if p.name != "long.eml")
MAX_BYTES = 16384
TENANTS = [
    {"name": "strict", "tasks": [{"task": "spam", "review_at": 0.01, "quarantine_at": 0.02}]},
    {"name": "reviewer", "tasks": [{"task": "spam", "review_at": 0.01, "quarantine_at": 0.999}]},
]


@pytest.fixture(scope="module")
def gateway(
    triton_server: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    tmp = tmp_path_factory.mktemp("mail")
    config = {
        "gateway": {"max_body_bytes": MAX_BYTES},
        "policy": {"tenants": TENANTS},
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
        "feedback": {"path": str(tmp / "feedback.sqlite3"), "max_per_tenant_per_hour": 5},
        "mail": {
            "spamd_port": free_port(),
            "milter_port": free_port(),
            "explain": 3,
            "read_timeout_s": 2.0,
            "max_connections": 4,
            "milter_review": "reject",
            "allow_tell": True,  # spamc -L below; from 127.0.0.1 (tell_networks' default)
        },
    }
    with run_gateway(config, [triton_server.grpc_url]) as gw:
        gw.mail = config["mail"]  # type: ignore[attr-defined]
        gw.tmp = tmp  # type: ignore[attr-defined]
        yield gw


@pytest.fixture(scope="module")
def default_gateway(
    triton_server: TritonServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningGateway]:
    """The mail section's defaults but the port: TELL is off."""
    tmp = tmp_path_factory.mktemp("mail-default")
    config = {
        "policy": {"tenants": TENANTS},
        "events": {"outbox_path": str(tmp / "events.sqlite3")},
        "feedback": {"path": str(tmp / "feedback.sqlite3")},
        "mail": {"spamd_port": free_port()},
    }
    with run_gateway(config, [triton_server.grpc_url]) as gw:
        gw.mail = config["mail"]  # type: ignore[attr-defined]
        gw.tmp = tmp  # type: ignore[attr-defined]
        yield gw


def spamc(gw: RunningGateway, *args: str, data: bytes) -> subprocess.CompletedProcess[bytes]:
    port = str(gw.mail["spamd_port"])  # type: ignore[attr-defined]
    cmd = [debian_tool("spamc"), "-d", "127.0.0.1", "-p", port, "-t", "30", *args]
    return subprocess.run(cmd, input=data, capture_output=True, timeout=60, check=False)


def _metric(gw: RunningGateway, prefix: str) -> float:
    text = httpx.get(f"{gw.url}/metrics", timeout=10).text
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)
    )


# --- spamc ---------------------------------------------------------------------------------


def _events(gw: RunningGateway) -> list[str]:
    with sqlite3.connect(gw.tmp / "events.sqlite3") as db:  # type: ignore[attr-defined]
        return [r[0] for r in db.execute("SELECT payload FROM events ORDER BY id")]


def test_spamc_check_ham_and_spam_exit_codes(gateway: RunningGateway) -> None:
    raw = (DATA / "html_only.eml").read_bytes()
    before = len(_events(gateway))
    ham = spamc(gateway, "-c", data=raw)
    assert ham.returncode == 0, ham.stderr
    score, required = ham.stdout.decode().strip().split("/")
    assert float(score) < float(required) == 5.0
    spam = spamc(gateway, "-c", "-u", "strict", data=raw)
    assert spam.returncode == 1, spam.stderr  # spamc -c: 1 means spam
    assert float(spam.stdout.decode().split("/")[0]) >= 5.0
    events = [json.loads(e) for e in _events(gateway)[before:]]  # one event per scan, as HTTP
    assert [e["action"] for e in events] == ["allow", "quarantine"]
    assert events[1]["tenant"] == "strict" and len(events[1]["request_id"]) == 32


@pytest.mark.parametrize("path", MESSAGES, ids=lambda p: p.stem)
def test_spamc_process_adds_headers_and_keeps_every_byte(
    gateway: RunningGateway, path: Path
) -> None:
    raw = path.read_bytes()
    out = spamc(gateway, "-u", "strict", data=raw)
    assert out.returncode == 0, out.stderr
    added, rest = out.stdout.split(b"X-Textgate-Request-Id: ", 1)
    rest = rest.split(b"\n", 1)[1]
    assert rest == raw  # the original message follows our headers, byte for byte
    assert b"X-Spam-Flag: YES" in added and b"X-Spam-Status: Yes, score=" in added
    assert b"tests=TEXTGATE_" in added and b"X-Textgate-Action: quarantine" in added


def test_spamc_headers_report_symbols_and_compression(gateway: RunningGateway) -> None:
    raw = (DATA / "html_only.eml").read_bytes()
    report = spamc(gateway, "-R", "-u", "strict", data=raw)
    assert report.returncode == 0, report.stderr
    text = report.stdout.decode()
    assert "points, 5.0 required" in text and "Spans that moved the score most" in text
    symbols = spamc(gateway, "-y", "-u", "strict", data=raw)
    assert symbols.returncode == 0, symbols.stderr
    rules = symbols.stdout.decode().strip().split(",")
    assert "TEXTGATE_QUARANTINE" in rules and any(r.startswith("TEXTGATE_SPAN_") for r in rules)
    heads = spamc(gateway, "--headers", data=raw)
    assert heads.returncode == 0, heads.stderr
    assert b"X-Spam-Flag: NO" in heads.stdout
    assert heads.stdout.endswith(raw)  # spamc --headers: our headers, then the message as it was
    ifspam = spamc(gateway, "-r", data=raw)  # REPORT_IFSPAM on a ham: no report
    assert ifspam.returncode == 0 and b"Content analysis" not in ifspam.stdout


def test_compressed_body(gateway: RunningGateway) -> None:
    """``Compress: zlib`` as libspamc sends it (compress2). Debian builds spamc without zlib
    ("spamc not built with zlib support"), so spamc -z cannot run here: a raw client does."""
    raw = (DATA / "html_only.eml").read_bytes()
    body = zlib.compress(raw)
    head = f"PROCESS SPAMC/1.5\r\nUser: strict\r\nCompress: zlib\r\nContent-length: {len(body)}"
    out = _raw(gateway, head.encode() + b"\r\n\r\n" + body)
    assert out.startswith(b"SPAMD/1.5 0 EX_OK\r\n") and b"Spam: True ; " in out
    assert out.endswith(raw) and b"X-Spam-Flag: YES" in out


def test_spamc_ping_and_learn(gateway: RunningGateway) -> None:
    ping = spamc(gateway, "-K", data=b"")
    assert ping.returncode == 0 and ping.stdout.startswith(b"SPAMD/1.5 0"), ping
    raw = (DATA / "quoted_printable.eml").read_bytes()
    processed = spamc(gateway, "-u", "reviewer", data=raw).stdout  # carries our request id
    for label in ("spam", "ham"):
        out = spamc(gateway, "-L", label, "-u", "reviewer", data=processed)
        assert out.returncode in (0, 5, 6), out.stderr  # 5/6: learned / already learned
        assert b"successfully" in out.stdout, out.stdout
    rows = feedback.read_all(gateway.tmp / "feedback.sqlite3")  # type: ignore[attr-defined]
    assert [r.label for r in rows] == ["ham", "spam"]  # newest first
    assert rows[0].tenant == "reviewer" and rows[0].previous_action == "review"
    assert rows[0].request_id and rows[0].text.startswith("Updated terms Dear customer")
    forget = spamc(gateway, "-L", "forget", "-u", "reviewer", data=processed)  # TELL Remove
    assert b"successfully" in forget.stdout, forget
    assert feedback.read_all(gateway.tmp / "feedback.sqlite3") == []  # type: ignore[attr-defined]


def test_spamc_learn_is_refused_by_default(default_gateway: RunningGateway) -> None:
    raw = (DATA / "quoted_printable.eml").read_bytes()
    metric = 'textgate_mail_commands_total{code="77",command="TELL",protocol="spamd"}'
    for args in (["-L", "spam"], ["-L", "ham", "-u", "reviewer"], ["-L", "forget"]):
        out = spamc(default_gateway, *args, data=raw)
        # libspamc's message_tell ignores the answer's code: a refused TELL reads like a
        # message learned before (exit 0); the answer, the metric and the log say why.
        assert out.returncode == 0, out
        assert out.stdout == b"Message was already un/learned\n", out.stdout
    assert _metric(default_gateway, metric) == 3
    tell = f"TELL SPAMC/1.5\r\nMessage-class: spam\r\nSet: local\r\nContent-length: {len(raw)}"
    answer = _raw(default_gateway, tell.encode() + b"\r\n\r\n" + raw)
    assert answer.startswith(b"SPAMD/1.5 77 ") and b"mail.allow_tell" in answer, answer
    store = default_gateway.tmp / "feedback.sqlite3"  # type: ignore[attr-defined]
    assert not store.exists() or feedback.read_all(store) == []  # nothing learned


def test_spamc_process_removes_forged_spam_headers(gateway: RunningGateway) -> None:
    raw = (DATA / "html_only.eml").read_bytes()
    forged = b"X-Spam-Status: No, score=-100.0 required=5.0\r\n\ttests=ALL_TRUSTED\r\n"
    forged += b"X-Spam-Flag: NO\r\n"
    nl = b"\r\n" if raw.split(b"\n", 1)[0].endswith(b"\r") else b"\n"
    message = forged.replace(b"\r\n", nl) + raw
    out = spamc(gateway, "-u", "strict", data=message)
    assert out.returncode == 0, out.stderr
    assert b"score=-100" not in out.stdout and b"ALL_TRUSTED" not in out.stdout
    assert b"X-Spam-Flag: NO" not in out.stdout and out.stdout.count(b"X-Spam-Status:") == 1
    added, rest = out.stdout.split(b"X-Textgate-Request-Id: ", 1)
    assert b"X-Spam-Flag: YES" in added and b"X-Spam-Status: Yes, score=" in added
    assert rest.split(b"\n", 1)[1] == raw  # the rest of the message, byte for byte
    heads = spamc(gateway, "--headers", "-u", "strict", data=message)
    assert heads.returncode == 0 and b"score=-100" not in heads.stdout, heads


def test_spamc_message_over_the_limit_gets_too_big(gateway: RunningGateway) -> None:
    raw = (DATA / "long.eml").read_bytes()
    assert len(raw) > MAX_BYTES
    out = spamc(gateway, "-c", "-s", str(1 << 20), "-x", data=raw)
    # -x: spamc reports the server's error instead of the safe fallback.
    assert out.returncode != 0 and out.returncode != 1, out


def _raw(gw: RunningGateway, data: bytes, *, shut: bool = True) -> bytes:
    port = gw.mail["spamd_port"]  # type: ignore[attr-defined]
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_garbage_disconnects_and_slow_clients_get_spamd_errors(gateway: RunningGateway) -> None:
    assert _raw(gateway, b"\x00\xff garbage\r\n\r\n").startswith(b"SPAMD/1.5 76 ")
    assert _raw(gateway, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").startswith(b"SPAMD/1.5 76 ")
    assert _raw(gateway, b"CHECK SPAMC/1.5\r\nContent-length: x\r\n\r\n").startswith(
        b"SPAMD/1.5 76 "
    )
    bomb = zlib.compress(b"a" * (MAX_BYTES * 50))
    head = f"CHECK SPAMC/1.5\r\nCompress: zlib\r\nContent-length: {len(bomb)}\r\n\r\n"
    assert _raw(gateway, head.encode() + bomb).startswith(b"SPAMD/1.5 866 ")
    # Mid-message disconnect: 100 of 5000 bytes, then gone; the server must stay healthy.
    assert _raw(gateway, b"CHECK SPAMC/1.5\r\nContent-length: 5000\r\n\r\n" + b"x" * 100) == b""
    # A client that stops sending: EX_TIMEOUT after mail.read_timeout_s.
    slow = _raw(gateway, b"CHECK SPAMC/1.5\r\nContent-length: 5000\r\n\r\nabc", shut=False)
    assert slow.startswith(b"SPAMD/1.5 79 ")
    assert _metric(gateway, 'textgate_mail_commands_total{code="disconnected"') >= 1
    ok = spamc(gateway, "-c", data=(DATA / "html_only.eml").read_bytes())
    assert ok.returncode == 0  # still serving


def test_connection_cap_answers_busy(gateway: RunningGateway) -> None:
    port = gateway.mail["spamd_port"]  # type: ignore[attr-defined]
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
    try:
        time.sleep(0.3)
        assert _raw(gateway, b"PING SPAMC/1.5\r\n\r\n").startswith(b"SPAMD/1.5 75 ")
    finally:
        for s in held:
            s.close()
    deadline = time.monotonic() + 10
    while b"PONG" not in _raw(gateway, b"PING SPAMC/1.5\r\n\r\n"):
        assert time.monotonic() < deadline, "the cap was not released"
        time.sleep(0.1)


# --- miltertest ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "expect", "absent"),
    [
        ("", ["REPLY accept", "HDR X-Spam-Flag", "HDR X-Textgate-Action"], ["QUARANTINE"]),
        ("reviewer", ["REPLY replycode"], ["HDR X-Spam-Flag"]),  # mail.milter_review: reject
        ("strict", ["REPLY accept", "HDR X-Spam-Status", "QUARANTINE"], []),
    ],
    ids=["allow-headers", "review-reject", "quarantine"],
)
def test_miltertest_each_action(
    gateway: RunningGateway, tmp_path: Path, user: str, expect: list[str], absent: list[str]
) -> None:
    port = gateway.mail["milter_port"]  # type: ignore[attr-defined]
    before = _metric(gateway, "textgate_requests_total{")
    out = run_miltertest(port, (DATA / "alternative.eml").read_bytes(), tmp_path, user=user)
    assert all(e in out for e in expect) and not any(a in out for a in absent), out
    assert _metric(gateway, "textgate_requests_total{") == before + 1  # the service counted it


def test_miltertest_deletes_forged_spam_headers(gateway: RunningGateway, tmp_path: Path) -> None:
    port = gateway.mail["milter_port"]  # type: ignore[attr-defined]
    raw = b"X-Spam-Status: No, score=-100.0\r\nX-Spam-Flag: NO\r\n"
    raw += (DATA / "alternative.eml").read_bytes()
    checks = [
        'mt.eom_check(conn, MT_HDRCHANGE, "X-Spam-Status", "")',
        'mt.eom_check(conn, MT_HDRCHANGE, "X-Spam-Flag", "")',
        'mt.eom_check(conn, MT_HDRADD, "X-Spam-Status")',
        'mt.eom_check(conn, MT_HDRCHANGE, "Subject")',
    ]
    lua = script(port, raw, tmp_path, user="strict").replace(
        "mt.disconnect(conn)",
        "\n".join(f"if {c} then print([[YES {c}]]) end" for c in checks) + "\nmt.disconnect(conn)",
    )
    path = tmp_path / "strip.lua"
    path.write_text(lua, encoding="utf-8")
    tool = debian_tool("miltertest")
    out = subprocess.run(
        [tool, "-s", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out
    assert "REPLY accept" in out.stdout, out.stdout
    assert [line for line in out.stdout.splitlines() if line.startswith("YES ")] == [
        f"YES {c}" for c in checks[:3]
    ], out.stdout


def test_miltertest_over_limit_and_aborted(gateway: RunningGateway, tmp_path: Path) -> None:
    port = gateway.mail["milter_port"]  # type: ignore[attr-defined]
    big = run_miltertest(port, (DATA / "long.eml").read_bytes(), tmp_path, user="strict")
    assert "REPLY accept" in big and "HDR X-Textgate-Skipped" in big and "QUARANTINE" not in big
    raw = (DATA / "attachments.eml").read_bytes()
    out = run_miltertest(port, raw, tmp_path, user="strict", abort=True)
    assert "ABORTED" in out and "QUARANTINE" in out, out


def _triton_requests(server: TritonServer, model: str) -> float:
    text = httpx.get(server.metrics_url, timeout=10).text
    key = f'nv_inference_request_success{{model="{model}",'
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(key))


def test_feedback_over_http(gateway: RunningGateway, triton_server: TritonServer) -> None:
    before = _triton_requests(triton_server, "spam")
    with gateway.client() as c:
        r = c.post(
            "/v1/classify/spam?explain=3",
            content=(DATA / "html_only.eml").read_bytes(),
            headers={"content-type": "message/rfc822"},
        )
        assert r.status_code == 200, r.text
        result = r.json()["results"][0]
        assert len(result["explanation"]) == 3
        # The classification and the whole occlusion batch: two requests to the ensemble.
        assert _triton_requests(triton_server, "spam") - before == 2
        assert {"span", "kind", "contribution"} <= set(result["explanation"][0])
        assert c.post("/v1/classify/spam?explain=x", json={"text": "hi there"}).status_code == 422
        rid = result["request_id"]
        ok = c.post("/v1/feedback", json={"request_id": rid, "label": "spam"})
        assert ok.status_code == 201, ok.text
        assert ok.json()["previous_label"] == result["label"] and ok.json()["task"] == "spam"
        gone = c.post("/v1/feedback", json={"request_id": "no-such-id", "label": "spam"})
        assert gone.status_code == 404 and "send the message" in gone.json()["error"]["hint"]
        bad = c.post("/v1/feedback", json={"text": "cheap pills", "label": "eggs"})
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "label"
        both = c.post("/v1/feedback", json={"text": "a", "request_id": rid, "label": "spam"})
        assert both.status_code == 422
        codes = [
            c.post(
                "/v1/feedback",
                json={"text": f"cheap pills {i}", "label": "spam"},
                headers={"X-Tenant": "strict"},
            ).status_code
            for i in range(7)
        ]
        assert codes[:5] == [201] * 5 and codes[5:] == [429, 429]  # max_per_tenant_per_hour: 5
