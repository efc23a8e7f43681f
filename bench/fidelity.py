"""Does layerbench measure what sysbench measures by hand, and what does the harness itself cost?

Alternates a one-run layerbench campaign with sysbench run by hand (same options, same built-in test, against a
server started the same way on the same snapshot), and prints the median TPS of each, their ratio, and the
harness's own CPU time during its runs as a share of one core.
    .venv/bin/python bench/fidelity.py [--pairs 5] [--duration 20]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from common import host_server, median, say

from layerbench.campaign import parse_campaign
from layerbench.orchestrator import run_campaign
from layerbench.secrets import write_private
from layerbench.server.prepare import ensure_snapshot
from layerbench.store import Store
from layerbench.sysbench import config_file_text, parse_human, workload_args


def campaign(duration: int, out: Path):
    return parse_campaign({
        "name": "fidelity", "baseline": "host", "repetitions": 1, "output": str(out),
        "variants": [{"name": "host", "backend": "host", "cpus": "0", "client_cpus": "1"}],
        "workload": {"tables": 4, "table_size": 25_000, "threads": 2, "duration": duration, "warmup": 0},
    })


def by_layerbench(duration: int, work: Path) -> tuple[float, float, float]:
    """(TPS, harness CPU seconds, wall seconds of the whole run)."""
    before, started = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    with Store(work / "lb.db") as store:
        outcome = run_campaign(campaign(duration, work), store)
        tps = float(store.runs(outcome.campaign_id)[-1].metrics.tps or 0.0)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.monotonic() - started
    return tps, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def by_hand(duration: int, snapshot, work: Path) -> float:
    c = campaign(duration, work)
    workload = c.workloads[0]
    with host_server("hand", snapshot=snapshot.path, cpus="0") as endpoint:
        cfg = write_private(work / "hand.cfg", config_file_text(endpoint))
        cmd = ["taskset", "-c", "1", "sysbench", f"--config-file={cfg}", workload.test,
               *workload_args(workload, 2), f"--time={duration}", "--report-interval=1", "--percentile=95", "run"]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    totals = parse_human(out).totals
    assert totals is not None, out[-500:]
    return totals.tps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--duration", type=int, default=20)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="lb-bench-fidelity-"))
    snapshot = ensure_snapshot(campaign(args.duration, work).workloads[0], None, log_dir=work / "snapshot")
    lb, hand, cpu_share = [], [], []
    for pair in range(1, args.pairs + 1):
        order = ("lb", "hand") if pair % 2 else ("hand", "lb")
        for what in order:
            if what == "lb":
                tps, cpu, wall = by_layerbench(args.duration, work)
                lb.append(tps)
                cpu_share.append(cpu / wall)
            else:
                hand.append(by_hand(args.duration, snapshot, work))
        say(f"pair {pair}/{args.pairs}: layerbench {lb[-1]:.1f} TPS, by hand {hand[-1]:.1f} TPS, "
            f"harness CPU {cpu_share[-1] * 100:.2f} % of a core")
    print(f"oltp_read_write, 4 x 25000 rows, 2 threads, {args.duration} s, {args.pairs} alternating pairs")
    print(f"layerbench: median {median(lb):.1f} TPS; by hand: median {median(hand):.1f} TPS")
    print(f"ratio layerbench/hand: {median(lb) / median(hand):.3f}")
    print(f"harness CPU during its runs (whole run incl. start, copy, checks): median {median(cpu_share) * 100:.2f} % "
          "of one core")


if __name__ == "__main__":
    main()
