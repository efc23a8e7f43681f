"""The campaign's waits for a quiet machine: how long the next run waits (wait_for_quiet, busy.wait after a
replaced run), and, by analysis/quiet.py's rule, when the campaign stops waiting because the machine stays busy
(the run whose wait fired the rule is stored with `stopped_waiting`; `resume` goes on from the stored waits).
$LAYERBENCH_WAIT_FOR_QUIET=always turns the rule off (every run waits, as before the rule)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Protocol

from layerbench.analysis.quiet import keep_waiting, learning, run_waits, stopped_text, wait_limit
from layerbench.campaign.models import Campaign
from layerbench.campaign.rounds import seconds_of
from layerbench.envvars import env_setting
from layerbench.records import QuietWait, RunRecord
from layerbench.run.schedule import RunSpec
from layerbench.store import Store


class Says(Protocol):
    def message(self, text: str) -> None: ...


class QuietWaits:
    """The waits so far, in the order they ran, and whether the campaign still waits."""

    def __init__(self, campaign: Campaign, progress: Says) -> None:
        self.campaign, self.progress = campaign, progress
        self.learning = learning(env_setting("LAYERBENCH_WAIT_FOR_QUIET"))  # bad input: one line, before any run
        self.waits: list[tuple[int, QuietWait]] = []  # (1-based run, its wait)
        self.started = time.time()
        self.planned = 0.0  # the plan's estimate of the campaign's wall time, seconds

    @property
    def waiting(self) -> bool:
        return not any(w.stopped_waiting for _, w in self.waits)

    def recall(self, store: Store, campaign_id: int) -> None:
        """The waits of the runs stored so far, when the campaign started and how long the plan said it takes."""
        self.started = store.campaign(campaign_id).started_at
        estimate = store.estimate(campaign_id)
        self.planned = estimate.seconds if estimate is not None else 0.0
        self.waits = run_waits(store.runs(campaign_id))

    def seconds(self, quiet_first: float) -> float:
        """Seconds the next run waits, at most, for quiet: wait_for_quiet, or busy.wait after a replaced run
        (`quiet_first`), whichever is longer, cut to what is left of the tenth (analysis/quiet.py wait_limit); 0
        once the campaign stopped waiting."""
        asked = self.campaign.wait_for_quiet
        seconds = max(seconds_of(asked) if asked else 0.0, quiet_first)
        if not self.waiting or not self.learning:
            return seconds if self.waiting else 0.0
        return wait_limit(seconds, [w for _, w in self.waits], self.elapsed())

    def elapsed(self) -> float:
        """The campaign's wall time so far, or the plan's estimate of it when that is longer."""
        return max(time.time() - self.started, self.planned)

    def learn(self, spec: RunSpec, record: RunRecord) -> None:
        """Keep the run's wait; when the rule says the machine stays busy, mark it as the wait after which the
        campaign stops waiting (stored with the run) and say so."""
        wait = record.facts.quiet_wait
        if wait is None:
            return
        self.waits.append((spec.idx + 1, wait))
        if not self.learning or keep_waiting([w for _, w in self.waits], self.elapsed()):
            return
        record.facts.quiet_wait = replace(wait, stopped_waiting=True)
        self.waits[-1] = (spec.idx + 1, record.facts.quiet_wait)
        unrun = "; busy runs are kept, not rerun" if self.campaign.busy_policy.policy == "rerun" else ""
        self.progress.message(f"{stopped_text(self.waits)} (the machine stays busy): later runs start without "
                              f"waiting{unrun}")
