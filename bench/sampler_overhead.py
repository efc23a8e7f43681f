"""What does the resource sampler cost? Its own thread's CPU time as a share of one core, at 1 sample per second,
while a process tree like a server's (several busy threads' worth of processes) runs. Budget: 0.5 % of a core.
    .venv/bin/python bench/sampler_overhead.py [--seconds 20] [--repetitions 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from common import median, say

from layerbench.resources import ResourceSampler

BUDGET = 0.005
BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end: time.sleep(0.0005)"


def one(seconds: float) -> tuple[float, int]:
    children = [subprocess.Popen([sys.executable, "-c", BUSY.format(s=seconds + 2)]) for _ in range(4)]
    try:
        sampler = ResourceSampler(lambda: {"server": [c.pid for c in children]}, [], lambda: [], interval=1.0)
        sampler.start()
        time.sleep(seconds)
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
    args = parser.parse_args()
    shares = []
    for rep in range(1, args.repetitions + 1):
        share, samples = one(args.seconds)
        shares.append(share)
        say(f"repetition {rep}: {share * 100:.3f} % of a core over {samples} samples")
    processes = len([p for p in __import__("os").listdir("/proc") if p.isdigit()])
    print(f"sampler at 1 Hz, {processes} processes on the machine, {args.repetitions} x {args.seconds:.0f} s")
    print(f"sampler thread CPU: median {median(shares) * 100:.3f} % of one core; "
          f"ratio to the 0.5 % budget: {median(shares) / BUDGET:.2f}")


if __name__ == "__main__":
    main()
