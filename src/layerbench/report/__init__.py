"""Reports: one module per format, each formatting an Analysis (never computing one), all with `render()`."""

from __future__ import annotations

import importlib
from pathlib import Path

from layerbench.analysis.aggregate import Analysis
from layerbench.errors import BadInput

FORMATS = {"md": "markdown", "html": "html", "json": "json_export", "csv": "csv_export"}
EXTENSIONS = {"md": "md", "html": "html", "json": "json", "csv": "csv"}


def write_report(analysis: Analysis, fmt: str, directory: Path) -> Path:
    """Render one format into directory/report.<ext> and return the path."""
    if fmt not in FORMATS:
        raise BadInput(f"--format: {fmt!r} is not a report format; use one of: {', '.join(FORMATS)}")
    module = importlib.import_module(f"layerbench.report.{FORMATS[fmt]}")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"report.{EXTENSIONS[fmt]}"
    path.write_text(module.render(analysis), encoding="utf-8")
    return path
