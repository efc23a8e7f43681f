"""The statistics options of `report` and `import` (--alpha, --min-runs, --threshold, --correction, --estimator):
checked here, on the command line's side, into the Overrides the analysis takes; one-line errors name the flag."""

from __future__ import annotations

from layerbench.errors import BadInput, shown
from layerbench.statistics_settings import CORRECTIONS, ESTIMATORS, Overrides


def statistics_options(alpha: float | None, min_runs: int | None, threshold: float | None,
                       correction: str | None = None, estimator: str | None = None) -> Overrides:
    """--alpha, --min-runs, --threshold, --correction, --estimator, checked; one-line errors for values out of
    range."""
    if estimator is not None and estimator not in ESTIMATORS:
        raise BadInput(f"--estimator: {shown(estimator)} is not an estimator; use paired (by round, where the rounds "
                       "allow it) or unpaired")
    if correction is not None and correction not in CORRECTIONS:
        raise BadInput(f"--correction: {shown(correction)} is not a family of comparisons; use point (the variants "
                       "of each point) or sweep (every thread count of a workload together)")
    if alpha is not None and not 0 < alpha < 1:
        raise BadInput(f"--alpha: {alpha:g} is not a significance level; use a number between 0 and 1, like 0.05")
    if min_runs is not None and min_runs < 2:
        raise BadInput(f"--min-runs: {min_runs} runs cannot carry a verdict; use 2 or more, or leave it out")
    if threshold is not None and not 0 <= threshold < 1:
        raise BadInput(f"--threshold: {threshold:g} is not a noise threshold; use a fraction like 0.02 (2 %)")
    return Overrides(threshold, alpha, min_runs, correction, estimator)
