"""Adaptive repetitions: when to stop adding rounds, with a controlled error rate.

The method is a group-sequential design with a Bonferroni split of alpha over the planned looks (the simplest
alpha-spending function: an equal share per look; Jennison & Turnbull, "Group Sequential Methods with
Applications to Clinical Trials", 2000, ch. 7; Dmitrienko et al., "Multiple Testing Problems in Pharmaceutical
Statistics", 2009). An adaptive campaign looks at its data after every round from `min` to `max`, so it plans
K = max - min + 1 looks; each look tests and builds its interval at level alpha / K. By the union bound the
chance that any look of an A/A comparison shows a difference is at most K * alpha / K = alpha, whatever the
correlation between looks and whatever the distribution of the runs (the Mann-Whitney test and its
Hodges-Lehmann interval are exact and distribution-free; the paired t-test of a campaign paired by round is exact
for normal log ratios and conservative under the heavy tails simulated in docs/statistics.md). Stopping early, or at
a budget, only spends less.

A comparison is decided when its interval lies wholly beyond the noise threshold (`slower` / `faster`) or
wholly inside it (`within noise`); the campaign stops when every TPS comparison of every point is decided.
`simulate_rounds` replays the rule on thousands of synthetic campaigns at once (tests/unit and bench/), with the
test in force at each look: the paired t-test from its floor of pairs on, as a campaign paired by round decides
(`estimator="paired"`, the default), or Mann-Whitney (`"unpaired"`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layerbench.analysis.attainable import T_MIN_PAIRS
from layerbench.analysis.paired import t_intervals
from layerbench.analysis.stats import Shifts, shift_intervals
from layerbench.records import AdaptiveRepetitions
from layerbench.statistics_settings import DEFAULTS

DECIDED = ("slower", "faster", "within noise")


def looks(rounds_min: int, rounds_max: int) -> int:
    """The planned looks of an adaptive campaign (records/campaign.py owns the rule)."""
    return AdaptiveRepetitions(rounds_min, rounds_max).looks


@dataclass(frozen=True)
class Decision:
    where: str  # "workload / N threads"
    variant: str
    kind: str  # the TPS verdict word at the last look

    @property
    def decided(self) -> bool:
        return self.kind in DECIDED


@dataclass(frozen=True)
class AdaptiveState:
    rounds: int  # complete rounds stored
    rounds_min: int
    rounds_max: int
    budget: str | None
    alpha_per_look: float
    decisions: tuple[Decision, ...]
    reason: str  # "all decided" | "max rounds" | "budget" | "not finished"

    @property
    def all_decided(self) -> bool:
        return bool(self.decisions) and all(d.decided for d in self.decisions)


def stop_reason(all_decided: bool, rounds: int, rounds_min: int, rounds_max: int, over_budget: bool) -> str | None:
    """Why an adaptive campaign stops after `rounds` complete rounds, or None to run another round."""
    if rounds >= rounds_max:
        return "all decided" if all_decided else "max rounds"
    if rounds < rounds_min:
        return None
    if all_decided:
        return "all decided"
    return "budget" if over_budget else None


def over_budget(budget_seconds: float | None, elapsed: float, rounds: int) -> bool:
    """True when another round of the mean length so far would end past the budget."""
    if budget_seconds is None or rounds < 1:
        return False
    return elapsed + elapsed / rounds > budget_seconds


# --- simulation of the rule (vectorised: one row per simulated campaign) ---------------------------------------


@dataclass(frozen=True)
class Simulated:
    effect: float
    rounds: np.ndarray  # rounds used per campaign
    kinds: np.ndarray  # final verdict per campaign: "slower" | "faster" | "within noise" | "undecided"
    ever_rejected: np.ndarray  # the test rejected 0 at some look (the stronger error for an A/A campaign)

    def share(self, kind: str) -> float:
        return float((self.kinds == kind).mean())


def classify(low: np.ndarray, high: np.ndarray, p: np.ndarray, alpha: float, threshold: float) -> np.ndarray:
    """The decided verdicts of stats.verdict, per row (higher is better), else 'undecided'."""
    inside = (low >= -threshold) & (high <= threshold)
    out = np.full(low.shape, "undecided", dtype=object)
    out[(p < alpha) & (low > threshold)] = "faster"
    out[(p < alpha) & (high < -threshold)] = "slower"
    out[inside] = "within noise"
    return out


def simulate_rounds(effect: float, *, campaigns: int = 2000, cv: float = 0.05, rounds_min: int = 4,
                    rounds_max: int = 20, alpha: float = DEFAULTS.alpha, threshold: float = DEFAULTS.noise_threshold,
                    seed: int = DEFAULTS.seed, estimator: str = "paired", round_sd: float = 0.0) -> Simulated:
    """Campaigns of one baseline and one variant with log-normal runs (sd `cv`) whose true ratio is 1 + effect,
    each round's runs multiplied alike by a log-normal round factor (sd `round_sd`), stopped by the rule above with
    `estimator`'s test. Each look uses only the rounds so far, as a real campaign does."""
    rng = np.random.Generator(np.random.PCG64(seed))
    base = 1000 * np.exp(rng.normal(0, cv, (campaigns, rounds_max)))
    variant = 1000 * (1 + effect) * np.exp(rng.normal(0, cv, (campaigns, rounds_max)))
    if round_sd:
        factor = np.exp(rng.normal(0, round_sd, (campaigns, rounds_max)))
        base, variant = base * factor, variant * factor
    per_look = alpha / looks(rounds_min, rounds_max)
    kinds = np.full(campaigns, "undecided", dtype=object)
    rounds = np.full(campaigns, rounds_max)
    rejected = np.zeros(campaigns, dtype=bool)
    open_ = np.ones(campaigns, dtype=bool)
    for n in range(rounds_min, rounds_max + 1):
        rows = np.flatnonzero(open_)
        if rows.size == 0:
            break
        found = look(base[rows, :n], variant[rows, :n], per_look, estimator)
        rejected[rows] |= found.p < per_look
        now = classify(found.low, found.high, found.p, per_look, threshold)
        done = rows[now != "undecided"]
        kinds[done], rounds[done] = now[now != "undecided"], n
        open_[done] = False
    return Simulated(effect, rounds, kinds, rejected)


def look(base: np.ndarray, variant: np.ndarray, alpha: float, estimator: str) -> Shifts:
    """One look's intervals: the paired t-test from T_MIN_PAIRS rounds on (estimator "paired"), else Mann-Whitney."""
    if estimator == "paired" and base.shape[1] >= T_MIN_PAIRS:
        return t_intervals(base, variant, alpha)
    return shift_intervals(base, variant, alpha)


REASONS = {
    "all decided": "every comparison was decided",
    "max rounds": "it reached max rounds with comparisons still open",
    "budget": "another round would have passed the time budget, with comparisons still open",
    "not finished": "the campaign has not finished",
}


def headline(state: AdaptiveState) -> str:
    """One sentence for every report: how many rounds, why they stopped, and the test level used."""
    budget = f", budget {state.budget}" if state.budget else ""
    return (f"Adaptive repetitions (min {state.rounds_min}, max {state.rounds_max}{budget}): stopped after "
            f"{state.rounds} rounds because {REASONS[state.reason]}. Each look tests at alpha / "
            f"{looks(state.rounds_min, state.rounds_max)} = {state.alpha_per_look:.4g} (a Bonferroni split over the "
            "planned looks), so stopping early does not raise the error rate; intervals are at that level.")


def decision_rows(state: AdaptiveState) -> list[list[str]]:
    """Point, variant, TPS verdict at the last look, decided or still open."""
    return [[d.where, d.variant, d.kind, "decided" if d.decided else f"open after {state.rounds} rounds"]
            for d in state.decisions]
