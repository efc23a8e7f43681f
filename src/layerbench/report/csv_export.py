"""One row per run, ready for pandas (`pd.read_csv`): identifiers, status, the values the statistics used,
the steady window, the dataset reset, and the verdicts of the run's variant at its point (TPS and percentile
latency against the baseline, the same words as every report; empty for the baseline).

Text cells that a spreadsheet would read as a formula (starting with =, +, -, @, tab or carriage return) get a
leading single quote (OWASP, "CSV Injection"); numbers stay numbers."""

from __future__ import annotations

import csv
import io

from layerbench.analysis.io import CGROUP, COMPONENT_FIGURES, SERVER_FIGURES, RunIo
from layerbench.analysis.latency import SHOWN
from layerbench.analysis.metrics import Metric
from layerbench.analysis.point_statistics import point_title
from layerbench.analysis.report_model import Report
from layerbench.analysis.runs import RunRow, label_number
from layerbench.report.published import csv_cells
from layerbench.sysbench.histogram import percentile_key

COLUMNS = ["campaign_id", "run", "round", "variant", "workload", "threads", "repetition", "status", "error",
           "total_queries", "qps", "tps", "lat_avg_ms", "lat_pct_ms", "percentile", "steady_cut_intervals",
           "steady_intervals", "steady_state", "unstable", "swing_ratio", "reset_method", "reset_seconds",
           "tps_verdict", "tps_delta", "lat_pct_verdict", "lat_pct_delta",
           *[f"lat_{percentile_key(p)}_ms" for p in SHOWN]]  # the measured window's distribution (empty: none)
# I/O per 1,000 measured transactions (docs/io.md); empty when the run recorded none
IO_COMPONENTS = {"server": "server", "qemu": "qemu", "client": "client", CGROUP: "cgroup"}
IO_COLUMNS = ["io_buffer_pool_hit_ratio", *[f"io_{k}_per_1000_tx" for k in SERVER_FIGURES],
              *[f"io_{short}_{k}_per_1000_tx" for short in IO_COMPONENTS.values() for k in COMPONENT_FIGURES]]
COLUMNS += IO_COLUMNS
# only when the campaign gives a published study's numbers (`published:`): that study's numbers for the run's
# variant at its point, and whether ours agree (report/published.py)
PUBLISHED_COLUMNS = ["published", "published_agreement"]


def io_cells(found: RunIo | None) -> list[object]:
    if found is None:
        return [None] * len(IO_COLUMNS)
    cells: list[object] = [found.hit_ratio, *[found.server.get(k) for k in SERVER_FIGURES]]
    for name in IO_COMPONENTS:
        cells += [found.components.get(name, {}).get(k) for k in COMPONENT_FIGURES]
    return cells


def row(report: Report, r: RunRow, replaced: dict[int, str]) -> list[object]:
    """`error`: why a failed run failed, or why a replaced run was replaced (busy: rerun) and by which run."""
    w = r.window
    steady = w.steady if w else None
    reset = r.facts.reset
    analysis = report.analysis
    why = replaced.get((r.idx or 0) + 1, "") if r.status == "replaced" else r.error or ""
    return [analysis.campaign_id, (r.idx or 0) + 1, r.round, r.variant, r.workload, r.threads, r.repetition,
            r.status, why, *[r.values[m] for m in Metric], run_percentile(report, r), steady.cut if steady else "",
            steady.kept if steady else "", (steady.steady if steady else ""), (w.unstable if w else ""),
            (round(w.swing, 4) if w and w.swing not in (None, float("inf")) else ""),
            reset.method if reset else "", (reset.seconds if reset and reset.seconds is not None else "")]


def run_percentile(report: Report, r: RunRow) -> int | float:
    """Which percentile the run's lat_pct_ms is: its own when the campaign's runs report different ones."""
    analysis = report.analysis
    return label_number(r.percentile) if analysis.run_percentiles and r.percentile is not None else analysis.percentile


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralised(value: object) -> object:
    """A text cell a spreadsheet would evaluate, made inert; any other value unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def render(report: Report) -> str:
    analysis = report.analysis
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS + (PUBLISHED_COLUMNS if report.published else []))
    replaced = {x.run: x.status() for x in analysis.replaced}
    titles = {(p.workload, p.threads): point_title(p) for p in analysis.points}
    for r in analysis.runs:
        extra = report.run_verdicts.get((r.variant, r.workload, r.threads), ("", "", "", ""))
        dist = [r.latency.get(p) for p in SHOWN]
        cells = [*row(report, r, replaced), *extra, *dist, *io_cells(report.io_runs.get(r.id))]
        if report.published:
            cells += csv_cells(report, r.variant, titles.get((r.workload, r.threads), r.workload))
        writer.writerow(["" if v is None else neutralised(v) for v in cells])
    return out.getvalue()
