"""Text or raw e-mail -> ``Prepared``: what the gateway scores, under one set of settings.

The gateway's side of ``textgate.normalize`` (the function training runs too): it picks the
settings once per runtime, sends e-mail to the parse pool when there is one, and keeps
normalization's notes as plain JSON for the answer, the event and the replay store.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from textgate import normalize
from textgate.config import NormalizeConfig
from textgate.gateway.scoring.pool import ParsePool
from textgate.normalize import Normalized, NormalizeSettings
from textgate.signals import wire
from textgate.signals.language import Language


@dataclass(frozen=True)
class Prepared:
    """One input ready to score: the normalized text and the pieces to score."""

    text: str
    pieces: tuple[str, ...]
    notes: dict[str, Any] = field(default_factory=dict)
    language: Language | None = None  # named by the parse pool; None: the service detects

    @property
    def symbols(self) -> tuple[str, ...]:
        """The structure symbols normalization found (e-mail only)."""
        return tuple(self.notes.get("symbols") or ())

    def wire(self, framed: bool) -> tuple[str, ...]:
        """What goes to Triton: the pieces, each with the symbols in front when the model
        combines them (``framed``); a model without a combiner gets the pieces alone."""
        symbols = self.symbols
        if not framed or not symbols:
            return self.pieces
        return tuple(wire.frame(symbols, p) for p in self.pieces)


class Preparer:
    """Normalization under the configured settings (the ``normalize`` section, else the
    defaults with the gateway's body limit)."""

    def __init__(
        self,
        settings: NormalizeConfig | NormalizeSettings | None = None,
        *,
        max_body_bytes: int = 1_048_576,
    ) -> None:
        if isinstance(settings, NormalizeSettings):
            self.settings = settings
        else:  # the config's section, whose body limit is the gateway's
            section = dataclasses.asdict(settings) if settings is not None else {}
            self.settings = NormalizeSettings.from_dict(
                {"max_body_bytes": max_body_bytes, **section}
            )

    def settings_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self.settings)

    def text(self, text: str, field_name: str = "text") -> Prepared:
        return _prepared(normalize.normalize_text(text, self.settings, field=field_name))

    async def email_off_loop(self, raw: bytes, pool: ParsePool | None) -> Prepared:
        """``email`` in the parse pool (time budget, killable); in-process without one."""
        if pool is None:
            return self.email(raw)
        parsed = await pool.parse(raw, self.settings)
        return _prepared(parsed.normalized, parsed.language)

    def email(self, raw: bytes) -> Prepared:
        return _prepared(normalize.normalize_email(raw, self.settings))


def _prepared(n: Normalized, language: Language | None = None) -> Prepared:
    return Prepared(n.text, tuple(n.pieces), n.notes.as_dict(), language)
