"""Rounds as blocks (issue #30): the A/A error rate, the power and the coverage of the paired (by round) and the
unpaired comparison, with and without drift between rounds, by simulation through the project's own statistics
(src/layerbench/analysis/blocks_simulation.py).

    .venv/bin/python bench/round_blocks.py [--campaigns 2000] [--seed 30]

Table 1 is the demo's shape (a baseline and 2 variants, Holm across them, alpha 0.05) at 5, 7 and 10 rounds;
drift D: each round's factor drawn from [1 - D, 1], the same for every variant of the round; runs log-normal with
CV 5 % around it. `auto` is the rule layerbench applies with `estimator: paired`: paired where the pairs can reach
alpha after Holm, else unpaired. Table 2 is the demo itself: docker-bridge about -30 %, docker-host-net 0, CV 8 %,
at the last look of `repetitions: {auto: true, min: 6, max: 10}` (alpha / 5 per look).
"""

from __future__ import annotations

import argparse
import time

from layerbench.analysis.blocks_simulation import ESTIMATORS, simulate

DRIFTS = (0.0, 0.10, 0.20, 0.30)


def cells(rounds: int, drift: float, estimator: str, campaigns: int, seed: int) -> list[str]:
    common = {"rounds": rounds, "drift": drift, "estimator": estimator, "campaigns": campaigns}
    aa = simulate((0.0, 0.0), seed=seed, **common)
    small = simulate((-0.03, 0.0), seed=seed + 1, **common)
    large = simulate((-0.10, 0.0), seed=seed + 2, **common)
    firm, real = {"slower"}, {"slower", "slower?"}
    pct = "{:.1f} %".format
    return [pct(aa.any_different() * 100), pct(small.share(firm) * 100), pct(small.share(real) * 100),
            pct(large.share(firm) * 100), pct(large.share(real) * 100), pct(large.coverage(-0.10) * 100),
            f"{large.width():.1f}"]


def calibration_table(campaigns: int, seed: int) -> str:
    lines = ["| rounds | drift | estimator | A/A: any difference | -3 %: slower | -3 %: slower or slower? | "
             "-10 %: slower | -10 %: slower or slower? | coverage at -10 % | median width |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for rounds in (5, 7, 10):
        for drift in DRIFTS:
            for estimator in ESTIMATORS:
                row = cells(rounds, drift, estimator, campaigns, seed)
                lines.append(f"| {rounds} | {drift * 100:.0f} % | {estimator} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def demo_table(campaigns: int, seed: int) -> str:
    lines = ["| rounds | drift | unpaired: slower | paired (auto): slower |", "|---|---|---|---|"]
    for rounds in (6, 7, 8, 9, 10):
        for drift in (0.0, 0.30):
            shares = [simulate((-0.30, 0.0), rounds=rounds, drift=drift, estimator=estimator, cv=0.08,
                               alpha=0.05 / 5, campaigns=campaigns, seed=seed).share({"slower"})
                      for estimator in ("unpaired", "auto")]
            lines.append(f"| {rounds} | {drift * 100:.0f} % | " + " | ".join(f"{s * 100:.1f} %" for s in shares) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=2000, help="simulated campaigns per cell")
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"{args.campaigns:,} simulated campaigns per cell; a baseline and 2 variants, Holm, alpha 0.05, threshold "
          "2 %, CV 5 %; the effect is the first variant's, the second is at 0:\n")
    print(calibration_table(args.campaigns, args.seed))
    print("\nThe demo: docker-bridge at -30 %, docker-host-net at 0, CV 8 %, alpha 0.05 / 5 at the last look; share of "
          "campaigns whose docker-bridge verdict is `slower`:\n")
    print(demo_table(args.campaigns, args.seed))
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
