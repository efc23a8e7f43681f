"""When can the data support a verdict at all: the smallest p-value the two-sided Mann-Whitney U test can
produce at given sample sizes, compared with alpha after the Holm correction, and the floor of pairs of the paired
t-test (analysis/paired.py); `rounds_needed` is the one rule of both that `validate` and the report state.

With n1 and n2 runs and no ties, the most extreme arrangement (every run of one side beyond every run of the
other) has the exact two-sided p = 2 / C(n1 + n2, n1) (Mann & Whitney, Ann. Math. Statist. 18, 1947); no data
can do better. Holm's procedure (Scand. J. Statist. 6, 1979) multiplies the smallest of m p-values by m, so a
verdict is reachable only when m * 2 / C(n1 + n2, n1) < alpha. Below that, the runs are shown with their
evidence and "need more runs" says how many would do; `min_runs` stays as an optional floor of the user's
(0: none, the default: DEFAULTS.min_runs).

The paired t-test on the per-round log ratios has no such limit: its smallest p is 0 at any n >= 2 pairs, so
alpha, Holm's family and an adaptive campaign's looks ask for no rounds at all. Its floor is T_MIN_PAIRS, set by
the simulation of docs/statistics.md ("Choosing the paired rule"): no scenario reached 80 % firm verdicts in
fewer rounds, and fewer pairs would rest a verdict on a spread with one degree of freedom.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

LARGEST_N = 1000
T_MIN_PAIRS = 3  # the paired t-test's floor of pairs (docs/statistics.md, "Choosing the paired rule")


def smallest_p(n1: int, n2: int) -> float:
    """The smallest two-sided exact Mann-Whitney p-value at these sample sizes (1.0 when a side is empty)."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2 / comb(n1 + n2, n1))


def verdict_possible(n1: int, n2: int, *, comparisons: int, alpha: float) -> bool:
    return max(1, comparisons) * smallest_p(n1, n2) < alpha


def runs_needed(*, comparisons: int, alpha: float) -> int:
    """The smallest n per side (equal sides) at which a verdict can be reached."""
    return next(n for n in range(2, LARGEST_N) if verdict_possible(n, n, comparisons=comparisons, alpha=alpha))


def gate(n1: int, n2: int, *, comparisons: int, alpha: float, min_runs: int) -> str | None:
    """Why no verdict can be given at these sample sizes ('need >= N runs per side (...)'), else None; min_runs:
    the campaign's floor (0: none)."""
    fewest, floor = min(n1, n2), max(2, min_runs, runs_needed(comparisons=comparisons, alpha=alpha))
    if not verdict_possible(n1, n2, comparisons=comparisons, alpha=alpha):
        times = f" x {comparisons} comparisons" if comparisons > 1 else ""
        why = f"smallest attainable p = {smallest_p(n1, n2):.3g}{times} is not below alpha {alpha:g}"
    elif fewest < 2:
        why = f"a side has {fewest} run"
    elif fewest < min_runs:
        why = f"min_runs is {min_runs}"
    else:
        return None
    return f"need >= {floor} runs per side (have {n1} and {n2}: {why})"


def rule_text(*, comparisons: int, alpha: float, min_runs: int) -> str:
    """The rule, once per report (min_runs 0: no floor of the campaign's)."""
    n = runs_needed(comparisons=comparisons, alpha=alpha)
    floor = f"; and the campaign's own floor, min_runs {min_runs}" if min_runs else ""
    return (f"A verdict needs runs enough for the Mann-Whitney test to reach alpha {alpha:g} after the Holm "
            f"correction for {comparisons} comparison(s): the most extreme split of n1 and n2 runs has "
            f"p = 2 / C(n1+n2, n1), so it needs >= {n} runs per side here{floor}. With fewer, the estimate, its "
            "interval and p are still shown, marked 'need more runs'.")


def pairs_floor(min_runs: int) -> int:
    """The fewest pairs a paired verdict needs: the t-test's floor, or the campaign's min_runs when higher."""
    return max(T_MIN_PAIRS, min_runs)


def pairs_gate(pairs: int, *, min_runs: int) -> str | None:
    """Why no paired verdict can be given with this many pairs ('need >= N rounds holding both runs (...)'), else
    None; min_runs: the campaign's floor (0: none)."""
    floor = pairs_floor(min_runs)
    if pairs >= floor:
        return None
    why = f"min_runs is {min_runs}" if min_runs > T_MIN_PAIRS else "the paired t-test's floor"
    return f"need >= {floor} rounds holding both runs (have {pairs} pair{'' if pairs == 1 else 's'}: {why})"


def rounds_needed(*, paired: bool, comparisons: int, alpha: float, min_runs: int = 0) -> int:
    """The fewest rounds (runs per side) at which a comparison can reach a verdict: paired by round, the t-test's
    floor; unpaired, the runs the Mann-Whitney test needs to reach alpha after Holm over `comparisons` (alpha:
    per look, for an adaptive campaign); either way at least the campaign's min_runs."""
    if paired:
        return pairs_floor(min_runs)
    return max(2, min_runs, runs_needed(comparisons=max(1, comparisons), alpha=alpha))


def paired_rule_text(*, comparisons: int, alpha: float, min_runs: int) -> str:
    """The rule of a campaign paired by round, once per report."""
    floor = rounds_needed(paired=True, comparisons=comparisons, alpha=alpha, min_runs=min_runs)
    own = f"; min_runs {min_runs} raises it to {floor}" if min_runs > T_MIN_PAIRS else ""
    unpaired = rounds_needed(paired=False, comparisons=comparisons, alpha=alpha, min_runs=min_runs)
    return (f"Paired by round, a verdict needs >= {floor} rounds holding both runs here (the paired t-test's floor "
            f"of {T_MIN_PAIRS} pairs{own}; its smallest p is 0 at any number of pairs, so alpha {alpha:g} and the "
            f"Holm correction for {comparisons} comparison(s) ask for no more). A comparison with fewer pairs is "
            f"made unpaired, where the Mann-Whitney test needs >= {unpaired} runs per side. With fewer, the "
            "estimate, its interval and p are still shown, marked 'need more runs'.")


@dataclass(frozen=True)
class PointNeed:
    """One (workload, threads) point of a plan: its Holm family and the fewest rounds at which each of its
    comparisons can reach a verdict."""

    point: str  # `oltp_read_write / 8 threads`
    comparisons: int
    rounds: int


def point_needs(points: Sequence[tuple[str, int | None]], variants: int, *, paired: bool, alpha: float,
                looks: int = 1, min_runs: int = 0, sweep: bool = False) -> list[PointNeed]:
    """Per point, the fewest rounds at which a comparison there can reach a verdict: `variants` compared with the
    baseline (variants - 1 comparisons; none with one variant), Holm over the point's or, with `sweep`, over the
    workload's sweep, at alpha / `looks` (an adaptive campaign's looks); the one rule of `validate` and of the
    report's rule line (`rounds_needed`)."""
    others = max(0, variants - 1)
    if not others:
        return []
    per_workload: dict[str, int] = {}
    for workload, _ in points:
        per_workload[workload] = per_workload.get(workload, 0) + 1
    out = []
    for workload, threads in points:
        family = others * (per_workload[workload] if sweep else 1)
        rounds = rounds_needed(paired=paired, comparisons=family, alpha=alpha / max(1, looks), min_runs=min_runs)
        out.append(PointNeed(workload if threads is None else f"{workload} / {threads} threads", family, rounds))
    return out
