"""Seeded text workloads drawn from the packaged corpora (or a user file).

``mix`` is the realistic length distribution: 70 % under 100 characters, 20 % 100-500 and
10 % 500-2000. Single SMS messages stay short, so long items are consecutive real messages
joined with a space. The same (name, n, seed) always gives the same texts in the same order.

``mail`` is the product's own traffic: a seeded sample of raw RFC 822 messages from the
e-mail corpus (``messages``), sent to the gateway as ``message/rfc822``; ``texts`` holds the
same messages' text as the gateway extracts it, for targets that cannot parse mail.
``bench.stream`` builds mail as it arrives, campaign re-sends included, read once.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from textgate.errors import ConfigError, TextgateError

# (share, shortest, longest) in characters, inclusive.
MIX: tuple[tuple[float, int, int], ...] = ((0.7, 1, 99), (0.2, 100, 500), (0.1, 501, 2000))
SHORT: tuple[tuple[float, int, int], ...] = ((1.0, 1, 99),)
LONG: tuple[tuple[float, int, int], ...] = ((1.0, 501, 2000),)
SHAPES = {"mix": MIX, "short": SHORT, "long": LONG}
NAMES = (*SHAPES, "mail", "file")
MAIL_MAX_BYTES = 1_000_000  # under the gateway's default body limit: no 413 in a bench
# text -> the raw message (or messages, sent in turn) a mail target posts for it
Raws = Mapping[str, bytes | tuple[bytes, ...]]


@dataclass(frozen=True)
class Workload:
    name: str
    texts: tuple[str, ...]
    seed: int
    source: str
    messages: tuple[bytes, ...] = ()  # mail: the raw message of each text, same order

    def raw_by_text(self) -> Raws:
        """text -> its raw message (a load generator hands targets texts only); a text sent
        as several different messages (a campaign's re-sends, ``stream``) -> all of them."""
        if not self.messages:
            return {}
        out: dict[str, list[bytes]] = {}
        for text, raw in zip(self.texts, self.messages, strict=True):
            kept = out.setdefault(text, [])
            if raw not in kept:
                kept.append(raw)
        return {t: r[0] if len(r) == 1 else tuple(r) for t, r in out.items()}

    def describe(self) -> dict[str, object]:
        lengths = sorted(len(t) for t in self.texts)
        return {
            "name": self.name,
            "n": len(self.texts),
            "seed": self.seed,
            "source": self.source,
            "chars_median": lengths[len(lengths) // 2] if lengths else 0,
            # the share of arrivals whose text an earlier one had (campaign re-sends)
            "repeat_share": 1 - len(set(self.texts)) / len(self.texts) if self.texts else 0.0,
            "share_by_band": band_shares(self.texts),
            **({"bytes_median": sorted(map(len, self.messages))[len(self.messages) // 2]}
               if self.messages else {}),
        }  # fmt: skip


def band_shares(texts: Sequence[str]) -> dict[str, float]:
    """Fraction of texts per length band of the mix (for reports and tests)."""
    counts = {f"{lo}-{hi}": 0 for _s, lo, hi in MIX}
    for text in texts:
        for _share, lo, hi in MIX:
            if lo <= max(len(text), 1) <= hi:
                counts[f"{lo}-{hi}"] += 1
                break
    n = max(len(texts), 1)
    return {k: v / n for k, v in counts.items()}


def corpus(task: str = "spam") -> tuple[str, ...]:
    from textgate import data

    return data.load_task(task).texts


def make(
    name: str = "mix",
    n: int = 1000,
    *,
    seed: int = 0,
    task: str = "spam",
    file: Path | None = None,
    pool: Sequence[str] | None = None,
) -> Workload:
    """Build ``n`` texts of workload ``name`` (``file`` reads one text per line or JSONL)."""
    if n < 1:
        raise ConfigError("n", f"a workload needs at least one text, got {n}")
    if name == "mail":
        return mail(n, seed)
    if name == "file":
        if file is None:
            raise ConfigError("file", "workload 'file' needs a file", hint="pass --file PATH")
        return _from_file(file, n, seed)
    if name not in SHAPES:
        raise ConfigError("workload", f"unknown workload {name!r}", hint=f"one of {NAMES}")
    source = "given pool" if pool is not None else f"packaged corpus {task}"
    texts = shaped(pool if pool is not None else corpus(task), SHAPES[name], n, seed)
    return Workload(name, tuple(texts), seed, source)


def mail(n: int, seed: int) -> Workload:
    """``n`` raw messages drawn with ``seed`` from the e-mail corpus (reservoir sample)."""
    from textgate.mail import iter_email_corpus
    from textgate.normalize import NormalizeSettings, normalize_email

    rng = random.Random(seed)
    picked: list[bytes] = []
    seen = 0
    for item in iter_email_corpus():
        if len(item.raw) > MAIL_MAX_BYTES:
            continue
        seen += 1
        if len(picked) < n:
            picked.append(item.raw)
        elif (j := rng.randrange(seen)) < n:
            picked[j] = item.raw
    rng.shuffle(picked)
    settings = NormalizeSettings()
    texts, raws = [], []
    for raw in picked:
        try:
            texts.append(normalize_email(raw, settings).text)
        except TextgateError:  # the gateway's best-effort path answers it; peers cannot
            continue
        raws.append(raw)
    return Workload("mail", tuple(texts), seed, "e-mail corpus (raw RFC 822)", tuple(raws))


def shaped(
    pool: Sequence[str], shape: Sequence[tuple[float, int, int]], n: int, seed: int
) -> list[str]:
    """Exactly ``n`` texts whose lengths follow ``shape``; shuffled like real arrivals."""
    if not pool:
        raise ConfigError("pool", "the text pool is empty")
    rng = random.Random(seed)
    counts = _counts([share for share, _lo, _hi in shape], n)
    out = [
        between(pool, rng, lo, hi)
        for (_share, lo, hi), count in zip(shape, counts, strict=True)
        for _ in range(count)
    ]
    rng.shuffle(out)  # lengths interleaved in arrival order, as real traffic is
    return out


def _counts(shares: Sequence[float], n: int) -> list[int]:
    # Largest-remainder rounding: the counts always sum to n and track the shares.
    raw = [s * n for s in shares]
    counts = [int(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - counts[i], reverse=True)
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


def between(pool: Sequence[str], rng: random.Random, lo: int, hi: int) -> str:
    """A real message (or consecutive messages joined) of lo..hi characters."""
    for _ in range(10_000):
        start = rng.randrange(len(pool))
        text, i = pool[start], start
        while len(text) < lo:
            i = (i + 1) % len(pool)
            text = f"{text} {pool[i]}"
        if len(text) <= hi:
            return text
        if len(pool[start]) > hi:
            continue  # one message alone overshoots the band: draw another
        # Joining overshot the band: cut at the last word boundary that fits.
        cut = text[:hi].rsplit(" ", 1)[0]
        if len(cut) >= lo:
            return cut
    raise ConfigError("pool", f"no text of {lo}-{hi} characters can be built from the pool")


def _from_file(path: Path, n: int, seed: int) -> Workload:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError("file", f"cannot read {path}: {exc.strerror}") from None
    texts = [_line_text(line) for line in lines if line.strip()]
    if not texts:
        raise ConfigError("file", f"{path} holds no texts")
    rng = random.Random(seed)
    # Cycle through the file in a seeded order until n texts are drawn.
    picked = [texts[i % len(texts)] for i in range(n)]
    rng.shuffle(picked)
    return Workload("file", tuple(picked), seed, str(path.name))


def _line_text(line: str) -> str:
    if line.lstrip().startswith("{"):
        try:
            value = json.loads(line)
        except ValueError:
            return line
        if isinstance(value, dict) and isinstance(value.get("text"), str):
            return str(value["text"])
    return line
