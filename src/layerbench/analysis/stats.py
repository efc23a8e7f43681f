"""Statistics of runs: summaries with bootstrap confidence intervals, the delta of a variant against the baseline
with an interval that agrees with its test, Holm's correction, and verdicts printed the way benchstat prints them.

The unit is the run (intervals within a run are correlated). Methods:
- Summary of one variant: mean, median, sd, CV and a percentile bootstrap CI of the mean (Efron & Tibshirani,
  "An Introduction to the Bootstrap", 1993), seeded resamples (DEFAULTS.resamples), vectorised.
- Delta against the baseline: the Hodges-Lehmann estimate of the shift of log(values) (the median of the
  pairwise log ratios variant_j / baseline_i), reported as a relative delta exp(shift) - 1, with the interval
  obtained by inverting the Mann-Whitney test (Hodges & Lehmann, Ann. Math. Statist. 34, 1963; Bauer, JASA 67,
  1972; Hollander, Wolfe & Chicken, "Nonparametric Statistical Methods", 3rd ed., 2014, section 4.3): the
  interval holds every shift the test does not reject, so it excludes 0 exactly when p < alpha (no ties), and
  it covers the true shift with probability >= 1 - alpha at any n whatever the distribution (exact
  distribution; the normal approximation with ties or more than 20 runs a side). Metrics with values <= 0 use
  the shift of the raw values divided by the baseline's median instead of logs.
- Two-sided Mann-Whitney U: exact null distribution without ties and n <= 20 per side, else SciPy's normal
  approximation with tie and continuity corrections (scipy.stats.mannwhitneyu).
- Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6, 1979.
- Verdicts (docs/statistics.md has the table of regions): `slower` / `faster` when p < alpha and the whole
  interval lies beyond the noise threshold; `slower?` / `faster?` when p < alpha but the interval reaches into
  the band (a real difference whose size is not shown to exceed the threshold); `within noise` when the whole
  interval lies inside the band; `~` when p >= alpha otherwise (no detectable difference).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy import stats as sp

from layerbench.analysis.attainable import gate, pairs_gate
from layerbench.statistics_settings import DEFAULTS, Settings

BOOTSTRAP_MAX_N = 200  # above this many runs the interval of the mean is Student's t (the bootstrap adds nothing)
PAIRWISE_MAX = 250_000  # above this many pairs the interval's ends are found by bisection, not by sorting all pairs
EXACT_MAX = 20  # runs per side up to which the exact distribution of U is used (without ties)


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
    delta: float  # Hodges-Lehmann estimate of variant / baseline - 1 (median of the pairwise ratios, minus 1)
    low: float
    high: float
    confidence: float = 1 - DEFAULTS.alpha  # the interval's attained confidence (the exact distribution is discrete)


@dataclass(frozen=True)
class Verdict:
    kind: str  # "slower" | "slower?" | "faster" | "faster?" | "within noise" | "~" | "need more runs"
    text: str  # benchstat-style, e.g. "-4.90% [-6.1, -3.7] (p=0.002 n=10)"
    warnings: tuple[str, ...] = ()  # when the interval and the test say different things, and why


@dataclass(frozen=True)
class Comparison:
    variant: str
    delta: DeltaCI | None
    p: float | None
    p_adjusted: float | None
    verdict: Verdict
    n_baseline: int
    n_variant: int
    pairs: int | None = None  # paired by round (analysis/paired.py): the pairs the delta and p come from, which
    # can be fewer than the runs per side (a run whose round has no partner is left out of the pairs)


@dataclass(frozen=True)
class Tested:
    """A delta and p computed elsewhere for one variant (paired by round, analysis/paired.py), for
    `compare_with_baseline` to correct and judge with the others; its caller passes only pairs enough for the
    test to reach alpha."""

    delta: DeltaCI
    p: float
    pairs: int


def _rng(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def bootstrap_means(values: np.ndarray, rng: np.random.Generator, resamples: int) -> np.ndarray:
    picks = rng.integers(0, len(values), size=(resamples, len(values)), dtype=np.int32)
    return values[picks].mean(axis=1)


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(samples, [tail, 100 - tail])
    return float(low), float(high)


def summarize(values: Sequence[float], *, seed: int = DEFAULTS.seed, resamples: int = DEFAULTS.resamples,
              confidence: float = DEFAULTS.confidence) -> Summary:
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("summarize needs at least one value")
    mean = float(data.mean())
    sd = float(data.std(ddof=1)) if data.size > 1 else 0.0
    if data.size == 1:
        low, high = mean, mean
    elif data.size > BOOTSTRAP_MAX_N:
        half = float(sp.t.ppf((1 + confidence) / 2, data.size - 1)) * sd / math.sqrt(data.size)
        low, high = mean - half, mean + half
    else:
        low, high = percentile_interval(bootstrap_means(data, _rng(seed), resamples), confidence)
    cv = sd / mean if mean else math.inf
    return Summary(int(data.size), mean, float(np.median(data)), sd, cv, float(data.min()), float(data.max()),
                   low, high)


# --- Mann-Whitney U and the Hodges-Lehmann shift --------------------------------------------------------------


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


@cache
def u_cdf(n1: int, n2: int) -> np.ndarray:
    """P(U <= u) for u = 0 .. n1*n2 under the null hypothesis, exact (no ties)."""
    counts = u_counts(n1, n2)
    total = sum(counts)
    running, out = 0, []
    for count in counts:
        running += count
        out.append(running / total)
    return np.array(out)


def exact_cut(n1: int, n2: int, alpha: float) -> tuple[int, float]:
    """c, the largest U with P(U <= c) < alpha / 2 (-1 when none), and the attained confidence 1 - 2 P(U <= c).
    The two-sided exact test rejects at alpha exactly when min(U, n1 n2 - U) <= c."""
    cdf = u_cdf(n1, n2)
    c = int(np.searchsorted(cdf, alpha / 2, side="left")) - 1
    return c, 1.0 - (2 * float(cdf[c]) if c >= 0 else 0.0)


def normal_cut(n1: int, n2: int, alpha: float, joined: np.ndarray) -> tuple[int, float]:
    """The same cut from the normal approximation of U with tie and continuity corrections."""
    n = n1 + n2
    _, tie_sizes = np.unique(joined, return_counts=True)
    tie_term = float((tie_sizes ** 3 - tie_sizes).sum()) / (n * (n - 1))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term))
    edge = n1 * n2 / 2 - 0.5 - float(sp.norm.isf(alpha / 2)) * sd
    return math.ceil(edge) - 1, 1.0 - alpha


def has_ties(joined: np.ndarray) -> np.ndarray:
    """Per row (last axis): does any value occur twice?"""
    ordered = np.sort(joined, axis=-1)
    return (np.diff(ordered, axis=-1) == 0).any(axis=-1)


def u_statistic(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """U of y against x per row: pairs with y > x, ties counting one half."""
    diff = y[..., None, :] - x[..., :, None]
    return (diff > 0).sum(axis=(-2, -1)) + 0.5 * (diff == 0).sum(axis=(-2, -1))


def mann_whitney_pvalues(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Two-sided Mann-Whitney p per row (last axis the runs): exact without ties and n <= 20 per side, else
    SciPy's normal approximation with tie and continuity corrections."""
    n1, n2 = x.shape[-1], y.shape[-1]
    exact = ~has_ties(np.concatenate([x, y], axis=-1)) & (n1 <= EXACT_MAX) & (n2 <= EXACT_MAX)
    p = np.empty(exact.shape)
    if exact.any():
        u = u_statistic(x[exact], y[exact])
        smaller = np.minimum(u, n1 * n2 - u).astype(int)
        p[exact] = np.minimum(1.0, 2 * u_cdf(n1, n2)[smaller])
    if (~exact).any():
        approx = sp.mannwhitneyu(y[~exact], x[~exact], axis=-1, method="asymptotic", use_continuity=True).pvalue
        p[~exact] = np.nan_to_num(approx, nan=1.0)  # all values equal: no evidence of a difference
    return p


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) == 0 or len(y) == 0:
        raise ValueError("the Mann-Whitney test needs values on both sides")
    return float(mann_whitney_pvalues(x[None, :], y[None, :])[0])


@dataclass(frozen=True)
class Shifts:
    """Per row: the Hodges-Lehmann relative delta, its interval, its attained confidence and the test's p."""

    delta: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: np.ndarray
    p: np.ndarray


def on_scale(base: np.ndarray, variant: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The values the shift is measured on, and the scale back to a relative delta: logarithms when every value
    is positive (a multiplicative effect, as throughput and latency have; scale NaN), else the raw values, whose
    shift is divided by the baseline's median."""
    if (base > 0).all() and (variant > 0).all():
        return np.log(base), np.log(variant), np.array(np.nan)
    scale = np.abs(np.median(base, axis=-1))
    if (scale == 0).any():
        raise ValueError("a delta needs a baseline median other than 0")
    return base, variant, scale


def kth_difference(xs: np.ndarray, ys: np.ndarray, k: int) -> float:
    """The k-th smallest (0-based) of all ys_j - xs_i without forming the pairs: bisection on the value, counting
    the pairs at or below it with a binary search (sorted xs and ys; O((n1 + n2) log n) per step)."""
    low, high = float(ys[0] - xs[-1]), float(ys[-1] - xs[0])
    def at_most(d: float) -> int:
        return int((len(xs) - np.searchsorted(xs, ys - d, side="left")).sum())
    if at_most(low) >= k + 1:
        return low
    while (middle := (low + high) / 2) not in (low, high):
        low, high = (low, middle) if at_most(middle) >= k + 1 else (middle, high)
    return high


def pair_order_statistics(x: np.ndarray, y: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """Per row, the ks-th smallest pairwise differences y_j - x_i (ks: one row of 0-based ranks per row)."""
    if x.shape[-1] * y.shape[-1] <= PAIRWISE_MAX:
        diff = y[..., None, :] - x[..., :, None]
        ordered = np.sort(diff.reshape(*diff.shape[:-2], -1), axis=-1)
        return np.take_along_axis(ordered, ks, axis=-1)
    xs, ys = np.sort(x, axis=-1), np.sort(y, axis=-1)
    return np.array([[kth_difference(xs[row], ys[row], int(k)) for k in ks[row]] for row in range(len(ks))])


def relative(shift: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return np.expm1(shift) if np.isnan(scale).all() else shift / scale


def cuts(base: np.ndarray, variant: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Per row (2-D arrays), how many pairwise shifts the interval leaves out on each side, and its attained
    confidence: from the exact distribution of U, or from its normal approximation (ties, or more runs)."""
    n1, n2 = base.shape[-1], variant.shape[-1]
    joined = np.concatenate([base, variant], axis=-1)
    tied = has_ties(joined)
    small = n1 <= EXACT_MAX and n2 <= EXACT_MAX
    c, conf = exact_cut(n1, n2, alpha) if small else normal_cut(n1, n2, alpha, np.arange(n1 + n2))
    out_c, out_conf = np.full(tied.shape, c), np.full(tied.shape, conf)
    for row in np.flatnonzero(tied):
        out_c[row], out_conf[row] = normal_cut(n1, n2, alpha, joined[row])
    return out_c, out_conf


def shift_intervals(base: np.ndarray, variant: np.ndarray, alpha: float = DEFAULTS.alpha) -> Shifts:
    """Hodges-Lehmann delta with its Mann-Whitney-inverted (1 - alpha) interval, per row: one simulated campaign
    per row of 2-D arrays (a 1-D pair is one row)."""
    base, variant = np.atleast_2d(np.asarray(base, dtype=float)), np.atleast_2d(np.asarray(variant, dtype=float))
    x, y, scale = on_scale(base, variant)
    m = x.shape[-1] * y.shape[-1]
    c, confidence = cuts(base, variant, alpha)
    ks = np.clip(np.stack([c, m - 1 - c, np.full_like(c, (m - 1) // 2), np.full_like(c, m // 2)], axis=-1), 0, m - 1)
    found = pair_order_statistics(x, y, ks)
    low = np.where(c < 0, -np.inf, found[:, 0])
    high = np.where(c < 0, np.inf, found[:, 1])
    return Shifts(relative((found[:, 2] + found[:, 3]) / 2, scale), relative(low, scale), relative(high, scale),
                  confidence, mann_whitney_pvalues(base, variant))


def shift_delta(baseline: Sequence[float], variant: Sequence[float], *,
                alpha: float = DEFAULTS.alpha) -> tuple[DeltaCI, float]:
    """One comparison: the relative Hodges-Lehmann delta with its (1 - alpha) interval, and the test's p."""
    base, other = np.asarray(baseline, dtype=float), np.asarray(variant, dtype=float)
    if base.size == 0 or other.size == 0:
        raise ValueError("a delta needs values on both sides")
    found = shift_intervals(base, other, alpha)
    return (DeltaCI(float(found.delta[0]), float(found.low[0]), float(found.high[0]), float(found.confidence[0])),
            float(found.p[0]))


def holm(pvalues: Sequence[float], others: Sequence[float] = ()) -> list[float]:
    """Holm-Bonferroni adjusted p-values of `pvalues`, in their order, within the family of `pvalues` and
    `others` (the raw p of the family's other comparisons, e.g. the other points of a sweep)."""
    family = [*pvalues, *others]
    m = len(family)
    order = sorted(range(m), key=lambda i: family[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * family[i]))
        adjusted[i] = running
    return adjusted[:len(pvalues)]


# --- verdicts ---------------------------------------------------------------------------------------------

KINDS = ("slower", "slower?", "faster", "faster?", "within noise", "~", "need more runs")


def meanings(threshold: float) -> dict[str, str]:
    """What each verdict word says, for the legends of every report and of the `compare` command
    (docs/statistics.md)."""
    band = f"±{threshold * 100:g} %"
    return {
        "slower / faster": f"a real difference (p < alpha) and the whole interval beyond {band}",
        "slower? / faster?": f"a real difference (p < alpha), but its interval reaches into {band}: the size is "
                             "not shown to exceed the threshold",
        "within noise": f"the whole interval inside {band}: shown to differ by less than the threshold",
        "~": "no detectable difference (p >= alpha), and the interval too wide to show it is small",
        "need more runs": "too few runs per side for a verdict",
    }


def format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.3f}"


def format_bound(value: float) -> str:
    return f"{value * 100:+.1f}" if math.isfinite(value) else ("+inf" if value > 0 else "-inf")


def format_delta(delta: DeltaCI, p: float, n: int, significant: bool) -> str:
    if not significant:
        return f"~ ({format_p(p)} n={n})"
    return (f"{delta.delta * 100:+.2f}% [{format_bound(delta.low)}, {format_bound(delta.high)}] "
            f"({format_p(p)} n={n})")


def disagreement(delta: DeltaCI, p_adjusted: float, p_raw: float | None, alpha: float) -> tuple[str, ...]:
    """Why the interval and the verdict's test say different things, when they do. An end sitting exactly on 0
    while the test rejects is no disagreement: with tied values the test at that very shift counts ties as
    halves, so that end is open."""
    excludes_zero, holds_zero = delta.low > 0 or delta.high < 0, delta.low < 0 < delta.high
    if excludes_zero and p_adjusted >= alpha and p_raw is not None and p_raw < alpha:
        return (f"the interval excludes 0 ({format_p(p_raw)} for this comparison alone) but not after Holm's "
                "correction over its family (the method line names it), which the verdict uses",)
    if (excludes_zero and p_adjusted >= alpha) or (holds_zero and p_adjusted < alpha):
        return ("the interval and the test disagree at the margin (tied values: the test and the interval use "
                "the normal approximation differently); the verdict follows the test",)
    return ()


def direction(delta: DeltaCI, threshold: float) -> tuple[int, bool]:
    """The side of the difference (+1 up, -1 down) and whether the whole interval lies beyond the threshold."""
    if delta.low > 0 or (delta.high >= 0 and delta.delta >= 0):
        return 1, delta.low > threshold
    return -1, delta.high < -threshold


def verdict(delta: DeltaCI, p_adjusted: float, n_base: int, n_variant: int, settings: Settings | None = None, *,
            higher_is_better: bool = True, p_raw: float | None = None, comparisons: int = 1,
            pairs: int | None = None) -> Verdict:
    """need more runs: unpaired, fewer runs than the Mann-Whitney test needs to reach alpha after Holm over
    `comparisons`, or than the settings' min_runs; paired by round (`pairs` given), fewer pairs than the paired
    t-test's floor or min_runs (analysis/attainable.py); within noise: the whole interval inside ±threshold
    (shown to differ by less than the threshold, whatever p says); ~: p >= alpha (no detectable difference);
    slower / faster: p < alpha and the whole interval beyond the threshold on one side; slower? / faster?: p <
    alpha, but the interval reaches into the band (a real difference, not shown to exceed the threshold)."""
    rule = settings or Settings()
    short = (pairs_gate(pairs, min_runs=rule.min_runs) if pairs is not None else
             gate(n_base, n_variant, comparisons=comparisons, alpha=rule.alpha, min_runs=rule.min_runs))
    if short:
        return Verdict("need more runs", short)
    n, threshold = pairs if pairs is not None else min(n_base, n_variant), rule.threshold
    notes = disagreement(delta, p_adjusted, p_raw, rule.alpha)
    if -threshold <= delta.low and delta.high <= threshold:
        return Verdict("within noise", format_delta(delta, p_adjusted, n, True), notes)
    if p_adjusted >= rule.alpha:
        return Verdict("~", format_delta(delta, p_adjusted, n, False), notes)
    side, beyond = direction(delta, threshold)
    word = "faster" if (side > 0) == higher_is_better else "slower"
    return Verdict(word if beyond else f"{word}?", format_delta(delta, p_adjusted, n, True), notes)


NO_RUNS = Verdict("need more runs", "no successful runs on one side")


def compare_with_baseline(baseline: Sequence[float], variants: Mapping[str, Sequence[float]],
                          settings: Settings | None = None, *, higher_is_better: bool = True,
                          paired: Mapping[str, Tested] | None = None, family: Sequence[float] = (),
                          short_pairs: Mapping[str, int] | None = None) -> list[Comparison]:
    """Each variant against the baseline for one metric under `settings` (threshold, alpha, min_runs),
    Holm-corrected across the variants and, when given, `family`: the raw p of the other comparisons corrected
    together with these (the same metric at the other points of a sweep). The interval is the (1 - alpha)
    Hodges-Lehmann interval of each comparison alone: unpaired, or for the variants in `paired` the delta and p
    given there (paired by round), whose verdict counts the pairs. `short_pairs`: in a campaign paired by round,
    the pairs of each variant compared unpaired for want of pairs; when the unpaired test cannot reach a verdict
    either, its 'need more runs' says the rounds pairing needs."""
    rule, paired, short_pairs = settings or Settings(), paired or {}, short_pairs or {}
    names = [name for name, values in variants.items() if len(values) and len(baseline) and np.median(baseline)]
    found = {name: (paired[name].delta, paired[name].p) if name in paired else
             shift_delta(baseline, variants[name], alpha=rule.alpha) for name in names}
    adjusted = dict(zip(names, holm([found[name][1] for name in names], family), strict=True))
    out = []
    for name, values in variants.items():
        if name not in adjusted:
            out.append(Comparison(name, None, None, None, NO_RUNS, len(baseline), len(values)))
            continue
        (delta, p), pairs = found[name], paired[name].pairs if name in paired else None
        judged = verdict(delta, adjusted[name], len(baseline), len(values), rule, higher_is_better=higher_is_better,
                         p_raw=p, comparisons=len(names) + len(family), pairs=pairs)
        if judged.kind == "need more runs" and name in short_pairs:
            judged = Verdict("need more runs", pairs_gate(short_pairs[name], min_runs=rule.min_runs) or judged.text)
        out.append(Comparison(name, delta, p, adjusted[name], judged, len(baseline), len(values), pairs))
    return out
