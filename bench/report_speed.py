"""Speed of `layerbench import` and of the reports on many runs (issue #17): a synthetic CSV of N runs
(4 variants x 5 thread counts x N/20 iterations, TPS and latencies with noise) is imported into a fresh store,
analysed, and rendered in each format. Goals: import of 100,000 runs < 10 s, report of 100,000 runs < 30 s (set
when import took that many; it now refuses more than vocabulary/limits.py:MAX_RUNS = 20,000 runs a campaign, the
default here).

    .venv/bin/python bench/report_speed.py [--runs 20000] [--formats md,json,csv,html] [--repeat 3] [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from common import parse_args, run_main, table

from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.importing.table import import_csv
from layerbench.report import FORMATS
from layerbench.store import Store
from layerbench.vocabulary.limits import MAX_RUNS

VARIANTS = {"host": 1.0, "docker": 0.97, "vm": 0.9, "k8s": 0.95}
THREADS = (1, 2, 4, 8, 16)


def write_csv(path: Path, runs: int, seed: int = 17) -> None:
    rng = np.random.default_rng(seed)
    per_point = max(1, runs // (len(VARIANTS) * len(THREADS)))
    lines = ["variant,iteration,threads,total_queries,qps,tps,lat_avg_ms,lat_p95_ms"]
    for name, factor in VARIANTS.items():
        for threads in THREADS:
            tps = 500 * factor * threads ** 0.8 * rng.normal(1, 0.05, per_point)
            lat = 1000 * threads / tps
            lines += [f"{name},{i + 1},{threads},{t * 200:.0f},{t * 20:.2f},{t:.2f},{la:.3f},{la * 1.4:.3f}"
                      for i, (t, la) in enumerate(zip(tps, lat, strict=True))]
    path.write_text("\n".join(lines) + "\n")


def timed(action) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def one_round(folder: Path, source: Path, formats: list[str], index: int) -> dict[str, float]:
    out = {}
    with Store(folder / f"bench-{index}.db") as store:
        out["import"], campaign_id = timed(lambda: import_csv(store, source, "speed", "host"))
        out["analyse"], analysis = timed(lambda: analyze(store, campaign_id))
    out["model"], model = timed(lambda: report_model(analysis))  # once, as the CLI does, for every format
    for fmt in formats:
        module = importlib.import_module(f"layerbench.report.{FORMATS[fmt]}")
        out[fmt], _ = timed(lambda module=module: module.render(model))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=MAX_RUNS)
    parser.add_argument("--formats", default="md,json,csv")
    parser.add_argument("--repeat", type=int, default=3)
    args = parse_args(parser, {"runs": 400, "repeat": 1, "formats": "md,json,csv,html"})
    formats = [f for f in args.formats.split(",") if f]
    if not formats or set(formats) - set(FORMATS):
        parser.error(f"--formats {args.formats!r}: a comma-separated list of {', '.join(FORMATS)}")
    with tempfile.TemporaryDirectory(prefix="lb-bench-speed-") as tmp:
        folder = Path(tmp)
        source = folder / "runs.csv"
        write_csv(source, args.runs)
        rounds = [one_round(folder, source, formats, i) for i in range(args.repeat)]
    print(f"{args.runs:,} runs, median of {args.repeat} rounds:")
    rows = [[step, f"{statistics.median(r[step] for r in rounds):.2f}"] for step in rounds[0]]
    report = [sum(r[s] for s in ("analyse", "model", *formats)) for r in rounds]
    rows.append([f"report (analyse + model + {', '.join(formats)})", f"{statistics.median(report):.2f}"])
    print(table(["step", "median s"], rows))

if __name__ == "__main__":
    run_main(main)
