"""A run's I/O record, written and read here: the deltas measure/io.py IoWindow took over sysbench's measured
window (per-component /proc/PID/io, the server cgroup's block I/O, SHOW GLOBAL STATUS), stored in the run's
facts under `io` (absent in runs made before it was recorded).

Format history (the run facts' `format`, records/run.py): the same keys since `io` was first stored in format 1."""

from __future__ import annotations

from dataclasses import dataclass, field

from layerbench.records.json import JSONObject, as_float, as_int, as_list, as_object, as_str


def counters(value: object) -> dict[str, int]:
    return {str(k): as_int(v) for k, v in as_object(value).items()}


@dataclass(frozen=True)
class IoCounters:
    window_seconds: float
    processes: dict[str, dict[str, int]]  # component -> /proc/PID/io field -> delta
    cgroups: dict[str, dict[str, int]]  # cgroup directory -> rbytes wbytes rios wios delta
    server_status: dict[str, int]  # SHOW GLOBAL STATUS counter -> delta
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: JSONObject) -> IoCounters:
        return cls(as_float(data.get("window_seconds")),
                   {str(k): counters(v) for k, v in as_object(data.get("processes")).items()},
                   {str(k): counters(v) for k, v in as_object(data.get("cgroups")).items()},
                   counters(data.get("server_status")), tuple(as_str(e) for e in as_list(data.get("errors"))),
                   tuple(as_str(n) for n in as_list(data.get("notes"))), dict(data))

    def to_json(self) -> JSONObject:
        return {"window_seconds": self.window_seconds, "processes": {k: dict(v) for k, v in self.processes.items()},
                "cgroups": {k: dict(v) for k, v in self.cgroups.items()}, "server_status": dict(self.server_status),
                "errors": list(self.errors), "notes": list(self.notes)}
