"""Simulated campaigns of rounds with drift, analysed paired by round and unpaired: the A/A error rate, the power
and the coverage of each estimator (issue #30), which set the default of `estimator`, and of the candidate paired
rules of issue #43 under this machine's conditions (docs/statistics.md, "Choosing the paired rule").

A campaign is R rounds of a baseline and V variants. Each run is 1000 x (1 + effect of its variant) x the
factor of its round x exp(noise): the round factor, drawn uniformly from [1 - drift, 1] (or log-normal with sd
`round_sd`, as measured on a real campaign), multiplies every variant of a round alike, as a busy neighbour or
hypervisor steal does to runs a few seconds apart; the noise is normal with sd `cv`, or as a `Scenario` says
(Student t tails with 3 degrees of freedom scaled to the same sd, a share of outlier runs at a fraction of their
value, one variant noisier than the others). Every simulated campaign goes through the project's own intervals
(stats.shift_intervals, paired.signed_rank_intervals, paired.t_intervals), Holm's correction across the V
variants and the verdict regions of stats.verdict (`verdict_kinds`, the same words row by row, vectorised).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np

from layerbench.analysis.attainable import gate
from layerbench.analysis.design import balanced_orders
from layerbench.analysis.paired import signed_rank_intervals, t_intervals, verdict_reachable
from layerbench.analysis.stats import Shifts, shift_intervals
from layerbench.statistics_settings import DEFAULTS

ESTIMATORS = ("unpaired", "paired", "auto")  # auto: paired where the pairs can reach alpha after Holm, else unpaired
RULES = ("today", "t-test")  # today: `auto`; t-test: the paired t-test where there are min_pairs, else unpaired
DIFFERENT = {"slower", "slower?", "faster", "faster?"}


@dataclass(frozen=True)
class Outcome:
    """Per simulated campaign: the verdict of each variant (rows x variants) and the first variant's interval."""

    kinds: np.ndarray
    low: np.ndarray
    high: np.ndarray

    def share(self, kinds: set[str], variant: int = 0) -> float:
        return float(np.isin(self.kinds[:, variant], list(kinds)).mean())

    def any_different(self, variants: slice = slice(None)) -> float:
        """The family-wise error of an A/A campaign: some variant (of `variants`) given a verdict of a difference."""
        return float(np.isin(self.kinds[:, variants], list(DIFFERENT)).any(axis=1).mean())

    def all_of(self, kinds: set[str], variants: slice) -> float:
        """The share of campaigns in which every variant of `variants` got one of `kinds`."""
        return float(np.isin(self.kinds[:, variants], list(kinds)).all(axis=1).mean())

    def coverage(self, effect: float) -> float:
        return float(((self.low <= effect) & (effect <= self.high)).mean())

    def width(self) -> float:
        """Median width of the first variant's interval, in points of percent."""
        return float(np.median((self.high - self.low) * 100))


@dataclass(frozen=True)
class Scenario:
    """The conditions of a simulated machine: the sd of the log round factor, the runs' sd (log scale), their
    tails, the share of outlier runs and their factor, and how many times noisier the last variant and the
    baseline are."""

    name: str
    round_sd: float = 0.30
    cv: float = 0.05
    tails: str = "normal"  # or "t3": Student t with 3 degrees of freedom, scaled to sd cv
    outliers: float = 0.0  # the share of runs multiplied by outlier_factor
    outlier_factor: float = 0.7
    noisier: float = 1.0  # the last variant's sd is cv x noisier
    noisier_baseline: float = 1.0  # the baseline's sd is cv x noisier_baseline (one noisy baseline moves every
    # comparison of a campaign together)


# issue #43: this machine's conditions (round drift sd 30 %, runs CV 5-10 %, t3 tails, 10 % outlier runs at 0.7x,
# one variant noisier than the rest), one at a time and all at once
SCENARIOS = (
    Scenario("normal, CV 5 %"),
    Scenario("normal, CV 10 %", cv=0.10),
    Scenario("t3 tails, CV 5 %", tails="t3"),
    Scenario("10 % outliers at 0.7x, CV 5 %", outliers=0.10),
    Scenario("last variant at CV 15 %, others 5 %", noisier=3.0),
    Scenario("all: CV 10 %, t3, outliers, last at 20 %", cv=0.10, tails="t3", outliers=0.10, noisier=2.0),
)


def draw(effects: tuple[float, ...], rounds: int, drift: float, cv: float, campaigns: int,
         rng: np.random.Generator, round_sd: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The baseline (campaigns x rounds) and the variants (variants x campaigns x rounds)."""
    shape = (campaigns, rounds)
    factor = rng.uniform(1 - drift, 1, shape) if round_sd is None else np.exp(rng.normal(0, round_sd, shape))
    base = 1000 * factor * np.exp(rng.normal(0, cv, (campaigns, rounds)))
    variants = np.stack([1000 * (1 + e) * factor * np.exp(rng.normal(0, cv, (campaigns, rounds))) for e in effects])
    return base, variants


def run_noise(scenario: Scenario, sd: float, shape: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    """The log of each run's factor: its noise (normal, or t3 scaled to sd `sd`) and its outliers."""
    noise = rng.normal(0, sd, shape) if scenario.tails == "normal" else sd * rng.standard_t(3, shape) / np.sqrt(3)
    if scenario.outliers:
        noise = noise + np.where(rng.random(shape) < scenario.outliers, np.log(scenario.outlier_factor), 0.0)
    return noise


def draw_scenario(scenario: Scenario, effects: tuple[float, ...], rounds: int, campaigns: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """As `draw`, under a Scenario: the baseline (campaigns x rounds) and the variants (variants x campaigns x
    rounds), the last variant noisier by scenario.noisier."""
    shape = (campaigns, rounds)
    factor = rng.normal(0, scenario.round_sd, shape)
    base = 1000 * np.exp(factor + run_noise(scenario, scenario.cv * scenario.noisier_baseline, shape, rng))
    sds = [scenario.cv * (scenario.noisier if k == len(effects) - 1 else 1.0) for k in range(len(effects))]
    return base, np.stack([1000 * (1 + e) * np.exp(factor + run_noise(scenario, sd, shape, rng))
                           for e, sd in zip(effects, sds, strict=True)])


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p per row (campaigns x comparisons), vectorised."""
    m = p.shape[1]
    order = np.argsort(p, axis=1)
    ranked = np.take_along_axis(p, order, axis=1) * (m - np.arange(m))
    stepped = np.minimum(1.0, np.maximum.accumulate(ranked, axis=1))
    out = np.empty_like(p)
    np.put_along_axis(out, order, stepped, axis=1)
    return out


def verdict_kinds(found: Shifts, p_adjusted: np.ndarray, gated: bool, threshold: float = DEFAULTS.noise_threshold,
                  alpha: float = DEFAULTS.alpha) -> np.ndarray:
    """stats.verdict's word per row (higher is better), vectorised: `gated` when the gate of the runs says
    `need more runs`; then within noise, ~, and the side and size of a significant difference."""
    if gated:
        return np.full(found.p.shape, "need more runs", dtype=object)
    low, high = found.low, found.high
    up = (low > 0) | ((high >= 0) & (found.delta >= 0))
    beyond = np.where(up, low > threshold, high < -threshold)
    word = np.where(up, "faster", "slower").astype(object)
    kinds = np.where(beyond, word, word + "?")
    kinds = np.where(p_adjusted >= alpha, "~", kinds)
    return np.where((-threshold <= low) & (high <= threshold), "within noise", kinds)


def intervals(base: np.ndarray, variant: np.ndarray, estimator: str, alpha: float, variants: int) -> Shifts:
    paired = estimator == "paired" or (estimator == "auto" and verdict_reachable(
        base.shape[1], comparisons=variants, alpha=alpha))
    return signed_rank_intervals(base, variant, alpha) if paired else shift_intervals(base, variant, alpha)


def rule_intervals(base: np.ndarray, variant: np.ndarray, rule: str, alpha: float, variants: int,
                   min_pairs: int) -> tuple[Shifts, bool]:
    """One variant's intervals under a rule of RULES, and whether they are paired."""
    rounds = base.shape[1]
    if rule == "t-test":
        paired = rounds >= min_pairs
        return (t_intervals(base, variant, alpha) if paired else shift_intervals(base, variant, alpha)), paired
    paired = verdict_reachable(rounds, comparisons=variants, alpha=alpha)
    return intervals(base, variant, "auto", alpha, variants), paired


def short(rounds: int, variants: int, alpha: float) -> bool:
    """stats.verdict's gate at `rounds` runs (or pairs) per side: `need more runs` for every comparison."""
    return gate(rounds, rounds, comparisons=variants, alpha=alpha, min_runs=0) is not None


def judged(found: list[Shifts], gated: bool, alpha: float, threshold: float) -> Outcome:
    """The verdicts of the variants of each campaign: Holm across them, then the regions (`need more runs`
    for all when `gated`)."""
    adjusted = holm_rows(np.stack([f.p for f in found], axis=1))
    kinds = np.stack([verdict_kinds(f, adjusted[:, k], gated, threshold, alpha) for k, f in enumerate(found)], axis=1)
    return Outcome(kinds, found[0].low, found[0].high)


def simulate(effects: tuple[float, ...], *, rounds: int, drift: float, estimator: str, cv: float = 0.05,
             campaigns: int = 2000, alpha: float = DEFAULTS.alpha, threshold: float = DEFAULTS.noise_threshold,
             seed: int = 30, round_sd: float | None = None) -> Outcome:
    """`campaigns` campaigns of `rounds` rounds with one variant per effect, analysed with `estimator`."""
    base, variants = draw(effects, rounds, drift, cv, campaigns, np.random.default_rng(seed), round_sd)
    found = [intervals(base, v, estimator, alpha, len(effects)) for v in variants]
    return judged(found, short(rounds, len(effects), alpha), alpha, threshold)


def simulate_rules(scenario: Scenario, effects: tuple[float, ...], *, rounds: int, campaigns: int = 2000,
                   rules: tuple[str, ...] = RULES, min_pairs: int = 2, alpha: float = DEFAULTS.alpha,
                   threshold: float = DEFAULTS.noise_threshold, seed: int = 43) -> dict[str, Outcome]:
    """The same `campaigns` campaigns under `scenario`, analysed by each rule of `rules` (the t-test from
    `min_pairs` pairs on, below them unpaired). The gate of the Mann-Whitney test applies as stats.verdict applies
    it today, at the runs (or pairs) per side, except to the t-test's paired intervals: their rule admitted them."""
    rng, parts = np.random.default_rng(seed), []
    for size in chunks(campaigns):  # at most CHUNK campaigns in memory at once (the Walsh averages grow as n^2)
        base, variants = draw_scenario(scenario, effects, rounds, size, rng)
        part = {}
        for rule in rules:
            found = [rule_intervals(base, v, rule, alpha, len(effects), min_pairs) for v in variants]
            gated = short(rounds, len(effects), alpha) and not (rule == "t-test" and found[0][1])
            part[rule] = judged([f for f, _ in found], gated, alpha, threshold)
        parts.append(part)
    return {rule: Outcome(*(np.concatenate([getattr(part[rule], name) for part in parts])
                            for name in ("kinds", "low", "high"))) for rule in rules}


CHUNK = 5000


def chunks(campaigns: int) -> list[int]:
    return [min(CHUNK, campaigns - start) for start in range(0, campaigns, CHUNK)]


def fewest_rounds(rule: str, scenario: Scenario, effects: tuple[float, ...], *, target: float = 0.8,
                  campaigns: int = 2000, cap: int = 40, seed: int = 43, alpha: float = DEFAULTS.alpha) -> int | None:
    """The fewest rounds at which the first variant gets a firm `slower` in at least `target` of `campaigns`
    campaigns under `rule` (the t-test without a floor of pairs), or None up to `cap` rounds. A scan at a tenth of
    the campaigns finds where to look; every answer is then confirmed at full size: the share reaches `target`
    there and not one round earlier."""
    found: dict[tuple[int, int], float] = {}

    def share(rounds: int, size: int) -> float:
        if (rounds, size) not in found:
            outcome = simulate_rules(scenario, effects, rounds=rounds, campaigns=size, rules=(rule,), alpha=alpha,
                                     seed=seed * 1000 + rounds)[rule]
            found[(rounds, size)] = outcome.share({"slower"})
        return found[(rounds, size)]

    scan = max(200, campaigns // 10)
    rounds = next((n for n in range(2, cap + 1) if share(n, scan) >= target), cap)
    while share(rounds, campaigns) < target:
        if rounds == cap:
            return None
        rounds += 1
    while rounds > 2 and share(rounds - 1, campaigns) >= target:
        rounds -= 1
    return rounds


def shuffled_orders(names: list[str], rounds: int, rng: random.Random) -> list[list[str]]:
    """The schedule's orders before balanced blocks: an independent shuffle per round."""
    orders = []
    for _ in range(rounds):
        order = names[:]
        rng.shuffle(order)
        orders.append(order)
    return orders


ORDERS = {"shuffled": shuffled_orders, "balanced": balanced_orders}


def place_offsets(place_effects: tuple[float, ...], rounds: int, campaigns: int, orders: str,
                  seed: int) -> np.ndarray:
    """The log factor of each run's place in its round ((variants + 1) x campaigns x rounds, the baseline first):
    place i multiplies its run by 1 + place_effects[i]; each campaign's orders come from ORDERS[orders], seeded
    per campaign as a campaign's `seed` seeds its schedule."""
    names = [str(v) for v in range(len(place_effects))]
    logs = np.log1p(np.asarray(place_effects))
    out = np.empty((len(names), campaigns, rounds))
    for c in range(campaigns):
        for r, order in enumerate(ORDERS[orders](names, rounds, random.Random(seed * 100_003 + c))):
            for place, name in enumerate(order):
                out[int(name), c, r] = logs[place]
    return out


def simulate_places(scenario: Scenario, place_effects: tuple[float, ...], *, rounds: int, orders: str,
                    campaigns: int = 2000, alpha: float = DEFAULTS.alpha, threshold: float = DEFAULTS.noise_threshold,
                    seed: int = 47) -> Outcome:
    """A/A campaigns (len(place_effects) identical variants, the first the baseline) in which a run's place in its
    round changes its result by place_effects[place], under `scenario`, analysed by the paired t-test with Holm:
    what a place effect does to the A/A rate with each way of ordering rounds."""
    k = len(place_effects) - 1
    base, variants = draw_scenario(scenario, (0.0,) * k, rounds, campaigns, np.random.default_rng(seed))
    offsets = np.exp(place_offsets(place_effects, rounds, campaigns, orders, seed))
    base, variants = base * offsets[0], variants * offsets[1:]
    found = [t_intervals(base, v, alpha) for v in variants]
    return judged(found, False, alpha, threshold)
