"""A busy machine: runs during which processes outside the run (the sampler's "other" CPU, which includes a
hypervisor's steal time) took more than a set share of the machine's CPUs, and what those processes were.

The share is other / (all CPU time of the window: busy + idle, every CPU); with 2 CPUs, 0.15 is 0.3 of a CPU
taken by something else for the whole run. Read from each run's stored resource record, so old campaigns and
rebuilt reports get the same warning."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.records import QuietWait, Usage
from layerbench.resources import BUSY_SHARE


@dataclass(frozen=True)
class Busy:
    share: float  # of all CPU time in the window, used by other processes (steal included)
    steal_share: float
    top: tuple[tuple[str, float], ...]  # (process name, CPU seconds), busiest first


def busy_run(usage: Usage, threshold: float = BUSY_SHARE) -> Busy | None:
    """The run's busy facts when other processes and steal took more than `threshold` of the machine."""
    total = sum(usage.cpu_seconds.values())
    other = usage.cpu_seconds.get("other", 0.0)
    if total <= 0 or other / total <= threshold:
        return None
    return Busy(other / total, usage.steal_seconds / total, usage.top_other)


def busy_warning(flagged: list[tuple[str, Busy]], total_runs: int, threshold: float = BUSY_SHARE) -> str | None:
    """One warning for the report: which runs, how busy, and the busiest other processes over them."""
    if not flagged:
        return None
    worst = max(b.share for _, b in flagged)
    steal = max(b.steal_share for _, b in flagged)
    by_name: dict[str, float] = {}
    for _, b in flagged:
        for name, seconds in b.top:
            by_name[name] = by_name.get(name, 0.0) + seconds
    names = ", ".join(f"{n} ({s:.1f} CPU-s)" for n, s in sorted(by_name.items(), key=lambda x: -x[1])[:3])
    runs = ", ".join(label for label, _ in flagged[:8]) + (" ..." if len(flagged) > 8 else "")
    steal_text = f"; hypervisor steal up to {steal * 100:.0f} %" if steal >= 0.01 else ""
    return (f"the machine was busy during {len(flagged)} of {total_runs} runs ({runs}): processes outside the runs "
            f"took up to {worst * 100:.0f} % of the CPUs (threshold {threshold * 100:.0f} %){steal_text}"
            f"{'; busiest: ' + names if names else ''}. Their numbers may swing; rerun them on a quiet machine")


def quiet_wait_warning(waits: list[tuple[str, QuietWait]]) -> str | None:
    """wait_for_quiet: the runs that started on a busy machine because the wait ran out, and the time waited."""
    if not waits:
        return None
    total = sum(w.waited_seconds for _, w in waits)
    loud = [label for label, w in waits if not w.quiet]
    if not loud:
        return None
    return (f"wait_for_quiet: {len(loud)} of {len(waits)} runs started on a busy machine after waiting the "
            f"longest allowed ({', '.join(loud[:8])}{' ...' if len(loud) > 8 else ''}); {total:.0f} s waited in all")
