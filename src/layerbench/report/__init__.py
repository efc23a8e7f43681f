"""Reports: one module per format, each formatting an Analysis (never computing one)."""

from __future__ import annotations

from pathlib import Path

from layerbench.analysis.aggregate import Analysis

FORMATS = ("md",)


def write_report(analysis: Analysis, fmt: str, directory: Path) -> Path:
    """Render one format into directory/report.<ext> and return the path."""
    directory.mkdir(parents=True, exist_ok=True)
    if fmt == "md":
        from layerbench.report.markdown import render

        path = directory / "report.md"
        path.write_text(render(analysis), encoding="utf-8")
        return path
    from layerbench.errors import BadInput

    raise BadInput(f"--format: {fmt!r} is not a report format; use one of: {', '.join(FORMATS)}")
