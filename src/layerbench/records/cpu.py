"""Where the CPU went, as a run stores it (the one CPU-usage model): the sampler's record of the measured window
(measure/cpu.py ResourceSampler builds it; stored in the run's facts under `resources`) and the quiet-machine
wait before a run (measure/cpu.py wait_for_quiet; under `quiet_wait`). Each writes and reads its own JSON.

Format history (the run facts' `format`, records/run.py): `resources` has had the same keys since before format 1;
stores of earlier versions also hold `per_1000_transactions` (now computed by the analysis only), which is read
past and not written again. `pressure` (issue #32: CPU pressure, PSI, over the window) is a key added later in
format 1: a store without it reads as no pressure measured."""

from __future__ import annotations

from dataclasses import dataclass, field

from layerbench.records.json import JSONObject, as_bool, as_float, as_int, as_list, as_object, as_str, opt_int, opt_str


@dataclass(frozen=True)
class Throttling:
    """A cgroup's CPU throttling over the window (cpu.stat deltas)."""

    periods: int
    throttled: int
    seconds: float

    @classmethod
    def from_json(cls, data: JSONObject) -> Throttling:
        return cls(as_int(data.get("nr_periods")), as_int(data.get("nr_throttled")),
                   as_float(data.get("throttled_seconds")))

    def to_json(self) -> JSONObject:
        return {"nr_periods": self.periods, "nr_throttled": self.throttled, "throttled_seconds": self.seconds}


@dataclass(frozen=True)
class TopProcess:
    """A process outside the run that used CPU in the window (the busiest first)."""

    name: str
    cpu_seconds: float
    pid: int | None = None

    @classmethod
    def from_json(cls, data: JSONObject) -> TopProcess:
        return cls(as_str(data.get("name"), "?"), as_float(data.get("cpu_seconds")), opt_int(data.get("pid")))

    def to_json(self) -> JSONObject:
        return {"pid": self.pid, "name": self.name, "cpu_seconds": self.cpu_seconds}


def _counts(value: object) -> dict[str, int]:
    return {str(k): as_int(v) for k, v in as_object(value).items()}


@dataclass(frozen=True)
class Usage:
    """The sampler's record: CPU seconds per component, "other" and "idle" included; context switches; cgroup
    throttling; hypervisor steal (part of "other"); the busiest processes outside the run; layerbench's own CPU."""

    cpu_seconds: dict[str, float] = field(default_factory=dict)
    throttling: dict[str, Throttling] = field(default_factory=dict)  # cgroup directory -> deltas
    steal_seconds: float = 0.0
    top_other: tuple[TopProcess, ...] = ()
    window_seconds: float = 0.0
    samples: int = 0
    ctx_voluntary: dict[str, int] = field(default_factory=dict)
    ctx_involuntary: dict[str, int] = field(default_factory=dict)
    sampler_cpu_seconds: float = 0.0
    harness_cpu_seconds: float = 0.0  # all of layerbench's own CPU in the window (sampler included)
    harness_cpus: str | None = None  # the CPUs the harness was moved to; None: it was not (run/harness.py)
    pressure: dict[str, dict[str, float]] = field(default_factory=dict)  # PSI: "system" or a cgroup -> some/full s
    notes: tuple[str, ...] = ()  # why a figure is missing (a pod's CPU not read off its node); written when any
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)  # as stored (exports show it)

    @classmethod
    def from_json(cls, data: JSONObject) -> Usage:
        cpu = {str(k): as_float(v) for k, v in as_object(data.get("cpu_seconds")).items()}
        throttling = {str(k): Throttling.from_json(as_object(v)) for k, v in as_object(data.get("throttling")).items()}
        top = tuple(TopProcess.from_json(as_object(p)) for p in as_list(data.get("top_other")))
        return cls(cpu, throttling, as_float(data.get("steal_seconds")), top, as_float(data.get("window_seconds")),
                   as_int(data.get("samples")), _counts(data.get("ctx_voluntary")),
                   _counts(data.get("ctx_involuntary")), as_float(data.get("sampler_cpu_seconds")),
                   as_float(data.get("harness_cpu_seconds")), opt_str(data.get("harness_cpus")), document=dict(data),
                   pressure={str(k): {str(n): as_float(x) for n, x in as_object(v).items()}
                    for k, v in as_object(data.get("pressure")).items()},
                   notes=tuple(as_str(n) for n in as_list(data.get("notes"))))

    def to_json(self) -> JSONObject:
        return {"window_seconds": self.window_seconds, "samples": self.samples, "cpu_seconds": dict(self.cpu_seconds),
                "ctx_voluntary": dict(self.ctx_voluntary), "ctx_involuntary": dict(self.ctx_involuntary),
                "throttling": {k: t.to_json() for k, t in self.throttling.items()},
                "sampler_cpu_seconds": self.sampler_cpu_seconds, "harness_cpu_seconds": self.harness_cpu_seconds,
                "harness_cpus": self.harness_cpus, "steal_seconds": self.steal_seconds,
                "top_other": [p.to_json() for p in self.top_other],
                "pressure": {k: dict(v) for k, v in self.pressure.items()}} | (
                    {"notes": list(self.notes)} if self.notes else {})


@dataclass(frozen=True)
class QuietWait:
    """wait_for_quiet before the run: how long it waited, whether the machine was quiet at the end, the busy
    share of its last step, the longest wait allowed, and `stopped_waiting`: after this wait the campaign stopped
    waiting for quiet (analysis/quiet.py's rule; written only when true, so older records read the same). `at`:
    the machine whose load it read, where the server runs (`this machine`, an ssh: host's name, `node <name>` of a
    pod read through the exec API; absent in records before it); `error`: why a reading there failed, which ended
    the wait (quiet unknown: recorded as quiet, so it never counts as a machine that stays busy)."""

    waited_seconds: float
    quiet: bool
    busy_share: float | None = None
    max_seconds: float | None = None
    stopped_waiting: bool = False
    at: str | None = None
    error: str | None = None
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: JSONObject) -> QuietWait:
        share, most, at, error = data.get("busy_share"), data.get("max_seconds"), data.get("at"), data.get("error")
        return cls(as_float(data.get("waited_seconds")), as_bool(data.get("quiet"), True),
                   None if share is None else as_float(share), None if most is None else as_float(most),
                   as_bool(data.get("stopped_waiting"), False), None if at is None else str(at),
                   None if error is None else str(error), dict(data))

    def to_json(self) -> JSONObject:
        stopped: JSONObject = {"stopped_waiting": True} if self.stopped_waiting else {}
        where: JSONObject = {k: v for k, v in (("at", self.at), ("error", self.error)) if v is not None}
        return {"waited_seconds": self.waited_seconds, "quiet": self.quiet, "busy_share": self.busy_share,
                "max_seconds": self.max_seconds, **stopped, **where}
