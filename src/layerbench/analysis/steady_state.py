"""Steady state of one run's interval series: where the warm-up transient ends, and whether it swings.

Truncation by MSER-5 (the Marginal Standard Error Rule on batch means of 5 observations): choose the cut d
that minimises MSER(d) = sum_{i>=d} (Y_i - mean(Y_d..))^2 / (k - d)^2 over the k batch means Y. The search
leaves out the last third of the batches: there a few trailing batches give a near-zero statistic by chance,
which flagged about a third of pure-noise runs; without them it is a few percent, and a series that keeps
ramping is still caught. A cut past half the series means the run never settled ("no steady state").
References: K. P. White, "An effective
truncation heuristic for bias reduction in simulation output", Simulation 69(6), 1997; White, Cobb & Spratt,
"A comparison of five steady-state truncation heuristics for simulation", WSC 2000.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BATCH = 5
MIN_BATCHES_LEFT = 2
IGNORE_END = 1 / 3


@dataclass(frozen=True)
class SteadyState:
    cut: int  # intervals dropped from the start of the series
    n: int  # intervals in the series
    steady: bool  # False when the cut lies past half of the series
    warnings: tuple[str, ...] = ()

    @property
    def kept(self) -> int:
        return self.n - self.cut


def batch_means(series: Sequence[float], batch: int = BATCH) -> np.ndarray:
    k = len(series) // batch
    return np.asarray(series[: k * batch], dtype=float).reshape(k, batch).mean(axis=1)


def mser_statistics(means: np.ndarray, ignore_end: float = IGNORE_END) -> np.ndarray:
    """MSER(d) for the candidate cuts d = 0 .. (the first 1 - ignore_end of the batches)."""
    k = len(means)
    last = min(k - MIN_BATCHES_LEFT, max(1, int(k * (1 - ignore_end))))
    out = []
    for d in range(last + 1):
        tail = means[d:]
        out.append(float(((tail - tail.mean()) ** 2).sum()) / (k - d) ** 2)
    return np.asarray(out)


def mser5(series: Sequence[float], batch: int = BATCH) -> SteadyState:
    """The MSER-5 truncation point of a series of interval values (e.g. TPS per second)."""
    n = len(series)
    if n // batch < MIN_BATCHES_LEFT + 1:
        return SteadyState(0, n, True, (f"{n} intervals are too few for MSER-{batch}; nothing was cut",))
    stats = mser_statistics(batch_means(series, batch))
    d = int(np.argmin(stats))  # the first minimum: ties (a constant series) keep the most data
    cut = d * batch
    if cut > n / 2:
        return SteadyState(cut, n, False, (f"no steady state: MSER-{batch} cut {cut} of {n} intervals",))
    return SteadyState(cut, n, True)


def swing_ratio(series: Sequence[float]) -> float:
    """Largest over smallest interval value: how far the throughput swings inside a run."""
    if not series:
        return 1.0
    low, high = min(series), max(series)
    return math.inf if low <= 0 else high / low


def is_unstable(series: Sequence[float], max_ratio: float = 1.5) -> bool:
    return swing_ratio(series) > max_ratio
