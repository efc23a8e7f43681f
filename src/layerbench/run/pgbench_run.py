"""One run's pgbench (a workload with `tool: pgbench`, docs/campaign.md): its warm-up and its measured window, each
a pgbench process of its own against the run's server, and what they printed turned into the run's record by the
one parser of pgbench's output (pgbench/output.py), as run/execution.py does with sysbench's.

pgbench has no warm-up of its own that resets its counters, so the warm-up is a pgbench of `warmup` seconds and the
measured window a second one of `duration` seconds on the same server (new connections: the server's caches, not
its sessions, carry over). The I/O window (measure/io.py WindowMarks) begins when the warm-up ends and ends when the
measured pgbench does. The intervals of both are stored, the measured ones after the warm-up's (their times
shifted by `warmup`), so the store marks the warm-up's as sysbench's are marked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.hosts.procs import Completed
from layerbench.measure.environment import with_client_tool
from layerbench.pgbench.command import passfile_text, run_argv
from layerbench.pgbench.output import PROGRESS, ParsedPgbench, parse_output
from layerbench.records import Environment, RunRecord
from layerbench.secrets import write_private
from layerbench.sysbench.client import ClientRunner

if TYPE_CHECKING:
    from layerbench.campaign.workload import Workload
    from layerbench.measure.io import WindowMarks


@dataclass
class PgbenchRun:
    """The warm-up and the measured pgbench of one run; `marks` (the I/O window's) is read when each one ends."""

    workload: Workload
    dial: Endpoint  # where pgbench connects
    client: ClientRunner
    run_dir: Path
    private: Path
    clients: int
    marks: Callable[[], WindowMarks | None]
    on_interval: Callable[[float, float], None]  # (tps, seconds since the run began) of each progress line
    client_started: Callable[[], None] = lambda: None  # the CPU sampler's: a new pgbench process is there
    warm_output: str = ""
    warm_failed: bool = False

    @property
    def marker(self) -> Path:
        """In pgbench's command line (a -D variable): how the run's CPU accounting finds its processes."""
        return self.run_dir / "pgbench"

    def __call__(self) -> Completed:
        """Both pgbench processes; the measured one's exit and output (the warm-up's when it failed)."""
        workload, password = self.workload, [self.dial.password]
        passfile = write_private(self.private / "pgpass", passfile_text(self.dial))
        files = {passfile.name: passfile.read_text(encoding="utf-8")}
        if workload.warmup > 0:
            warm = self.client.run_client(
                run_argv(workload, self.dial, passfile, self.clients, workload.warmup, self.marker,
                         per_statement=False), files, log_path=self.run_dir / "pgbench-warmup.log",
                timeout=workload.warmup + 120, on_line=self._line(0.0), secrets=password)
            self.warm_output, self.warm_failed = warm.output, warm.returncode != 0
            self._mark()
            if self.warm_failed:
                return Completed(warm.returncode, warm.output)
        done = self.client.run_client(
            run_argv(workload, self.dial, passfile, self.clients, workload.duration, self.marker, per_statement=True),
            files, log_path=self.run_dir / "pgbench.log", timeout=workload.duration + 120,
            on_line=self._line(float(workload.warmup)), secrets=password)
        self._mark()
        return done

    def _mark(self) -> None:
        marks = self.marks()
        if marks is not None:
            marks.total_record()

    def _line(self, offset: float) -> Callable[[str], None]:
        def on_line(line: str) -> None:
            if line.startswith("pgbench ("):  # its banner: connected, so its process and the server's are there
                self.client_started()
            match = PROGRESS.match(line.strip())
            if match:
                self.on_interval(float(match.group(2)), float(match.group(1)) + offset)
        return on_line


def record_pgbench(record: RunRecord, run: PgbenchRun, done: Completed) -> None:
    """The run's intervals (warm-up's, then the measured window's), totals and pgbench's facts; RunFailed with
    pgbench's own line when it did not finish whole."""
    warm = parse_output(run.warm_output, run.clients) if run.warm_output else ParsedPgbench()
    measured = ParsedPgbench() if run.warm_failed else parse_output(done.output, run.clients)
    shift = float(run.workload.warmup)
    record.intervals = [*warm.intervals, *(replace(i, time=i.time + shift) for i in measured.intervals)]
    record.percentile = measured.percentile  # from its per-transaction log (pgbench/command.py), else None
    if done.returncode != 0 or measured.totals is None:
        errors = warm.errors if run.warm_failed else measured.errors
        raise RunFailed(pgbench_failure(done.returncode, errors, run.warm_failed))
    record.totals = measured.totals
    env = record.facts.environment
    if env is not None and measured.version:  # the report names pgbench, not this machine's sysbench
        record.facts.environment = Environment.from_json(with_client_tool(env.to_json(), f"pgbench {measured.version}"))
    record.facts.other["warmup_intervals"] = len(warm.intervals)
    record.facts.other["pgbench"] = {
        "script": run.workload.test, "scale": run.workload.pgbench_scale, "clients": run.clients,
        "version": measured.version,
        "statements": [{"command": s.command, "latency_ms": s.latency_ms} for s in measured.statements]}


def pgbench_failure(returncode: int, errors: list[str], in_warmup: bool) -> str:
    """The cause of a failed pgbench, in one line."""
    cause = errors[0] if errors else f"pgbench exited with code {returncode}"
    if returncode < 0:
        cause = f"pgbench was killed by signal {-returncode}" + (f" ({cause})" if errors else "")
    return f"{cause} (during the warm-up)" if in_warmup else cause
