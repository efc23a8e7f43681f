"""Published vs measured: each number a published study printed (the campaign's `published:`,
campaign/published.py) beside our delta for the same variant, metric and point, with our interval, and whether
they agree: the same direction, and the published value inside or outside our interval. Where our data cannot
support a verdict (too few runs, an interval that holds both 0 and the published value, no runs), the row says so
instead of guessing. Also which size ran: the example's, the study's (`scale: published`) or one scaled to this
machine (`scale: machine`, campaign/scaling.py)."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.metrics import Metric
from layerbench.analysis.point_statistics import point_title
from layerbench.analysis.stats import Comparison
from layerbench.campaign.published import Published, PublishedNumber, PublishedSize
from layerbench.campaign.scaling import data_bytes, published_rows
from layerbench.records import WorkloadRecord
from layerbench.vocabulary.sizes import byte_text

METRICS = {"tps": Metric.TPS, "qps": Metric.QPS, "avg_latency": Metric.LAT_AVG, "pct_latency": Metric.LAT_PCT}
AGREES, PARTLY, DISAGREES, CANNOT = "agrees", "same direction, other size", "disagrees", "cannot tell"


@dataclass(frozen=True)
class PublishedRow:
    """One published number beside our comparison at one point."""

    variant: str
    point: str
    metric: str  # its label: `TPS`, `p95 latency (ms)`
    published: str  # `-10%`, or `slower` / `faster` when the study gave a direction only
    said: str  # how the study put it, quoted (may be empty)
    measured: str  # our delta with its interval: `-13.68% [-16.8, -11.0]`, or why there is none
    direction: str  # same / opposite / ours undecided (interval includes 0) / -
    inside: str  # inside / outside our interval / - (a direction word has no value)
    agreement: str  # agrees / same direction, other size / disagrees / cannot tell
    why: str  # the reason, in one sentence


@dataclass(frozen=True)
class PublishedSection:
    source: str
    study_baseline: str  # the study's baseline, in its words
    baseline: str  # ours
    size: str  # which size ran: the example's, the study's, or scaled to this machine
    rows: tuple[PublishedRow, ...]


def published_of(analysis: Analysis) -> Published | None:
    """The stored `published:` block, read with the campaign's own model (a store without one: None)."""
    raw = analysis.definition.document.get("published")
    if raw is None:
        return None
    try:
        return Published.model_validate(raw)
    except ValidationError:
        return None


def published_section(analysis: Analysis) -> PublishedSection | None:
    published = published_of(analysis)
    if published is None:
        return None
    rows = tuple(row for number in published.numbers for row in number_rows(analysis, number))
    return PublishedSection(published.source, published.baseline, analysis.baseline,
                            size_text(analysis, published.size), rows)


def number_rows(analysis: Analysis, number: PublishedNumber) -> list[PublishedRow]:
    metric = METRICS[number.metric]
    label = analysis.metric_label(metric)
    points = [p for p in analysis.points if number.workload in (None, p.workload)]
    found = [(p, next((v for v in p.variants if v.variant == number.variant), None)) for p in points]
    rows = [PublishedRow(number.variant, point_title(p), label, number.delta, number.said,
                         *judged(number, metric, v.verdict(metric) if v else None)) for p, v in found]
    if not rows:
        where = number.workload or "any workload"
        rows.append(PublishedRow(number.variant, where, label, number.delta, number.said, "no runs", "-", "-",
                                 CANNOT, "no run of this variant was stored at this workload"))
    return rows


def sign(value: float) -> int:
    return (value > 0) - (value < 0)


def judged(number: PublishedNumber, metric: Metric, c: Comparison | None) -> tuple[str, str, str, str, str]:
    """(measured, direction, inside, agreement, why) of one published number against our comparison."""
    if c is None or c.delta is None:
        return "no runs", "-", "-", CANNOT, "no comparison of this variant with the baseline was made here"
    d = c.delta
    measured = f"{d.delta * 100:+.2f}% [{d.low * 100:+.1f}, {d.high * 100:+.1f}]"
    if min(c.n_baseline, c.n_variant) < 2 or c.verdict.kind == "need more runs":
        return (measured, "-", "-", CANNOT,
                f"too few runs for an interval that can decide (n={c.n_baseline}+{c.n_variant}): {c.verdict.text}")
    ours = 1 if d.low > 0 else -1 if d.high < 0 else 0
    value = number.fraction
    if ours and c.verdict.kind == "~":  # the interval is this comparison's alone; the verdict's p is Holm's
        inside = "-" if value is None else ("inside" if d.low <= value <= d.high else "outside")
        return (measured, "ours undecided after Holm", inside, CANNOT,
                "our interval excludes 0 for this comparison alone, but not after Holm's correction over its "
                "family, which the verdict (~) uses: more runs would decide")
    if value == 0 and ours == 0 and c.verdict.kind != "within noise":
        return (measured, "none (0)", "inside", CANNOT,
                "the study found no difference; our interval holds 0 but reaches beyond the noise threshold (~), so "
                "it cannot show that there is none: more runs would decide")
    if value is None:
        theirs = (-1 if number.delta == "slower" else 1) * (1 if metric.higher_is_better else -1)
        return (measured, *direction_only(theirs, ours))
    return (measured, *with_value(value, d.low <= value <= d.high, ours))


def direction_word(theirs: int, ours: int) -> str:
    if ours == 0:
        return "ours undecided (interval includes 0)"
    return "same" if ours == theirs else "opposite"


def direction_only(theirs: int, ours: int) -> tuple[str, str, str, str]:
    if ours == 0:
        return (direction_word(theirs, ours), "-", CANNOT,
                "the study gave a direction only, and our interval includes 0: no direction shown here")
    if ours == theirs:
        return "same", "-", AGREES, "the same direction (the study gave no number to compare sizes)"
    return "opposite", "-", DISAGREES, "our interval lies wholly on the other side of 0"


def with_value(value: float, inside: bool, ours: int) -> tuple[str, str, str, str]:
    theirs = sign(value)
    where = "inside" if inside else "outside"
    direction = direction_word(theirs, ours) if theirs else ("none (0)" if ours == 0 else "ours not 0")
    if inside and ours == theirs:
        return direction, where, AGREES, "the published value lies inside our interval, on the same side of 0"
    if inside:
        return (direction, where, CANNOT, "our interval holds both 0 and the published value: more runs would "
                "decide between them")
    if ours == theirs:
        return direction, where, PARTLY, "the same direction, but our interval excludes the published size"
    if ours == 0:
        return (direction, where, DISAGREES, "no detectable difference here, and our interval excludes the "
                "published value")
    if theirs == 0:
        return direction, where, DISAGREES, "the study found no difference; our interval excludes 0"
    return direction, where, DISAGREES, "our interval lies wholly on the other side of 0"


def size_text(analysis: Analysis, size: PublishedSize | None) -> str:
    """Which size ran, per workload, against the study's."""
    if size is None:
        return "The campaign does not give the study's size (published.size), so only the deltas are compared."
    study = study_text(size)
    mode = analysis.definition.document.get("scale")
    ran = "; ".join(workload_size(w, size) for w in analysis.definition.workloads)
    if mode == "published":
        return f"Measured at the published size (scale: published): {ran}. The study: {study}."
    if mode == "machine":
        return (f"Measured at a size scaled to this machine (scale: machine), which keeps the study's dataset : "
                f"buffer pool : RAM: {ran}. The study: {study}.")
    return (f"Measured at the example's size, not the study's: {ran}. The study: {study}; `--scale published` "
            "or `--scale machine` runs it at that size.")


def study_text(size: PublishedSize) -> str:
    parts = [f"{size.tables} x {size.table_size:,} rows" if size.tables and size.table_size else "",
             f"{byte_text(data_bytes(size), 'GiB', '.3g')} of data" + ("" if size.data else " (estimated)"),
             f"buffer pool {size.buffer_pool}" if size.buffer_pool else "",
             f"RAM {size.ram}" if size.ram else "RAM not given",
             f"{size.duration} s runs" if size.duration else ""]
    return ", ".join(p for p in parts if p)


def workload_size(w: WorkloadRecord, size: PublishedSize) -> str:
    tables, table_size = w.tables or 0, w.table_size or 0
    _, rows = published_rows(size, tables or 1)
    share = f" ({table_size / rows:.3g} of the study's rows per table)" if rows and table_size != rows else ""
    pool = f", buffer pool {w.buffer_pool} of the data" if w.buffer_pool else ""
    return f"`{w.name}` {tables} x {table_size:,} rows{share}{pool}, {w.duration} s runs"
