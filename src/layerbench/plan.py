"""What a campaign would do, before it does it: the resources each variant creates and a time estimate."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.campaign import Campaign, VariantBase
from layerbench.schedule import build_schedule

# Seconds a run costs beyond warm-up and duration (start, restore, checks, stop), per backend, measured here.
RUN_OVERHEAD = {"host": 4, "external": 2, "docker": 8, "vm": 20, "kubernetes": 8}
PREPARE_ROWS_PER_SECOND = 40_000

CREATES = {
    "host": "a private mariadbd on 127.0.0.1 (free port) with its own datadir copy, per run",
    "external": "nothing: uses the existing server (tables are prepared in it)",
    "docker": "a container (and its volume / bind dir / network as configured), labelled layerbench, per run",
    "vm": "a QEMU VM with a root disk overlay and a data disk (and a tap + bridge with network: tap), per run",
    "kubernetes": "a labelled namespace with a Secret, a ConfigMap, the server and a Service, per run",
}


@dataclass(frozen=True)
class Plan:
    runs: int
    seconds: float
    lines: list[str]


def variant_line(variant: VariantBase) -> str:
    kind = getattr(variant, "backend", "?")
    return f"{variant.name} ({kind}): {CREATES.get(kind, kind)}"


def make_plan(campaign: Campaign) -> Plan:
    schedule = build_schedule(campaign)
    kinds = {v.name: getattr(v, "backend", "host") for v in campaign.variants}
    seconds = sum(campaign.workload(s.workload).warmup + campaign.workload(s.workload).duration
                  + RUN_OVERHEAD.get(kinds[s.variant], 5) for s in schedule)
    rows = sum(w.tables * w.table_size for w in campaign.workloads)
    seconds += rows / PREPARE_ROWS_PER_SECOND
    lines = [variant_line(v) for v in campaign.variants]
    lines.append(f"datasets: {', '.join(f'{w.tables} x {w.table_size} rows' for w in campaign.workloads)}, prepared "
                 "once and cached (layerbench cache list)")
    return Plan(len(schedule), seconds, lines)
