"""The whole analysis as JSON, for dashboards and notebooks. Schema `layerbench.analysis/1` (docs/report-json.md):
additions may come in later versions of schema 1; renames or removals bump the number."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from layerbench.analysis.report_model import Report
from layerbench.analysis.runs import RunRow
from layerbench.analysis.timing import TimeAccount
from layerbench.report import evidence
from layerbench.sysbench.histogram import percentile_key

SCHEMA = "layerbench.analysis/1"
UNDEFINED_WHY = "a single value (n=1) has no spread: sd, CV, intervals and p-values are undefined"


def plain(value: Any) -> Any:
    """Dataclasses, tuples and non-finite floats as JSON-ready values (NaN and infinity become null). The
    common cases are tested first: a report of 100,000 runs holds millions of plain numbers."""
    if value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def run_entry(r: RunRow, report: Report) -> dict[str, Any]:
    busy = {"busy": r.facts.busy.document} if r.facts.busy else {}  # what busy: did with a busy run (only then)
    return {**busy, "run_id": r.id, "index": (r.idx or 0) + 1, "round": r.round, "variant": r.variant,
            "workload": r.workload, "threads": r.threads, "repetition": r.repetition, "status": r.status,
            "error": r.error, "values": r.values, "window": r.window,
            "reset": r.facts.reset.document if r.facts.reset else None,
            "resources": r.facts.usage.document if r.facts.usage else None,
            "io": r.facts.io.document if r.facts.io else None, "io_per_1000_tx": report.io_runs.get(r.id),
            "latency_ms": {percentile_key(p): v for p, v in r.latency.items()} or None,
            "series": [{"time": t, "tps": tps, "warmup": warm} for t, tps, warm in r.series],
            # which percentile values.lat_pct_ms is, when the campaign's runs report different ones
            **({"percentile": r.percentile} if report.analysis.run_percentiles else {})}


def summary_entry(summary: Any) -> dict[str, Any]:
    entry = plain(summary)
    if summary.n < 2:  # a single value has no spread: undefined, not zero
        entry |= {"sd": None, "cv": None, "ci_low": None, "ci_high": None, "undefined": UNDEFINED_WHY}
    return dict(entry)


def comparison_entry(comparison: Any) -> dict[str, Any]:
    entry = plain(comparison) | {"evidence": evidence.evidence(comparison),
                                 "annotation": evidence.annotation(comparison) or None}
    if evidence.single(comparison):
        entry |= {"p": None, "p_adjusted": None, "undefined": UNDEFINED_WHY}
        if entry.get("delta"):
            entry["delta"] |= {"low": None, "high": None}
    return dict(entry)


def points_entry(report: Report) -> list[dict[str, Any]]:
    """The points with every comparison's evidence as text, and n = 1 shown as undefined."""
    out = []
    for point in report.analysis.points:
        entry = plain(point)
        for shown, variant in zip(entry["variants"], point.variants, strict=True):
            shown["summaries"] = {m: summary_entry(s) for m, s in variant.summaries.items()}
            shown["comparisons"] = {m: comparison_entry(c) for m, c in variant.comparisons.items()}
        out.append(entry)
    return out


def adaptive_entry(report: Report) -> dict[str, Any]:
    """repetitions: auto: rounds, why they stopped, and each comparison's verdict with decided true/false."""
    state = report.analysis.adaptive
    if state is None or report.adaptive is None:
        return {}
    entry = dataclasses.asdict(state)
    for shown, decision in zip(entry["decisions"], state.decisions, strict=True):
        shown["decided"] = decision.decided
    return {**entry, "headline": report.adaptive[0]}


def document(report: Report) -> dict[str, Any]:
    analysis = report.analysis
    return plain({
        "schema": SCHEMA,
        "campaign": {"id": analysis.campaign_id, "name": analysis.name, "status": analysis.status,
                     "baseline": analysis.baseline, "planned_runs": analysis.planned_runs,
                     "definition": analysis.definition.to_json()},
        "settings": analysis.settings,
        "points": points_entry(report),
        "method": report.method,  # how the answer was computed: paired by round or unpaired, and why
        "verdict_rule": report.rule,
        **({"published": report.published} if report.published else {}),  # `published:` (report/published.py)
        **({"adaptive": adaptive_entry(report)} if report.adaptive else {}),  # repetitions: auto only
        **({"replaced_runs": analysis.replaced} if analysis.replaced else {}),  # busy: rerun replaced some runs
        **({"timing": timing_entry(analysis.timing)} if analysis.timing else {}),  # estimate vs wall time
        **({"waiting": analysis.waiting.to_json()} if analysis.waiting else {}),  # waits for quiet vs runs
        "latency_distribution": report.distribution,
        "percentile_comparisons": [{"variant": c.variant, "point": c.point, "metric": c.metric, "label": c.label,
                                    "comparison": comparison_entry(c.comparison)}
                                   for c in report.percentiles],
        "sweeps": [{"workload": w, "variant": v, "rows": rows} for (w, v), rows in report.sweeps.items()],
        "io": report.io,
        "price_performance": report.price,
        "warnings": list(report.warnings),
        "differences": analysis.differences,
        "environments": {k: {n: e.document.get(n) for n in ("host", "backend", "storage", "tuning")}
                         for k, e in analysis.environments.items()},
        "runs": [run_entry(r, report) for r in analysis.runs],
    })


def timing_entry(timing: TimeAccount) -> dict[str, Any]:
    """The plan's estimate made as the campaign started, beside what it took, in seconds per part."""
    return {"estimated_seconds": round(timing.estimate.seconds, 1), "took_seconds": round(timing.took, 1),
            "off": round(timing.off, 3), "estimated_parts": timing.estimate.parts,
            "measured_parts": {k: round(v, 1) for k, v in timing.measured.items()}, "basis": timing.estimate.basis,
            "text": timing.text()}


def render(report: Report) -> str:
    return json.dumps(document(report), indent=2, sort_keys=False) + "\n"
