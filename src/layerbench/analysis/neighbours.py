"""The report's neighbours (docs/neighbours.md): per variant, each load generator the campaign ran beside its
server, with its kind, placement, asked intensity and what its tool reported it achieved (the median over the
variant's runs), read from each run's stored record (records/neighbours.py); and beside them, for every variant, the
contention its server saw in the measured window: its cgroup's CPU throttling and the CPU pressure (PSI) of the
machine and of its cgroup (records/cpu.py Usage). Pure: it only reads the runs."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from layerbench.analysis.aggregate import Analysis
from layerbench.neighbours.model import Neighbour
from layerbench.records.cpu import Usage
from layerbench.records.neighbours import NeighbourRun

TITLE = "Neighbours"
INTRO = ("Load the campaign started beside each variant's server, after the server was up and before the warm-up, "
         "stopped at the end of the measured window. 'achieved' is the tool's own report (median over the runs); "
         "their CPU is its own component (neighbour:<name>), never counted as a busy machine.")
COLUMNS = ("variant", "neighbour", "kind", "placement", "intensity", "achieved (median of runs)", "runs")


@dataclass(frozen=True)
class NeighbourRow:
    variant: str
    name: str
    kind: str
    placement: str
    intensity: str
    achieved: str
    runs: int
    warnings: tuple[str, ...] = ()

    def cells(self) -> list[str]:
        return [self.variant, self.name, self.kind, self.placement, self.intensity, self.achieved, str(self.runs)]


def neighbour_rows(analysis: Analysis) -> list[NeighbourRow]:
    """One row per variant and neighbour, variants in the campaign's order, each variant's neighbours in the order
    its runs recorded them; [] when no run had neighbours."""
    order = [v.name for v in analysis.definition.variants]
    seen: dict[tuple[str, str], list[NeighbourRun]] = {}
    for run in sorted(analysis.runs, key=lambda r: order.index(r.variant) if r.variant in order else len(order)):
        if run.status != "ok":
            continue
        for n in run.facts.neighbours.neighbours:
            seen.setdefault((run.variant, n.name), []).append(n)
    return [row(variant, runs) for (variant, _), runs in seen.items()]


def row(variant: str, runs: list[NeighbourRun]) -> NeighbourRow:
    first = runs[0]
    keys = {k for r in runs for k in r.achieved}
    median = {k: statistics.median([r.achieved[k] for r in runs if k in r.achieved]) for k in keys}
    shown = NeighbourRun(first.name, first.kind, first.placement, first.cpus, first.nice, first.intensity,
                         first.tool, achieved=median, error=next((r.error for r in runs if r.error), None))
    warnings = tuple(dict.fromkeys(f"{variant}, {first.name}: {w}" for r in runs for w in r.warnings))
    return NeighbourRow(variant, first.name, first.kind, where_text(first), first.intensity, shown.achieved_text(),
                        len(runs), warnings)


def where_text(run: NeighbourRun) -> str:
    """Its placement in the campaign's words (docker's QoS preset, the ssh: host), from the entry as given."""
    try:
        return Neighbour.model_validate(run.asked).where()
    except ValueError:  # an entry stored by another version, or damaged: what the record itself says
        return run.placement + (f", CPUs {run.cpus}" if run.cpus else "") + (f", nice {run.nice}" if run.nice else "")


CONTENTION_INTRO = ("What the server's CPUs felt in the measured window, for every variant (median over its runs): "
                    "the share of CFS periods its cgroup was throttled in and the seconds it was throttled, and the "
                    "CPU pressure (PSI `some`: the share of the window in which at least one runnable task waited for "
                    "a CPU) of the whole machine and of the server's cgroup, where the kernel reports it. '-': not "
                    "measured (no cgroup of its own, no CPU limit, or no PSI in this kernel).")
CONTENTION_COLUMNS = ("variant", "neighbours", "throttled periods", "throttled s / run", "CPU pressure, machine",
                      "CPU pressure, server cgroup", "runs")


@dataclass(frozen=True)
class ContentionRow:
    variant: str
    neighbours: str
    throttled_share: float | None
    throttled_seconds: float | None
    machine_pressure: float | None  # share of the window
    cgroup_pressure: float | None
    runs: int

    def cells(self) -> list[str]:
        def pct(x: float | None) -> str:
            return "-" if x is None else f"{100 * x:.0f} %"
        seconds = "-" if self.throttled_seconds is None else f"{self.throttled_seconds:.2f}"
        return [self.variant, self.neighbours, pct(self.throttled_share), seconds, pct(self.machine_pressure),
                pct(self.cgroup_pressure), str(self.runs)]


def median_of(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def throttled(usage: Usage) -> tuple[float | None, float | None]:
    periods = sum(t.periods for t in usage.throttling.values())
    if not periods:
        return None, None
    found = usage.throttling.values()
    return sum(t.throttled for t in found) / periods, sum(t.seconds for t in found)


def pressure_shares(usage: Usage) -> tuple[float | None, float | None]:
    """`some` CPU pressure as a share of the window: the machine's, and the server cgroup's (the first one)."""
    window = usage.window_seconds
    if window <= 0:
        return None, None
    machine = usage.pressure.get("system", {}).get("some_seconds")
    cgroup = next((v.get("some_seconds") for k, v in usage.pressure.items() if k != "system"), None)
    return (None if machine is None else machine / window), (None if cgroup is None else cgroup / window)


def contention_rows(analysis: Analysis) -> list[ContentionRow]:
    """One row per variant (every variant, so the quiet ones are beside the noisy ones); [] when no run had
    neighbours."""
    runs = [r for r in analysis.runs if r.status == "ok"]
    if not any(r.facts.neighbours.neighbours for r in runs):
        return []
    out = []
    for variant in [v.name for v in analysis.definition.variants]:
        mine = [r for r in runs if r.variant == variant]
        usages = [r.facts.usage for r in mine if r.facts.usage is not None]
        named = sorted({n.name for r in mine for n in r.facts.neighbours.neighbours})
        shares, seconds = zip(*(throttled(u) for u in usages), strict=True) if usages else ((), ())
        machine, cgroup = zip(*(pressure_shares(u) for u in usages), strict=True) if usages else ((), ())
        out.append(ContentionRow(variant, ", ".join(named) or "none", median_of(list(shares)),
                                 median_of(list(seconds)), median_of(list(machine)), median_of(list(cgroup)),
                                 len(mine)))
    return out
