"""The Neighbours section of the markdown and HTML reports (rows from analysis/neighbours.py); nothing when the
campaign ran no neighbours."""

from __future__ import annotations

import html

from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.neighbours import COLUMNS, INTRO, TITLE, neighbour_rows
from layerbench.report.text import pipe_table


def cell(text: str) -> str:
    """A markdown table cell: a `|` (a folder name may hold one) would split the row."""
    return text.replace("|", "/")


def markdown_section(analysis: Analysis) -> list[str]:
    rows = neighbour_rows(analysis)
    if not rows:
        return []
    said = [f"- {w}" for r in rows for w in r.warnings]
    return [f"## {TITLE}", "", INTRO, "", *pipe_table(list(COLUMNS), [[cell(c) for c in r.cells()] for r in rows],
                                                "lllllll"), "", *said,
            *([""] if said else [])]


def html_section(analysis: Analysis) -> str:
    rows = neighbour_rows(analysis)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r.cells()) + "</tr>" for r in rows)
    warn = "".join(f"<p class='warn'>{html.escape(w)}</p>" for r in rows for w in r.warnings)
    return f"<h2>{TITLE}</h2><p>{html.escape(INTRO)}</p><table><tr>{head}</tr>{body}</table>{warn}"
