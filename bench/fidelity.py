"""Does layerbench measure what sysbench measures by hand, and what does the harness itself cost during a run?

Interleaved pairs (order alternated): a one-run layerbench campaign, drawn by the CLI's own Rich progress, against
sysbench run by hand with the same options on a server started the same way on the same snapshot (output to a
file, as a shell redirect). Prints the per-pair TPS and log ratios, the ratio layerbench/hand as a geometric mean
with its 95 % paired t interval (and a paired bootstrap of the ratio of medians as a check), the Wilcoxon
signed-rank p-value, and the harness's CPU during the measured window split by what used it.

A side is `layerbench`, `hand`, or `hand+INGREDIENT+...` where an ingredient adds one piece of what layerbench does
to the hand run (to test candidate causes one at a time):
    hook      layerbench's exact run command: the Lua wrapper with its per-interval JSON lines, --histogram=on
    stream    sysbench's output read line by line by Python and parsed (the orchestrator's main loop)
    sampler   the resource sampler running during the run
    checksum  CHECKSUM TABLE of every table before the run (the per-run restore check before #20)
    env       the environment facts layerbench collects before the run (SHOW GLOBAL VARIABLES, ...)

A third side runs in the same rounds and is reported against b: `--c hand` makes every round an A/A control as
well, so the width of layerbench/hand can be read next to the width of hand/hand measured at the same moments.
    .venv/bin/python bench/fidelity.py [--pairs 40] [--minutes M] [--duration 10] [--warmup 0] [--a layerbench]
                                       [--b hand] [--c hand] [--tables 4] [--rows 25000] [--quick]
Ctrl-C stops the run in progress (its server is stopped, the bench's folders removed) and reports the rounds
completed so far.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from common import host_server_backend, parse_args, say, table
from rich.console import Console
from scipy import stats

from layerbench.analysis.loading import analyze
from layerbench.analysis.overhead import overhead_rows
from layerbench.campaign.models import parse_campaign
from layerbench.cli.progress import RichProgress
from layerbench.errors import Interrupted
from layerbench.hosts.procs import run as run_process
from layerbench.measure import environment
from layerbench.measure.cpu import ResourceSampler
from layerbench.run.orchestrator import run_campaign
from layerbench.secrets import write_private
from layerbench.server.datadir import query
from layerbench.server.prepare import ensure_snapshot
from layerbench.server.tables import table_checksums
from layerbench.store import Store
from layerbench.sysbench.command import config_file_text, hook_script, run_argv, workload_args
from layerbench.sysbench.output import parse_mark_line, parse_output

INGREDIENTS = ("hook", "stream", "sampler", "checksum", "env")
SERVER_CPU, CLIENT_CPU = "0", "1"
# sd of one pair's log ratio, quiet machine, issue #22's pairs without their outlier: 40 pairs detect a 2 % bias
# with 80 % power at alpha 0.05 (normal approximation). Measured 2026-11-23 with 20 pairs: 0.12 (docs/fidelity.md),
# at which 40 pairs resolve about +-4 %; the bench prints the interval it reached
PAIR_SD = 0.045
DEFAULT_PAIRS = math.ceil(((1.96 + 0.84) * PAIR_SD / 0.02) ** 2)
DEFAULT_DURATION = 10


@dataclass
class Sample:
    tps: float
    harness: dict[str, float] = field(default_factory=dict)  # CPU seconds by part, in the measured window
    window: float = 0.0
    cpu_ms_per_tx: dict[str, float] = field(default_factory=dict)  # server, client
    disk_reads: int | None = None  # InnoDB pages the run read from disk (Innodb_buffer_pool_reads), hand only


@dataclass(frozen=True)
class Setup:
    duration: int
    warmup: int
    work: Path
    tables: int = 4
    rows: int = 25_000
    snapshot: Any = None


def campaign(setup: Setup):
    return parse_campaign({
        "name": "fidelity", "baseline": "host", "repetitions": 1, "output": str(setup.work),
        "busy": "keep",  # one layerbench run per round, timed as a whole beside the hand run: never a rerun
        "variants": [{"name": "host", "backend": "host", "cpus": SERVER_CPU, "client_cpus": CLIENT_CPU}],
        "workload": {"tables": setup.tables, "table_size": setup.rows, "threads": 2, "duration": setup.duration,
                     "warmup": setup.warmup},
    })


# --- the harness's own CPU, per thread ----------------------------------------------------------------------


def thread_cpu() -> dict[int, float]:
    """CPU seconds of every thread of this process (schedstat: nanoseconds on a CPU)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            out[int(tid)] = int(Path(f"/proc/self/task/{tid}/schedstat").read_text().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return out


def thread_part(tid: int) -> str:
    if tid == os.getpid():
        return "main loop: reading sysbench's output"
    for thread in threading.enumerate():
        if thread.native_id == tid:
            if thread.name == "layerbench-sampler":
                return "resource sampler"
            if type(thread).__name__ == "_RefreshThread":
                return "Rich progress: redraws"
            return f"other thread ({type(thread).__name__})"
    return "other thread"


class WindowProgress:
    """The CLI's progress, plus two readings of every harness thread's CPU time: at the first interval and at
    the interval `duration - 1` s in, so the window lies inside sysbench's measured time."""

    def __init__(self, inner: Any, last: float) -> None:
        self.inner, self.last = inner, last
        self.first: tuple[float, dict[int, float]] | None = None
        self.parts: dict[str, float] = {}
        self.window = 0.0
        self.in_progress = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def interval(self, spec: Any, tps: float, elapsed: float) -> None:
        began = time.thread_time()
        self.inner.interval(spec, tps, elapsed)
        if self.first is None:
            self.first = (time.monotonic(), thread_cpu())
            return
        self.in_progress += time.thread_time() - began
        if not self.window and elapsed >= self.last:
            self.close()

    def close(self) -> None:
        assert self.first is not None
        started, before = self.first
        now = thread_cpu()
        self.window = time.monotonic() - started
        for tid, seconds in now.items():
            part = thread_part(tid)
            self.parts[part] = self.parts.get(part, 0.0) + seconds - before.get(tid, 0.0)
        main = "main loop: reading sysbench's output"
        self.parts[main] = self.parts.get(main, 0.0) - self.in_progress
        self.parts["Rich progress: updates in the main loop"] = self.in_progress


def by_layerbench(setup: Setup) -> Sample:
    work = setup.work
    with open(os.devnull, "w") as sink, Store(work / "lb.db") as store, \
            RichProgress(Console(file=sink, force_terminal=True, width=120)) as rich:  # what a terminal user gets
        progress = WindowProgress(rich, setup.warmup + setup.duration - 1)
        outcome = run_campaign(campaign(setup), store, progress=progress)
        run = store.runs(outcome.campaign_id)[0]
        if run.status != "ok" or run.metrics.tps is None:
            raise RuntimeError(f"the layerbench run failed: {run.error}")
        overhead = overhead_rows(analyze(store, outcome.campaign_id))  # the report's own CPU per transaction
    # CPU s per 1,000 transactions = ms per transaction, over the sampler's window (the whole sysbench run); the
    # server only: the sampler reads sysbench's CPU until its last sample, up to a second before it exits
    server = overhead[0].cpu_per_1000_tx.get("server", 0.0) if overhead else 0.0
    return Sample(run.metrics.tps, progress.parts, progress.window, {"server": server})


# --- the same run by hand, with optional ingredients of layerbench -------------------------------------------


def hand_command(setup: Setup, cfg: Path, seconds: int, with_hook: bool) -> list[str]:
    """sysbench as a person types it; with the hook, layerbench's own command (warm-up by checkpoint)."""
    workload = campaign(setup).workloads[0]
    if with_hook:
        hook = setup.work / "hand-hook.lua"
        hook.write_text(hook_script(workload), encoding="utf-8")
        return ["taskset", "-c", CLIENT_CPU, *run_argv(workload, cfg, hook, 2)]
    return ["taskset", "-c", CLIENT_CPU, "sysbench", f"--config-file={cfg}", workload.test,
            *workload_args(workload, 2), f"--time={seconds}", "--report-interval=1", "--percentile=95", "run"]


def hand_output(cmd: list[str], work: Path, stream: bool) -> str:
    if stream:  # the orchestrator's way: Python reads and parses every line
        done = run_process("sysbench", cmd, log_path=work / "hand-sysbench.log", timeout=600,
                           on_line=lambda line: parse_mark_line(line))
        return done.output
    log = work / "hand-sysbench.log"
    with log.open("w") as handle:  # a shell redirect: nothing reads the output during the run
        subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT, check=True)
    return log.read_text()


def by_hand(setup: Setup, ingredients: set[str]) -> Sample:
    """A warm-up, by hand, is a first sysbench run of `warmup` seconds whose numbers are thrown away."""
    work, snapshot = setup.work, setup.snapshot
    workload = campaign(setup).workloads[0]
    with host_server_backend("hand", snapshot=snapshot.path, cpus=SERVER_CPU) as (endpoint, backend):
        if "checksum" in ingredients:
            table_checksums(endpoint, [f"sbtest{i}" for i in range(1, workload.tables + 1)])
        if "env" in ingredients:
            environment.server_variables(endpoint), environment.host_facts(), environment.tuning_facts()
        cfg = write_private(work / "hand.cfg", config_file_text(endpoint))
        hook = "hook" in ingredients
        if setup.warmup and not hook:
            subprocess.run(hand_command(setup, cfg, setup.warmup, False), capture_output=True, check=True)
        cmd = hand_command(setup, cfg, setup.duration, hook)
        sampler = ResourceSampler(backend.components, [], lambda: [], interval=1.0)
        reads, server, client = disk_reads(endpoint), server_seconds(backend), children_seconds()
        with sampling(sampler) if "sampler" in ingredients else nullcontext():
            output = hand_output(cmd, work, "stream" in ingredients)
        reads, server, client = disk_reads(endpoint) - reads, server_seconds(backend) - server, \
            children_seconds() - client
    totals = parse_output(output).totals
    assert totals is not None, output[-500:]
    per_tx = {"server": server * 1000 / totals.transactions, "client": client * 1000 / totals.transactions}
    return Sample(totals.tps, cpu_ms_per_tx=per_tx, disk_reads=reads)


def disk_reads(endpoint: Any) -> int:
    return int(query(endpoint, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'")[0][1])


def server_seconds(backend: Any) -> float:
    fields = Path(f"/proc/{backend.process.pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@contextmanager
def sampling(sampler: ResourceSampler) -> Iterator[None]:
    sampler.start()
    try:
        yield
    finally:
        sampler.stop()


def one_side(side: str, setup: Setup) -> Sample:
    base, *extra = side.split("+")
    if base == "layerbench":
        return by_layerbench(setup)
    return by_hand(setup, set(extra))


def check_side(side: str) -> str:
    base, *extra = side.split("+")
    unknown = [x for x in extra if x not in INGREDIENTS]
    if base not in ("layerbench", "hand") or unknown or (base == "layerbench" and extra):
        raise argparse.ArgumentTypeError(f"side {side!r}: layerbench, hand, or hand+{'+'.join(INGREDIENTS)}")
    return side


# --- statistics ---------------------------------------------------------------------------------------------


@dataclass
class Paired:
    ratio: float  # geometric mean of a/b
    low: float
    high: float
    median_ratio: float  # median(a) / median(b)
    median_low: float
    median_high: float
    wilcoxon_p: float
    sd_log: float


def paired(a: list[float], b: list[float]) -> Paired:
    """Paired t interval on log ratios (geometric mean ratio); bootstrap (BCa, pairs resampled) of the ratio of
    medians; Wilcoxon signed-rank test of the log ratios."""
    logs = np.log(np.asarray(a)) - np.log(np.asarray(b))
    t = stats.ttest_1samp(logs, 0.0)
    ci = t.confidence_interval(0.95)
    boot = stats.bootstrap((np.asarray(a), np.asarray(b)), lambda x, y, axis=-1: np.median(x, axis=axis) /
                           np.median(y, axis=axis), paired=True, vectorized=True, n_resamples=10_000,
                           random_state=np.random.default_rng(1), method="percentile")
    wilcoxon = stats.wilcoxon(logs).pvalue if len(logs) > 1 and np.any(logs != 0) else 1.0
    return Paired(math.exp(logs.mean()), math.exp(ci.low), math.exp(ci.high),
                  float(np.median(a) / np.median(b)), float(boot.confidence_interval.low),
                  float(boot.confidence_interval.high), float(wilcoxon), float(logs.std(ddof=1)))


def harness_share(samples: list[Sample]) -> dict[str, float]:
    """Median over runs of each part's CPU as a share of one core; 'total' is the median of the sums."""
    runs = [s for s in samples if s.window > 0]
    if not runs:
        return {}
    parts = sorted({p for s in runs for p in s.harness})
    shares = {p: float(np.median([s.harness.get(p, 0.0) / s.window for s in runs])) for p in parts}
    shares["total"] = float(np.median([sum(s.harness.values()) / s.window for s in runs]))
    return shares


# --- output -------------------------------------------------------------------------------------------------


def report(args: argparse.Namespace, sides: list[str], samples: list[list[Sample]]) -> None:
    """The pairs of a and b; with a third side c (an A/A control when it repeats b), the pairs of c and b from
    the same rounds: the interval a/b can only be read next to the interval c/b of the same machine."""
    n = min(len(s) for s in samples)
    samples = [s[:n] for s in samples]  # an interrupted round is left out
    a, b = samples[0], samples[1]
    names = [f"{name} ({'abc'[i]})" for i, name in enumerate(sides)]
    print(f"oltp_read_write, {args.tables} x {args.rows} rows, 2 threads, {args.duration} s, server on CPU "
          f"{SERVER_CPU}, sysbench on CPU {CLIENT_CPU}; {n} interleaved rounds, order rotated")
    print(table(["round", *(f"{name} TPS" for name in names), "a/b", *(["c/b"] if len(sides) > 2 else [])],
                [round_cells(i, [side[i].tps for side in samples]) for i in range(n)]))
    if n < 3:
        print("need >= 3 rounds for an interval")
    else:
        print_ratio(names[0], names[1], [s.tps for s in a], [s.tps for s in b], order=len(sides) == 2)
        if len(sides) > 2:
            print("control, same rounds:")
            print_ratio(names[2], names[1], [s.tps for s in samples[2]], [s.tps for s in b], order=False)
    print_costs(names, samples)
    print_harness(harness_share([s for side in samples for s in side]))


def round_cells(index: int, tps: list[float]) -> list[str]:
    """A round's TPS of every side, and each side's ratio to side b."""
    return [str(index + 1), *(f"{x:.1f}" for x in tps), *(f"{x / tps[1]:.3f}" for k, x in enumerate(tps) if k != 1)]


def print_costs(names: list[str], samples: list[list[Sample]]) -> None:
    """CPU per transaction (less sensitive to a busy machine than TPS) and the run's InnoDB disk reads."""
    for name, side in zip(names, samples, strict=True):
        if not side:
            continue
        cpu = {k: float(np.median([s.cpu_ms_per_tx.get(k, np.nan) for s in side])) for k in ("server", "client")}
        reads = [s.disk_reads for s in side if s.disk_reads is not None]
        shown = f"; InnoDB pages read from disk during the run: median {np.median(reads):.0f}" if reads else ""
        client = "n/a (sampler)" if np.isnan(cpu["client"]) else f"{cpu['client']:.3f} ms"
        print(f"{name}: CPU per transaction: server {cpu['server']:.3f} ms, sysbench {client}{shown}")


def print_ratio(a: str, b: str, tps_a: list[float], tps_b: list[float], order: bool) -> None:
    p = paired(tps_a, tps_b)
    print(f"medians: {a} {np.median(tps_a):.1f} TPS, {b} {np.median(tps_b):.1f} TPS")
    print(f"ratio {a}/{b} (geometric mean of pairs): {p.ratio:.3f}, 95 % CI [{p.low:.3f}, {p.high:.3f}] "
          f"(paired t on log ratios; Wilcoxon p={p.wilcoxon_p:.3f}; sd of log ratio {p.sd_log:.3f})")
    print(f"ratio of medians: {p.median_ratio:.3f}, 95 % CI [{p.median_low:.3f}, {p.median_high:.3f}] "
          "(paired bootstrap)")
    print(f"resolution: {(p.low - 1) * 100:+.1f} % .. {(p.high - 1) * 100:+.1f} %; within 0.98-1.02: "
          f"{'yes' if p.low >= 0.98 and p.high <= 1.02 else 'no'}")
    if order:
        logs = np.log(tps_a) - np.log(tps_b)
        first, second = math.exp(logs[0::2].mean()), math.exp(logs[1::2].mean())
        print(f"by order (a carry-over from the run before shows here): a first {first:.3f}, b first {second:.3f}")


def print_harness(shares: dict[str, float]) -> None:
    if shares:
        print("harness CPU during the measured window, share of one core (median of runs):")
        for part, share in sorted(shares.items(), key=lambda kv: (kv[0] == "total", -kv[1])):
            if share >= 0.000005 or part == "total":
                print(f"  {part:<42} {share * 100:6.3f} %")
        print(f"  budget 0.5 %: {'met' if shares['total'] < 0.005 else 'NOT met'}")


def round_order(sides: int, index: int) -> tuple[int, ...]:
    """Which side runs first in round `index`: two sides alternate; three go through all six orders in turn, so
    every side runs first, second and last equally often and after each other side equally often."""
    return list(itertools.permutations(range(sides)))[index % math.factorial(sides)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=DEFAULT_PAIRS, help="rounds to run (default %(default)s)")
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop starting rounds after this many minutes (whichever of --pairs comes first)")
    parser.add_argument("--duration", type=int, default=DEFAULT_DURATION)
    parser.add_argument("--warmup", type=int, default=0, help="layerbench: warmup (one sysbench, checkpoint); by "
                        "hand: a first sysbench run of this many seconds, thrown away")
    parser.add_argument("--a", type=check_side, default="layerbench", help="first side (default layerbench)")
    parser.add_argument("--b", type=check_side, default="hand", help="second side (default hand)")
    parser.add_argument("--c", type=check_side, default=None,
                        help="a third side in the same rounds, reported as c/b: `--c hand` is an A/A control")
    parser.add_argument("--tables", type=int, default=4, help="tables of the dataset (default %(default)s)")
    parser.add_argument("--rows", type=int, default=25_000, help="rows per table (default %(default)s)")
    args = parse_args(parser, {"pairs": 3, "duration": 2, "tables": 1, "rows": 1000})
    if min(args.pairs, args.duration, args.tables, args.rows) < 1 or args.warmup < 0 or \
            (args.minutes is not None and not 0 < args.minutes < 10_000):
        parser.error("--pairs, --duration, --tables and --rows must be >= 1, --warmup >= 0 and --minutes "
                     "between 0 and 10000")
    sides = [args.a, args.b] + ([args.c] if args.c else [])
    work = Path(tempfile.mkdtemp(prefix="lb-bench-fidelity-"))
    samples: list[list[Sample]] = [[] for _ in sides]
    started = time.monotonic()
    try:
        setup = Setup(args.duration, args.warmup, work, args.tables, args.rows)
        snapshot = ensure_snapshot(campaign(setup).workloads[0], None, log_dir=work / "snapshot")
        setup = Setup(args.duration, args.warmup, work, args.tables, args.rows, snapshot)
        for index in range(args.pairs):
            if args.minutes is not None and time.monotonic() - started > args.minutes * 60:
                say(f"--minutes {args.minutes:g} reached after {index} rounds")
                break
            for k in round_order(len(sides), index):
                samples[k].append(one_side(sides[k], setup))
            say(f"round {index + 1}/{args.pairs}: " + ", ".join(f"{name} {side[-1].tps:.1f} TPS"
                                                                for name, side in zip(sides, samples, strict=True)))
    except (KeyboardInterrupt, Interrupted):  # Interrupted: Ctrl-C during the layerbench side's campaign
        say("interrupted: the rounds so far")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(args, sides, samples)


if __name__ == "__main__":
    sys.exit(main())
