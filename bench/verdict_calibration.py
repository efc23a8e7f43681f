"""Calibration of the verdicts by simulation (issue #23): how often each verdict is given for a known true effect
(the power table) and how often the delta interval covers the true effect (the coverage table).

Every simulated campaign goes through the project's own `analysis.stats.compare_with_baseline`, exactly as a
report does. The model is multiplicative, as throughput is: variant = (1 + effect) x a draw from the baseline's
distribution, so the true delta is `effect` for the ratio of means, of medians and for the shift of the log values
alike.

    .venv/bin/python bench/verdict_calibration.py [--campaigns 1000] [--coverage-campaigns 4000] [--seed 23]

The numbers of layerbench before issue #23 (percentile bootstrap of the ratio of means) are in
docs/statistics.md.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
from common import parse_args

from layerbench.analysis.stats import KINDS, Comparison, compare_with_baseline

CV = 0.05


def normal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return 500 * rng.normal(1.0, CV, shape)


def lognormal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return 500 * rng.lognormal(0.0, 0.25, shape)  # skewed: skewness 0.8, CV 25 %


def contaminated(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Normal with CV 5 %, but one run in ten is a bad run at 70 % of the others (a hiccup of the machine)."""
    return normal(rng, shape) * np.where(rng.random(shape) < 0.1, 0.7, 1.0)


DISTRIBUTIONS: dict[str, Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]] = {
    "normal (CV 5 %)": normal, "lognormal (sigma 0.25)": lognormal, "normal + 10 % outliers at -30 %": contaminated}


def campaigns(draw: Callable, n: int, effect: float, count: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    return draw(rng, (count, n)), (1 + effect) * draw(rng, (count, n))


def run_compare(base: np.ndarray, variant: np.ndarray) -> Comparison:
    return compare_with_baseline(base, {"v": variant})[0]


def power_row(n: int, effect: float, count: int, rng: np.random.Generator) -> Counter:
    bases, variants = campaigns(normal, n, effect, count, rng)
    return Counter(run_compare(b, v).verdict.kind for b, v in zip(bases, variants, strict=True))


def coverage(draw: Callable, n: int, effect: float, count: int, rng: np.random.Generator) -> tuple[float, float]:
    """Share of campaigns whose interval holds the true effect, and the median interval width (points of %)."""
    bases, variants = campaigns(draw, n, effect, count, rng)
    found = [d for b, v in zip(bases, variants, strict=True) if (d := run_compare(b, v).delta) is not None]
    hits = [d.low <= effect <= d.high for d in found]
    return float(np.mean(hits)), float(np.median([(d.high - d.low) * 100 for d in found]))


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def power_table(count: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    rows = []
    for n in (6, 10, 20):
        for effect in (0.0, -0.01, -0.03, -0.10):
            counts = power_row(n, effect, count, rng)
            rows.append([str(n), f"{effect * 100:+.0f} %", *(str(counts.get(k, 0)) for k in KINDS)])
    return table(["runs per side", "true effect", *KINDS], rows)


def coverage_table(count: int, seed: int, effect: float = -0.05) -> str:
    rng = np.random.default_rng(seed)
    sizes = (4, 6, 10, 20)
    rows = []
    for name, draw in DISTRIBUTIONS.items():
        cells = [coverage(draw, n, effect, count, rng) for n in sizes]
        rows.append([name, *(f"{c * 100:.1f} % (width {w:.1f})" for c, w in cells)])
    return table(["distribution", *(f"n = {n}" for n in sizes)], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=1000, help="simulated campaigns per line of the power table")
    parser.add_argument("--coverage-campaigns", type=int, default=4000, help="simulated campaigns per coverage cell")
    parser.add_argument("--seed", type=int, default=23)
    args = parse_args(parser, {"campaigns": 200, "coverage_campaigns": 300})
    started = time.perf_counter()
    print(f"Verdicts of {args.campaigns} simulated campaigns per line (normal, CV 5 %, threshold 2 %, alpha 0.05):")
    print(power_table(args.campaigns, args.seed))
    print(f"\nCoverage of the 95 % delta interval for a true effect of -5 % ({args.coverage_campaigns} campaigns "
          "per cell; median width in points of %):")
    print(coverage_table(args.coverage_campaigns, args.seed + 1))
    print(f"\n({time.perf_counter() - started:.1f} s)")


if __name__ == "__main__":
    main()
