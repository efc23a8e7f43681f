"""Waiting for quiet learns from the machine: when to stop waiting, what the report says about it, and the time a
campaign spent waiting beside the time it spent on its runs.

The rule (`keep_waiting`, pure over the waits so far): a campaign waits for a quiet machine (`wait_for_quiet`
before each run, `busy.wait` after a replaced run) until its waits end at their limit: it stops waiting after
`STOP_IN_A_ROW` (2) waits in a row ended at their limit, or as soon as the waits that ended at their limit took
more than `WAIT_SHARE` (a tenth) of the campaign's wall time (so far, or as the plan estimated it, whichever is
longer: one wait of 30 s that ran out in a campaign of a few minutes; a busy spell at the start of an hour's
campaign costs a wait, not the rest of its waits); and each wait is cut to what is left of that tenth
(`wait_limit`), so the wait that fires the rule does not pass it either. From then on no run waits, and
`busy: rerun` keeps busy runs instead of rerunning them (a rerun that does not wait falls in the same busy spell);
the run whose wait fired the rule is stored with `stopped_waiting` (records/cpu.py QuietWait), so the report says
after which run and why. The orchestrator applies the rule (run/quiet_waits.py) unless
$LAYERBENCH_WAIT_FOR_QUIET is `always` (the bench's "before": bench/quiet_waits.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from layerbench.errors import BadInput
from layerbench.measure.cpu import QUIET_STEP
from layerbench.records import QuietWait, StoredCampaign, StoredRun

STOP_IN_A_ROW = 2  # waits in a row that ended at their limit: the machine stays busy
WAIT_SHARE = 0.1  # the most of a campaign's wall time its waits that ended at their limit may take
LEARNING_WORDS = ("learn", "always")  # $LAYERBENCH_WAIT_FOR_QUIET: learn (the default) or always wait


def learning(word: str | None) -> bool:
    """$LAYERBENCH_WAIT_FOR_QUIET: unset or `learn` stops waiting by the rule; `always` waits before every run."""
    if word is None or word == "learn":
        return True
    if word == "always":
        return False
    raise BadInput(f"LAYERBENCH_WAIT_FOR_QUIET: {word[:40]!r} is not a setting; set it to learn or always, or "
                   "unset it")


def ran_out(wait: QuietWait) -> bool:
    """The wait ended at its limit with the machine still busy (wait_for_quiet returns early only when quiet)."""
    return not wait.quiet


def keep_waiting(waits: Sequence[QuietWait], elapsed: float, in_a_row: int = STOP_IN_A_ROW,
                 share: float = WAIT_SHARE) -> bool:
    """Whether the next run still waits for quiet, after `waits` (in the order they happened) and `elapsed`
    seconds of the campaign: no once a wait was stored as the one that stopped waiting, `in_a_row` waits in a row
    ran out, or the waits that ran out took more than `share` of `elapsed`."""
    if any(w.stopped_waiting for w in waits):
        return False
    lost = sum(w.waited_seconds for w in waits if ran_out(w))
    if lost <= 0:
        return True
    last = waits[-in_a_row:]
    if len(last) == in_a_row and all(ran_out(w) for w in last):
        return False
    return math.isfinite(elapsed) and lost <= share * max(elapsed, 0.0)  # no budget without a finite time


def wait_limit(asked: float, waits: Sequence[QuietWait], elapsed: float, share: float = WAIT_SHARE) -> float:
    """The next wait's limit: `asked` (wait_for_quiet or busy.wait), at most what is left of the tenth after the
    waits that ran out (whole seconds, at least the quiet check's one sample), so that even the wait that fires the
    rule keeps the campaign's waiting for a quiet that does not come near a tenth of it."""
    lost = sum(w.waited_seconds for w in waits if ran_out(w))
    left = share * elapsed - lost if math.isfinite(elapsed) else 0.0
    return min(asked, max(float(math.floor(left)), QUIET_STEP)) if asked > 0 else 0.0


def limits_text(limits: Sequence[float]) -> str:
    """`30 s`, or `3-30 s` when the waits had different limits."""
    low, high = min(limits), max(limits)
    return f"{high:g} s" if low == high else f"{low:g}-{high:g} s"


def stopped_text(waits: Sequence[tuple[int, QuietWait]]) -> str | None:
    """`stopped waiting for quiet after run 3: 2 waits of 30 s ended at their limit`, from the (1-based run,
    wait) pairs in the order they ran; None when the campaign never stopped waiting."""
    for position, (run, wait) in enumerate(waits):
        if wait.stopped_waiting:
            out = [w for _, w in waits[:position + 1] if ran_out(w)]
            limits = [w.max_seconds if w.max_seconds is not None else w.waited_seconds for w in out] or [0.0]
            return (f"stopped waiting for quiet after run {run}: {len(out)} wait{'s' if len(out) != 1 else ''} of "
                    f"{limits_text(limits)} ended at {'their' if len(out) != 1 else 'its'} limit")
    return None


@dataclass(frozen=True)
class WaitAccount:
    """The time a campaign waited for quiet beside the time its runs took (replaced runs included) and its wall
    time; after which run it stopped waiting (1-based, None: it never stopped)."""

    waited: float
    runs: float
    took: float
    waits: int
    stopped_after: int | None = None

    @property
    def share(self) -> float:
        """The waits' share of the campaign's wall time."""
        return self.waited / self.took if self.took > 0 else 0.0

    def text(self) -> str:
        """`60 s (8 waits) beside 240 s of runs: 19 % of the campaign's 310 s; stopped waiting after run 3`"""
        stopped = f"; stopped waiting after run {self.stopped_after}" if self.stopped_after is not None else ""
        return (f"{self.waited:.0f} s ({self.waits} wait{'s' if self.waits != 1 else ''}) beside "
                f"{self.runs:.0f} s of runs: {self.share * 100:.0f} % of the campaign's {self.took:.0f} s{stopped}")

    def to_json(self) -> dict[str, float | int | str | None]:
        return {"waited_seconds": round(self.waited, 1), "run_seconds": round(self.runs, 1),
                "took_seconds": round(self.took, 1), "waits": self.waits, "wait_share": round(self.share, 4),
                "stopped_waiting_after_run": self.stopped_after, "text": self.text()}


def in_order(runs: Sequence[StoredRun]) -> list[StoredRun]:
    return sorted(runs, key=lambda r: (r.started_at or 0.0, r.idx or 0))


def run_waits(runs: Sequence[StoredRun]) -> list[tuple[int, QuietWait]]:
    """(1-based run number, its wait) of every run that waited for quiet, in the order they ran."""
    return [((r.idx or 0) + 1, r.facts.quiet_wait) for r in in_order(runs) if r.facts.quiet_wait is not None]


def wait_account(campaign: StoredCampaign, runs: Sequence[StoredRun]) -> WaitAccount | None:
    """None for a campaign without a finished run, or one that never waited for quiet."""
    timed = [r for r in runs if r.started_at is not None and r.finished_at is not None]
    waits = run_waits(runs)
    if not timed or not waits:
        return None
    waited = sum(w.waited_seconds for _, w in waits)
    walls = sum((r.finished_at or 0.0) - (r.started_at or 0.0) for r in timed)
    took = (campaign.finished_at or max(r.finished_at or 0.0 for r in timed)) - campaign.started_at
    stopped = next((run for run, w in waits if w.stopped_waiting), None)
    return WaitAccount(waited, max(0.0, walls - waited), max(took, walls), len(waits), stopped)
