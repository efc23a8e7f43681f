from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from layerbench.analysis.steady_state import is_unstable, mser5, swing_ratio


def test_known_warmup_is_cut() -> None:
    rng = np.random.default_rng(3)
    ramp = list(np.linspace(10, 100, 20))
    steady = list(100 + rng.normal(0, 2, 100))
    result = mser5(ramp + steady)
    assert result.steady and 15 <= result.cut <= 30 and result.n == 120


def test_a_series_that_never_settles_is_flagged() -> None:
    result = mser5(list(np.linspace(10, 500, 60)))
    assert not result.steady and result.cut > 30 and "no steady state" in result.warnings[0]


def test_constant_series_keeps_everything() -> None:
    assert mser5([100.0] * 40).cut == 0


def test_short_series_is_left_alone_with_a_warning() -> None:
    result = mser5([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0])
    assert result.cut == 0 and result.steady and "too few" in result.warnings[0]


@given(st.lists(st.floats(0, 1e5, allow_nan=False), max_size=300))
def test_cut_is_within_the_series(series: list[float]) -> None:
    result = mser5(series)
    assert 0 <= result.cut <= len(series) and result.kept >= 0
    assert result.steady == (result.cut <= len(series) / 2)


def test_swing() -> None:
    assert swing_ratio([10550, 20196, 15000]) > 1.9 and is_unstable([10550, 20196])
    assert not is_unstable([500, 520, 480]) and swing_ratio([0, 5]) == float("inf")


def test_pure_noise_is_rarely_flagged() -> None:
    """Without the last third of batches in the search, noise alone seldom looks like 'no steady state'."""
    flagged = sum(not mser5(list(100 + np.random.default_rng(seed).normal(0, 5, 120))).steady for seed in range(200))
    assert flagged / 200 <= 0.12
