"""How long and how much memory does `layerbench validate` take on each hostile campaign file, side by side with
a valid one? Each file runs in its own process (wall time and peak RSS from wait4); prints the worst file and
its ratio to the valid campaign (the issue's goal: every file under 2 s and 200 MB).
    .venv/bin/python bench/hostile_validate.py [--repeat 1] [--files N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median, parse_args, run_main, table

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "hostile"


def measure(path: Path, cwd: str) -> tuple[float, float, int]:
    """Seconds, peak MiB and the exit code of `layerbench validate path`."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "validate", str(path)], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:  # Ctrl-C: the validation is stopped too, not left behind
        proc.kill()
        proc.wait()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - started, usage.ru_maxrss / 1024, proc.returncode


def chosen(files: int | None) -> list[Path]:
    """All hostile files, or `files` of them spread evenly over the sorted corpus."""
    every = sorted(CORPUS.glob("*.yaml"))
    if files is None or files >= len(every):
        return every
    return [every[i * len(every) // files] for i in range(files)]


def measure_all(paths: list[Path], repeat: int) -> list[tuple[str, float, float, int, float, float]]:
    valid = ROOT / "src" / "layerbench" / "data" / "default-campaign.yaml"
    rows = []
    with tempfile.TemporaryDirectory(prefix="lb-bench-hostile-") as cwd:
        for path in paths:
            for _ in range(repeat):
                base_s, base_mib, _ = measure(valid, cwd)  # side by side: the machine's load hits both alike
                seconds, mib, code = measure(path, cwd)
                rows.append((path.name, seconds, mib, code, seconds / base_s, mib / base_mib))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--files", type=int, default=None, help="this many hostile files, spread over the corpus "
                        "(default: all)")
    args = parse_args(parser, {"files": 2})
    if args.repeat < 1 or (args.files is not None and args.files < 1):
        parser.error("--repeat and --files must be >= 1")
    rows = measure_all(chosen(args.files), args.repeat)
    worst_time = max(rows, key=lambda r: r[1])
    worst_mem = max(rows, key=lambda r: r[2])
    print(f"{len(rows)} validations of {len({r[0] for r in rows})} hostile files; exit codes "
          f"{sorted({r[3] for r in rows})}")
    print(table(["what", "file", "seconds", "peak MiB", "time / valid campaign", "memory / valid campaign"], [
        ["median", "", f"{median([r[1] for r in rows]):.2f}", f"{median([r[2] for r in rows]):.0f}",
         f"{median([r[4] for r in rows]):.2f}", f"{median([r[5] for r in rows]):.2f}"],
        ["worst time", worst_time[0], f"{worst_time[1]:.2f}", f"{worst_time[2]:.0f}", f"{worst_time[4]:.2f}",
         f"{worst_time[5]:.2f}"],
        ["worst memory", worst_mem[0], f"{worst_mem[1]:.2f}", f"{worst_mem[2]:.0f}", f"{worst_mem[4]:.2f}",
         f"{worst_mem[5]:.2f}"]]))

if __name__ == "__main__":
    run_main(main)
