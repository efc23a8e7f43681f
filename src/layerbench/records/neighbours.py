"""The record of a run's neighbours (docs/neighbours.md): for each load generator the campaign asked for, its
kind, placement, asked intensity, the start check (running, CPU used), and what the tool itself reported it
achieved. Stored with the run's facts under `neighbours`; it writes and reads its own JSON.

Format history: 1 (layerbench 0.3, issue #32): the first. A later format must read every earlier one."""

from __future__ import annotations

from dataclasses import dataclass, field

from layerbench.records.json import JSONObject, as_float, as_int, as_list, as_object, as_str, opt_int, opt_str
from layerbench.vocabulary.sizes import byte_text

FORMAT = 1


@dataclass(frozen=True)
class NeighbourRun:
    """One neighbour during one run."""

    name: str
    kind: str  # cpu | memory | disk | network
    placement: str  # host
    cpus: str | None
    nice: int
    intensity: str  # the asked intensity in words
    tool: str  # stress-ng | fio | iperf3
    asked: JSONObject = field(default_factory=dict)  # the campaign's entry as given
    check: JSONObject = field(default_factory=dict)  # at its start: running, cpu_percent (, asked, at_intensity)
    achieved: dict[str, float] = field(default_factory=dict)  # from the tool's own report
    warnings: tuple[str, ...] = ()
    error: str | None = None  # why there is no achieved figure
    exit_codes: tuple[int, ...] = ()

    def to_json(self) -> JSONObject:
        return {"name": self.name, "kind": self.kind, "placement": self.placement, "cpus": self.cpus,
                "nice": self.nice, "intensity": self.intensity, "tool": self.tool, "asked": dict(self.asked),
                "check": dict(self.check), "achieved": dict(self.achieved), "warnings": list(self.warnings),
                "error": self.error, "exit_codes": list(self.exit_codes)}

    @classmethod
    def from_json(cls, data: JSONObject) -> NeighbourRun:
        achieved = {str(k): as_float(v) for k, v in as_object(data.get("achieved")).items()}
        return cls(as_str(data.get("name"), "?"), as_str(data.get("kind"), "?"), as_str(data.get("placement"), "host"),
                   opt_str(data.get("cpus")), as_int(data.get("nice")), as_str(data.get("intensity")),
                   as_str(data.get("tool")), dict(as_object(data.get("asked"))), dict(as_object(data.get("check"))),
                   achieved, tuple(as_str(w) for w in as_list(data.get("warnings"))), opt_str(data.get("error")),
                   tuple(c for c in (opt_int(x) for x in as_list(data.get("exit_codes"))) if c is not None))

    def achieved_text(self) -> str:
        """What it achieved, in words (its tool's own figures), or why that is missing."""
        a = self.achieved
        if not a:
            return self.error or "no report"
        if self.kind == "memory" and "read_mb_per_second" in a:
            return (f"{a['read_mb_per_second']:,.0f} MB/s read, {a.get('write_mb_per_second', 0):,.0f} MB/s written, "
                    f"{a.get('cpu_percent_per_worker', 0):.0f} % CPU per worker")
        if self.kind in ("cpu", "memory"):
            return (f"{a.get('cpu_percent_per_worker', 0):.0f} % CPU per worker, "
                    f"{a.get('bogo_ops_per_second', 0):,.0f} bogo ops/s")
        if self.kind == "disk":
            parts = [f"{a[f'{d}_iops']:,.0f} {d} IOPS ({byte_text(a[f'{d}_bytes_per_second'], 'MiB', ',.1f')}/s)"
                     for d in ("read", "write") if f"{d}_iops" in a]
            return ", ".join(parts) + (f", {a['fsyncs']:,.0f} fsyncs" if "fsyncs" in a else "") or "no I/O"
        if self.kind == "database":
            return f"{a.get('tps', 0):,.1f} TPS ({a.get('qps', 0):,.0f} QPS) of its own sysbench"
        return f"{a.get('bits_per_second', 0) / 1e6:,.1f} Mbit/s sent"


@dataclass(frozen=True)
class NeighbourRecords:
    """Every neighbour of one run, in the campaign's order."""

    neighbours: tuple[NeighbourRun, ...] = ()
    format: int = FORMAT

    def to_json(self) -> JSONObject:
        return {"format": self.format, "neighbours": [n.to_json() for n in self.neighbours]}

    @classmethod
    def from_json(cls, data: object) -> NeighbourRecords:
        obj = as_object(data)
        return cls(tuple(NeighbourRun.from_json(as_object(n)) for n in as_list(obj.get("neighbours"))),
                   as_int(obj.get("format"), FORMAT))
