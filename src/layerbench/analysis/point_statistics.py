"""The statistics of one (workload, threads) point: a summary per variant and metric, each variant's comparison
with the baseline (Holm-corrected across the variants of the point, or of a whole sweep; paired by round where the
campaign asks for it and the rounds allow it, analysis/paired.py), and the warnings the numbers deserve (a CV of
DEFAULTS.cv_warning or more, a first run that is an outlier)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from layerbench.analysis.paired import RoundValues, paired_tests
from layerbench.analysis.stats import Comparison, Summary, compare_with_baseline, summarize
from layerbench.statistics_settings import DEFAULTS, Settings


def summaries(values_by_variant: dict[str, list[float]], seed: int) -> dict[str, Summary]:
    return {name: summarize(values, seed=seed) for name, values in values_by_variant.items() if values}


def comparisons(baseline: str, values_by_variant: dict[str, list[float]], higher_is_better: bool,
                settings: Settings, family: Sequence[float] = (),
                by_round: dict[str, RoundValues] | None = None) -> dict[str, Comparison]:
    """Each variant against the baseline; `family`: the raw p of other comparisons Holm corrects with these;
    `by_round`: the same values with their rounds, when they may be paired (estimator paired, rounds that are
    blocks): a variant whose pairs cannot reach alpha after Holm over the whole family is compared unpaired."""
    base = values_by_variant.get(baseline, [])
    others = {name: values for name, values in values_by_variant.items() if name != baseline}
    if not base or not others:
        return {}
    paired = paired_tests(baseline, by_round, settings.alpha, len(family)) if by_round else {}
    found = compare_with_baseline(base, others, settings, higher_is_better=higher_is_better, paired=paired,
                                  family=family)
    return {c.variant: c for c in found}


def first_run_outlier(values: Sequence[float]) -> bool:
    """The first run differs from the median of the rest by more than DEFAULTS.outlier_mads MADs and more than
    DEFAULTS.outlier_share of that median (a cold-cache run)."""
    if len(values) < 4:
        return False
    rest = list(values[1:])
    middle = statistics.median(rest)
    mad = statistics.median(abs(v - middle) for v in rest)
    return abs(values[0] - middle) > max(DEFAULTS.outlier_mads * mad, DEFAULTS.outlier_share * abs(middle))


def variant_warnings(where: str, name: str, values: list[float], summary: Summary | None) -> list[str]:
    out = []
    if summary is not None and summary.n > 1 and summary.cv >= DEFAULTS.cv_warning:
        out.append(f"{where}: `{name}` TPS varies a lot between runs (CV {summary.cv * 100:.0f} %)")
    if first_run_outlier(values):
        out.append(f"{where}: `{name}`'s first run is an outlier ({values[0]:,.1f} TPS vs a median of "
                   f"{statistics.median(values[1:]):,.1f} for the rest)")
    return out
