"""Calibration of the verdicts by seeded simulation (issue #23): false `slower`/`faster` with no real difference,
`within noise` wrongly given for a real effect beyond the threshold, and the coverage of the delta interval, for
normal, skewed (lognormal) and outlier-contaminated runs. Campaigns are simulated in batches through the same
`shift_intervals` and `verdict` that `compare_with_baseline` uses; bench/verdict_calibration.py prints the full
tables."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from layerbench.analysis.stats import DeltaCI, compare_with_baseline, exact_cut, shift_intervals, verdict
from layerbench.statistics_settings import Settings

ALPHA, THRESHOLD, CAMPAIGNS = 0.05, 0.02, 4000


def normal(cv: float) -> Callable[[np.random.Generator, tuple[int, int]], np.ndarray]:
    return lambda rng, shape: 500 * rng.normal(1.0, cv, shape)


def lognormal(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return 500 * rng.lognormal(0.0, 0.25, shape)


def contaminated(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return normal(0.05)(rng, shape) * np.where(rng.random(shape) < 0.1, 0.7, 1.0)


DRAWS = {"normal": normal(0.05), "lognormal": lognormal, "contaminated": contaminated}


def simulate(draw: Callable, n: int, effect: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """CAMPAIGNS campaigns of n runs a side; the variant is the baseline's distribution scaled by 1 + effect."""
    rng = np.random.default_rng(seed)
    return draw(rng, (CAMPAIGNS, n)), (1 + effect) * draw(rng, (CAMPAIGNS, n))


def verdicts(draw: Callable, n: int, effect: float, seed: int) -> list[str]:
    found = shift_intervals(*simulate(draw, n, effect, seed), alpha=ALPHA)
    return [verdict(DeltaCI(d, lo, hi), p, n, n, Settings(THRESHOLD, ALPHA)).kind
            for d, lo, hi, p in zip(found.delta, found.low, found.high, found.p, strict=True)]


def tolerance(rate: float) -> float:
    """Two standard errors of a simulated rate near `rate` over CAMPAIGNS campaigns."""
    return 2 * (rate * (1 - rate) / CAMPAIGNS) ** 0.5


@pytest.mark.parametrize("n", [6, 10, 20])
def test_the_exact_test_never_exceeds_alpha(n: int) -> None:
    _, confidence = exact_cut(n, n, ALPHA)
    assert 1 - confidence <= ALPHA


@pytest.mark.parametrize("name", list(DRAWS))
@pytest.mark.parametrize("n", [6, 10, 20])
def test_no_real_difference_is_called_slower_or_faster_at_most_alpha_of_the_time(name: str, n: int) -> None:
    kinds = verdicts(DRAWS[name], n, 0.0, seed=100 + n)
    false = sum(k.rstrip("?") in {"slower", "faster"} for k in kinds) / len(kinds)
    assert false <= ALPHA + tolerance(ALPHA), f"{name} n={n}: {false:.3f}"


@pytest.mark.parametrize("effect", [-0.025, 0.025, -0.03, -0.10])
@pytest.mark.parametrize("n", [6, 10, 20])
def test_a_real_effect_beyond_the_threshold_is_not_within_noise(effect: float, n: int) -> None:
    """CV 1 %, so that intervals are narrow enough for `within noise` to be given at all."""
    kinds = verdicts(normal(0.01), n, effect, seed=200 + n)
    wrong = kinds.count("within noise") / len(kinds)
    assert wrong <= ALPHA, f"effect {effect} n={n}: {wrong:.3f}"


def test_a_tiny_real_effect_is_shown_within_noise_with_enough_runs() -> None:
    kinds = verdicts(normal(0.01), 20, -0.005, seed=7)
    assert kinds.count("within noise") / len(kinds) > 0.9


@pytest.mark.parametrize("name", list(DRAWS))
@pytest.mark.parametrize("n", [6, 10, 20])
def test_the_interval_covers_the_true_effect_at_least_94_percent(name: str, n: int) -> None:
    base, variant = simulate(DRAWS[name], n, -0.05, seed=300 + n)
    found = shift_intervals(base, variant, alpha=ALPHA)
    covered = float(np.mean((found.low <= -0.05) & (found.high >= -0.05)))
    assert covered >= 0.94, f"{name} n={n}: {covered:.3f}"


@pytest.mark.parametrize("n", [4, 6, 10, 25])
def test_the_interval_excludes_zero_exactly_when_p_is_below_alpha(n: int) -> None:
    found = shift_intervals(*simulate(normal(0.05), n, -0.03, seed=400 + n), alpha=ALPHA)
    assert np.array_equal((found.low > 0) | (found.high < 0), found.p < ALPHA)


def test_with_tied_values_zero_is_never_strictly_inside_a_significant_interval() -> None:
    base, variant = simulate(normal(0.01), 8, -0.01, seed=5)
    found = shift_intervals(np.round(base), np.round(variant), alpha=ALPHA)  # TPS rounded to whole numbers
    inside, excluded = (found.low < 0) & (found.high > 0), (found.low > 0) | (found.high < 0)
    significant = found.p < ALPHA
    assert significant.sum() > 100 and (found.low == 0).sum() + (found.high == 0).sum() > 0  # the case arises
    assert not (inside & significant).any() and not (excluded & ~significant).any()


def test_compare_gives_what_the_batch_gives() -> None:
    base, variant = simulate(lognormal, 7, -0.05, seed=9)
    batch = shift_intervals(base[:20], variant[:20], alpha=ALPHA)
    for i in range(20):
        one = compare_with_baseline(base[i], {"v": variant[i]})[0]
        assert one.delta is not None and one.p is not None
        assert (one.delta.low, one.delta.high, one.p) == pytest.approx((batch.low[i], batch.high[i], batch.p[i]))
