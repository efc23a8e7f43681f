"""When can the data support a verdict at all: the smallest p-value the two-sided Mann-Whitney U test can
produce at given sample sizes, compared with alpha after the Holm correction.

With n1 and n2 runs and no ties, the most extreme arrangement (every run of one side beyond every run of the
other) has the exact two-sided p = 2 / C(n1 + n2, n1) (Mann & Whitney, Ann. Math. Statist. 18, 1947); no data
can do better. Holm's procedure (Scand. J. Statist. 6, 1979) multiplies the smallest of m p-values by m, so a
verdict is reachable only when m * 2 / C(n1 + n2, n1) < alpha. Below that, the runs are shown with their
evidence and "need more runs" says how many would do; `min_runs` stays as an optional floor of the user's
(0: none, the default: DEFAULTS.min_runs).
"""

from __future__ import annotations

from math import comb

LARGEST_N = 1000


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
