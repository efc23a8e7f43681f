"""Statistics of runs: summaries with bootstrap confidence intervals, deltas against the baseline, the
Mann-Whitney U test, Holm's correction, and verdicts printed the way benchstat prints them.

The unit is the run (intervals within a run are correlated). Methods: percentile bootstrap (Efron &
Tibshirani, "An Introduction to the Bootstrap", 1993), 10,000 seeded resamples; ratio of means - 1 for the
delta, each side resampled independently; two-sided Mann-Whitney U (exact distribution without ties and n <= 20
per side, else the normal approximation with tie and continuity corrections, as scipy.stats.mannwhitneyu);
Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6, 1979. Verdict rules
follow benchstat (golang.org/x/perf): a difference is only reported when the test rejects at alpha.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from layerbench.analysis.attainable import gate

RESAMPLES = 10_000


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    median: float
    sd: float
    cv: float  # sd / mean
    min: float
    max: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class DeltaCI:
    delta: float  # mean(variant) / mean(baseline) - 1
    low: float
    high: float


@dataclass(frozen=True)
class Verdict:
    kind: str  # "slower" | "faster" | "within noise" | "~" | "need more runs"
    text: str  # benchstat-style, e.g. "-4.90% [-6.1, -3.7] (p=0.002 n=10)"
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    variant: str
    delta: DeltaCI | None
    p: float | None
    p_adjusted: float | None
    verdict: Verdict
    n_baseline: int
    n_variant: int


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def bootstrap_means(values: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    return values[picks].mean(axis=1)


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def summarize(values: Sequence[float], *, seed: int = 1, resamples: int = RESAMPLES,
              confidence: float = 0.95) -> Summary:
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("summarize needs at least one value")
    mean = float(data.mean())
    sd = float(data.std(ddof=1)) if data.size > 1 else 0.0
    low, high = (mean, mean) if data.size == 1 else percentile_interval(
        bootstrap_means(data, _rng(seed), resamples), confidence)
    cv = sd / mean if mean else math.inf
    return Summary(int(data.size), mean, float(np.median(data)), sd, cv, float(data.min()), float(data.max()),
                   low, high)


def bootstrap_delta(baseline: Sequence[float], variant: Sequence[float], *, seed: int = 1,
                    resamples: int = RESAMPLES, confidence: float = 0.95) -> DeltaCI:
    base, other = np.asarray(baseline, dtype=float), np.asarray(variant, dtype=float)
    if base.size == 0 or other.size == 0 or base.mean() == 0:
        raise ValueError("a delta needs values on both sides and a baseline mean other than 0")
    rng = _rng(seed)
    ratios = bootstrap_means(other, rng, resamples) / bootstrap_means(base, rng, resamples) - 1
    low, high = percentile_interval(ratios[np.isfinite(ratios)], confidence)
    return DeltaCI(float(other.mean() / base.mean() - 1), low, high)


# --- Mann-Whitney U ---------------------------------------------------------------------------------------


@cache
def u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many arrangements of n1 + n2 distinct values give U = 0 .. n1*n2 (no ties)."""
    if n1 == 0 or n2 == 0:
        return (1,)
    with_last_first = u_counts(n1 - 1, n2)  # the largest value belongs to sample 1: U grows by n2
    with_last_second = u_counts(n1, n2 - 1)
    out = [0] * (n1 * n2 + 1)
    for u, count in enumerate(with_last_first):
        out[u + n2] += count
    for u, count in enumerate(with_last_second):
        out[u] += count
    return tuple(out)


def ranks(values: np.ndarray) -> np.ndarray:
    """Mid-ranks (ties share the mean of their ranks), 1-based."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    result = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        result[order[i: j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return result


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("the Mann-Whitney test needs values on both sides")
    joined = np.concatenate([x, y])
    r = ranks(joined)
    u1 = float(r[:n1].sum() - n1 * (n1 + 1) / 2)
    u = max(u1, n1 * n2 - u1)
    ties = len(np.unique(joined)) < len(joined)
    if not ties and n1 <= 20 and n2 <= 20:
        counts = u_counts(n1, n2)
        upper = sum(counts[round(u):]) / sum(counts)
        return min(1.0, 2 * upper)
    return asymptotic_p(u, n1, n2, joined)


def asymptotic_p(u: float, n1: int, n2: int, joined: np.ndarray) -> float:
    n = n1 + n2
    _, tie_sizes = np.unique(joined, return_counts=True)
    tie_term = float((tie_sizes ** 3 - tie_sizes).sum()) / (n * (n - 1))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term))
    if sd == 0:
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / sd
    return min(1.0, math.erfc(z / math.sqrt(2)))  # 2 * normal survival function


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input's order."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


# --- verdicts ---------------------------------------------------------------------------------------------


def format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def format_delta(delta: DeltaCI, p: float, n: int, significant: bool) -> str:
    if not significant:
        return f"~ ({format_p(p)} n={n})"
    return f"{delta.delta * 100:+.2f}% [{delta.low * 100:+.1f}, {delta.high * 100:+.1f}] ({format_p(p)} n={n})"


def verdict(delta: DeltaCI, p_adjusted: float, n_base: int, n_variant: int, *, threshold: float = 0.02,
            alpha: float = 0.05, min_runs: int = 6, higher_is_better: bool = True) -> Verdict:
    """need more runs: too few; within noise: the whole CI inside ±threshold (shown to cost less than the
    threshold, whatever p says); ~: no detectable difference (p >= alpha); slower / faster: p < alpha and the
    whole CI beyond the threshold on one side; otherwise within noise."""
    n = min(n_base, n_variant)
    if n < min_runs:
        return Verdict("need more runs", f"need >= {min_runs} runs per side (have {n_base} and {n_variant})")
    text = format_delta(delta, p_adjusted, n, True)
    if -threshold <= delta.low and delta.high <= threshold:
        return Verdict("within noise", text)
    if p_adjusted >= alpha:
        return Verdict("~", format_delta(delta, p_adjusted, n, False))
    if delta.low > threshold:
        return Verdict("faster" if higher_is_better else "slower", text)
    if delta.high < -threshold:
        return Verdict("slower" if higher_is_better else "faster", text)
    return Verdict("within noise", text)


def compare(baseline: Sequence[float], variants: Mapping[str, Sequence[float]], *, higher_is_better: bool = True,
            threshold: float = 0.02, alpha: float = 0.05, min_runs: int = 6, seed: int = 1,
            resamples: int = RESAMPLES) -> list[Comparison]:
    """Each variant against the baseline for one metric, Holm-corrected across the variants."""
    names = [name for name, values in variants.items() if len(values) and len(baseline)]
    raw = [mann_whitney_p(baseline, variants[name]) for name in names]
    adjusted = dict(zip(names, holm(raw), strict=True))
    out = []
    for name, values in variants.items():
        if name not in adjusted or not np.mean(baseline):
            out.append(Comparison(name, None, None, None, Verdict("need more runs", "no successful runs on one side"),
                                  len(baseline), len(values)))
            continue
        delta = bootstrap_delta(baseline, values, seed=seed, resamples=resamples)
        short = gate(len(baseline), len(values), comparisons=len(names), alpha=alpha, min_runs=min_runs)
        judged = Verdict("need more runs", short) if short else verdict(
            delta, adjusted[name], len(baseline), len(values), threshold=threshold, alpha=alpha, min_runs=1,
            higher_is_better=higher_is_better)
        out.append(Comparison(name, delta, raw[names.index(name)], adjusted[name], judged, len(baseline),
                              len(values)))
    return out
