"""A campaign's progress in the terminal (Rich): run i of n, the variant, live TPS and the time left; one line per
finished run. The orchestrator calls it through run/execution.py's `Progress` protocol."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn
from rich.text import Text

from layerbench.cli.terminal import console
from layerbench.records import RunRecord
from layerbench.run.schedule import RunSpec


class TimeLeftColumn(ProgressColumn):
    """Time left from the runs still to go, each taking about `seconds_per_run`."""

    def render(self, task: Task) -> Text:
        per_run = task.fields.get("per_run", 0.0)
        started = task.fields.get("run_started") or time.monotonic()
        left = max(0.0, (task.total or 0) - task.completed) * per_run - (time.monotonic() - started)
        minutes, seconds = divmod(int(max(left, 0)), 60)
        return Text(f"~{minutes}:{seconds:02d} left", style="cyan")


class RichProgress:
    """Draws run i of n, the variant, live TPS and time left; prints one line per finished run.

    Redrawn only when something changes (once per sysbench interval during a run), never by Rich's own 10 Hz
    refresh thread: those redraws cost about 1.7 % of a core, on the machine being measured (docs/fidelity.md)."""

    def __init__(self, to: Console = console) -> None:
        self.console = to
        self.bar = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[tps]}", markup=False), TimeLeftColumn(),
                            console=to, transient=True, auto_refresh=False)
        self.task: Any = None

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def message(self, text: str) -> None:
        self.console.print(Text(text, style="dim"))

    def campaign_started(self, campaign_id: int, total: int, done: int, seconds_per_run: float) -> None:
        self.console.print(f"campaign {campaign_id}: {total} runs ({done} already stored)")
        self.task = self.bar.add_task("starting", total=total, completed=done, tps="", per_run=seconds_per_run,
                                      run_started=time.monotonic())
        self.bar.refresh()

    def run_started(self, spec: RunSpec, position: int, total: int) -> None:
        self.bar.update(self.task, description=f"run {position}/{total} {spec.variant}", tps="starting",
                        total=total, run_started=time.monotonic(), refresh=True)  # a replacement adds a run

    def interval(self, spec: RunSpec, tps: float, elapsed: float) -> None:
        self.bar.update(self.task, tps=f"{tps:,.0f} TPS @ {elapsed:.0f}s", refresh=True)

    def run_finished(self, spec: RunSpec, record: RunRecord) -> None:
        self.bar.advance(self.task)
        self.bar.refresh()
        if record.status in ("ok", "replaced") and record.totals:
            t, busy = record.totals, " (busy: replaced)" if record.status == "replaced" else ""
            self.console.print(f"  run {spec.idx + 1}: {spec.label()}: {t.tps:,.1f} TPS, {t.qps:,.0f} QPS, "
                               f"avg {t.latency_avg_ms or 0:.2f} ms{busy}")
        else:
            self.console.print(Text(f"  run {spec.idx + 1}: {spec.label()}: failed: {record.error}", style="red"))
