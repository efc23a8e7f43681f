"""Time to an answer on a machine that stays busy: the time a campaign spends waiting for quiet beside its wall
time, with wait_for_quiet set, before (LAYERBENCH_WAIT_FOR_QUIET=always: every run waits its whole limit) and after
(the default: the campaign stops waiting by analysis/quiet.py's rule), side by side in one invocation.

The bench starts its own load, `stress-ng --cpu N` (N: every CPU of the machine, 2 here) for the whole of both
campaigns, so the machine stays busy whatever else runs; each campaign is the same tiny host campaign (two host
variants, 1 table x 1,000 rows, `busy: rerun` with the same wait after a replaced run). The dataset is prepared
before the load starts (cached). Prints per setting: runs stored and replaced, the campaign's wall time, the time
waited for quiet and its share, and after which run the campaign stopped waiting.
    .venv/bin/python bench/quiet_waits.py [--wait 30] [--repetitions 3] [--duration 3] [--quick]
Ctrl-C stops the campaign of the moment and the load, and removes the bench's folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from common import parse_args, run_main, say, table

from layerbench.analysis.loading import analyze
from layerbench.campaign.models import parse_campaign
from layerbench.campaign.workload import Workload
from layerbench.run.orchestrator import SilentProgress, run_campaign
from layerbench.server.prepare import PrepareProgress, ensure_snapshot
from layerbench.store import Store

SETTINGS = (("before: always wait", "always"), ("after: learn (default)", "learn"))
WORKLOAD = {"tables": 1, "table_size": 1000, "threads": 1, "warmup": 1}


class Said(SilentProgress):
    """The campaign's own lines (the stop of waiting, the busy decisions) on stderr, as `run` prints them."""

    def message(self, text: str) -> None:
        say(f"  {text}")


def campaign_data(name: str, args: argparse.Namespace, out: Path) -> dict[str, object]:
    wait = f"{args.wait:g}s"
    return {"name": name, "baseline": "a", "repetitions": args.repetitions, "wait_for_quiet": wait,
            "busy": {"policy": "rerun", "wait": wait}, "formats": ["json"], "output": str(out),
            "estimates_only": True,  # it measures the time spent waiting, not a verdict (--quick runs 1 round)
            "variants": [{"name": "a", "backend": "host"}, {"name": "b", "backend": "host"}],
            "workloads": [WORKLOAD | {"duration": args.duration}]}


def one(setting: str, word: str, args: argparse.Namespace, work: Path) -> list[str]:
    """One campaign under LAYERBENCH_WAIT_FOR_QUIET=`word`; its row of the table."""
    os.environ["LAYERBENCH_WAIT_FOR_QUIET"] = word
    campaign = parse_campaign(campaign_data(f"lb-bench-quiet-{word}", args, work / word))
    with Store(work / word / "layerbench.db") as store:
        outcome = run_campaign(campaign, store, progress=Said())
        analysis = analyze(store, outcome.campaign_id)
    account = analysis.waiting
    if account is None:
        raise SystemExit(f"{setting}: the campaign stored no wait for quiet; is the machine quiet despite the load?")
    stopped = "-" if account.stopped_after is None else f"run {account.stopped_after}"
    say(f"{setting}: {account.text()}")
    return [setting, str(len(analysis.runs)), str(len(analysis.replaced)), f"{account.took:.0f}",
            f"{account.waited:.0f}", f"{account.share * 100:.0f} %", stopped]


def load(cpus: int) -> subprocess.Popen[bytes]:
    """stress-ng on `cpus` CPUs in a session of its own (killed as a group), for at most an hour."""
    return subprocess.Popen(["stress-ng", "--cpu", str(cpus), "--timeout", "3600s", "--quiet"],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=30, help="wait_for_quiet and busy.wait, seconds")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--duration", type=int, default=3)
    args = parse_args(parser, {"wait": 2, "repetitions": 1, "duration": 1})  # --quick: the code path, not a figure
    if shutil.which("stress-ng") is None:
        raise SystemExit("stress-ng is not installed; scripts/setup installs it")
    work = Path(tempfile.mkdtemp(prefix="lb-bench-quiet-"))
    stress: subprocess.Popen[bytes] | None = None
    before = os.environ.get("LAYERBENCH_WAIT_FOR_QUIET")
    try:
        workload = Workload(**WORKLOAD, duration=args.duration)
        ensure_snapshot(workload, None, log_dir=work / "snapshot", on_line=PrepareProgress(1, say, table_size=1000),
                        say=say)
        cpus = os.cpu_count() or 1
        stress = load(cpus)
        say(f"stress-ng --cpu {cpus} started; wait_for_quiet {args.wait:g} s, {args.repetitions} rounds of 2 variants")
        rows = [one(setting, word, args, work) for setting, word in SETTINGS]
    finally:
        if stress is not None:
            os.killpg(stress.pid, signal.SIGKILL)
            stress.wait()
        if before is None:
            os.environ.pop("LAYERBENCH_WAIT_FOR_QUIET", None)
        else:
            os.environ["LAYERBENCH_WAIT_FOR_QUIET"] = before
        shutil.rmtree(work, ignore_errors=True)
    print(f"stress-ng --cpu {cpus} for both campaigns; wait_for_quiet and busy.wait {args.wait:g} s; "
          f"{args.repetitions} rounds x 2 host variants, {args.duration} s runs")
    print(table(["setting", "runs", "replaced", "campaign s", "waited s", "waited / campaign", "stopped waiting"],
                rows))


if __name__ == "__main__":
    run_main(main)
