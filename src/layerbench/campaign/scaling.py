"""`scale:` (or `--scale`): a campaign's workloads at the published study's size, or at a size scaled to this
machine that keeps the study's ratios (dataset : buffer pool : RAM). The arithmetic is here and pure; the plan and
the report say which size ran (run/plan.py, analysis/published.py). docs/studies.md, "At the published size".

- `published`: the study's tables and rows (or its data size / ROW_BYTES rows over the workload's tables), its run
  length, and its buffer pool as a percentage of its data.
- `machine`: the same, with the rows multiplied by min(1, this machine's RAM / the study's RAM): the dataset and
  the buffer pool (a percentage of the data) shrink together, so data : pool : RAM stay the study's. Never larger
  than the study.
A workload that sets its own `buffer_pool:` (already a percentage of the data) keeps it.

The derived workloads are keys, as written ones: campaign/models.py with_scale validates the campaign made of
them with the same models as a written one (issue #44, kind 7)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from layerbench.campaign.published import PublishedSize
from layerbench.vocabulary.sizes import published_size_bytes

if TYPE_CHECKING:
    from layerbench.campaign.models import Campaign
    from layerbench.campaign.workload import Workload

ROW_BYTES = 260  # as run/preflight.py's BYTES_PER_ROW: a sysbench row with its index in InnoDB (a test checks)
Scale = Literal["published", "machine"]


@dataclass(frozen=True)
class ScaledSize:
    """What one workload runs at: rows per table, tables, the buffer pool's share of the data, the run lengths."""

    tables: int
    table_size: int
    factor: float  # of the study's rows: 1 at the published size
    buffer_pool_pct: float | None  # the study's pool / its data, in percent (None: the study gave no pool)
    duration: int | None
    warmup: int | None


def published_rows(size: PublishedSize, tables: int) -> tuple[int, int]:
    """(tables, rows per table) of the study: as it gave them, or its data size spread over `tables`."""
    if size.tables is not None and size.table_size is not None:
        return size.tables, size.table_size
    assert size.data is not None  # PublishedSize requires one or the other
    tables = size.tables or tables
    return tables, max(1, round(published_size_bytes(size.data) / ROW_BYTES / tables))


def data_bytes(size: PublishedSize) -> int:
    """The study's data: as it said, else its rows times ROW_BYTES."""
    if size.data is not None:
        return published_size_bytes(size.data)
    return (size.tables or 0) * (size.table_size or 0) * ROW_BYTES


def machine_factor(size: PublishedSize, ram_here: int) -> float:
    """min(1, this machine's RAM / the study's): the share of the study's dataset that keeps data : RAM."""
    if size.ram is None:
        raise ValueError("scale: machine needs published.size.ram (the study machine's memory) to keep "
                         "dataset : buffer pool : RAM; give it, or use scale: published")
    if ram_here <= 0:
        raise ValueError("scale: machine: this machine's memory could not be read; use scale: published")
    return min(1.0, ram_here / published_size_bytes(size.ram))


def scaled_size(size: PublishedSize, mode: Scale, tables: int, ram_here: int) -> ScaledSize:
    study_tables, rows = published_rows(size, tables)
    factor = 1.0 if mode == "published" else machine_factor(size, ram_here)
    pool = None if size.buffer_pool is None else published_size_bytes(size.buffer_pool) / data_bytes(size) * 100
    return ScaledSize(study_tables, max(1, round(rows * factor)), factor, pool, size.duration, size.warmup)


def pct_text(value: float) -> str:
    """A buffer pool percentage as the workload's `buffer_pool:` takes it (at most 3 decimals)."""
    return f"{round(value, 3):g}%"


def scaled_workload(workload: Workload, size: PublishedSize, mode: Scale, ram_here: int) -> dict[str, object]:
    """The workload's keys at `mode`'s size, as written ones: campaign/models.py with_scale validates them."""
    s = scaled_size(size, mode, workload.tables, ram_here)
    update: dict[str, object] = {"tables": s.tables, "table_size": s.table_size}
    if workload.buffer_pool is None and s.buffer_pool_pct is not None:
        update["buffer_pool"] = pct_text(s.buffer_pool_pct)
    update |= {k: v for k, v in (("duration", s.duration), ("warmup", s.warmup)) if v is not None}
    return workload.model_dump(round_trip=True, exclude_unset=True) | update


def machine_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def scaled_workloads(campaign: Campaign, mode: Scale, ram_here: int | None = None) -> list[dict[str, object]]:
    """The campaign's workloads at `mode`'s size, as the keys of written ones (validated by with_scale, in
    campaign/models.py); ValueError (one line) when the campaign cannot say it."""
    if campaign.published is None or campaign.published.size is None:
        raise ValueError(f"scale: {mode} needs published.size (the study's tables and rows or data, its buffer "
                         "pool, its RAM); add it, or remove scale")
    ram = machine_memory() if ram_here is None else ram_here
    return [scaled_workload(w, campaign.published.size, mode, ram) for w in campaign.workloads]

