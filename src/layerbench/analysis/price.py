"""Price-performance: TPS per currency unit per month, and what the baseline's throughput would cost on each
variant, for the variants whose campaign entry gives a cost_per_month."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.metrics import Metric
from layerbench.analysis.point_statistics import mean_of


@dataclass(frozen=True)
class PricePerformance:
    variant: str
    cost_per_month: float
    mean_tps: float | None
    tps_per_cost: float | None  # TPS per currency unit per month
    cost_for_baseline_tps: float | None  # what the baseline's throughput would cost on this variant (linear)


def price_performance(analysis: Analysis) -> list[PricePerformance]:
    """TPS per currency unit and the cost of the baseline's throughput, for variants with a cost_per_month."""
    costs = {v.name: v.cost_per_month for v in analysis.definition.variants}
    if not any(costs.values()):
        return []
    tps = {name: mean_of([r.values[Metric.TPS] for r in analysis.runs if r.variant == name and r.status == "ok"])
           for name in costs}
    base = tps.get(analysis.baseline)
    out = []
    for name, cost in costs.items():
        if cost:
            mine = tps[name]
            per_cost = mine / cost if mine else None
            for_base = cost * base / mine if (mine and base) else None
            out.append(PricePerformance(name, float(cost), mine, per_cost, for_base))
    return out
