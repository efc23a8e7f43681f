"""The plan's time estimate of a campaign as the store keeps it (made when the campaign starts, run/plan.py): its
total and its parts, so that the report and a later `validate` can put it beside the measured wall time
(analysis/timing.py). Parts: `prepare` (snapshots built and re-prepares), `restores` (each run's restore and its
checks), `runs` (warm-up, measurement and each backend's start and stop), `waits` (quiet waits and busy reruns),
and `first time` (images built once) when anything was left to build."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from layerbench.records.json import JSONObject, as_float, as_int, as_object, as_str

PARTS = ("prepare", "restores", "runs", "waits")


@dataclass(frozen=True)
class TimeEstimate:
    parts: dict[str, float] = field(default_factory=dict)  # part -> seconds
    past_runs: int = 0  # past runs the estimate is calibrated on (0: a rough estimate)
    basis: str = ""  # the estimate's words, e.g. "estimate from 12 past runs on this machine"

    @property
    def seconds(self) -> float:
        return sum(self.parts.values())

    def to_json(self) -> JSONObject:
        return {"parts": {k: round(v, 1) for k, v in self.parts.items()}, "past_runs": self.past_runs,
                "basis": self.basis}

    @classmethod
    def from_json(cls, data: JSONObject) -> TimeEstimate:
        parts = as_object(data.get("parts"))
        seconds = {str(k): as_float(v, 0.0) for k, v in parts.items()}
        return cls({k: v if math.isfinite(v) and v >= 0 else 0.0 for k, v in seconds.items()},
                   as_int(data.get("past_runs"), 0),
                   as_str(data.get("basis"), ""))
