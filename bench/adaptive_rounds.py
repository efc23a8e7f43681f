"""Adaptive repetitions by simulation (issue #17): for true effects of 0, -3 %, -10 % and -30 % and run-to-run
CVs of 2 %, 5 % and 10 %, how often the stopping rule of `analysis/sequential.py` ends with each verdict, and how
many rounds it needs (mean, median, 90th percentile). Noise threshold 2 %, alpha 0.05, min 4, max 20 rounds; each
look uses the test in force, the paired t-test on the rounds' log ratios (its floor: 3 pairs).

    .venv/bin/python bench/adaptive_rounds.py [--campaigns 4000] [--seed 17] [--quick]

A true 0 must give `slower` / `faster` at most alpha of the time (the unit test tests/unit/test_sequential.py
checks it); the "any look rejected" column is the stronger error (the test rejected 0 at some look).
"""

from __future__ import annotations

import argparse

import numpy as np
from common import parse_args, run_main

from layerbench.analysis.sequential import simulate_rounds

EFFECTS = (0.0, -0.03, -0.10, -0.30)
CVS = (0.02, 0.05, 0.10)


def row(effect: float, cv: float, campaigns: int, seed: int) -> str:
    found = simulate_rounds(effect, campaigns=campaigns, cv=cv, seed=seed)
    shares = " | ".join(f"{found.share(k) * 100:.1f} %" for k in ("slower", "faster", "within noise", "undecided"))
    rounds = found.rounds
    return (f"| {effect * 100:+.0f} % | {cv * 100:.0f} % | {shares} | {found.ever_rejected.mean() * 100:.2f} % | "
            f"{rounds.mean():.1f} | {np.median(rounds):.0f} | {np.percentile(rounds, 90):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=17)
    args = parse_args(parser, {"campaigns": 300})
    print(f"{args.campaigns:,} simulated campaigns per line, log-normal runs, threshold 2 %, alpha 0.05, "
          "rounds 4..20 (alpha / 17 per look), paired t-test per look\n")
    print("| true effect | CV | slower | faster | within noise | undecided at max | any look rejected | "
          "rounds mean | median | p90 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for effect in EFFECTS:
        for cv in CVS:
            print(row(effect, cv, args.campaigns, args.seed))


if __name__ == "__main__":
    run_main(main)
