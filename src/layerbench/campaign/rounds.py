"""How many rounds a campaign runs and what becomes of a busy run: `repetitions:` (a number, or adaptive) and
`busy:` of the campaign file (campaign/models.py), with the wall-time grammar both write their times in."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from layerbench.envvars import env_setting
from layerbench.errors import BadInput, shown
from layerbench.records.campaign import ROUNDS_MAX, ROUNDS_MIN, AdaptiveRepetitions
from layerbench.vocabulary.base import Strict
from layerbench.vocabulary.limits import MAX_RUNS, MAX_SECONDS

WALL_TIME = r"^\d{1,6}(\.\d{1,3})?\s?[smh]$"  # 90s, 30m, 2h


def seconds_of(text: str) -> float:
    return float(text.strip()[:-1]) * {"s": 1, "m": 60, "h": 3600}[text.strip()[-1]]


class Adaptive(Strict):
    """`repetitions: {auto: true, min: 6, max: 30, budget: 30m}`: rounds go on until every comparison is decided
    (analysis/sequential.py), `max` rounds are done, or the budget of wall time would be passed."""

    auto: Literal[True]
    min: int = Field(default=ROUNDS_MIN, ge=2, le=1000)
    max: int = Field(default=ROUNDS_MAX, ge=2, le=1000)
    budget: str | None = Field(default=None, pattern=WALL_TIME, description="wall time, like 90s, 30m or 2h")

    @model_validator(mode="after")
    def _ordered(self) -> Adaptive:
        if self.max < self.min:
            raise ValueError(f"repetitions: max {self.max} is below min {self.min}; set max >= min")
        if self.budget_seconds is not None and not 0 < self.budget_seconds <= 30 * MAX_SECONDS:
            raise ValueError(f"repetitions: budget {self.budget} is not between 1 s and 30 days")
        return self

    @property
    def budget_seconds(self) -> float | None:
        return None if self.budget is None else seconds_of(self.budget)

    def record(self) -> AdaptiveRepetitions:
        """The stored record of these settings (records/campaign.py): what the store keeps and the analysis reads."""
        return AdaptiveRepetitions(self.min, self.max, self.budget)

    @model_serializer
    def _as_record(self) -> dict[str, Any]:
        return self.record().to_json()  # the record writes the stored JSON (campaign_as_dict)


def checked_wait(value: str | None, no_wait: bool) -> str | None:
    """A wait for a quiet machine (`wait_for_quiet`, `busy.wait`): a wall time from the quiet check's one sample
    (QUIET_STEP: a shorter wait would be waited as one whole sample, more than the plan says) to 1 h, or `0s` where
    `no_wait` (no wait at all)."""
    from layerbench.measure.cpu import QUIET_STEP

    try:
        seconds = seconds_of(value) if value is not None and re.fullmatch(WALL_TIME, value) else None
    except ValueError:  # a character \s or \d takes that float() does not
        seconds = None
    if value is None or (seconds is not None and (QUIET_STEP <= seconds <= 3600 or (no_wait and seconds == 0))):
        return value
    step = f"{QUIET_STEP:g} s"
    if no_wait:
        raise ValueError(f"{shown(value)} is not a wait from 0 s to 1 h; write it like 30s or 5m (0s: no wait; else "
                         f"at least {step}, the quiet check's one sample)")
    raise ValueError(f"{shown(value)} is not a wait from {step} to 1 h; write it like 30s or 5m (at least {step}, "
                     "the quiet check's one sample)")


BUSY_POLICIES = ("rerun", "keep", "fail")
BUSY_WAIT_SECONDS = 30.0  # busy: rerun's default wait for quiet after a replaced run (BusyPolicy.wait)


def default_busy_policy() -> BusyPolicy:
    """What a campaign without `busy:` does: $LAYERBENCH_BUSY (`rerun`, `keep` or `fail`) when it is set, else
    `rerun`. For a shared machine that is busy during nearly every run (a CI runner), where replacing runs would
    only use up the rerun limit."""
    word = env_setting("LAYERBENCH_BUSY")
    if word is None:
        return BusyPolicy()
    if word not in BUSY_POLICIES:
        raise BadInput(f"LAYERBENCH_BUSY: {shown(word)} is not a policy; set it to rerun, keep or fail, or unset it")
    return BusyPolicy(policy=word)  # type: ignore[arg-type]


class BusyPolicy(Strict):
    """`busy: rerun` (the default), `keep` or `fail`, or `busy: {policy: rerun, max_reruns: 4, wait: 30s}`: what
    happens to a run whose measured window was busy (analysis/busy.py). `rerun` replaces it by an extra run of the
    same variant at the end of its round, at most `max_reruns` times per campaign (default: a quarter of the planned
    runs, rounded up), and the next run first waits up to `wait` (default 30 s) for the machine to be quiet, so that
    the rerun budget is not spent inside the same busy spell; `keep` keeps it (flagged in the warnings); `fail` stops
    the campaign."""

    policy: Literal["rerun", "keep", "fail"] = "rerun"
    max_reruns: int | None = Field(default=None, ge=0, le=MAX_RUNS, strict=True)
    wait: str | None = Field(default=None, max_length=20)

    @field_validator("wait")
    @classmethod
    def _bounded_wait(cls, value: str | None) -> str | None:
        return checked_wait(value, no_wait=True)

    @model_validator(mode="after")
    def _limit_is_for_reruns(self) -> BusyPolicy:
        for key, value in (("max_reruns", self.max_reruns), ("wait", self.wait)):
            if value is not None and self.policy != "rerun":
                raise ValueError(f"busy.{key}: is for reruns, but policy is {self.policy!r}; set policy: rerun or "
                                 f"remove {key}")
        return self

    def wait_after_replaced(self) -> float:
        """Seconds the run after a replaced one waits, at most, for a quiet machine (0: it does not wait)."""
        return seconds_of(self.wait) if self.wait is not None else BUSY_WAIT_SECONDS

    def reruns_allowed(self, planned_runs: int) -> int:
        """The most runs one campaign may replace: max_reruns, else a quarter of the planned runs (at least 1)."""
        if self.policy != "rerun":
            return 0
        return self.max_reruns if self.max_reruns is not None else max(1, math.ceil(planned_runs / 4))
