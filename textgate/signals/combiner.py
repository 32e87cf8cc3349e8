"""The combiner: the transformer's score, the n-gram score and the structure symbols that
fired, joined in one calibrated not-ham log-odds.

    z = intercept + w_content·content + w_lexical·lexical + Σ_s w_s·[s fired]

``content`` is the transformer's not-negative log-odds (``not_negative_log_odds`` of its
logits), ``lexical`` the n-gram model's (``ngrams.NgramModel.scores``). ``adjust`` then moves
the logits so that their not-negative log-odds become ``z`` while the split among the other
labels (spam vs phish) stays the transformer's.

Standard library and numpy only, and no textgate import: the repository builder copies this
very file into the Triton postprocess step beside ``ngrams.py``, so serving applies the
combiner that training fitted and measured. Fitting lives in ``textgate.train.combiner``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = "textgate-combiner/1"
SCORES = ("content", "lexical")  # the first two features, in this order; symbols follow
DIRECTIONS = (1, -1)  # +1: the symbol points spam-ward, -1: ham-ward


def not_negative_log_odds(logits: np.ndarray, negative: int) -> np.ndarray:
    """log Σ_{k≠negative} exp(logit_k) − logit_negative, per row (the last axis is labels)."""
    values = np.asarray(logits, dtype=np.float64)
    others = np.delete(values, negative, axis=-1)
    top = others.max(axis=-1, keepdims=True)  # shifted, so large logits do not overflow
    lse = top[..., 0] + np.log(np.exp(others - top).sum(axis=-1))
    result: np.ndarray = lse - values[..., negative]
    return result


def indicators(fired: Sequence[Sequence[str]], symbols: Sequence[str]) -> np.ndarray:
    """(rows, symbols) of 0/1: whether each symbol fired in each row. Names outside
    ``symbols`` are skipped: a newer gateway may fire symbols an older bundle lacks."""
    column = {name: j for j, name in enumerate(symbols)}
    out = np.zeros((len(fired), len(symbols)), dtype=np.float64)
    for i, row in enumerate(fired):
        if isinstance(row, str):  # one name, not a row of names: its letters would be ignored
            raise TypeError(f"row {i} of fired symbols is a string, not a sequence of names")
        for name in row:
            j = column.get(name)
            if j is not None:
                out[i, j] = 1.0
    return out


def design(
    content: np.ndarray,
    lexical: np.ndarray,
    fired: Sequence[Sequence[str]],
    symbols: Sequence[str],
) -> np.ndarray:
    """The (rows, 2 + symbols) matrix the weights multiply: content, lexical, indicators.
    Shared with fitting, so training and serving read the symbols one way."""
    c = np.asarray(content, dtype=np.float64).reshape(-1)
    lex = np.asarray(lexical, dtype=np.float64).reshape(-1)
    if not len(c) == len(lex) == len(fired):
        raise ValueError(
            f"content, lexical and fired must have one entry per row "
            f"(got {len(c)}, {len(lex)}, {len(fired)})"
        )
    return np.column_stack([c, lex, indicators(fired, symbols)])


def join(
    weight: float, *, negative: int, symbols: Sequence[str], directions: Mapping[str, int]
) -> Combiner:
    """The n-gram join (``ngrams.adjust``: (1 − weight)·content + weight·lexical) as a
    combiner whose every symbol weighs 0: the symbols that fired are framed, listed and
    explained, as SpamAssassin lists its zero-score informational rules, but move nothing.
    The spam default since nested leave-one-source-out put the fitted weights below this mix
    on every seed (docs/email-model.md, "The join, not the fitted combiner")."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the join's weight must lie in [0, 1], got {weight}")
    names = tuple(symbols)
    return Combiner(
        features=(*SCORES, *names),
        weights=[1.0 - weight, weight, *([0.0] * len(names))],
        intercept=0.0,
        negative=negative,
        directions={n: int(directions[n]) for n in names},
    )


class Combiner:
    """Combined not-ham log-odds z = intercept + w_c·content + w_l·lexical + Σ_s w_s·[s fired]."""

    def __init__(
        self,
        *,
        features: Sequence[str],
        weights: Sequence[float] | np.ndarray,
        intercept: float,
        negative: int,
        directions: Mapping[str, int] | None = None,
    ) -> None:
        self.features = tuple(str(f) for f in features)
        self.weights = np.array(weights, dtype=np.float64).reshape(-1)
        self.intercept = float(intercept)
        self.negative = int(negative)
        self.directions = {str(k): int(v) for k, v in (directions or {}).items()}
        self._check()

    def _check(self) -> None:
        if self.features[:2] != SCORES:
            raise ValueError(f"the first features must be {SCORES}, got {self.features[:2]}")
        if len(set(self.features)) != len(self.features):
            raise ValueError("a feature is listed twice")
        if len(self.weights) != len(self.features):
            raise ValueError(f"{len(self.features)} features but {len(self.weights)} weights")
        if not (np.isfinite(self.weights).all() and math.isfinite(self.intercept)):
            raise ValueError("weights and intercept must be finite")
        if self.negative < 0:
            raise ValueError(f"negative must be a label index, got {self.negative}")
        bad = {k: v for k, v in self.directions.items() if v not in DIRECTIONS}
        if bad:
            raise ValueError(f"directions must be +1 or -1, got {bad}")

    @property
    def symbols(self) -> tuple[str, ...]:
        return self.features[len(SCORES) :]

    def z(
        self, content: np.ndarray, lexical: np.ndarray, fired: Sequence[Sequence[str]]
    ) -> np.ndarray:
        """The combined not-negative log-odds, one per row."""
        x = design(content, lexical, fired, self.symbols)
        result: np.ndarray = x @ self.weights + self.intercept
        return result

    def contributions(
        self, content: float, lexical: float, fired: Sequence[str]
    ) -> dict[str, float]:
        """name -> w·x for each non-zero term of one row, and "intercept"; they sum to its z
        (what an explanation shows: which signal moved the decision, and how far)."""
        x = design(np.array([content]), np.array([lexical]), [fired], self.symbols)[0]
        terms = x * self.weights
        out = {"intercept": self.intercept}
        out.update({name: float(t) for name, t in zip(self.features, terms, strict=True) if t})
        return out

    def adjust(self, logits: np.ndarray, z: np.ndarray) -> np.ndarray:
        """Logits whose not-negative log-odds are ``z``: only the negative label's logit moves,
        so the split among the other labels (spam vs phish) is kept."""
        out = np.array(logits, dtype=np.float64)
        out[:, self.negative] += not_negative_log_odds(out, self.negative) - np.asarray(
            z, dtype=np.float64
        )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "weights": [float(w) for w in self.weights],
            "intercept": self.intercept,
            "negative": self.negative,
            "directions": dict(self.directions),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Combiner:
        fmt = d.get("format")
        if fmt != FORMAT:
            raise ValueError(f"format {fmt!r} is not {FORMAT!r}")
        try:
            return cls(
                features=d["features"],
                weights=d["weights"],
                intercept=d["intercept"],
                negative=d["negative"],
                directions=d.get("directions"),
            )
        except KeyError as exc:
            raise ValueError(f"no {exc.args[0]!r} field") from exc

    def save(self, path: Path | str) -> None:
        # allow_nan=False: _check keeps the numbers finite, and strict JSON has no NaN
        text = json.dumps(self.to_dict(), indent=2, allow_nan=False)
        Path(path).write_text(text + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path | str) -> Combiner:
        try:
            d = json.loads(Path(path).read_text(encoding="utf-8"))
            if not isinstance(d, dict):
                raise ValueError("not a JSON object")
            return cls.from_dict(d)
        except (ValueError, TypeError) as exc:  # json's errors are ValueErrors too
            raise ValueError(f"{path}: {exc}") from exc

    def describe(self) -> dict[str, Any]:
        """For the bundle manifest: each feature with its weight, the intercept."""
        return {
            "format": FORMAT,
            "features": {
                name: float(w) for name, w in zip(self.features, self.weights, strict=True)
            },
            "intercept": self.intercept,
            "negative": self.negative,
        }
