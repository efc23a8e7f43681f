"""How long and how much memory does `layerbench validate` take on each hostile campaign file, side by side with
a valid one? Each file runs in its own process (wall time and peak RSS from wait4); prints the worst file and
its ratio to the valid campaign (the issue's goal: every file under 2 s and 200 MB).
    .venv/bin/python bench/hostile_validate.py [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median, say

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "hostile"


def measure(path: Path, cwd: str) -> tuple[float, float, int]:
    """Seconds, peak MiB and the exit code of `layerbench validate path`."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "validate", str(path)], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - started, usage.ru_maxrss / 1024, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    valid = ROOT / "src" / "layerbench" / "data" / "default-campaign.yaml"
    with tempfile.TemporaryDirectory() as cwd:
        rows = []
        for path in sorted(CORPUS.glob("*.yaml")):
            for _ in range(args.repeat):
                base_s, base_mib, _ = measure(valid, cwd)  # side by side: the machine's load hits both alike
                seconds, mib, code = measure(path, cwd)
                rows.append((path.name, seconds, mib, code, seconds / base_s, mib / base_mib))
    worst_time = max(rows, key=lambda r: r[1])
    worst_mem = max(rows, key=lambda r: r[2])
    codes = sorted({r[3] for r in rows})
    say(f"{len(rows)} validations of {len({r[0] for r in rows})} hostile files; exit codes {codes}")
    say(f"median {median([r[1] for r in rows]):.2f} s, {median([r[2] for r in rows]):.0f} MiB; ratio to a valid "
        f"campaign: time {median([r[4] for r in rows]):.2f}x, memory {median([r[5] for r in rows]):.2f}x")
    say(f"worst time: {worst_time[0]} {worst_time[1]:.2f} s ({worst_time[4]:.2f}x the valid campaign)")
    say(f"worst memory: {worst_mem[0]} {worst_mem[2]:.0f} MiB ({worst_mem[5]:.2f}x the valid campaign)")


if __name__ == "__main__":
    main()
