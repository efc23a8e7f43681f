"""What a CPU neighbour does to a server's TPS, side by side in one campaign: a server pinned on CPU 0 (sysbench on
CPU 1) without and with a neighbour on CPU 0 (a host process; a Docker container, `guaranteed` with 2 CPUs of
weight, cpuset 0; with --hosts, a process on the inventory's `app` host pinned to CPU 0), and an unpinned server
without and with two unpinned workers (4 sysbench threads on 2 CPUs, so the server is CPU-bound).

Each noisy variant is compared with its quiet twin round by round (runs close in time, so the machine's other load
weighs on both alike), and the table gives the median of those per-round ratios with every one of them, the
server's CPU seconds per second, and the share of the machine's CPUs that work outside the campaign used in the
quiet twin's windows (above about 50 %, other work rather than the neighbour decides TPS: read the ratios then
with that in mind). docs/neighbours.md quotes its figures.
    .venv/bin/python bench/neighbour_tps.py [--repetitions 3] [--duration 4] [--placements host,docker]
                                            [--hosts inventory.yaml] [--quick]
Ctrl-C stops the campaign (its neighbours and servers) and removes the bench's folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from pathlib import Path

import yaml
from common import parse_args, run_main, say, table

from layerbench.campaign.models import parse_campaign
from layerbench.run.orchestrator import SilentProgress, run_campaign
from layerbench.store import Store

HOG = {"name": "hog", "kind": "cpu", "workers": 1, "load": 100, "cpus": "0"}
PLACED = {  # the neighbour beside a server pinned on CPU 0, by where it runs
    "host": HOG,
    "docker": {"name": "box", "kind": "cpu", "workers": 2, "load": 100, "placement": "docker", "qos": "guaranteed",
               "resources": {"cpus": 2}, "cpus": "0"},
    "ssh": {"name": "far", "kind": "cpu", "workers": 2, "load": 100, "placement": "ssh", "host": "app", "cpus": "0"},
}
PLACEMENTS = tuple(PLACED)


class Said(SilentProgress):
    def message(self, text: str) -> None:
        say(f"  {text}")


def variants(placements: list[str]) -> tuple[list[dict[str, object]], dict[str, str]]:
    """The campaign's variants, and each noisy one's quiet twin."""
    out: list[dict[str, object]] = [{"name": "pinned", "backend": "host", "cpus": "0", "client_cpus": "1"}]
    twins: dict[str, str] = {}
    for where in placements:
        out.append({"name": f"pinned-{where}-hog", "extends": "pinned", "neighbours": [PLACED[where]]})
        twins[f"pinned-{where}-hog"] = "pinned"
    out += [{"name": "free", "backend": "host"},
            {"name": "free-hogs", "extends": "free",
             "neighbours": [{"name": "hogs", "kind": "cpu", "workers": 2, "load": 100}]}]
    twins["free-hogs"] = "free"
    return out, twins


def campaign_data(args: argparse.Namespace, out: Path) -> tuple[dict[str, object], dict[str, str]]:
    chosen, twins = variants(args.placements)
    data: dict[str, object] = {
        "name": "lb-bench-neighbour-tps", "baseline": "pinned", "variants": chosen, "repetitions": args.repetitions,
        "workload": {"tables": 1, "table_size": 1000, "threads": 4, "duration": args.duration, "warmup": 1},
        "busy": "keep",  # a busy run is the point here: the neighbour is the load
        "estimates_only": True,  # ratios per round, not verdicts (--quick runs 1 round)
        "formats": ["json"], "output": str(out)}
    if args.hosts is not None:
        data["hosts"] = yaml.safe_load(args.hosts.read_text())
    return data, twins


def rows(db: Path, twins: dict[str, str]) -> list[list[str]]:
    with Store(db) as store:
        runs = [r for r in store.runs(store.campaign("latest").id) if r.status == "ok" and r.metrics.tps]
    by_round: dict[int, dict[str, float]] = {}
    for run in runs:
        by_round.setdefault(run.round, {})[run.variant] = run.metrics.tps
    out = []
    for noisy, quiet in twins.items():
        ratios = [r[noisy] / r[quiet] for r in by_round.values() if noisy in r and quiet in r]
        if not ratios:
            out.append([noisy, quiet, "-", "no round with both", "-", "-", "-"])
            continue
        out.append([noisy, quiet, f"{statistics.median(ratios):.2f}", ", ".join(f"{x:.2f}" for x in ratios),
                    cpu_per_second(runs, quiet), cpu_per_second(runs, noisy), other_share(runs, quiet)])
    return out


def cpu_per_second(runs: list, variant: str) -> str:
    """The median of the server's CPU seconds per second of measured window."""
    values = [r.facts.usage.cpu_seconds.get("server", 0.0) / r.facts.usage.window_seconds
              for r in runs if r.variant == variant and r.facts.usage]
    return f"{statistics.median(values):.2f}" if values else "-"


def other_share(runs: list, variant: str) -> str:
    """The median share of the machine's CPU time that work outside the campaign used (`other`, with its host's
    name when the campaign has `hosts:`) in the variant's windows."""
    cpus = len(os.sched_getaffinity(0))
    values = [sum(v for k, v in r.facts.usage.cpu_seconds.items() if k.split("@")[0] == "other")
              / (r.facts.usage.window_seconds * cpus) for r in runs if r.variant == variant and r.facts.usage]
    return f"{statistics.median(values) * 100:.0f} %" if values else "-"


def placements(text: str) -> list[str]:
    chosen = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in chosen if p not in PLACEMENTS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"{text!r}: give some of {', '.join(PLACEMENTS)}, comma-separated")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--duration", type=int, default=4, help="seconds per run")
    parser.add_argument("--placements", type=placements, default=["host", "docker"],
                        help="where the pinned server's neighbour runs: host, docker, ssh (ssh needs --hosts)")
    parser.add_argument("--hosts", type=Path, help="an inventory (a campaign's hosts:) with an `app` host, for ssh")
    args = parse_args(parser, {"repetitions": 1, "duration": 1, "placements": ["host"]})  # the path, not a figure
    if "ssh" in args.placements and args.hosts is None:
        parser.error("--placements ssh needs --hosts (an inventory with an `app` host: scripts/lab-hosts prints one)")
    if args.hosts is not None and "ssh" not in args.placements:
        args.placements.append("ssh")
    if shutil.which("stress-ng") is None:
        raise SystemExit("stress-ng is not installed; scripts/setup installs it")
    work = Path(tempfile.mkdtemp(prefix="lb-bench-neighbour-tps-"))
    try:
        data, twins = campaign_data(args, work)
        with Store(work / "layerbench.db") as store:
            run_campaign(parse_campaign(data), store, progress=Said())
        found = rows(work / "layerbench.db", twins)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{args.repetitions} rounds, {args.duration} s runs at 4 threads, 1 table x 1,000 rows; neighbours of the "
          f"pinned server: {', '.join(args.placements)}")
    print(table(["variant", "quiet twin", "TPS / twin's (median)", "per round", "twin's server CPU s/s",
                 "server CPU s/s", "other work (twin's)"], found))


if __name__ == "__main__":
    run_main(main)
