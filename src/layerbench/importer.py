"""Import results measured elsewhere (a CSV, e.g. a published study's table) as a stored campaign, so they go
through the same statistics and reports as runs layerbench made itself.

Columns: `variant`, `iteration`, optional `threads`, and any of `total_queries`, `qps`, `tps`,
`lat_avg_ms`, `lat_p95_ms` (at least one metric). Header names are matched case-insensitively.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from layerbench.boundedyaml import read_bounded_text
from layerbench.campaign import MAX_RUNS, MAX_THREADS
from layerbench.errors import BadInput, shown
from layerbench.store import RunRecord, Store

METRIC_COLUMNS = ("total_queries", "qps", "tps", "lat_avg_ms", "lat_p95_ms")
KNOWN_COLUMNS = ("variant", "iteration", "threads", *METRIC_COLUMNS)
MAX_CSV_BYTES = 16 << 20
MAX_METRIC = 1e12  # far above any TPS, query count or latency; keeps every statistic finite
MAX_ITERATION = 1000  # as a campaign's repetitions
NAME_LIMIT = 63


@dataclass(frozen=True)
class ImportedRow:
    line: int
    variant: str
    iteration: int
    threads: int | None
    metrics: dict[str, float]


def _number(text: str, column: str, line: int) -> float:
    try:
        value = float(text.replace(",", "").replace("_", "").strip())
    except ValueError:
        raise BadInput(f"line {line}, column {column}: {shown(text)} is not a number; fix the CSV") from None
    if not math.isfinite(value) or not 0 <= value <= MAX_METRIC:
        raise BadInput(f"line {line}, column {column}: {shown(text)} must be a number from 0 to {MAX_METRIC:g}; "
                       "fix the CSV")
    return value


def _whole(text: str, column: str, line: int, most: int) -> int:
    value = _number(text, column, line)
    if value != int(value) or not 1 <= value <= most:
        raise BadInput(f"line {line}, column {column}: {shown(text)} must be a whole number from 1 to {most}; "
                       "fix the CSV")
    return int(value)


def check_name(text: str, where: str) -> str:
    """A campaign or variant name: printable, one line, at most NAME_LIMIT characters."""
    if not text or not text.isprintable() or len(text) > NAME_LIMIT:
        raise BadInput(f"{where}: {shown(text)} is not a name; use up to {NAME_LIMIT} printable characters")
    return text


def check_header(fields: list[str] | None) -> dict[str, str]:
    """Map our column names to the file's; one line naming what is wrong otherwise."""
    if not fields:
        raise BadInput("CSV: no header line; the first line must name the columns (variant, iteration, tps, ...)")
    by_lower = {f.strip().lower(): f for f in fields if f}
    unknown = [f for f in by_lower if f not in KNOWN_COLUMNS]
    if unknown:
        raise BadInput(f"CSV header: unknown column {shown(unknown[0])}; use {', '.join(KNOWN_COLUMNS)}")
    for needed in ("variant", "iteration"):
        if needed not in by_lower:
            raise BadInput(f"CSV header: column {needed!r} is missing; add it")
    if not any(m in by_lower for m in METRIC_COLUMNS):
        raise BadInput(f"CSV header: no metric column; add at least one of {', '.join(METRIC_COLUMNS)}")
    return {k: by_lower[k] for k in KNOWN_COLUMNS if k in by_lower}


def parse_row(raw: dict[str, str | None], columns: dict[str, str], line: int) -> ImportedRow:
    def cell(name: str) -> str:
        return (raw.get(columns[name]) or "").strip() if name in columns else ""

    variant = cell("variant")
    if not variant:
        raise BadInput(f"line {line}, column variant: empty; every row needs a variant name")
    check_name(variant, f"line {line}, column variant")
    threads = _whole(cell("threads"), "threads", line, MAX_THREADS) if cell("threads") else None
    metrics = {m: _number(cell(m), m, line) for m in METRIC_COLUMNS if cell(m)}
    if not metrics:
        raise BadInput(f"line {line}: no metric value; fill at least one of the metric columns")
    return ImportedRow(line, variant, _whole(cell("iteration"), "iteration", line, MAX_ITERATION), threads, metrics)


def parse_csv(text: str) -> list[ImportedRow]:
    """All rows of the CSV; BadInput naming the line and column for the first problem."""
    if "\0" in text:
        raise BadInput("CSV: the file holds binary data (a NUL byte); export it as text")
    try:
        reader = csv.DictReader(io.StringIO(text))
        columns = check_header(reader.fieldnames)
        rows = [parse_row(raw, columns, reader.line_num) for raw in reader if any((v or "").strip()
                                                                                 for v in raw.values()
                                                                                 if isinstance(v, str))]
    except csv.Error as error:
        raise BadInput(f"CSV: {error}; fix the file") from None
    if not rows:
        raise BadInput("CSV: no data rows after the header")
    if len(rows) > MAX_RUNS:
        raise BadInput(f"CSV: {len(rows):,} rows, more than the {MAX_RUNS:,} runs a campaign may hold; split it")
    seen: set[tuple[str, int | None, int]] = set()
    for row in rows:
        key = (row.variant, row.threads, row.iteration)
        if key in seen:
            raise BadInput(f"line {row.line}: variant {shown(row.variant)} iteration {row.iteration} appears twice; "
                           "keep one")
        seen.add(key)
    return rows


COLUMN_IN_STORE = {"total_queries": "queries", "qps": "qps", "tps": "tps", "lat_avg_ms": "lat_avg_ms",
                   "lat_p95_ms": "lat_pct_ms"}


def import_csv(store: Store, path: Path, name: str, baseline: str) -> int:
    """Store the CSV as a campaign with status `imported`, in one transaction (a failure leaves nothing);
    returns its id."""
    check_name(name, "--name")
    text = read_bounded_text(path, "CSV file", "check the path", MAX_CSV_BYTES, encoding="utf-8-sig")
    rows = parse_csv(text)
    variants = list(dict.fromkeys(r.variant for r in rows))
    if baseline not in variants:
        raise BadInput(f"--baseline: {shown(baseline)} is not a variant in {shown(path.name, quote=False)}; use one "
                       f"of {shown(', '.join(variants), 200, quote=False)}")
    threads = sorted({r.threads for r in rows if r.threads is not None})
    definition = {"name": name, "baseline": baseline, "imported_from": path.name, "order": "imported",
                  "repetitions": max(r.iteration for r in rows),
                  "variants": [{"name": v, "backend": "imported"} for v in variants],
                  "workloads": [{"name": "imported", "test": "imported", "threads": threads, "percentile": 95}]}
    records = []
    for row in rows:
        record = RunRecord(0, row.variant, "imported", row.threads, row.iteration, percentile=95,
                           imported={COLUMN_IN_STORE[k]: v for k, v in row.metrics.items()})
        record.details = {"imported": {"line": row.line, **row.metrics}}
        records.append(record)
    return store.import_campaign(name, definition, baseline, str(path.parent), str(path), records)
