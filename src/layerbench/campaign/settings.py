"""The statistics settings of an analysis and their defaults, in one place: the campaign file's defaults, the
import options, `report --alpha ...`, `compare` and the analysis all read them from here (docs/statistics.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

NOISE_THRESHOLD = 0.02  # a delta inside +-2 % is "within noise" (benchstat's default is 5 %, ours is stricter)
ALPHA = 0.05  # significance level of the verdicts
MIN_RUNS = 0  # no floor of the user's on top of what alpha needs (0: none)
SEED = 1  # of the bootstrap resamples
REPORT_FORMATS = ("md", "html")  # written at the end of `run` and `resume`, and by `report`, unless the campaign says
CORRECTION = "point"  # the Holm family: the variants of one point ("point") or of a workload's whole sweep ("sweep")
CORRECTIONS = ("point", "sweep")
UNSTABLE_RATIO = 1.5  # interval TPS swinging wider than this inside a run's steady window flags the run
ESTIMATOR = "paired"  # new campaigns: each variant paired with the baseline by round (analysis/paired.py)
STORED_ESTIMATOR = "unpaired"  # a stored campaign that names none was analysed unpaired, and stays so
ESTIMATORS = ("paired", "unpaired")


@dataclass(frozen=True)
class Settings:
    """The rule a verdict follows: noise threshold, alpha (per look, for adaptive campaigns), the runs per side
    a verdict needs at least (0: only what alpha needs), the bootstrap seed, and the estimator: `paired` (by
    round, where the rounds allow it) or `unpaired`."""

    threshold: float = NOISE_THRESHOLD
    alpha: float = ALPHA
    min_runs: int = MIN_RUNS
    seed: int = SEED
    estimator: str = STORED_ESTIMATOR


@dataclass(frozen=True)
class Overrides:
    """Statistics settings given on a command line (`import`, `report --alpha ...`): None keeps the campaign's."""

    threshold: float | None = None
    alpha: float | None = None
    min_runs: int | None = None
    correction: str | None = None  # the Holm family: "point" or "sweep"
    estimator: str | None = None  # "paired" (by round, where the rounds allow it) or "unpaired"

    @classmethod
    def from_campaign_keys(cls, given: Mapping[str, float | int | str]) -> Overrides:
        """From the keys of a campaign file (noise_threshold, alpha, min_runs, correction, estimator); others are
        not statistics."""
        threshold, alpha, floor, family, estimator = (given.get(k) for k in (
            "noise_threshold", "alpha", "min_runs", "correction", "estimator"))
        return cls(None if threshold is None else float(threshold), None if alpha is None else float(alpha),
                   None if floor is None else int(floor), None if family is None else str(family),
                   None if estimator is None else str(estimator))

    def campaign_keys(self) -> dict[str, float | int | str]:
        """As the keys of a campaign file (noise_threshold, alpha, min_runs, correction, estimator), only those
        given."""
        given = {"alpha": self.alpha, "min_runs": self.min_runs, "noise_threshold": self.threshold,
                 "correction": self.correction, "estimator": self.estimator}
        return {k: v for k, v in given.items() if v is not None}
