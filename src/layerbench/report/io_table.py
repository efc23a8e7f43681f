"""The "Where the I/O went" tables (analysis/io.py) as header and text cells, the same for Markdown and HTML:
the server's InnoDB counters, and the kernel's counters per component. Formats only wrap these cells."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.analysis.io import COMPONENT_FIGURES, SERVER_FIGURES, IoRow, component_order

TITLE = "Where the I/O went"
INTRO = ("Per 1,000 transactions of the measured window (warm-up excluded), mean of runs. Server: the server's own "
         "counters (MariaDB and MySQL: InnoDB's SHOW GLOBAL STATUS deltas; PostgreSQL: pg_stat_database's blks_read "
         "and blks_hit); hit ratio = 1 - pages read from disk / logical page reads. "
         "Components: the kernel's per-process counters (/proc/PID/io: KiB = read_bytes/write_bytes, what reached "
         "the storage layer; ops = syscr/syscw, read and write system calls) and the server's cgroup (block-device "
         "KiB and requests). docs/io.md explains each counter.")


@dataclass(frozen=True)
class TextTable:
    header: list[str]
    rows: list[list[str]]
    text_columns: int  # the first columns hold text, the others numbers (right-aligned)


def number(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def ratio(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f} %"


def server_table(rows: list[IoRow], code: str = "`") -> TextTable:
    """`code`: how a variant name is marked (backticks in Markdown, nothing in HTML)."""
    shown = [k for k in SERVER_FIGURES if any(k in r.server for r in rows)]
    header = ["variant", "point", "runs", "buffer pool hit ratio", *[SERVER_FIGURES[k][0] for k in shown]]
    body = [[f"{code}{r.variant}{code}", r.point, str(r.runs), ratio(r.hit_ratio),
             *[number(r.server.get(k)) for k in shown]] for r in rows if r.server]
    return TextTable(header, body, 2)


def component_table(rows: list[IoRow], code: str = "`") -> TextTable:
    header = ["variant", "point", "component", *[label for label, *_ in COMPONENT_FIGURES.values()]]
    body = [[f"{code}{r.variant}{code}", r.point, name, *[number(r.components[name].get(k)) for k in COMPONENT_FIGURES]]
            for r in rows for name in component_order([r]) if name in r.components]
    return TextTable(header, body, 3)
