"""The plan's time estimate beside the wall time: what the campaign took in each part of the estimate
(records/estimate.py), from its runs' records, and which parts differed most. The report states it, and
`validate` says how far the last estimate of a campaign of that name was off.

Measured parts: `prepare`, the snapshots a run waited for (built, or another build's lock) and every re-prepare;
`restores`, each restore with its checks; `waits`, quiet waits, runs replaced by busy reruns and the time between
runs (a resume's pause lands here); `runs`, the rest of every run's wall time (start, warm-up, measurement, stop)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from layerbench.records import StoredCampaign, StoredFacts, StoredRun
from layerbench.records.estimate import PARTS, TimeEstimate


def restore_seconds_of(facts: StoredFacts) -> float:
    """A run's restore and its checks (0 for a run that did not restore a snapshot)."""
    reset = facts.reset
    if reset is None or reset.method != "snapshot":
        return 0.0
    return ((reset.restore.seconds or 0.0) if reset.restore else 0.0) + (reset.check_seconds or 0.0)


def prepare_seconds_of(facts: StoredFacts) -> float:
    """A run's re-prepare, or the snapshot it waited for."""
    reset = facts.reset
    reprepare = (reset.seconds or 0.0) if reset is not None and reset.method == "reprepare" else 0.0
    return reprepare + (facts.dataset_seconds or 0.0)


def quiet_seconds_of(facts: StoredFacts) -> float:
    return facts.quiet_wait.waited_seconds if facts.quiet_wait is not None else 0.0


def data_and_wait_seconds(facts: StoredFacts) -> float:
    """What a run spent on its data and its wait, which the estimate models apart from the backend's overhead."""
    return restore_seconds_of(facts) + prepare_seconds_of(facts) + quiet_seconds_of(facts)


def measured_parts(runs: Sequence[StoredRun], took: float) -> dict[str, float]:
    """The wall time `took` split into the estimate's parts, from the runs' records."""
    parts = dict.fromkeys(PARTS, 0.0)
    walls = 0.0
    for run in runs:
        if run.started_at is None or run.finished_at is None:
            continue
        wall = run.finished_at - run.started_at
        walls += wall
        if run.status == "replaced":
            parts["waits"] += wall
            continue
        facts = run.facts
        parts["prepare"] += prepare_seconds_of(facts)
        parts["restores"] += restore_seconds_of(facts)
        parts["waits"] += quiet_seconds_of(facts)
        parts["runs"] += wall - data_and_wait_seconds(facts)
    parts["waits"] += max(0.0, took - walls)
    return parts


def minutes(seconds: float) -> str:
    if abs(seconds) < 600:
        return f"{seconds:.0f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {seconds % 3600 / 60:02.0f} min"


@dataclass(frozen=True)
class TimeAccount:
    """A campaign's estimate (made as it started) and what it took, in total and per part."""

    campaign_id: int
    estimate: TimeEstimate
    took: float
    measured: dict[str, float]

    @property
    def off(self) -> float:
        """took / estimated - 1 (0.25: took a quarter longer)."""
        return self.took / self.estimate.seconds - 1 if self.estimate.seconds > 0 else 0.0

    def differed_most(self, count: int = 2) -> list[str]:
        """The parts whose measured time differed most from their estimate, largest first (at least 10 s)."""
        names = sorted(set(self.estimate.parts) | set(self.measured),
                       key=lambda k: -abs(self.measured.get(k, 0.0) - self.estimate.parts.get(k, 0.0)))
        return [f"{k} {minutes(self.measured.get(k, 0.0))} (estimated {minutes(self.estimate.parts.get(k, 0.0))})"
                for k in names[:count] if abs(self.measured.get(k, 0.0) - self.estimate.parts.get(k, 0.0)) >= 10]

    def text(self) -> str:
        """`estimated 12 min, took 15 min (+25 %); differed most: restores 3 min (estimated 1 min), ...`"""
        most = self.differed_most()
        tail = f"; differed most: {', '.join(most)}" if most else ""
        return (f"estimated {minutes(self.estimate.seconds)}, took {minutes(self.took)} ({self.off * 100:+.0f} %)"
                f"{tail} ({self.estimate.basis})")


def time_account(campaign: StoredCampaign, estimate: TimeEstimate | None,
                 runs: Sequence[StoredRun]) -> TimeAccount | None:
    """None for a campaign stored without an estimate (before schema 3, or imported) or without a finished run."""
    finishes = [r.finished_at for r in runs if r.finished_at is not None]
    if estimate is None or not finishes:
        return None
    took = (campaign.finished_at or max(finishes)) - campaign.started_at
    return TimeAccount(campaign.id, estimate, took, measured_parts(runs, took))
