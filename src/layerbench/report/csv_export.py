"""One row per run, ready for pandas (`pd.read_csv`): identifiers, status, the values the statistics used,
the steady window and the dataset reset.

Text cells that a spreadsheet would read as a formula (starting with =, +, -, @, tab or carriage return) get a
leading single quote (OWASP, "CSV Injection"); numbers stay numbers."""

from __future__ import annotations

import csv
import io

from layerbench.analysis.aggregate import Analysis, RunRow

COLUMNS = ["campaign_id", "run", "round", "variant", "workload", "threads", "repetition", "status", "error",
           "total_queries", "qps", "tps", "lat_avg_ms", "lat_pct_ms", "percentile", "steady_cut_intervals",
           "steady_intervals", "steady_state", "unstable", "swing_ratio", "reset_method", "reset_seconds"]


def row(analysis: Analysis, r: RunRow) -> list[object]:
    w = r.window
    steady = w.steady if w else None
    reset = r.details.get("reset") or {}
    return [analysis.campaign_id, (r.idx or 0) + 1, r.round, r.variant, r.workload, r.threads, r.repetition,
            r.status, r.error or "", r.values["queries"], r.values["qps"], r.values["tps"], r.values["lat_avg_ms"],
            r.values["lat_pct_ms"], analysis.percentile, steady.cut if steady else "",
            steady.kept if steady else "", (steady.steady if steady else ""), (w.unstable if w else ""),
            (round(w.swing, 4) if w and w.swing not in (None, float("inf")) else ""),
            reset.get("method", ""), reset.get("seconds", "")]


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralised(value: object) -> object:
    """A text cell a spreadsheet would evaluate, made inert; any other value unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def render(analysis: Analysis) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for r in analysis.runs:
        writer.writerow(["" if v is None else neutralised(v) for v in row(analysis, r)])
    return out.getvalue()
