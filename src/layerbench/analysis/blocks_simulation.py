"""Simulated campaigns of rounds with drift, analysed paired by round and unpaired (issue #30): the A/A error
rate, the power and the coverage of each estimator, which set the default of `estimator` (docs/statistics.md).

A campaign is R rounds of a baseline and V variants. Each run is 1000 x (1 + effect of its variant) x the
factor of its round x exp(N(0, cv)): the round factor, drawn uniformly from [1 - drift, 1] (or log-normal with
sd `round_sd`, as measured on a real campaign), multiplies every variant of a round alike, as a busy neighbour
or hypervisor steal does to runs a few seconds apart. Every
simulated campaign goes through the project's own intervals (stats.shift_intervals, paired.signed_rank_intervals),
Holm's correction across the V variants and stats.verdict, as a report does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layerbench.analysis.paired import signed_rank_intervals, verdict_reachable
from layerbench.analysis.stats import DeltaCI, Shifts, shift_intervals, verdict
from layerbench.statistics_settings import DEFAULTS, Settings

ESTIMATORS = ("unpaired", "paired", "auto")  # auto: paired where the pairs can reach alpha after Holm, else unpaired
DIFFERENT = {"slower", "slower?", "faster", "faster?"}


@dataclass(frozen=True)
class Outcome:
    """Per simulated campaign: the verdict of each variant (rows x variants) and the first variant's interval."""

    kinds: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def share(self, kinds: set[str], variant: int = 0) -> float:
        return float(np.isin(self.kinds[:, variant], list(kinds)).mean())

    def any_different(self) -> float:
        """The family-wise error of an A/A campaign: some variant given a verdict of a difference."""
        return float(np.isin(self.kinds, list(DIFFERENT)).any(axis=1).mean())

    def coverage(self, effect: float) -> float:
        return float(((self.low <= effect) & (effect <= self.high)).mean())

    def width(self) -> float:
        """Median width of the first variant's interval, in points of percent."""
        return float(np.median((self.high - self.low) * 100))


def draw(effects: tuple[float, ...], rounds: int, drift: float, cv: float, campaigns: int,
         rng: np.random.Generator, round_sd: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The baseline (campaigns x rounds) and the variants (variants x campaigns x rounds)."""
    shape = (campaigns, rounds)
    factor = rng.uniform(1 - drift, 1, shape) if round_sd is None else np.exp(rng.normal(0, round_sd, shape))
    base = 1000 * factor * np.exp(rng.normal(0, cv, (campaigns, rounds)))
    variants = np.stack([1000 * (1 + e) * factor * np.exp(rng.normal(0, cv, (campaigns, rounds))) for e in effects])
    return base, variants


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p per row (campaigns x comparisons), vectorised."""
    m = p.shape[1]
    order = np.argsort(p, axis=1)
    ranked = np.take_along_axis(p, order, axis=1) * (m - np.arange(m))
    stepped = np.minimum(1.0, np.maximum.accumulate(ranked, axis=1))
    out = np.empty_like(p)
    np.put_along_axis(out, order, stepped, axis=1)
    return out


def intervals(base: np.ndarray, variant: np.ndarray, estimator: str, alpha: float, variants: int) -> Shifts:
    paired = estimator == "paired" or (estimator == "auto" and verdict_reachable(
        base.shape[1], comparisons=variants, alpha=alpha))
    return signed_rank_intervals(base, variant, alpha) if paired else shift_intervals(base, variant, alpha)


def simulate(effects: tuple[float, ...], *, rounds: int, drift: float, estimator: str, cv: float = 0.05,
             campaigns: int = 2000, alpha: float = DEFAULTS.alpha, threshold: float = DEFAULTS.noise_threshold,
             seed: int = 30, round_sd: float | None = None) -> Outcome:
    """`campaigns` campaigns of `rounds` rounds with one variant per effect, analysed with `estimator`."""
    base, variants = draw(effects, rounds, drift, cv, campaigns, np.random.default_rng(seed), round_sd)
    found = [intervals(base, v, estimator, alpha, len(effects)) for v in variants]
    adjusted = holm_rows(np.stack([f.p for f in found], axis=1))
    rule = Settings(threshold, alpha)
    kinds = np.array([[verdict(DeltaCI(f.delta[row], f.low[row], f.high[row]), adjusted[row, k], rounds, rounds,
                               rule, comparisons=len(effects)).kind
                       for k, f in enumerate(found)] for row in range(campaigns)])
    return Outcome(kinds, found[0].low, found[0].high)
