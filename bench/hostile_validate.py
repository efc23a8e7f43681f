"""How long and how much memory does `layerbench validate` take on each hostile campaign file, side by side with
a valid one? Each file runs in its own process (wall time and peak RSS from wait4); prints the worst file and
its ratio to the valid campaign (the issue's goal: every file under 2 s and 200 MB). Besides the corpus, campaigns
whose file-naming keys (password_file, kubeconfig, identity_file, known_hosts, a Lua test) name /dev/zero,
/dev/urandom, a FIFO with no writer, a 2 GB sparse file and a link to /dev/zero (issue #44: each under 5 s and
500 MB), made here for the run and removed after it.
    .venv/bin/python bench/hostile_validate.py [--repeat 1] [--files N] [--no-named] [--quick]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
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


def spread(paths: list[Path], files: int | None) -> list[Path]:
    """All of `paths`, or `files` of them spread evenly over the list."""
    if files is None or files >= len(paths):
        return paths
    return [paths[i * len(paths) // files] for i in range(files)]


def measure_all(paths: list[Path], repeat: int, cwd: str) -> list[tuple[str, float, float, int, float, float]]:
    valid = ROOT / "src" / "layerbench" / "data" / "default-campaign.yaml"
    rows = []
    for path in paths:
        for _ in range(repeat):
            base_s, base_mib, _ = measure(valid, cwd)  # side by side: the machine's load hits both alike
            seconds, mib, code = measure(path, cwd)
            rows.append((path.name, seconds, mib, code, seconds / base_s, mib / base_mib))
    return rows


NAMED_KEYS = ("password_file", "kubeconfig", "identity_file", "known_hosts", "test")


def named_file_campaign(key: str, value: str) -> dict[str, Any]:
    """The corpus's campaign with one file-naming key set to `value` (and what that key needs to be read)."""
    variant: dict[str, Any] = {"name": "base", "backend": "host"}
    data: dict[str, Any] = {"name": "hostile", "baseline": "base", "repetitions": 2}
    workload: dict[str, Any] = {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0}
    if key == "password_file":
        variant = {"name": "base", "backend": "external", "reset": "none", key: value}
    elif key == "kubeconfig":
        variant = {"name": "base", "backend": "kubernetes", key: value}
    elif key == "test":
        workload[key] = value
    else:
        variant |= {"server_host": "db", "client_host": "app"}
        data["hosts"] = {"db": {"local": True, "address": "127.0.0.1"}, "app": {"ssh": "bench@127.0.0.1", key: value}}
    return {**data, "variants": [variant], "workload": workload}


def named_files(folder: Path) -> list[Path]:
    """Campaigns naming what no reader may hang on or read whole, for each file-naming key."""
    fifo, sparse, link = folder / "fifo", folder / "sparse", folder / "link"
    os.mkfifo(fifo)
    with sparse.open("wb") as handle:
        handle.truncate(2 << 30)  # 2 GB that take no disk
    link.symlink_to("/dev/zero")
    targets = {"dev-zero": "/dev/zero", "dev-urandom": "/dev/urandom", "fifo": str(fifo), "sparse-2g": str(sparse),
               "link-dev-zero": str(link)}
    paths = []
    for key in NAMED_KEYS:
        for name, target in targets.items():
            path = folder / f"named-{key}-{name}.yaml"
            path.write_text(yaml.safe_dump(named_file_campaign(key, target)))
            paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--files", type=int, default=None, help="this many hostile files, spread over the corpus "
                        "(default: all)")
    parser.add_argument("--no-named", action="store_true", help="leave out the campaigns that name devices, a FIFO "
                        "and a sparse file at their file-naming keys")
    args = parse_args(parser, {"files": 2})
    if args.repeat < 1 or (args.files is not None and args.files < 1):
        parser.error("--repeat and --files must be >= 1")
    with tempfile.TemporaryDirectory(prefix="lb-bench-hostile-") as cwd:
        named = [] if args.no_named else named_files(Path(cwd))
        rows = measure_all(spread(sorted(CORPUS.glob("*.yaml")), args.files) + spread(named, args.files),
                           args.repeat, cwd)
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
