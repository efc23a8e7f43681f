"""The statistics settings of an analysis and their defaults, in one place: `DEFAULTS` holds every default
number of the statistics with what it means; the campaign file's defaults, the import options, the CLI's help
(`report --alpha ...`), the analysis and the table in docs/statistics.md ("Defaults") all read it from here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

REPORT_FORMATS = ("md", "html")  # written at the end of `run` and `resume`, and by `report`, unless the campaign says
CORRECTIONS = ("point", "sweep")  # the Holm family: the variants of one point, or of a workload's whole sweep
ESTIMATORS = ("paired", "unpaired")


def _doc(default: Any, meaning: str) -> Any:
    """A default with its meaning, which docs/statistics.md and the CLI's help print."""
    return field(default=default, metadata={"doc": meaning})


@dataclass(frozen=True)
class Defaults:
    """Every default of the statistics. A campaign key of the same name overrides noise_threshold, alpha,
    min_runs, seed, correction, estimator and unstable_ratio, and all of these but seed and unstable_ratio a
    `report` option; the others are fixed."""

    noise_threshold: float = _doc(0.02, "the band ±threshold: an interval wholly inside it is `within noise`; "
                                  "`slower` / `faster` need the whole interval beyond it (benchstat's default is "
                                  "5 %; ours is stricter)")
    alpha: float = _doc(0.05, "the significance level of the verdicts (per look, alpha / looks, for adaptive "
                        "repetitions)")
    min_runs: int = _doc(0, "a floor of runs per side for a verdict on top of the runs the test needs to reach "
                         "alpha after Holm (0, shown `none`: that need is the only rule)")
    seed: int = _doc(1, "of the bootstrap resamples; the campaign's `seed` also shuffles its rounds")
    resamples: int = _doc(10_000, "bootstrap resamples of a variant's interval of the mean")
    confidence: float = _doc(0.95, "the level of a variant's interval of the mean")
    correction: str = _doc("point", "the Holm family: the variants of each point (`point`) or every variant and "
                           "thread count of a workload's sweep (`sweep`)")
    estimator: str = _doc("paired", "of a new campaign: each variant paired with the baseline by round where the "
                          "rounds allow it (`paired`), else `unpaired`")
    stored_estimator: str = _doc("unpaired", "of a stored campaign that names none (stored before paired analysis "
                                 "existed): it keeps the estimator it was reported with")
    unstable_ratio: float = _doc(1.5, "a run whose interval TPS swings wider than this (max / min) inside its "
                                 "steady window is flagged")
    cv_warning: float = _doc(0.10, "a variant whose TPS varies this much or more between runs (CV) is warned "
                             "about")
    outlier_mads: float = _doc(3.0, "a first run further than this many MADs from the median of the other runs "
                               "(and than outlier_share) is warned about as a cold-cache outlier")
    outlier_share: float = _doc(0.05, "a first run is an outlier only when it is also further than this share of "
                                "the other runs' median")

    def rows(self) -> list[tuple[str, str, str]]:
        """(name, value, meaning) of every default, in order: the table of docs/statistics.md."""
        return [(f.name, self.shown(f.name), f.metadata["doc"]) for f in fields(self)]

    def shown(self, name: str) -> str:
        """A default as the docs and the help print it: `0.02`, `10,000`, `none` for a min_runs of 0."""
        value = getattr(self, name)
        if name == "min_runs" and value == 0:
            return "none"
        if isinstance(value, int):
            return f"{value:,}"
        return value if isinstance(value, str) else f"{value:g}"


DEFAULTS = Defaults()


@dataclass(frozen=True)
class Settings:
    """The rule a verdict follows: noise threshold, alpha (per look, for adaptive campaigns), the runs per side
    a verdict needs at least (min_runs, 0: only what alpha needs), the bootstrap seed, and the estimator: `paired`
    (by round, where the rounds allow it) or `unpaired`."""

    threshold: float = DEFAULTS.noise_threshold
    alpha: float = DEFAULTS.alpha
    min_runs: int = DEFAULTS.min_runs
    seed: int = DEFAULTS.seed
    estimator: str = DEFAULTS.stored_estimator


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
