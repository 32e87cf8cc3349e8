"""A private Debian Postfix for one test module: its own config, queue and ports, on loopback.

Postfix's programs all take ``-c DIR``; as root no ``alternate_config_directories`` entry is
needed, so nothing under /etc/postfix is read or changed. Mail it accepts is relayed to
Postfix's own ``smtp-sink``, which writes each message to a file; its SMTP listeners each name
their milter (``-o smtpd_milters=...``), so one instance can front several gateways.

    smtp-source ─▶ smtpd :port ─▶ milter (the gateway) ─▶ cleanup ─▶ queue ─▶ smtp ─▶ smtp-sink
                                                                     └ hold (quarantine)

``master`` runs in the foreground (``postfix start-fg``) under the test's Popen and logs to
its stdout, so the log is in the test's temporary folder and nothing is left running.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from textgate.triton import free_port

HOST = "mx.textgate.test"
# chroot "n" everywhere: the queue lives under the test's temporary folder
SERVICES = """\
pickup unix n - n 60 1 pickup
cleanup unix n - n - 0 cleanup
qmgr unix n - n 300 1 qmgr
rewrite unix - - n - - trivial-rewrite
bounce unix - - n - 0 bounce
defer unix - - n - 0 bounce
trace unix - - n - 0 bounce
verify unix - - n - 1 verify
flush unix n - n 1000? 0 flush
proxymap unix - - n - - proxymap
smtp unix - - n - - smtp
relay unix - - n - - smtp
showq unix n - n - - showq
error unix - - n - - error
retry unix - - n - - error
discard unix - - n - - discard
anvil unix - - n - 1 anvil
scache unix - - n - 1 scache
postlog unix-dgram n - n - 1 postlogd
"""


def installed() -> str | None:
    """Why Postfix cannot run here, or None (it needs Debian's postfix and root)."""
    import os

    if shutil.which("postfix") is None or shutil.which("smtp-sink") is None:
        return "postfix is not installed: scripts/bootstrap.sh installs it (TEST_PACKAGES)"
    if os.geteuid() != 0:
        return "Postfix's master must start as root (it drops to the postfix user)"
    return None


@dataclass
class Postfix:
    root: Path
    ports: dict[str, int]  # listener name -> SMTP port
    sink_dir: Path
    proc: subprocess.Popen[bytes]
    sink: subprocess.Popen[bytes]

    @property
    def config_dir(self) -> Path:
        return self.root / "etc"

    def send(self, raw: bytes, *, rcpt: str, listener: str, sender: str = "a@sender.test") -> str:
        """Postfix's own ``smtp-source`` sends one message; its transcript (the replies)."""
        path = self.root / f"out-{time.monotonic_ns()}.eml"
        path.write_bytes(raw)
        to = f"127.0.0.1:{self.ports[listener]}"
        out = subprocess.run(
            ["smtp-source", "-v", "-f", sender, "-t", rcpt, "-M", HOST, "-F", str(path), to],
            capture_output=True,
            timeout=60,
        )
        return (out.stdout + out.stderr).decode("utf-8", "replace")

    def queue(self) -> list[dict[str, object]]:
        """``postqueue -j``: one JSON object per queued message (``queue_name``, ``queue_id``)."""
        out = subprocess.run(
            ["postqueue", "-c", str(self.config_dir), "-j"],
            capture_output=True,
            check=True,
            timeout=30,
        )
        return [json.loads(line) for line in out.stdout.decode().splitlines() if line.strip()]

    def delivered(self) -> list[bytes]:
        return [p.read_bytes() for p in sorted(self.sink_dir.rglob("*")) if p.is_file()]

    def flush(self) -> None:
        subprocess.run(["postqueue", "-c", str(self.config_dir), "-f"], check=True, timeout=30)

    def log(self) -> str:
        return (self.root / "postfix.log").read_text(errors="replace")


def _main_cf(root: Path, sink_port: int) -> str:
    return f"""\
compatibility_level = 3.6
queue_directory = {root}/queue
data_directory = {root}/data
meta_directory = /etc/postfix
command_directory = /usr/sbin
daemon_directory = /usr/lib/postfix/sbin
shlib_directory = /usr/lib/postfix
mail_owner = postfix
setgid_group = postdrop
myhostname = {HOST}
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relayhost = [127.0.0.1]:{sink_port}
smtpd_relay_restrictions = permit_mynetworks, reject
maillog_file = /dev/stdout
smtp_tls_security_level = none
smtpd_tls_security_level = none
alias_maps =
alias_database =
biff = no
queue_run_delay = 1s
minimal_backoff_time = 1s
"""


def _master_cf(milters: Mapping[str, int | None], ports: Mapping[str, int]) -> str:
    lines = [
        f"{ports[name]} inet n - n - - smtpd"
        + (f" -o smtpd_milters=inet:127.0.0.1:{milter}" if milter else "")
        for name, milter in milters.items()
    ]
    return "\n".join(lines) + "\n" + SERVICES


@contextlib.contextmanager
def run_postfix(milters: Mapping[str, int | None], main_cf: str = "") -> Iterator[Postfix]:
    """Postfix with one SMTP listener per ``milters`` entry (name -> the milter's port, or
    None for main.cf's ``smtpd_milters``); ``main_cf``: lines added to main.cf.

    Its folder is a fresh one under the system's temporary folder, not pytest's: pytest's
    are root's alone (0700), and the postfix user must reach its data and queue."""
    root = Path(tempfile.mkdtemp(prefix="textgate-postfix-"))
    root.chmod(0o755)
    try:
        with _running(root, milters, main_cf) as box:
            yield box
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def _running(root: Path, milters: Mapping[str, int | None], main_cf: str) -> Iterator[Postfix]:
    etc, sink_dir = root / "etc", root / "sink"
    for d in (etc, sink_dir, root / "queue", root / "data"):
        d.mkdir(parents=True, exist_ok=True)
    sink_dir.chmod(0o777)  # smtp-sink drops to nobody before it writes
    ports = {name: free_port() for name in milters}
    sink_port = free_port()
    (etc / "main.cf").write_text(_main_cf(root, sink_port) + main_cf)
    (etc / "master.cf").write_text(_master_cf(milters, ports))
    subprocess.run(["postfix", "-c", str(etc), "set-permissions"], check=True, timeout=60)
    shutil.chown(root / "data", user="postfix")
    sink = subprocess.Popen(
        ["smtp-sink", "-u", "nobody", "-d", f"{sink_dir}/%M.", f"127.0.0.1:{sink_port}", "10"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    log = open(root / "postfix.log", "wb")  # noqa: SIM115 - closed below, after master ends
    proc = subprocess.Popen(["postfix", "-c", str(etc), "start-fg"], stdout=log, stderr=log)
    box = Postfix(root, ports, sink_dir, proc, sink)
    try:
        _wait_listening(box)
        yield box
    finally:
        subprocess.run(["postfix", "-c", str(etc), "stop"], capture_output=True, timeout=60)
        for p in (proc, sink):
            p.terminate()
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        log.close()
        _kill_strays(root)


def _wait_listening(box: Postfix) -> None:
    import socket

    deadline = time.monotonic() + 30
    for port in box.ports.values():
        while True:
            if box.proc.poll() is not None:
                raise RuntimeError(f"postfix exited: {box.log()[-3000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"postfix is not listening on {port}: {box.log()[-3000:]}")
            time.sleep(0.1)


def _kill_strays(root: Path) -> None:
    """A master still alive after ``stop`` whose pid file and working folder are this queue's
    (the folder check keeps a recycled pid safe)."""
    import os
    import signal

    queue = root / "queue"
    with contextlib.suppress(OSError, ValueError):
        pid = int((queue / "pid" / "master.pid").read_text().split()[0])
        if Path(os.readlink(f"/proc/{pid}/cwd")) == queue:
            os.kill(pid, signal.SIGKILL)
