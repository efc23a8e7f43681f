"""Where the I/O went: each run's I/O record (measure/io.py: deltas over sysbench's measured window) per 1,000
measured transactions, and per variant and point the mean over its runs (the run is the unit, as everywhere).

The buffer-pool hit ratio is 1 - Innodb_buffer_pool_reads / Innodb_buffer_pool_read_requests (the share of
logical page reads served from memory; the MySQL reference manual, "InnoDB Buffer Pool"). Pages read from disk
are Innodb_buffer_pool_reads: reads the pool could not serve, read from the data files (which may still have
been served by the OS page cache when the server does not use O_DIRECT; docs/io.md says how to tell).

A PostgreSQL server's figures come from its own counters of the benchmark's database (pg_stat_database, the
PostgreSQL manual's "The Cumulative Statistics System"): pages read from disk are blks_read (blocks not found in
shared_buffers, read through the kernel, so possibly from its page cache: PostgreSQL does not use O_DIRECT), page
reads (logical) blks_read + blks_hit, and the hit ratio blks_hit / (blks_hit + blks_read)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.point_statistics import VariantRuns, point_runs, point_title
from layerbench.analysis.runs import RunRow
from layerbench.records import IoCounters

KIB = 1024.0

# server figure -> (label, SHOW GLOBAL STATUS counter, divisor): per 1,000 transactions, bytes shown in KiB
SERVER_FIGURES: dict[str, tuple[str, str, float]] = {
    "pages_from_disk": ("pages read from disk", "Innodb_buffer_pool_reads", 1.0),
    "logical_reads": ("page reads (logical)", "Innodb_buffer_pool_read_requests", 1.0),
    "data_read_kib": ("data read KiB", "Innodb_data_read", KIB),
    "data_written_kib": ("data written KiB", "Innodb_data_written", KIB),
    "log_written_kib": ("redo log KiB", "Innodb_os_log_written", KIB),
    "pages_flushed": ("pages flushed", "Innodb_buffer_pool_pages_flushed", 1.0),
    "fsyncs": ("fsyncs", "Innodb_data_fsyncs", 1.0),
}
# The same figures from PostgreSQL's counters (measure/io.py: pg_stat_database of the benchmark's database): the sum
POSTGRESQL_FIGURES: dict[str, tuple[str, ...]] = {
    "pages_from_disk": ("pg_blks_read",),
    "logical_reads": ("pg_blks_read", "pg_blks_hit"),
}
# component figure -> (label, /proc/PID/io key, cgroup io key, divisor)
COMPONENT_FIGURES: dict[str, tuple[str, str, str, float]] = {
    "read_kib": ("read KiB", "read_bytes", "rbytes", KIB),
    "written_kib": ("written KiB", "write_bytes", "wbytes", KIB),
    "read_ops": ("read ops", "syscr", "rios", 1.0),
    "write_ops": ("write ops", "syscw", "wios", 1.0),
}
CGROUP = "cgroup (block device)"


@dataclass(frozen=True)
class RunIo:
    """One run's I/O per 1,000 measured transactions."""

    server: dict[str, float]  # SERVER_FIGURES key -> value
    hit_ratio: float | None  # share of logical page reads served from the buffer pool
    components: dict[str, dict[str, float]]  # component (or CGROUP) -> COMPONENT_FIGURES key -> value
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # why a figure is missing that is no error (a cgroup that does not count)


@dataclass(frozen=True)
class IoRow(VariantRuns):
    """Means over a variant's successful runs at one point."""

    server: dict[str, float]
    hit_ratio: float | None
    components: dict[str, dict[str, float]]
    warnings: tuple[str, ...] = field(default=())
    notes: tuple[str, ...] = field(default=())


def hit_ratio(status: dict[str, int]) -> float | None:
    if "pg_blks_hit" in status and "pg_blks_read" in status:
        looked_up = status["pg_blks_hit"] + status["pg_blks_read"]
        return status["pg_blks_hit"] / looked_up if looked_up > 0 else None
    requests = status.get("Innodb_buffer_pool_read_requests", 0)
    if requests <= 0 or "Innodb_buffer_pool_reads" not in status:
        return None
    return max(0.0, 1.0 - status["Innodb_buffer_pool_reads"] / requests)


def per_1000(value: float, transactions: int, divisor: float = 1.0) -> float:
    return value * 1000.0 / transactions / divisor


def component_figures(counters: dict[str, int], cgroup: bool, transactions: int) -> dict[str, float]:
    """A process's counters (/proc/PID/io keys) or a cgroup's (io.stat keys) per 1,000 transactions."""
    out = {}
    for name, (_, proc_key, cgroup_key, divisor) in COMPONENT_FIGURES.items():
        key = cgroup_key if cgroup else proc_key
        if key in counters:
            out[name] = per_1000(counters[key], transactions, divisor)
    return out


def run_io(record: IoCounters | None, transactions: int) -> RunIo | None:
    """A run's I/O record per 1,000 transactions; None without a record or without transactions."""
    if record is None or transactions <= 0:
        return None
    status = record.server_status
    server = {name: per_1000(status[counter], transactions, divisor)
              for name, (_, counter, divisor) in SERVER_FIGURES.items() if counter in status}
    server |= {name: per_1000(sum(status[c] for c in counters), transactions)
               for name, counters in POSTGRESQL_FIGURES.items() if all(c in status for c in counters)}
    components = {name: component_figures(c, False, transactions) for name, c in record.processes.items()}
    if record.cgroups:
        summed = {k: sum(c.get(k, 0) for c in record.cgroups.values()) for k in ("rbytes", "wbytes", "rios", "wios")}
        components[CGROUP] = component_figures(summed, True, transactions)
    return RunIo(server, hit_ratio(status), components, record.errors, record.notes)


def mean_dict(values: list[dict[str, float]]) -> dict[str, float]:
    keys = dict.fromkeys(k for v in values for k in v)
    return {k: statistics.fmean(v[k] for v in values if k in v) for k in keys}


def io_row(variant: str, point: str, runs: list[RunIo]) -> IoRow:
    ratios = [r.hit_ratio for r in runs if r.hit_ratio is not None]
    names = dict.fromkeys(n for r in runs for n in r.components)
    components = {n: mean_dict([r.components[n] for r in runs if n in r.components]) for n in names}
    errors = sorted({e for r in runs for e in r.errors})
    warnings = (f"`{variant}`, {point}: some I/O counters could not be read ({'; '.join(errors)})",) if errors else ()
    notes = tuple(sorted({n for r in runs for n in r.notes}))
    return IoRow(variant, point, len(runs), mean_dict([r.server for r in runs]),
                 statistics.fmean(ratios) if ratios else None, components, warnings, notes)


def run_figures(r: RunRow) -> RunIo | None:
    return run_io(r.facts.io, r.transactions or 0) if r.status == "ok" else None


def io_rows(analysis: Analysis) -> list[IoRow]:
    """Per point and variant (in the analysis' order), the mean I/O per 1,000 transactions of its runs that
    recorded one; empty for campaigns measured before I/O was recorded, and for imported results."""
    out = []
    for point in analysis.points:
        for v in point.variants:
            found = [f for r in point_runs(analysis.runs, point, v.variant) if (f := run_figures(r)) is not None]
            if found:
                out.append(io_row(v.variant, point_title(point), found))
    return out


def io_notes(rows: list[IoRow]) -> list[str]:
    """Each note once, with the variants it applies to."""
    found: dict[str, list[str]] = {}
    for r in rows:
        for note in r.notes:
            variants = found.setdefault(note, [])
            if r.variant not in variants:
                variants.append(r.variant)
    return [f"{', '.join(f'`{v}`' for v in variants)}: {note}" for note, variants in found.items()]


def component_order(rows: list[IoRow]) -> list[str]:
    """The components of all rows: the server first, the cgroup last, the others by name."""
    names = {n for r in rows for n in r.components}
    return sorted(names, key=lambda n: (n != "server", n == CGROUP, n))
