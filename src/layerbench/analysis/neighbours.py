"""The report's neighbours (docs/neighbours.md): per variant, each load generator the campaign ran beside its
server, with its kind, placement, asked intensity and what its tool reported it achieved (the median over the
variant's runs), read from each run's stored record (records/neighbours.py). Pure: it only reads the runs."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from layerbench.analysis.aggregate import Analysis
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
    where = first.placement + (f", CPUs {first.cpus}" if first.cpus else "") + (f", nice {first.nice}"
                                                                                 if first.nice else "")
    return NeighbourRow(variant, first.name, first.kind, where, first.intensity, shown.achieved_text(), len(runs),
                        warnings)
