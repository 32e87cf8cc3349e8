"""Fitting the combiner (``textgate.signals.combiner``): a sign-constrained logistic
regression over the content score, the lexical score and the symbols, and the cross-fitting
that gives it scores a model never saw its own source in.

Why sign constraints: the training corpus's headers are confounded with its sources. The
only modern mail in it is phishing, so an unconstrained fit learns that e.g. a passing DKIM
signature means spam. Each symbol has a direction (``Symbol.direction``); its weight may be
zero or point that way, never the other, and the two scores may only count for "not ham".

Why cross-fitting: content and lexical scores on the rows their models were trained on are
overconfident, so the combiner would learn to trust them too much. ``crossfit_folds`` puts
whole source groups in folds, ``crossfit_predict`` scores each fold with models fitted on
the others, so a row's own source never trains the model that scores it.
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from textgate.errors import DependencyError
from textgate.signals import combiner as comb


def fit(
    content: np.ndarray,
    lexical: np.ndarray,
    fired: Sequence[Sequence[str]],
    y: np.ndarray,
    *,
    symbols: Sequence[str],
    directions: Mapping[str, int],
    negative: int,
    l2: float = 1.0,
    min_support: int = 5,
    balance: bool = True,
) -> comb.Combiner:
    """The combiner minimizing the (class-balanced) mean log-loss + l2/n·||w||² under the
    sign bounds; y is 1 for not-negative (spam, phish), 0 for ham. Deterministic."""
    try:
        from scipy.optimize import minimize
        from scipy.special import expit
    except ImportError as exc:
        raise DependencyError(
            "fitting the combiner needs scipy", hint="pip install 'textgate[train]'"
        ) from exc
    names = _symbols(symbols, directions)
    x = comb.design(content, lexical, fired, names)
    target = _target(y, len(x))
    if not np.isfinite(x).all():
        raise ValueError("content and lexical scores must be finite")
    n = len(x)
    sample = _sample_weights(target) if balance else np.ones(n)
    bounds = [(None, None), *_bounds(x, names, directions, min_support)]

    def loss(params: np.ndarray) -> tuple[float, np.ndarray]:
        b, w = params[0], params[1:]
        t = x @ w + b
        value = float(sample @ (np.logaddexp(0.0, t) - target * t)) / n + l2 / n * float(w @ w)
        r = sample * (expit(t) - target) / n
        grad = np.concatenate([[r.sum()], x.T @ r + 2.0 * l2 / n * w])
        return value, grad

    start = np.zeros(x.shape[1] + 1)
    opts = {"maxiter": 10_000, "ftol": 1e-14, "gtol": 1e-10}
    result = minimize(loss, start, jac=True, method="L-BFGS-B", bounds=bounds, options=opts)
    # The loss is convex: an L-BFGS-B stop short of its tolerances (a line search that can
    # no longer improve) is at the optimum to float precision; only non-finite is a failure.
    params = _clip(np.asarray(result.x, dtype=np.float64), bounds)
    if not np.isfinite(params).all():
        raise RuntimeError(f"the combiner fit diverged: {result.message}")
    return comb.Combiner(
        features=(*comb.SCORES, *names),
        weights=params[1:],
        intercept=float(params[0]),
        negative=negative,
        directions={s: int(directions[s]) for s in names},
    )


def _symbols(symbols: Sequence[str], directions: Mapping[str, int]) -> tuple[str, ...]:
    if isinstance(symbols, str):
        raise TypeError("symbols must be a sequence of names, not one string")
    names = tuple(symbols)
    if len(set(names)) != len(names) or set(names) & set(comb.SCORES):
        raise ValueError(f"symbols must be distinct and not {comb.SCORES}: {names}")
    missing = [s for s in names if directions.get(s) not in comb.DIRECTIONS]
    if missing:
        raise ValueError(f"symbols without a direction of +1 or -1: {missing}")
    return names


def _target(y: np.ndarray, rows: int) -> np.ndarray:
    target = np.asarray(y, dtype=np.float64).reshape(-1)
    if len(target) != rows:
        raise ValueError(f"{len(target)} labels for {rows} rows")
    if not np.isin(target, (0.0, 1.0)).all():
        raise ValueError("labels must be 0 (ham) or 1 (not ham)")
    if target.min() == target.max():
        raise ValueError("the combiner needs rows of both classes")
    return target


def _sample_weights(target: np.ndarray) -> np.ndarray:
    """Each class's rows weigh n / (2·its count): both count equally, and the weights sum to
    n, so l2/n means the same with and without balancing."""
    n, positives = len(target), float(target.sum())
    return np.where(target == 1.0, n / (2.0 * positives), n / (2.0 * (n - positives)))


def _bounds(
    x: np.ndarray, names: Sequence[str], directions: Mapping[str, int], min_support: int
) -> list[tuple[float | None, float | None]]:
    """The scores count only for "not ham"; a symbol only its own way, and not at all when
    it fired in fewer than min_support rows (too few to tell its weight from noise)."""
    bounds: list[tuple[float | None, float | None]] = [(0.0, None), (0.0, None)]
    support = x[:, len(comb.SCORES) :].sum(axis=0)
    for name, seen in zip(names, support, strict=True):
        if seen < min_support:
            bounds.append((0.0, 0.0))
        elif directions[name] > 0:
            bounds.append((0.0, None))
        else:
            bounds.append((None, 0.0))
    return bounds


def _clip(params: np.ndarray, bounds: Sequence[tuple[float | None, float | None]]) -> np.ndarray:
    lo = np.array([-np.inf if b[0] is None else b[0] for b in bounds])
    hi = np.array([np.inf if b[1] is None else b[1] for b in bounds])
    clipped: np.ndarray = np.clip(params, lo, hi)
    return clipped


def crossfit_folds(
    groups: Sequence[str], labels: Sequence[str], k: int, seed: int
) -> dict[str, int]:
    """Source group -> fold in 0..k-1, each group in one fold, the label mix balanced.

    Groups go largest first (ties in a seeded shuffle of the sorted names, so one seed, one
    assignment) to the fold holding the fewest rows of the group's majority label, then the
    fewest rows; an empty fold holds the fewest of both, so the first k groups fill k folds.
    """
    if len(groups) != len(labels):
        raise ValueError(f"{len(groups)} groups for {len(labels)} labels")
    mix: dict[str, Counter[str]] = {}
    for g, label in zip(groups, labels, strict=True):
        mix.setdefault(g, Counter())[label] += 1
    if k < 2 or len(mix) < k:
        raise ValueError(f"{k} folds need k >= 2 and at least k groups (got {len(mix)})")
    order = sorted(mix)
    random.Random(seed).shuffle(order)
    order.sort(key=lambda g: -sum(mix[g].values()))  # stable: ties keep the shuffled order
    held: list[Counter[str]] = [Counter() for _ in range(k)]
    fold_of: dict[str, int] = {}
    for g in order:
        major = max(sorted(mix[g]), key=mix[g].__getitem__)  # ties: the first label by name
        j = min(range(k), key=lambda f: (held[f][major], held[f].total(), f))
        fold_of[g] = j
        held[j].update(mix[g])
    return fold_of


def crossfit_predict(
    groups: Sequence[str],
    fold_of: Mapping[str, int],
    fit_predict: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """Out-of-fold predictions in row order: for each fold, ``fit_predict(train_idx,
    predict_idx)`` fits on the rows of every other fold and predicts that fold's rows, so
    no row's group trains the model that predicts it."""
    missing = sorted({g for g in groups if g not in fold_of})
    if missing:
        raise ValueError(f"groups without a fold: {missing[:5]}")
    row_fold = np.array([fold_of[g] for g in groups], dtype=np.int64)
    folds = np.unique(row_fold)
    if len(folds) < 2:
        raise ValueError("cross-fitting needs rows in at least two folds")
    out = np.full(len(row_fold), np.nan, dtype=np.float64)
    for j in folds:
        train_idx = np.flatnonzero(row_fold != j)
        predict_idx = np.flatnonzero(row_fold == j)
        pred = np.asarray(fit_predict(train_idx, predict_idx), dtype=np.float64).reshape(-1)
        if len(pred) != len(predict_idx):
            raise ValueError(f"fold {j}: {len(pred)} predictions for {len(predict_idx)} rows")
        out[predict_idx] = pred
    return out


# The L2 strengths ``fit_by_groups`` chooses among (on the mean log-loss's scale, over n rows).
L2_GRID = (0.3, 3.0, 30.0, 300.0)


def fit_by_groups(
    content: np.ndarray,
    lexical: np.ndarray,
    fired: Sequence[Sequence[str]],
    y: np.ndarray,
    groups: Sequence[str],
    *,
    symbols: Sequence[str],
    directions: Mapping[str, int],
    negative: int,
    grid: Sequence[float] = L2_GRID,
) -> tuple[comb.Combiner, dict[str, float]]:
    """``fit`` with its L2 strength chosen by leave-one-group-out log-loss: each source group
    is scored by a combiner fitted on the others, so the strength that wins is the one whose
    weights carry best to a source they never saw (a symbol one source alone made look
    decisive costs there). Returns the combiner fitted on every row at that strength, and
    the held-out log-loss of each strength tried."""
    from scipy.special import expit

    keys = np.asarray(groups)
    target = _target(y, len(keys))
    fit_at = functools.partial(fit, symbols=symbols, directions=directions, negative=negative)
    losses: dict[str, float] = {}
    for l2 in grid:
        total, weight = 0.0, 0.0
        for g in sorted(set(groups)):
            held = keys == g
            rest = ~held
            if len(set(target[rest].tolist())) < 2:
                continue
            sub = [fired[i] for i in np.flatnonzero(rest)]
            model = fit_at(content[rest], lexical[rest], sub, target[rest], l2=l2)
            out = [fired[i] for i in np.flatnonzero(held)]
            p = np.clip(expit(model.z(content[held], lexical[held], out)), 1e-7, 1 - 1e-7)
            t = target[held]
            # each group counts once, whatever its size: the score of a source, not of rows
            total += float(-(t * np.log(p) + (1 - t) * np.log(1 - p)).mean())
            weight += 1.0
        losses[repr(l2)] = total / max(weight, 1.0)
    best = min(grid, key=lambda v: losses[repr(v)])
    return fit_at(content, lexical, fired, target, l2=best), losses
