"""What one run recorded besides its numbers: the dataset reset, the environment (machine, server variables,
the backend's facts and warnings), the resource usage, the quiet-machine wait, the I/O counters, the busy
decision, the buffer pool sizing. The run fills RunFacts with these records (Reset.of, Environment.of, the
samplers' Usage, QuietWait and IoCounters, analysis/busy.py's BusyDecision); RunFacts.to_json writes them into
`runs.details` with a format number, and the same records read them back for the analysis.

Format history: none (before layerbench 0.3): the same keys without a number; 1: `format` added; later in 1,
the optional `busy` (what the campaign's `busy:` policy did with a busy run), then the records writing their own
parts (#28: the same keys, so still format 1). A later format must read every earlier one
(tests/unit/test_records.py reads a store written before format 1 and one of the release before #28)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from layerbench.records.cpu import QuietWait, Usage
from layerbench.records.io import IoCounters
from layerbench.records.json import (
    JSONObject,
    as_bool,
    as_float,
    as_int,
    as_list,
    as_object,
    as_str,
    opt_float,
    opt_int,
    opt_str,
)
from layerbench.records.neighbours import NeighbourRecords

FORMAT = 1
Scalar = str | int | float | bool | None
FactMap = dict[str, Scalar]  # named facts shown as they are (host, storage, tuning)


def facts(value: object) -> FactMap:
    return {str(k): v if isinstance(v, str | int | float | bool) or v is None else str(v)
            for k, v in as_object(value).items()}


@dataclass(frozen=True)
class Restore:
    """How a snapshot reached the run's datadir (server/restore.py): clone or copy (or a backend's own copy),
    and what that restore checked against the snapshot's manifest."""

    method: str
    verified: str
    files: int | None = None
    bytes: int | None = None
    seconds: float | None = None

    @classmethod
    def from_json(cls, data: JSONObject) -> Restore:
        return cls(as_str(data.get("method")), as_str(data.get("verified")), opt_int(data.get("files")),
                   opt_int(data.get("bytes")), opt_float(data.get("seconds")))


@dataclass(frozen=True)
class Reset:
    """How the run's dataset was restored: snapshot, reprepare or none. For a snapshot: the restore path, the
    verification asked (`files` or `checksum`) and its time, and the buffer pool's state at the start. Runs
    stored before file-level verification have `verified: checksum` (CHECKSUM TABLE through the variant's
    server) and no restore."""

    method: str
    seconds: float | None
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)
    restore: Restore | None = None
    verify: str | None = None
    check_seconds: float | None = None
    buffer_pool_at_start: str | None = None
    legacy_checksum: bool = False

    @classmethod
    def of(cls, method: str, seconds: float, facts: JSONObject) -> Reset:
        """The record of a reset as the run made it: its method and time, and the facts of that method (the
        snapshot's key, the restore, the verification, a script's dataset)."""
        return cls.from_json({"method": method, "seconds": round(seconds, 3), **facts})

    def to_json(self) -> JSONObject:
        return dict(self.document)

    @classmethod
    def from_json(cls, data: JSONObject) -> Reset:
        restore = data.get("restore")
        return cls(as_str(data.get("method")), opt_float(data.get("seconds")), dict(data),
                   Restore.from_json(restore) if isinstance(restore, dict) else None, opt_str(data.get("verify")),
                   opt_float(data.get("check_seconds")), opt_str(data.get("buffer_pool_at_start")),
                   data.get("verified") == "checksum")


@dataclass(frozen=True)
class BusyDecision:
    """What the campaign's `busy:` policy did with a run whose measured window was busy (analysis/busy.py):
    `replaced` (by the run at index `replaced_by`; the analysis leaves it out), `kept` (policy keep, the rerun
    limit was reached, or `waiting_stopped`: the campaign had stopped waiting for quiet, so a rerun would fall in the
    same busy spell), or `stopped` (policy fail); with the figures that made it busy."""

    action: str  # replaced | kept | stopped
    policy: str  # rerun | keep | fail
    share: float  # of all CPU time in the window, used by other processes (steal included)
    steal_share: float
    top: tuple[tuple[str, float], ...]  # (process name, CPU seconds), busiest first
    replaced_by: int | None = None  # 0-based schedule index of the replacement
    reruns_used: int = 0  # reruns of the campaign so far, this one included
    max_reruns: int = 0
    waiting_stopped: bool = False  # kept because the campaign no longer waits for quiet (analysis/quiet.py)
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: JSONObject) -> BusyDecision:
        top = tuple((as_str(as_list(p)[0], "?"), as_float(as_list(p)[1])) for p in as_list(data.get("top"))
                    if len(as_list(p)) == 2)
        return cls(as_str(data.get("action")), as_str(data.get("policy")), as_float(data.get("share")),
                   as_float(data.get("steal_share")), top, opt_int(data.get("replaced_by")),
                   as_int(data.get("reruns_used")), as_int(data.get("max_reruns")),
                   as_bool(data.get("waiting_stopped"), False), dict(data))

    def to_json(self) -> JSONObject:
        stopped: JSONObject = {"waiting_stopped": True} if self.waiting_stopped else {}
        return {"action": self.action, "policy": self.policy, "share": round(self.share, 4),
                "steal_share": round(self.steal_share, 4), "top": [[n, round(s, 2)] for n, s in self.top],
                "replaced_by": self.replaced_by, "reruns_used": self.reruns_used, "max_reruns": self.max_reruns,
                **stopped}


@dataclass(frozen=True)
class HostFacts:
    """The machine a server ran on (environment.host_facts)."""

    kernel: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    memory_bytes: int | None = None
    sysbench_version: str | None = None
    all: FactMap = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: JSONObject) -> HostFacts:
        return cls(opt_str(data.get("kernel")), opt_str(data.get("cpu_model")), opt_int(data.get("cpu_count")),
                   opt_int(data.get("memory_bytes")), opt_str(data.get("sysbench_version")), facts(data))


@dataclass(frozen=True)
class BackendFacts:
    """What a backend's describe() said: its kind, its warnings for the reader, and its other facts as given."""

    kind: str | None = None
    warnings: tuple[str, ...] = ()
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_json(cls, data: JSONObject) -> BackendFacts:
        return cls(opt_str(data.get("backend")), tuple(as_str(w) for w in as_list(data.get("warnings"))), dict(data))


@dataclass(frozen=True)
class Environment:
    """A run's environment: machine, backend, the server's effective variables, storage and host tuning; with
    `hosts:`, where client and server ran and the client's and the server's machine facts."""

    host: HostFacts
    backend: BackendFacts
    server_variables: dict[str, str]
    storage: FactMap
    tuning: FactMap
    client_host: FactMap
    document: JSONObject = field(default_factory=dict, compare=False, repr=False)
    server_host: FactMap = field(default_factory=dict)  # the server's machine (with `hosts:`; runs since #15)

    @classmethod
    def of(cls, host: JSONObject, backend: JSONObject, server_variables: dict[str, str], storage: JSONObject,
           tuning: JSONObject, placement: JSONObject | None = None) -> Environment:
        """The record of a run's environment as the run gathers it (measure/environment.py, the backend's
        describe()); `placement`: with `hosts:`, where client and server ran and every host's facts."""
        return cls.from_json({"host": host, "backend": backend, "server_variables": server_variables,
                              "storage": storage, "tuning": tuning, **(placement or {})})

    @classmethod
    def from_json(cls, data: JSONObject) -> Environment:
        variables = {str(k): str(v) for k, v in as_object(data.get("server_variables")).items()}
        return cls(HostFacts.from_json(as_object(data.get("host"))),
                   BackendFacts.from_json(as_object(data.get("backend"))), variables, facts(data.get("storage")),
                   facts(data.get("tuning")), facts(data.get("client_host")), dict(data),
                   facts(data.get("server_host")))

    def to_json(self) -> JSONObject:
        return dict(self.document)

    def server_place(self) -> tuple[str | None, frozenset[str]]:
        """With `hosts:`, the host the server ran on and the other hosts of the run that share its kernel (the same
        boot id: the namespace lab's hosts); a pod's node when its CPU was read there (`server_cpu_node` of the
        backend's facts: the harness is not a node); (None, empty) for a run without an inventory."""
        node = as_object(self.document.get("backend")).get("server_cpu_node")
        if isinstance(node, str) and node:
            return node, frozenset()
        server = as_object(self.document.get("placement")).get("server_host")
        if not isinstance(server, str):
            return None, frozenset()
        hosts = {str(k): as_object(v) for k, v in as_object(self.document.get("hosts")).items()}
        boot = hosts.get(server, {}).get("boot_id")
        return server, frozenset(name for name, f in hosts.items() if name != server and boot and
                                 f.get("boot_id") == boot)


@dataclass
class RunFacts:
    """Everything a run recorded besides totals, intervals and latency; the orchestrator fills it as the run
    goes with the records of each part, and to_json() writes them (with the format number) for the store."""

    reset: Reset | None = None
    environment: Environment | None = None
    resources: Usage | None = None
    quiet_wait: QuietWait | None = None
    data_bytes: int | None = None
    buffer_pool_ratio: str | None = None
    other: JSONObject = field(default_factory=dict)  # server_start_seconds, warmup_intervals, imported, ...
    io: IoCounters | None = None  # the measured window's I/O counters (measure/io.py IoWindow.result())
    busy: BusyDecision | None = None  # what `busy:` did with this run when it was busy

    def to_json(self) -> JSONObject:
        records = {"reset": self.reset, "environment": self.environment, "resources": self.resources,
                   "quiet_wait": self.quiet_wait, "io": self.io, "busy": self.busy}
        named = {"data_bytes": self.data_bytes, "buffer_pool_ratio": self.buffer_pool_ratio,
                 **{k: r.to_json() if r is not None else None for k, r in records.items()}}
        order = ("reset", "environment", "resources", "quiet_wait", "data_bytes", "buffer_pool_ratio", "io", "busy")
        return {"format": FORMAT, **self.other, **{k: named[k] for k in order if named[k] is not None}}

    @classmethod
    def from_json(cls, data: JSONObject) -> RunFacts:
        kept = ("reset", "environment", "resources", "quiet_wait", "format", "data_bytes", "buffer_pool_ratio",
                "io", "busy")
        other = {k: v for k, v in data.items() if k not in kept}
        found = {k: as_object(data[k]) if isinstance(data.get(k), dict) else None for k in kept}
        return cls(_read(Reset, found["reset"]), _read(Environment, found["environment"]),
                   _read(Usage, found["resources"]),
                   _read(QuietWait, found["quiet_wait"]), opt_int(data.get("data_bytes")),
                   opt_str(data.get("buffer_pool_ratio")), other, _read(IoCounters, found["io"]),
                   _read(BusyDecision, found["busy"]))


def _read(kind: Any, data: JSONObject | None) -> Any:
    return kind.from_json(data) if data is not None else None


@dataclass(frozen=True)
class StoredFacts:
    """A stored run's facts, typed for the analysis (read from any format)."""

    reset: Reset | None = None
    environment: Environment | None = None
    usage: Usage | None = None
    quiet_wait: QuietWait | None = None
    data_bytes: int | None = None
    buffer_pool_ratio: str | None = None
    io: IoCounters | None = None
    busy: BusyDecision | None = None
    neighbours: NeighbourRecords = field(default_factory=NeighbourRecords)  # records/neighbours.py (#32)
    dataset_seconds: float | None = None  # the run waited this long for its dataset's snapshot (built, or locked)

    @classmethod
    def from_json(cls, data: JSONObject) -> StoredFacts:
        raw = RunFacts.from_json(data)
        return cls(raw.reset, raw.environment if raw.environment and raw.environment.document else None,
                   raw.resources if raw.resources and raw.resources.document else None, raw.quiet_wait,
                   raw.data_bytes, raw.buffer_pool_ratio, raw.io if raw.io and raw.io.document else None,
                   raw.busy if raw.busy and raw.busy.document else None,
                   NeighbourRecords.from_json(data.get("neighbours")), opt_float(data.get("dataset_seconds")))
