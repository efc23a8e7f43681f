"""Known answers computed independently with SciPy in the test, and properties of the statistics."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sp

from layerbench.analysis.stats import (
    DeltaCI,
    compare_with_baseline,
    format_delta,
    holm,
    mann_whitney_p,
    mann_whitney_pvalues,
    shift_delta,
    summarize,
    verdict,
)
from layerbench.statistics_settings import Settings

A = [512.3, 498.1, 505.9, 520.4, 509.7, 501.2, 515.0, 507.7]
B = [488.0, 479.5, 492.3, 485.1, 481.9, 490.6, 476.4, 487.2]


def test_summary_matches_numpy_and_scipy() -> None:
    s = summarize(A)
    assert s.n == 8 and s.mean == pytest.approx(np.mean(A)) and s.median == pytest.approx(np.median(A))
    assert s.sd == pytest.approx(np.std(A, ddof=1)) and s.cv == pytest.approx(sp.variation(A, ddof=1))
    assert (s.min, s.max) == (min(A), max(A))
    assert s.ci_low < s.mean < s.ci_high
    ref = sp.bootstrap((np.asarray(A),), np.mean, n_resamples=10_000, method="percentile",
                       random_state=np.random.default_rng(5)).confidence_interval
    assert s.ci_low == pytest.approx(ref.low, rel=0.003) and s.ci_high == pytest.approx(ref.high, rel=0.003)


def test_summary_edge_cases() -> None:
    one = summarize([7.0])
    assert (one.sd, one.ci_low, one.ci_high) == (0.0, 7.0, 7.0)
    with pytest.raises(ValueError):
        summarize([])


@pytest.mark.parametrize(("a", "b"), [(A, B), (A[:3], B[:3]), (A[:6], B), ([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])])
def test_mann_whitney_exact_matches_scipy(a: list[float], b: list[float]) -> None:
    ref = sp.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue
    assert mann_whitney_p(a, b) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize(("a", "b"), [
    ([1, 2, 2, 3, 4, 5, 5, 5], [2, 3, 3, 4, 6, 7, 7, 8]),
    (list(range(25)), [x + 3.5 for x in range(25)]),
    ([5, 5, 5, 5], [5, 5, 5, 6]),
])
def test_mann_whitney_asymptotic_with_ties_matches_scipy(a: list[float], b: list[float]) -> None:
    ref = sp.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic", use_continuity=True).pvalue
    assert mann_whitney_p(a, b) == pytest.approx(ref, abs=1e-9)


def test_three_runs_per_side_can_never_reach_005() -> None:
    assert mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)


def test_holm_textbook_example() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12), st.floats(0.001, 0.2))
def test_holm_never_rejects_more_than_unadjusted(pvalues: list[float], alpha: float) -> None:
    adjusted = holm(pvalues)
    assert all(adj >= raw for adj, raw in zip(adjusted, pvalues, strict=True))
    assert sum(p < alpha for p in adjusted) <= sum(p < alpha for p in pvalues)
    assert all(p <= 1 for p in adjusted)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(1, 1e6), min_size=2, max_size=15), st.integers(0, 2**31))
def test_bootstrap_ci_contains_the_point_estimate(values: list[float], seed: int) -> None:
    s = summarize(values, seed=seed, resamples=2000)
    assert s.ci_low - 1e-9 * s.mean <= s.mean <= s.ci_high + 1e-9 * s.mean


def test_delta_is_the_median_pairwise_ratio() -> None:
    d, p = shift_delta(A, B)
    ratios = sorted(b / a for a in A for b in B)  # 64 of them: the geometric mean of the middle two
    assert d.delta == pytest.approx(np.sqrt(ratios[31] * ratios[32]) - 1, abs=1e-12)
    assert d.low < d.delta < d.high < 0 and p == pytest.approx(mann_whitney_p(A, B))


@pytest.mark.parametrize(("a", "b"), [(A, B), (A[:6], B[:6]), (A[:4], B), ([3.0, 1.0, 2.5, 4.0, 2.0, 3.3], A[:7])])
def test_interval_is_the_set_of_ratios_scipys_exact_test_does_not_reject(a: list[float], b: list[float]) -> None:
    """Inverting the test by brute force: the interval ends are the smallest and largest ratio (on a fine grid)
    at which SciPy's exact Mann-Whitney test does not reject variant / ratio against the baseline."""
    d, _ = shift_delta(a, b)
    grid = np.exp(np.linspace(np.log(1 + d.low) - 0.05, np.log(1 + d.high) + 0.05, 1501))
    accepted = [r for r in grid if sp.mannwhitneyu(np.asarray(b) / r, a, method="exact").pvalue >= 0.05]
    step = grid[1] / grid[0]
    assert min(accepted) / step <= 1 + d.low <= min(accepted) * step
    assert max(accepted) / step <= 1 + d.high <= max(accepted) * step


def test_too_few_runs_give_an_unbounded_interval() -> None:
    d, p = shift_delta([1, 2, 3], [4, 5, 6])  # the exact test cannot reach p < 0.05 with 3 a side
    assert (d.low, d.high, d.confidence, p) == (-1.0, np.inf, 1.0, pytest.approx(0.1))
    assert format_delta(d, p, 3, True) == "+150.00% [-100.0, +inf] (p=0.100 n=3)"


def test_values_at_or_below_zero_use_the_raw_shift_over_the_baseline_median() -> None:
    d, _ = shift_delta([0.0, 2, 3, 1, 2, 2.5], [4, 5, 6, 0.5, 4.5, 5.5])
    diffs = [b - a for a in [0.0, 2, 3, 1, 2, 2.5] for b in [4, 5, 6, 0.5, 4.5, 5.5]]
    assert d.delta == pytest.approx(np.median(diffs) / 2.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(1, 1e6), min_size=2, max_size=25), st.lists(st.floats(1, 1e6), min_size=2, max_size=25))
def test_batch_p_values_match_scipy(a: list[float], b: list[float]) -> None:
    exact = len(set(a + b)) == len(a + b) and max(len(a), len(b)) <= 20
    ref = sp.mannwhitneyu(b, a, method="exact" if exact else "asymptotic").pvalue
    assert mann_whitney_pvalues(np.asarray(a)[None], np.asarray(b)[None])[0] == pytest.approx(ref, abs=1e-9)


def test_verdicts() -> None:
    slower = DeltaCI(-0.049, -0.061, -0.037)
    assert verdict(slower, 0.002, 10, 10).kind == "slower"
    assert verdict(slower, 0.002, 10, 10, higher_is_better=False).kind == "faster"
    assert verdict(DeltaCI(0.05, 0.03, 0.07), 0.01, 8, 8).kind == "faster"
    assert verdict(DeltaCI(-0.015, -0.019, -0.011), 0.01, 8, 8).kind == "within noise"
    # significant, but the interval reaches into ±2 %: slower, by an amount not shown to exceed the threshold
    assert verdict(DeltaCI(-0.03, -0.05, -0.01), 0.01, 8, 8).kind == "slower?"
    assert verdict(DeltaCI(0.03, 0.01, 0.05), 0.01, 8, 8).kind == "faster?"
    assert verdict(DeltaCI(0.03, 0.01, 0.05), 0.01, 8, 8, higher_is_better=False).kind == "slower?"
    assert verdict(DeltaCI(-0.03, -0.05, -0.01), 0.01, 8, 8).text == "-3.00% [-5.0, -1.0] (p=0.010 n=8)"
    assert verdict(slower, 0.45, 10, 10).kind == "~"
    small = verdict(DeltaCI(0.004, -0.012, 0.015), 0.6, 10, 10)  # shown to be smaller than ±2 %, p aside
    assert small.kind == "within noise" and small.text.startswith("+0.40% [-1.2, +1.5]")
    need = verdict(slower, 0.002, 3, 3)  # 3 + 3 runs: the smallest attainable p is 2 / C(6, 3) = 0.1
    assert need.kind == "need more runs"
    assert need.text == "need >= 4 runs per side (have 3 and 3: smallest attainable p = 0.1 is not below alpha 0.05)"
    floor = verdict(slower, 0.002, 5, 5, Settings(min_runs=6))
    assert floor.kind == "need more runs" and floor.text == "need >= 6 runs per side (have 5 and 5: min_runs is 6)"


@given(st.integers(0, 5), st.integers(0, 20))
def test_too_few_runs_never_get_a_verdict(n_small: int, n_other: int) -> None:
    """Below the campaign's floor (min_runs 6 here), or below what alpha needs (4 + 4 for one comparison; with
    unequal sides the attainable p decides: 2 + 8 runs can reach 2 / C(10, 2) = 0.044)."""
    assert verdict(DeltaCI(-0.5, -0.6, -0.4), 0.0001, n_small, n_other, Settings(min_runs=6)).kind == "need more runs"
    if n_small < 4:
        assert verdict(DeltaCI(-0.5, -0.6, -0.4), 0.0001, n_small, n_small).kind == "need more runs"


def test_benchstat_formatting() -> None:
    assert format_delta(DeltaCI(-0.049, -0.061, -0.037), 0.002, 10, True) == "-4.90% [-6.1, -3.7] (p=0.002 n=10)"
    assert format_delta(DeltaCI(0.001, -0.01, 0.012), 0.45, 10, False) == "~ (p=0.450 n=10)"
    assert format_delta(DeltaCI(0.1, 0.05, 0.15), 0.0001, 12, True).endswith("(p<0.001 n=12)")


def test_the_report_says_when_holm_makes_the_interval_and_the_verdict_differ() -> None:
    judged = verdict(DeltaCI(-0.03, -0.05, -0.01), 0.08, 8, 8, p_raw=0.03)
    assert judged.kind == "~" and "not after Holm's correction" in judged.warnings[0]
    assert verdict(DeltaCI(-0.03, -0.05, -0.01), 0.01, 8, 8, p_raw=0.01).warnings == ()
    assert verdict(DeltaCI(-0.03, -0.05, 0.0), 0.03, 8, 8).warnings == ()  # an end on 0 with ties: open end
    assert "disagree" in verdict(DeltaCI(-0.03, -0.05, 0.01), 0.03, 8, 8).warnings[0]


def test_compare_applies_holm_across_variants() -> None:
    base = A
    out = compare_with_baseline(base, {"same": [x + 0.5 for x in A], "slow": B, "none": []})
    by = {c.variant: c for c in out}
    assert by["slow"].verdict.kind == "slower" and by["slow"].p_adjusted >= by["slow"].p
    assert by["same"].verdict.kind in {"~", "within noise"}
    assert by["none"].verdict.kind == "need more runs" and by["none"].delta is None
    raw = [by["same"].p, by["slow"].p]
    assert [by["same"].p_adjusted, by["slow"].p_adjusted] == pytest.approx(holm(raw))


def test_many_runs_find_the_same_interval_by_bisection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above PAIRWISE_MAX pairs the interval ends come from bisection instead of sorting every pair: same values."""
    import layerbench.analysis.stats as stats

    rng = np.random.default_rng(8)
    base, variant = rng.normal(100, 5, 300), rng.normal(97, 5, 250)
    by_sorting = stats.shift_delta(base, variant)
    monkeypatch.setattr(stats, "PAIRWISE_MAX", 1000)
    by_bisection = stats.shift_delta(base, variant)
    assert by_bisection[0].delta == pytest.approx(by_sorting[0].delta, rel=1e-12)
    assert (by_bisection[0].low, by_bisection[0].high) == pytest.approx((by_sorting[0].low, by_sorting[0].high),
                                                                        rel=1e-12)


def test_a_large_sample_gets_a_t_interval_of_the_mean() -> None:
    values = np.random.default_rng(2).normal(500, 20, 5000)
    s = summarize(values)
    ref = sp.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=sp.sem(values))
    assert (s.ci_low, s.ci_high) == pytest.approx(ref)


def test_an_identical_variant_is_called_different_at_most_alpha_of_the_time() -> None:
    """The shape of the verdicts on real runs (tests/integration/test_adaptive.py: an A/A and a real cost, 6 + 6
    runs at the A/A's first look, Holm over 2 here, ±5 %)
    on 4,000 simulated campaigns with a run-to-run CV of 7 % (what CI machines show): the A/A gets p < alpha in
    at most alpha of them (the exact test's size at 6 + 6 is 38/924 = 0.041; the bound allows three Monte Carlo
    standard errors), as the exact test promises, and a firm slower/faster almost never. That is why the
    integration test, which sees one draw, asserts only the firm verdict: a `faster?` there is the alpha it
    pays by design (1 campaign in 20 or fewer), not a fault."""
    rng = np.random.default_rng(11)
    kinds = []
    for _ in range(4000):
        base, same, slow = rng.normal(720, 50, 6), rng.normal(720, 50, 6), rng.normal(260, 40, 6)
        out = {c.variant: c for c in compare_with_baseline(list(base), {"same": list(same), "slow": list(slow)},
                                                            Settings(threshold=0.05))}
        assert out["slow"].verdict.kind == "slower"
        kinds.append(out["same"].verdict.kind)
    shares = {kind: kinds.count(kind) / len(kinds) for kind in set(kinds)}
    flagged = sum(shares.get(kind, 0.0) for kind in ("slower", "faster", "slower?", "faster?"))
    assert flagged <= 0.05 + 3 * (0.05 * 0.95 / len(kinds)) ** 0.5, shares
    assert shares.get("slower", 0.0) + shares.get("faster", 0.0) <= 0.005, shares
