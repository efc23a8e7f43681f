"""Rounds as blocks: each variant against the baseline paired by round, with the paired t-test on the per-round
log ratios, the rule in force (issue #43; docs/statistics.md, "Choosing the paired rule"); and the Wilcoxon
signed-rank test with its Hodges-Lehmann interval, the rule before it, which the simulation still compares with.

A round runs every variant once, close together in time, so drift of the machine (a busy neighbour, hypervisor
steal, a warming cache) multiplies every run of a round alike. The log-ratio variant / baseline of one round
cancels that round's factor; across rounds the log-ratios differ only by the runs' own noise. Methods:
- The rule in force: the paired t-test on the log-ratios (Student, Biometrika 6, 1908): the delta is
  exp(mean) - 1, the interval exp(mean -/+ t(1 - alpha/2, n - 1) sd / sqrt(n)) - 1 and p two-sided with n - 1
  degrees of freedom, the same as scipy.stats.ttest_1samp on the log-ratios (ttest_rel on the logs), so the
  interval excludes 0 exactly when p < alpha. Its smallest p is 0 at any n >= 2: no rounds are needed for the
  test to reach alpha, only for the interval to be narrow; T_MIN_PAIRS (analysis/attainable.py) guards its
  smallest samples, and a comparison with fewer pairs is made unpaired (Mann-Whitney, analysis/stats.py).
- The rule before it (`signed_rank_intervals`, for blocks_simulation.py): the one-sample Hodges-Lehmann estimate
  of the log-ratios, the median of their n(n+1)/2 Walsh averages (Hodges & Lehmann, Ann. Math. Statist. 34,
  1963; Hollander, Wolfe & Chicken, "Nonparametric Statistical Methods", 3rd ed., 2014, section 3.2), with the
  two-sided Wilcoxon signed-rank test (Wilcoxon, Biometrics Bulletin 1, 1945): exact null distribution without
  zeros or tied |d| up to 50 pairs (the same p as scipy.stats.wilcoxon(method="exact")), else the normal
  approximation with tie and continuity corrections, zeros split between the signs
  (scipy.stats.wilcoxon(zero_method="zsplit", method="approx")); the interval holds every shift the test does
  not reject (Tukey's identity; Bauer, JASA 67, 1972). With n pairs its smallest two-sided p is 2 / 2^n (every
  log-ratio of one sign): 5 pairs cannot reach 0.05, which is why it was replaced.
Which runs are paired, and when the analysis falls back to the unpaired comparison, is `pair_by_round` and
`paired_tests` below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats as sp

from layerbench.analysis.attainable import pairs_floor
from layerbench.analysis.stats import DeltaCI, Shifts, Tested, on_scale, relative
from layerbench.statistics_settings import DEFAULTS

EXACT_PAIRS_MAX = 50  # pairs up to which the exact distribution is used (without zeros or ties), as SciPy does
PAIRED, UNPAIRED = "paired", "unpaired"


@cache
def signed_rank_cdf(n: int) -> np.ndarray:
    """P(T+ <= t) for t = 0 .. n(n+1)/2 under the null hypothesis, exact (subsets of the ranks 1..n by sum)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        counts[rank:] = counts[rank:] + counts[:-rank].copy()
    return np.cumsum(counts) / 2.0 ** n


def exact_cut(n: int, alpha: float) -> tuple[int, float]:
    """c, the largest T+ with P(T+ <= c) < alpha / 2 (-1 when none), and the attained confidence 1 - 2 P(T+ <= c):
    the two-sided exact test rejects at alpha exactly when min(T+, T-) <= c."""
    cdf = signed_rank_cdf(n)
    c = int(np.searchsorted(cdf, alpha / 2, side="left")) - 1
    return c, 1.0 - (2 * float(cdf[c]) if c >= 0 else 0.0)


def smallest_p(pairs: int) -> float:
    """The smallest two-sided exact signed-rank p-value with this many pairs (1.0 without pairs)."""
    return 1.0 if pairs < 1 else min(1.0, math.ldexp(1.0, 1 - pairs))


def normal_cut(d: np.ndarray, alpha: float) -> tuple[int, float]:
    """The cut from the normal approximation of T+, with tie (and zero) correction and continuity correction."""
    n = d.size
    _, tie_sizes = np.unique(np.abs(d), return_counts=True)
    variance = n * (n + 1) * (2 * n + 1) / 24 - float((tie_sizes ** 3 - tie_sizes).sum()) / 48
    edge = n * (n + 1) / 4 - 0.5 - float(sp.norm.isf(alpha / 2)) * math.sqrt(max(variance, 0.0))
    return math.ceil(edge) - 1, 1.0 - alpha


def needs_approximation(d: np.ndarray) -> np.ndarray:
    """Per row: a zero, a tie among |d|, or more pairs than the exact distribution is used for."""
    ordered = np.sort(np.abs(d), axis=-1)
    return (ordered[..., 0] == 0) | (np.diff(ordered, axis=-1) == 0).any(axis=-1) | (d.shape[-1] > EXACT_PAIRS_MAX)


def exact_pvalues(d: np.ndarray) -> np.ndarray:
    """Two-sided exact signed-rank p per row (no zeros, no ties among |d|)."""
    n = d.shape[-1]
    ranks = np.argsort(np.argsort(np.abs(d), axis=-1), axis=-1) + 1
    t_plus = np.where(d > 0, ranks, 0).sum(axis=-1)
    smaller = np.minimum(t_plus, n * (n + 1) // 2 - t_plus)
    return np.minimum(1.0, 2 * signed_rank_cdf(n)[smaller])


def approx_pvalue(d: np.ndarray) -> float:
    if not np.any(d):
        return 1.0  # every pair equal: no evidence of a difference
    found = sp.wilcoxon(d, zero_method="zsplit", correction=True, method="approx")
    return float(np.nan_to_num(found.pvalue, nan=1.0))


def walsh_averages(d: np.ndarray) -> np.ndarray:
    """Per row, the sorted (d_i + d_j) / 2 for i <= j."""
    i, j = np.triu_indices(d.shape[-1])
    return np.sort((d[..., i] + d[..., j]) / 2, axis=-1)


def signed_rank_intervals(base: np.ndarray, variant: np.ndarray, alpha: float = DEFAULTS.alpha) -> Shifts:
    """Per row of 2-D arrays (column k of both: the same round), the paired Hodges-Lehmann relative delta, its
    signed-rank (1 - alpha) interval, its attained confidence and the test's two-sided p."""
    base, variant = np.atleast_2d(np.asarray(base, dtype=float)), np.atleast_2d(np.asarray(variant, dtype=float))
    x, y, scale = on_scale(base, variant)
    d = y - x
    n = d.shape[-1]
    walsh = walsh_averages(d)
    m = walsh.shape[-1]
    approx = needs_approximation(d)
    c0, conf0 = exact_cut(n, alpha) if n <= EXACT_PAIRS_MAX else (-1, 0.0)  # larger n: every row approximates
    c, confidence, p = np.full(len(d), c0), np.full(len(d), conf0), np.ones(len(d))
    if (~approx).any():
        p[~approx] = exact_pvalues(d[~approx])
    for row in np.flatnonzero(approx):
        (c[row], confidence[row]), p[row] = normal_cut(d[row], alpha), approx_pvalue(d[row])
    rows = np.arange(len(d))
    low = np.where(c < 0, -np.inf, walsh[rows, np.clip(c, 0, m - 1)])
    high = np.where(c < 0, np.inf, walsh[rows, np.clip(m - 1 - c, 0, m - 1)])
    middle = (walsh[:, (m - 1) // 2] + walsh[:, m // 2]) / 2
    return Shifts(relative(middle, scale), relative(low, scale), relative(high, scale), confidence, p)


def t_intervals(base: np.ndarray, variant: np.ndarray, alpha: float = DEFAULTS.alpha) -> Shifts:
    """Per row of 2-D arrays (column k of both: the same round), the paired t-test on the log-ratios: the relative
    delta exp(mean) - 1, its (1 - alpha) Student interval and the two-sided p. Fewer than 2 pairs: p 1 and an
    unbounded interval; log-ratios all equal (no spread): p 0, or 1 when they are all 0, and the interval that
    one value."""
    base, variant = np.atleast_2d(np.asarray(base, dtype=float)), np.atleast_2d(np.asarray(variant, dtype=float))
    x, y, scale = on_scale(base, variant)
    d = y - x
    n, mean = d.shape[-1], d.mean(axis=-1)
    if n < 2:
        unbounded = np.full(mean.shape, np.inf)
        return Shifts(relative(mean, scale), relative(-unbounded, scale), relative(unbounded, scale),
                      np.zeros(mean.shape), np.ones(mean.shape))
    se = d.std(axis=-1, ddof=1) / math.sqrt(n)
    spread = se > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(spread, mean / np.where(spread, se, 1.0), np.where(mean == 0, 0.0, np.inf))
    p = np.minimum(1.0, 2 * sp.t.sf(np.abs(t), n - 1))
    half = float(sp.t.isf(alpha / 2, n - 1)) * se
    return Shifts(relative(mean, scale), relative(mean - half, scale), relative(mean + half, scale),
                  np.full(mean.shape, 1 - alpha), p)


# --- which runs are paired --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pairs:
    """One variant's runs paired with the baseline's by round: the values of each pair, and the runs left out."""

    baseline: tuple[float, ...]
    variant: tuple[float, ...]
    unpaired: int  # runs of either side with no partner in their round (a failed or replaced partner)

    @property
    def n(self) -> int:
        return len(self.baseline)


def pair_by_round(baseline: Sequence[tuple[int, float]], variant: Sequence[tuple[int, float]]) -> Pairs:
    """(round, value) of each side, in run order: the k-th run of the baseline in a round is paired with the
    k-th run of the variant in that round (a rerun that landed in the same round pairs like any run); a run
    whose round has no partner left is not paired."""
    rounds_b: dict[int, list[float]] = {}
    rounds_v: dict[int, list[float]] = {}
    for r, value in baseline:
        rounds_b.setdefault(r, []).append(value)
    for r, value in variant:
        rounds_v.setdefault(r, []).append(value)
    pairs = [(b, v) for r in sorted(rounds_b.keys() & rounds_v.keys())
             for b, v in zip(rounds_b[r], rounds_v[r], strict=False)]
    return Pairs(tuple(b for b, _ in pairs), tuple(v for _, v in pairs), len(baseline) + len(variant) - 2 * len(pairs))


def verdict_reachable(pairs: int, *, comparisons: int, alpha: float) -> bool:
    """Whether the signed-rank test (the rule before the t-test, blocks_simulation.py) can reach alpha after Holm."""
    return max(1, comparisons) * smallest_p(pairs) < alpha


def pairs_needed(*, comparisons: int, alpha: float) -> int:
    """The fewest pairs with which the signed-rank test can reach alpha after Holm over `comparisons`."""
    return next(n for n in range(1, 2000) if verdict_reachable(n, comparisons=comparisons, alpha=alpha))


def paired_delta(pairs: Pairs, alpha: float) -> Tested:
    """The paired t-test of one variant's pairs (the rule in force)."""
    found = t_intervals(np.array(pairs.baseline), np.array(pairs.variant), alpha)
    delta = DeltaCI(float(found.delta[0]), float(found.low[0]), float(found.high[0]), float(found.confidence[0]))
    return Tested(delta, float(found.p[0]), pairs.n)


RoundValues = Sequence[tuple[int, float]]  # (round, value) of each usable run, in run order


def paired_tests(baseline: str, by_round: dict[str, RoundValues], alpha: float,
                 min_runs: int = 0) -> tuple[dict[str, Tested], dict[str, int]]:
    """Each variant paired with the baseline by round, by the paired t-test, where it has the pairs its floor asks
    for (analysis/attainable.py: T_MIN_PAIRS, or min_runs when higher); and the pairs of the others, which are
    compared unpaired (the report names them, and their 'need more runs' says the rounds pairing needs)."""
    others = [name for name, values in by_round.items() if name != baseline and values]
    if not by_round.get(baseline) or not others:
        return {}, {}
    tested, short = {}, {}
    for name in others:
        pairs = pair_by_round(by_round[baseline], by_round[name])
        if pairs.n >= pairs_floor(min_runs) and np.median(pairs.baseline):
            tested[name] = paired_delta(pairs, alpha)
        else:
            short[name] = pairs.n
    return tested, short
