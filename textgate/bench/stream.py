"""A mail arrival stream with campaign repeats, and a cursor that never replays it.

The ``mail`` workload is a pool of distinct messages the load loops cycle through, so with
the gateway's campaign memory on every message would repeat after one pass, and a result
would measure the pool's size instead of the mail. ``stream`` is what a mail server sees:
distinct real messages from the packaged corpus in a seeded arrival order, with a share of
arrivals re-sending an earlier body to another recipient, as a campaign does.

The share is the corpus's own: the exact repeats of the model's text among the real
messages as read, by binary label (``benchmarks/studies/serving/campaign_repeats.py``,
``benchmarks/results/campaign_repeats.json``): 7.5 % of spam and phishing, 0.17 % of ham.
The archives were sampled from larger collections, which thins repeats, so a site inside a
campaign sees more; ``repeat_share`` scales it for that question. A re-send repeats one of
the last ``CAMPAIGN_WINDOW`` distinct messages of its label (a campaign comes in a burst)
with its ``To`` and ``Message-ID`` rewritten, which the scored text never holds.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import overload

from textgate.bench.workload import MAIL_MAX_BYTES, Workload
from textgate.errors import TextgateError

# campaign_repeats.json, "exact": repeat_share of the binary labels "spam" and "ham"
REPEAT_SHARE = {"spam": 0.0754, "ham": 0.0017}
CAMPAIGN_WINDOW = 200
_REWRITTEN = re.compile(rb"^(to|message-id)[ \t]*:", re.IGNORECASE)


def campaign_stream(n: int, seed: int, scale: float = 1.0) -> Workload:
    """``n`` arrivals: distinct real messages, and re-sends at ``scale`` x the corpus's share."""
    pool = _distinct(seed)
    rng = random.Random(seed)
    shares = {label: min(0.95, share * scale) for label, share in REPEAT_SHARE.items()}
    texts: list[str] = []
    raws: list[bytes] = []
    recent: dict[str, list[tuple[str, bytes]]] = {"spam": [], "ham": []}
    nxt = 0
    while len(texts) < n and nxt < len(pool):
        text, raw, label = pool[nxt]
        earlier = recent[label]
        if earlier and rng.random() < shares[label]:
            text, raw = rng.choice(earlier)
            raw = resend(raw, len(texts))
        else:
            nxt += 1
            earlier.append((text, raw))
            del earlier[:-CAMPAIGN_WINDOW]
        texts.append(text)
        raws.append(raw)
    source = f"e-mail corpus, real groups, campaign re-sends at {scale:g}x the corpus's share"
    return Workload("stream", tuple(texts), seed, source, tuple(raws))


def _distinct(seed: int) -> list[tuple[str, bytes, str]]:
    """(text, raw, binary label) of every distinct real message, in a seeded order."""
    from textgate.data.table import TRAIN_ONLY_PREFIX
    from textgate.mail import iter_email_corpus
    from textgate.normalize import NormalizeSettings, normalize_email

    settings = NormalizeSettings()
    seen: set[str] = set()
    out: list[tuple[str, bytes, str]] = []
    for item in iter_email_corpus():
        if item.group.startswith(TRAIN_ONLY_PREFIX) or len(item.raw) > MAIL_MAX_BYTES:
            continue  # generated mail is not traffic; > 1 MB would be a 413
        try:
            text = normalize_email(item.raw, settings).text
        except TextgateError:
            continue  # the peers cannot score what has no text
        if text in seen:
            continue  # the corpus's own repeats: re-sent below at their measured share
        seen.add(text)
        out.append((text, item.raw, "ham" if item.label == "ham" else "spam"))
    random.Random(seed).shuffle(out)
    return out


def resend(raw: bytes, k: int) -> bytes:
    """``raw`` as delivered to another recipient: new ``To`` and ``Message-ID`` headers."""
    cut = raw.find(b"\n\n")
    crlf = raw.find(b"\r\n\r\n")
    if crlf != -1 and (cut == -1 or crlf < cut):
        cut = crlf
    head, body = (raw, b"") if cut == -1 else (raw[:cut], raw[cut:])
    eol = b"\r\n" if b"\r\n" in head else b"\n"
    kept: list[bytes] = []
    dropping = False
    for line in head.split(eol):
        if line[:1] in (b" ", b"\t") and dropping:
            continue  # a folded continuation of a header being replaced
        dropping = bool(_REWRITTEN.match(line))
        if not dropping:
            kept.append(line)
    kept += [b"To: recipient%d@example.org" % k, b"Message-ID: <resend.%d@example.org>" % k]
    return eol.join(kept) + body


class Cursor(Sequence[str]):
    """The stream as the load loops read it: each read hands out the next arrival, whatever
    index is asked for. The loops index ``texts[i % len(texts)]`` from 0 at every step, so a
    plain sequence would replay the first arrivals at each step and round; through a cursor,
    one system's steps and rounds read one stream onward. After the last arrival it starts
    over and counts ``wraps``: a run should be sized so that it never does."""

    def __init__(self, texts: Sequence[str]) -> None:
        if not texts:
            raise ValueError("an empty stream")
        self.texts = tuple(texts)
        self.read = 0

    @property
    def wraps(self) -> int:
        return self.read // len(self.texts)

    def __len__(self) -> int:
        return len(self.texts)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[str]: ...
    def __getitem__(self, i: int | slice) -> str | Sequence[str]:
        if isinstance(i, slice):
            raise TypeError("a stream is read one arrival at a time")
        text = self.texts[self.read % len(self.texts)]
        self.read += 1
        return text
