"""The Neighbours section of the markdown and HTML reports (rows from analysis/neighbours.py); nothing when the
campaign ran no neighbours. The HTML side gives the template (templates/report.html) plain text only: autoescape
makes every value text."""

from __future__ import annotations

from typing import Any

from layerbench.analysis.neighbours import (
    COLUMNS,
    CONTENTION_COLUMNS,
    CONTENTION_INTRO,
    INTRO,
    TITLE,
    contention_rows,
    neighbour_rows,
)
from layerbench.analysis.report_model import Report


def cell(text: str) -> str:
    """A markdown table cell: a `|` (a folder name may hold one) would split the row."""
    return text.replace("|", "/")


def markdown_section(report: Report) -> list[str]:
    rows = neighbour_rows(report.analysis)
    if not rows:
        return []
    table = ["| " + " | ".join(COLUMNS) + " |", "| " + " | ".join(":---" for _ in COLUMNS) + " |"]
    table += ["| " + " | ".join(cell(c) for c in r.cells()) + " |" for r in rows]
    said = [f"- {w}" for r in rows for w in r.warnings]
    return [f"## {TITLE}", "", INTRO, "", *table, "", *said, *([""] if said else []), *contention_markdown(report)]


def contention_markdown(report: Report) -> list[str]:
    rows = contention_rows(report.analysis)
    if not rows:
        return []
    table = ["| " + " | ".join(CONTENTION_COLUMNS) + " |", "| :--- | :--- |" + " ---: |" * 5]
    table += ["| " + " | ".join(cell(c) for c in r.cells()) + " |" for r in rows]
    return ["### The server's CPU contention", "", CONTENTION_INTRO, "", *table, ""]


def html_section(report: Report) -> dict[str, Any] | None:
    rows = neighbour_rows(report.analysis)
    if not rows:
        return None
    table = {"header": list(COLUMNS), "rows": [r.cells() for r in rows], "flags": [False] * len(COLUMNS)}
    contention = contention_rows(report.analysis)
    return {"title": TITLE, "intro": INTRO, "table": table, "warnings": [w for r in rows for w in r.warnings],
            "contention_intro": CONTENTION_INTRO,
            "contention": {"header": list(CONTENTION_COLUMNS), "rows": [r.cells() for r in contention],
                           "flags": [False] * len(CONTENTION_COLUMNS)} if contention else None}
