"""The "Published vs measured" section of every format (rows from analysis/published.py); nothing when the
campaign gives no `published:` block. The HTML side gives the template (templates/report.html) plain text only:
autoescape makes every value text."""

from __future__ import annotations

from typing import Any

from layerbench.analysis.published import PublishedRow, PublishedSection
from layerbench.analysis.report_model import Report

TITLE = "Published vs measured"
COLUMNS = ("variant", "point", "metric", "published", "measured [CI]", "direction", "published value",
           "agreement", "why")


def intro(section: PublishedSection) -> list[str]:
    """Where the numbers come from, what each side was measured against, and which size ran."""
    return [f"Published: {section.source}. The study's baseline: {section.study_baseline}; ours: "
            f"`{section.baseline}`.", section.size,
            "Agreement: the same direction (our interval wholly on the published side of 0) and the published value "
            "inside our interval; `cannot tell` where our runs do not decide (as the verdict says: an interval "
            "that excludes 0 only before Holm's correction decides nothing either)."]


def cells(row: PublishedRow) -> list[str]:
    said = f" ({row.said})" if row.said else ""
    return [row.variant, row.point, row.metric, row.published + said, row.measured, row.direction, row.inside,
            row.agreement, row.why]


def cell(text: str) -> str:
    """A markdown table cell: a `|` or a line break of the user's text would break the row."""
    return text.replace("|", "/").replace("\n", " ")


def markdown_section(report: Report) -> list[str]:
    section = report.published
    if section is None:
        return []
    table = ["| " + " | ".join(COLUMNS) + " |", "| " + " | ".join(":---" for _ in COLUMNS) + " |"]
    table += ["| " + " | ".join(cell(c) for c in cells(r)) + " |" for r in section.rows]
    return [f"## {TITLE}", "", *[line for text in intro(section) for line in (cell(text), "")], *table, ""]


def html_section(report: Report) -> dict[str, Any] | None:
    section = report.published
    if section is None:
        return None
    table = {"header": list(COLUMNS), "rows": [cells(r) for r in section.rows], "flags": [False] * len(COLUMNS)}
    return {"title": TITLE, "intro": [line.replace("`", "") for line in intro(section)], "table": table}


def csv_cells(report: Report, variant: str, point: str) -> list[str]:
    """The CSV export's columns for one run: its variant's published numbers at its point, `metric: value:
    agreement` joined by `; ` (empty when the study gave none)."""
    if report.published is None:
        return ["", ""]
    rows = [r for r in report.published.rows if r.variant == variant and r.point == point]
    return ["; ".join(f"{r.metric}: {r.published}" for r in rows), "; ".join(r.agreement for r in rows)]
