"""A verdict as SpamAssassin-style marks: points, ``X-Spam-*``/``X-Textgate-*`` headers, report.

Points. SpamAssassin users read "score=7.3 required=5.0"; textgate's score is a probability.
The map is piecewise linear so that the policy's ``review_at`` lands exactly on
``required_points`` (then "Spam: True" means the same as "action is not allow"):

    score 0 ......... review_at ............ 1
    points 0 ........ required (5.0) ....... max_points (10.0)

Headers are inserted at the top of the message (after an mbox ``From `` line, if any), in the
message's own line ending; no other byte of the message changes. Incoming ``X-Spam-*``
fields are removed first (``strip_spam_headers``, on unless ``mail.strip_spam_headers`` is
false), as SpamAssassin does: a sender can write ``X-Spam-Status: No`` to fool the filters
after us, which read these headers without knowing who wrote them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from textgate import __version__, signals
from textgate.gateway.scoring import languages
from textgate.gateway.scoring.explain import Span
from textgate.gateway.scoring.policy import NEGATIVE_LABELS

_RULE_CHARS = re.compile(r"[^A-Z0-9_]+")
SPAM_PREFIX = b"x-spam-"
# RFC 5322 field name: printable ASCII but the colon; obsolete syntax allows blanks before it
_FIELD = re.compile(rb"[!-9;-~]+[ \t]*:")


@dataclass(frozen=True)
class Mark:
    """What the mail protocols need of one verdict."""

    spam: bool
    points: float
    required: float
    action: str
    label: str
    score: float | None
    probabilities: dict[str, float | None]
    model: str
    request_id: str
    tests: tuple[str, ...] = ()
    spans: tuple[Span, ...] = field(default_factory=tuple)
    # structure symbols that fired, with the combiner's weight (log-odds) of each
    symbols: tuple[tuple[str, float], ...] = ()

    @property
    def rules(self) -> tuple[str, ...]:
        """Every rule name: the model's tests, then the structure symbols."""
        return tuple(dict.fromkeys((*self.tests, *(name for name, _ in self.symbols))))


def points(score: float | None, review_at: float, required: float, maximum: float) -> float:
    """The SpamAssassin-style points of a score (see the module docstring)."""
    if score is None or math.isnan(score):
        return required  # the policy reviews a NaN: it must count as flagged
    s = min(max(score, 0.0), 1.0)
    if review_at <= 0:
        return maximum
    if s < review_at:
        return s / review_at * required
    if review_at >= 1:
        return required
    return required + (s - review_at) / (1 - review_at) * (maximum - required)


def shown_points(value: float, spam: bool, required: float) -> float:
    """One decimal, never rounded across the threshold (4.96 of a ham must not read 5.0)."""
    shown = round(value, 1)
    if not spam and shown >= required:
        return round(required - 0.1, 1)
    if spam and shown < required:
        return required
    return shown


def rule_name(text: str) -> str:
    return _RULE_CHARS.sub("_", text.upper()).strip("_")[:40] or "X"


def tests_of(
    labels_probs: dict[str, float | None], label: str, action: str, spans: Sequence[Span] = ()
) -> tuple[str, ...]:
    """Rule names: each non-negative label on top or >= 0.5, the action, the top spans."""
    out = []
    for name, p in labels_probs.items():
        if name.lower() in NEGATIVE_LABELS:
            continue
        if name == label or (p is not None and p >= 0.5):
            out.append(f"TEXTGATE_{rule_name(name)}")
    if action not in ("allow", *NEGATIVE_LABELS):
        out.append(f"TEXTGATE_{rule_name(action)}")
    out += [f"TEXTGATE_SPAN_{rule_name(s.text)}" for s in spans]
    return tuple(dict.fromkeys(out))


def spam_header(mark: Mark) -> str:
    """spamd's ``Spam:`` answer header value."""
    return f"{'True' if mark.spam else 'False'} ; {mark.points:.1f} / {mark.required:.1f}"


def header_lines(mark: Mark) -> list[tuple[str, str]]:
    yes = "Yes" if mark.spam else "No"
    tests = ",".join(t for t in mark.rules if not t.startswith("TEXTGATE_SPAN_")) or "none"
    return [
        ("X-Spam-Flag", "YES" if mark.spam else "NO"),
        ("X-Spam-Score", f"{mark.points:.1f}"),
        ("X-Spam-Level", "*" * int(max(mark.points, 0.0))),
        (
            "X-Spam-Status",
            f"{yes}, score={mark.points:.1f} required={mark.required:.1f} tests={tests} "
            f"autolearn=no version=textgate-{__version__}",
        ),
        ("X-Textgate-Action", mark.action),
        ("X-Textgate-Model", mark.model),
        ("X-Textgate-Request-Id", mark.request_id),
    ]


def _newline(raw: bytes) -> bytes:
    first = raw.split(b"\n", 1)[0]
    return b"\r\n" if first.endswith(b"\r") or b"\n" not in raw else b"\n"


def _insert_at(raw: bytes) -> int:
    """After an mbox ``From `` separator line; else at the very top."""
    if raw.startswith(b"From "):
        end = raw.find(b"\n")
        return len(raw) if end < 0 else end + 1
    return 0


def header_block(mark: Mark, raw: bytes) -> bytes:
    nl = _newline(raw)
    return b"".join(f"{k}: {v}".encode("utf-8", "replace") + nl for k, v in header_lines(mark))


def marked(raw: bytes, mark: Mark) -> bytes:
    """The message with the headers added and every original byte kept, in order."""
    at = _insert_at(raw)
    return raw[:at] + header_block(mark, raw) + raw[at:]


def is_spam_header(name: str | bytes) -> bool:
    """``X-Spam-*`` in any case: the fields SpamAssassin (and so we) own."""
    raw = name.encode("latin-1", "replace") if isinstance(name, str) else name
    return raw.strip().lower().startswith(SPAM_PREFIX)


def strip_spam_headers(raw: bytes) -> bytes:
    """The message without its ``X-Spam-*`` header fields, folded lines included.

    Only the header section is read (after an mbox ``From `` line): it ends at the first
    blank line or at the first line that is neither a field nor a continuation, so a body
    line that looks like a header is never touched. Every other byte is kept, in order.
    """
    at = _insert_at(raw)
    kept, pos, dropping = [raw[:at]], at, False
    while pos < len(raw):
        end = raw.find(b"\n", pos)
        end = len(raw) if end < 0 else end + 1
        line = raw[pos:end]
        if line[:1] in (b" ", b"\t"):
            if not dropping:  # a continuation belongs to the field above it
                kept.append(line)
        elif _FIELD.match(line):
            dropping = is_spam_header(line.split(b":", 1)[0])
            if not dropping:
                kept.append(line)
        else:  # a blank line or text: the body starts here
            kept.append(raw[pos:])
            break
        pos = end
    return b"".join(kept)


def header_section(message: bytes) -> bytes:
    """The header section of a message, its terminating blank line included."""
    for sep in (b"\r\n\r\n", b"\n\n"):
        end = message.find(sep)
        if end >= 0:
            # The earliest blank line ends the headers, whichever line ending it uses.
            other = message.find(b"\n\n" if sep == b"\r\n\r\n" else b"\r\n\r\n")
            if other < 0 or end < other:
                return message[: end + len(sep)]
    return message


def report(mark: Mark) -> str:
    """spamd's REPORT body: the SpamAssassin layout, with the model's numbers as the rules."""
    verdict = (
        "has identified this incoming email as possible spam"
        if mark.spam
        else ("has not identified this incoming email as spam")
    )
    probs = ", ".join(
        f"P({k})={'nan' if v is None else f'{v:.3f}'}" for k, v in mark.probabilities.items()
    )
    lines = [
        f"textgate spam filtering software {verdict}.",
        f"Action: {mark.action}; model {mark.model}; request id {mark.request_id}",
        "",
        f"Content analysis details:   ({mark.points:.1f} points, {mark.required:.1f} required)",
        "",
        " pts rule name              description",
        "---- ---------------------- --------------------------------------------------",
    ]
    for t in mark.tests:
        if t.startswith("TEXTGATE_SPAN_"):
            continue
        lines.append(f"{mark.points:4.1f} {t:<22} {probs}"[:79])
    for name, weight in mark.symbols:  # weight: log-odds added, not points
        about = signals.SYMBOLS[name].description if name in signals.SYMBOLS else ""
        about = languages.DESCRIPTION if name == languages.SYMBOL else about
        lines.append(f"{weight:+4.1f} {name:<22} {about}"[:79])
    if mark.spans:
        lines += ["", "Spans that moved the score most (score without the span, by occlusion):"]
        lines += [f"{s.contribution:+.3f} {s.kind:<7} {s.text}" for s in mark.spans]
    return "\n".join(lines) + "\n"
