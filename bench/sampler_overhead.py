"""What does the resource sampler cost? Its own thread's CPU time as a share of one core, at 1 sample per second,
while a process tree like a server's (several busy threads' worth of processes) runs. Budget: 0.5 % of a core.
    .venv/bin/python bench/sampler_overhead.py [--seconds 20] [--repetitions 3] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from common import median, parse_args, run_main, say, table

from layerbench.measure.cpu import ResourceSampler

BUDGET = 0.005
BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end: time.sleep(0.0005)"


def one(seconds: float) -> tuple[float, int]:
    children: list[subprocess.Popen] = []
    try:  # on Ctrl-C too, every child started so far is killed
        for _ in range(4):
            children.append(subprocess.Popen([sys.executable, "-c", BUSY.format(s=seconds + 2)]))
        sampler = ResourceSampler(lambda: {"server": [c.pid for c in children]}, [], lambda: [], interval=1.0)
        sampler.start()
        try:
            time.sleep(seconds)
        finally:
            usage = sampler.stop()
    finally:
        for child in children:
            child.kill()
            child.wait()
    return usage.sampler_cpu_seconds / usage.window_seconds, usage.samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--repetitions", type=int, default=3)
    args = parse_args(parser, {"seconds": 2, "repetitions": 1})
    rows = []
    for rep in range(1, args.repetitions + 1):
        share, samples = one(args.seconds)
        rows.append((share, samples))
        say(f"repetition {rep}: {share * 100:.3f} % of a core over {samples} samples")
    shares = [share for share, _ in rows]
    processes = len([p for p in os.listdir("/proc") if p.isdigit()])
    print(f"sampler at 1 Hz, {processes} processes on the machine, {args.repetitions} x {args.seconds:g} s")
    print(table(["repetition", "sampler thread CPU, % of one core", "samples"],
                [[str(i), f"{share * 100:.3f}", str(samples)] for i, (share, samples) in enumerate(rows, 1)]))
    print(f"median {median(shares) * 100:.3f} % of one core; ratio to the 0.5 % budget: {median(shares) / BUDGET:.2f}")

if __name__ == "__main__":
    run_main(main)
