"""Import results measured elsewhere as a stored campaign, so they go through the same statistics and reports
as runs layerbench made itself: a CSV table (here, strictly checked) or raw sysbench output (import_logs).

CSV columns (header names case-insensitive, each at most once): `variant`, `iteration`, optional `threads`, and
at least one metric: `total_queries`, `qps`, `tps`, `lat_avg_ms`, `lat_max_ms`, `lat_p<N>_ms` (a latency
percentile: lat_p95_ms, lat_p99_ms, lat_p99.9_ms; the 95th is the one compared when present, else the first
given; the others are kept with the run; a row that gives only another percentile keeps its own, and the report
compares no percentile latency between runs of different percentiles). Numbers use a decimal point; a comma
in a number, a row with more or fewer fields than the header, a repeated column and an unknown column are
refused with line and column.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from layerbench.bounded_read import FileKind, read_user_file
from layerbench.errors import BadInput, shown
from layerbench.records import CampaignRecord, RunRecord
from layerbench.statistics_settings import Overrides
from layerbench.store import Store
from layerbench.vocabulary.limits import MAX_RUNS, MAX_THREADS

METRIC_COLUMNS = ("total_queries", "qps", "tps", "lat_avg_ms", "lat_max_ms")
KNOWN_COLUMNS = ("variant", "iteration", "threads", *METRIC_COLUMNS, "lat_p<N>_ms")
PERCENTILE_COLUMN = re.compile(r"^lat_p(.*)_ms$")
COLUMN_IN_STORE = {"total_queries": "queries", "qps": "qps", "tps": "tps", "lat_avg_ms": "lat_avg_ms",
                   "lat_max_ms": "lat_max_ms"}
MAX_CSV_BYTES = 16 << 20
CSV_FILE = FileKind("CSV file", MAX_CSV_BYTES, "check the path", encoding="utf-8-sig")
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
    where = f"line {line}, column {column}"
    if "," in text:
        raise BadInput(f"{where}: {shown(text)} holds a comma (a decimal comma or a thousands separator is "
                       "ambiguous); write the number with a decimal point and no separator")
    try:
        value = float(text.replace("_", "").strip())
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


def percentile_of(name: str, position: int) -> float | None:
    """95.0 for lat_p95_ms, None for a column that is not a percentile; BadInput for lat_pXX_ms nonsense."""
    match = PERCENTILE_COLUMN.match(name)
    if not match:
        return None
    try:
        pct = float(match.group(1))
    except ValueError:
        pct = math.nan
    if not 0 < pct <= 100:
        raise BadInput(f"line 1, column {position} ({name}): not a percentile; write lat_p<N>_ms with N between 0 "
                       "and 100 (lat_p95_ms, lat_p99_ms, lat_p99.9_ms)")
    return pct


def check_header(fields: list[str] | None) -> dict[str, str]:
    """Map our column names to the file's; one line naming what is wrong otherwise."""
    if not fields or not any(f.strip() for f in fields):
        raise BadInput("CSV: no header line; the first line must name the columns (variant, iteration, tps, ...)")
    seen: dict[str, int] = {}
    for position, raw in enumerate(fields, start=1):
        name = raw.strip().lower()
        if name in seen:
            raise BadInput(f"line 1, column {position} ({shown(raw.strip())}): repeats column {seen[name]}; keep one")
        if name not in KNOWN_COLUMNS and percentile_of(name, position) is None:
            raise BadInput(f"line 1, column {position}: unknown column {shown(raw.strip())}; use "
                           f"{', '.join(KNOWN_COLUMNS)}")
        seen[name] = position
    for needed in ("variant", "iteration"):
        if needed not in seen:
            raise BadInput(f"CSV header: column {needed!r} is missing; add it")
    if not any(m in seen for m in METRIC_COLUMNS) and not any(PERCENTILE_COLUMN.match(k) for k in seen):
        raise BadInput(f"CSV header: no metric column; add at least one of {', '.join(KNOWN_COLUMNS[3:])}")
    return {f.strip().lower(): f for f in fields}


def parse_row(raw: dict[str | None, Any], columns: dict[str, str], line: int, width: int) -> ImportedRow:
    if raw.get(None) is not None or any(v is None for k, v in raw.items() if k is not None):
        got = width + len(raw.get(None) or []) - sum(1 for k, v in raw.items() if k is not None and v is None)
        raise BadInput(f"line {line}: {got} fields, the header has {width}; fix the row (a stray comma or a "
                       "missing value)")

    def cell(name: str) -> str:
        return str(raw.get(columns[name]) or "").strip() if name in columns else ""

    variant = cell("variant")
    if not variant:
        raise BadInput(f"line {line}, column variant: empty; every row needs a variant name")
    check_name(variant, f"line {line}, column variant")
    threads = _whole(cell("threads"), "threads", line, MAX_THREADS) if cell("threads") else None
    metrics = {m: _number(cell(m), m, line) for m in columns if m not in ("variant", "iteration", "threads")
               and cell(m)}
    if not metrics:
        raise BadInput(f"line {line}: no metric value; fill at least one of the metric columns")
    return ImportedRow(line, variant, _whole(cell("iteration"), "iteration", line, MAX_ITERATION), threads, metrics)


def parse_csv(text: str) -> list[ImportedRow]:
    """All rows of the CSV; BadInput naming the line and column for the first problem."""
    if "\0" in text:
        raise BadInput("CSV: the file holds binary data (a NUL byte); export it as text")
    try:
        reader = csv.DictReader(io.StringIO(text.replace("\ufeff", "")))
        columns = check_header(reader.fieldnames)
        width = len(reader.fieldnames or [])
        rows = [parse_row(raw, columns, reader.line_num, width) for raw in reader
                if any(str(v or "").strip() for v in raw.values())]
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


def compared_percentile(rows: list[ImportedRow]) -> tuple[str | None, float | None]:
    """The percentile column the campaign compares: the 95th when given, else the first."""
    names = list(dict.fromkeys(m for r in rows for m in r.metrics if PERCENTILE_COLUMN.match(m)))
    chosen = "lat_p95_ms" if "lat_p95_ms" in names else (names[0] if names else None)
    return chosen, (percentile_of(chosen, 0) if chosen else None)


def row_percentile(row: ImportedRow, compared: str | None) -> str | None:
    """The percentile column a row's latency comes from: the compared one, else the row's first (a row that
    gives only another percentile keeps it, and the report marks its latency as not compared)."""
    if compared in row.metrics:
        return compared
    return next((m for m in row.metrics if PERCENTILE_COLUMN.match(m)), None)


def import_csv(store: Store, path: Path, name: str, baseline: str, options: Overrides | None = None) -> int:
    """Store the CSV as a campaign with status `imported`, in one transaction (a failure leaves nothing);
    returns its id."""
    check_name(name, "--name")
    text = read_user_file(path, CSV_FILE)
    rows = parse_csv(text)
    variants = list(dict.fromkeys(r.variant for r in rows))
    if baseline not in variants:
        raise BadInput(f"--baseline: {shown(baseline)} is not a variant in {shown(path.name, quote=False)}; use one "
                       f"of {shown(', '.join(variants), 200, quote=False)}")
    threads = sorted({r.threads for r in rows if r.threads is not None})
    origin = path.resolve()
    column, percentile = compared_percentile(rows)
    definition = CampaignRecord.imported(name, baseline, str(origin), variants, threads, percentile,
                                         max(r.iteration for r in rows), (options or Overrides()).campaign_keys())
    records = []
    for row in rows:
        values = {COLUMN_IN_STORE[k]: v for k, v in row.metrics.items() if k in COLUMN_IN_STORE}
        own = row_percentile(row, column)
        if own is not None:
            values["lat_pct_ms"] = row.metrics[own]
        record = RunRecord(0, row.variant, "imported", row.threads, row.iteration,
                           percentile=percentile_of(own, 0) if own else percentile, imported=values)
        record.facts.other["imported"] = {"file": str(origin), "line": row.line, **row.metrics}
        records.append(record)
    return store.import_campaign(definition, str(origin.parent), str(origin), records)
