"""Builders for tests: a store filled with synthetic runs, deterministic, for golden-file reports."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.records import CampaignRecord, Interval, IoCounters, RunRecord, Totals, Usage
from layerbench.run.schedule import RunSpec, points
from layerbench.store import Store


def synthetic_campaign(variants: dict[str, float], reps: int = 6, threads: tuple[int, ...] = (2,),
                       costs: dict[str, float] | None = None, extra: dict | None = None) -> dict:
    return {
        **(extra or {}), "name": "golden", "baseline": next(iter(variants)), "repetitions": reps, "seed": 7,
        "variants": [{"name": n, "backend": "host", **({"cost_per_month": costs[n]} if costs and n in costs else {})}
                     for n in variants],
        "workload": {"tables": 2, "table_size": 1000, "threads": list(threads), "duration": 10, "warmup": 2},
    }


def fill_store(path: Path, variants: dict[str, float], reps: int = 6, seed: int = 3,
               threads: tuple[int, ...] = (2,), fail: set[int] | None = None,
               costs: dict[str, float] | None = None, extra: dict | None = None, usage: dict | None = None) -> int:
    """A stored campaign whose variant v has TPS about 500 * variants[v], with a little noise; `extra`: more
    campaign keys (correction: sweep); `usage`: the CPU record (records.Usage as JSON) of every run."""
    rng = random.Random(seed)
    campaign = parse_campaign(synthetic_campaign(variants, reps, threads, costs, extra))
    with Store(path) as store:
        cid = store.create_campaign(CampaignRecord.from_json(campaign_as_dict(campaign)), "results", None)
        specs = shuffled_schedule(campaign)
        store.save_schedule(cid, [s.as_row() for s in specs])
        for spec in specs:
            record = synthetic_run(cid, spec, variants[spec.variant], rng, spec.idx in (fail or set()))
            record.facts.resources = None if usage is None else Usage.from_json(usage)
            store.save_run(record)
        store.finish_campaign(cid, "finished")
    return cid


def shuffled_schedule(campaign) -> list[RunSpec]:
    """The schedule as layerbench made it before balanced blocks (issue #43): an independent seeded shuffle of the
    variants per round and point. The synthetic stores keep it, as real stores keep the schedule they ran, so the
    golden reports and the verdicts the tests expect of them stay those of the same data."""
    rng, names, specs = random.Random(campaign.seed), [v.name for v in campaign.variants], []
    for r in range(1, campaign.rounds + 1):
        for workload, threads in points(campaign):
            shuffled = names[:]
            rng.shuffle(shuffled)
            specs += [RunSpec(len(specs) + i, r, name, workload, threads, r) for i, name in enumerate(shuffled)]
    return specs


def synthetic_run(cid: int, spec, factor: float, rng: random.Random, failed: bool) -> RunRecord:
    record = RunRecord(cid, spec.variant, spec.workload, spec.threads, spec.repetition, idx=spec.idx,
                       round=spec.round, started_at=1_700_000_000.0 + spec.idx * 20, warmup_seconds=2, percentile=95)
    if failed:
        record.status, record.error = "failed", "sysbench was killed by signal 9"
        return record
    tps = 500 * factor * (1 + rng.gauss(0, 0.01)) * spec.threads / 2
    record.intervals = [Interval(float(s), spec.threads, tps * (0.6 if s <= 2 else 1 + rng.gauss(0, 0.02)),
                                 tps * 20, tps * 14, tps * 4, tps * 2, 4.0 / factor, 0.0, 0.0) for s in range(1, 13)]
    transactions = round(tps * 10)
    record.totals = Totals(10.0, transactions, transactions * 20, transactions * 14, transactions * 4,
                           transactions * 2, transactions / 10, transactions * 2.0, 0, 0, transactions,
                           1.0, 3.6 / factor, 20.0, 4.5 / factor, 1000.0)
    record.facts.io = IoCounters.from_json(synthetic_io(transactions, factor))
    return record


def synthetic_io(transactions: int, factor: float) -> dict:
    """An I/O record (records/io.py:IoCounters) whose pages from disk grow as the variant gets slower."""
    misses = round(transactions * 3 / factor)
    status = {"Innodb_buffer_pool_read_requests": transactions * 60, "Innodb_buffer_pool_reads": misses,
              "Innodb_data_read": misses * 16384, "Innodb_data_written": transactions * 9000,
              "Innodb_os_log_written": transactions * 3000, "Innodb_data_fsyncs": transactions // 10}
    zero = dict.fromkeys(("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes"), 0)
    return {"window_seconds": 10.0, "cgroups": {}, "server_status": status, "errors": [], "notes": [],
            "processes": {"server": zero | {"read_bytes": misses * 16384, "write_bytes": transactions * 6000,
                                            "syscr": misses, "syscw": transactions // 4},
                          "client": zero | {"syscw": transactions // 50}}}


def interrupt_campaign(path: Path, started, settle: float = 3.0, wait: float = 240.0) -> tuple[int, str]:
    """`layerbench run path` in a child process, Ctrl-C (SIGINT) once `started()` says its server is up;
    returns the exit code and the output."""
    import signal
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and not started() and proc.poll() is None:
        time.sleep(0.5)
    assert started(), "the campaign's server never appeared"
    time.sleep(settle)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, out


def stored_rows(store: Store, campaign_id: int) -> list[dict]:
    """The runs table's rows of a campaign as stored (columns by name; `details` the JSON text), for tests that
    check what a campaign wrote."""
    return [dict(row) for row in store.db.execute(
        "SELECT * FROM runs WHERE campaign_id=? ORDER BY COALESCE(idx, id), id", (campaign_id,))]


class SaidLines:
    """A progress of the campaign loop that keeps the lines it is told (`message`) and ignores the rest."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)

    def campaign_started(self, *_: object) -> None:
        pass

    def run_started(self, *_: object) -> None:
        pass

    def interval(self, *_: object) -> None:
        pass

    def run_finished(self, *_: object) -> None:
        pass


def paired_ratios(db: Path, variant: str, baseline: str) -> list[float]:
    """Per round, the variant's TPS over the baseline's of the same round (runs close in time, so the machine's
    other load, which swings a lot on a shared 2-core machine, weighs on both alike)."""
    with Store(db) as store:
        runs = [r for r in store.runs(store.campaign("latest").id) if r.status == "ok" and r.metrics.tps]
    by_round: dict[int, dict[str, float]] = {}
    for run in runs:
        by_round.setdefault(run.round, {})[run.variant] = run.metrics.tps
    return [r[variant] / r[baseline] for r in by_round.values() if variant in r and baseline in r]


OTHER_LOAD_LIMIT = 0.5  # measured here: with other work at 65-95 % of both CPUs, TPS swung 4x between rounds
                        # whatever the neighbours, and a host hog's runs were faster than the quiet ones


def other_load(db: Path, variant: str) -> float:
    """The median share of the machine's CPU time (both CPUs) that work outside this campaign used in the measured
    windows of the variant's runs (the sampler's `other`, named with its host when the campaign has `hosts:`; the
    quiet variant's, as an ssh-placed neighbour on the lab's hosts counts as `other` here)."""
    with Store(db) as store:
        runs = [r for r in store.runs(store.campaign("latest").id)
                if r.status == "ok" and r.facts.usage and r.variant == variant]
    shares = [sum(v for k, v in r.facts.usage.cpu_seconds.items() if k.split("@")[0] == "other")
              / (r.facts.usage.window_seconds * len(os.sched_getaffinity(0))) for r in runs]
    return statistics.median(shares)


def processes_naming(marker: str) -> list[str]:
    """Command lines (arguments joined by spaces) of the live processes that contain `marker` (a test's folder)."""
    from layerbench.hosts.procfs import cmdline, pids

    found = []
    for pid in pids():
        try:
            cmd = " ".join(cmdline(pid))
        except OSError:
            continue
        if marker in cmd:
            found.append(cmd)
    return found


def run_for_real(data: dict) -> tuple[object, list[tuple]]:
    """A campaign (a dict as the file says it) run for real into its `output:` folder's store: its outcome and its
    runs as (variant, status, tps, details, error) rows."""
    from layerbench.run import orchestrator

    db = Path(data["output"]) / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
        rows = store.db.execute("SELECT variant, status, tps, details, error FROM runs").fetchall()
    return outcome, [tuple(r) for r in rows]


@contextlib.contextmanager
def folders_postgres_enters(prefix: str) -> Iterator[Path]:
    """A folder under /tmp with the work and dataset folders (LAYERBENCH_WORK_DIR, LAYERBENCH_DATASET_DIR) set in
    it for the block: the server's user `postgres` can enter them (pytest's own are 0700). Removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        base.chmod(0o711)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("LAYERBENCH_WORK_DIR", str(base / "work"))
            patch.setenv("LAYERBENCH_DATASET_DIR", str(base / "datasets"))
            yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
