"""Where each variant's server and client ran: inside a cluster, as its backend read it from the cluster's API
(the record's environment.backend.placement: server node, client node, network path, connect times measured
from the client before sysbench); with `hosts:`, the server's and the client's host and the path sysbench took
to the server (the record's environment.placement.reach: direct, or through an SSH forward). One row per variant
whose runs recorded it."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any

from layerbench.analysis.runs import RunRow

PLACEMENT_COLUMNS = ("variant", "server node or host", "client node or host", "network path",
                     "TCP connect µs (median)")


@dataclass(frozen=True)
class PlacementRow:
    variant: str
    server_node: str
    client_node: str
    network_path: str
    rtt_us: float | None  # median over the variant's runs of each run's median connect time


def counted(values: list[str]) -> str:
    counts = Counter(v for v in values if v)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{value} x{n}" for value, n in sorted(counts.items())) or "-"


def placement_of(run: RunRow) -> dict[str, Any]:
    env = run.facts.environment
    if env is None:
        return {}
    found = env.backend.document.get("placement")
    return found if isinstance(found, dict) else hosts_placement(env.document.get("placement"))


def hosts_placement(place: Any) -> dict[str, Any]:
    """With `hosts:`, the run's placement record as a row's fields: the server's and the client's host, and the path
    sysbench took to the server (run/reach.py's words: `direct: ...`, `ssh: ...`, `on db itself: ...`)."""
    reach = place.get("reach") if isinstance(place, dict) else None
    if not isinstance(reach, dict) or not place.get("client_host"):
        return {}
    path = reach.get("client") or reach.get("kind") or ""
    return {"server_node": place.get("server_host"), "client_node": place["client_host"], "network_path": str(path)}


def placement_row(variant: str, runs: list[RunRow]) -> PlacementRow | None:
    found = [p for p in (placement_of(r) for r in runs) if p.get("client_node")]
    if not found:
        return None
    rtts = [float(p["rtt_median_us"]) for p in found if isinstance(p.get("rtt_median_us"), int | float)]
    return PlacementRow(variant, counted([str(p.get("server_node") or "") for p in found]),
                        counted([str(p["client_node"]) for p in found]),
                        counted([str(p.get("network_path") or "") for p in found]),
                        statistics.median(rtts) if rtts else None)


def placement_rows(runs: list[RunRow]) -> list[PlacementRow]:
    """One row per variant whose successful runs recorded a client node, in the order the variants appear."""
    variants = list(dict.fromkeys(r.variant for r in runs))
    rows = [placement_row(v, [r for r in runs if r.variant == v and r.status == "ok"]) for v in variants]
    return [r for r in rows if r is not None]
