"""Reports: one module per format, each rendering the one Report the analysis makes (analysis/report_model.py),
never computing one; all with `render(report)`, JUnit's also with the gate of `--fail-on` (analysis/gate.py).
The HTML's markup is in templates/ (Jinja2, autoescaped)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from layerbench.errors import BadInput, shown

if TYPE_CHECKING:  # the CLI imports this module at start: SciPy (under the analysis) only when a report is made
    from layerbench.analysis.gate import Gate
    from layerbench.analysis.report_model import Report

FORMATS = {"md": "markdown", "html": "html", "json": "json_export", "csv": "csv_export", "junit": "junit"}
EXTENSIONS = {"md": "md", "html": "html", "json": "json", "csv": "csv", "junit": "junit.xml"}


def write_report(report: Report, fmt: str, directory: Path, gate: Gate | None = None) -> Path:
    """Render one format into directory/report.<ext> and return the path; `gate`: what JUnit counts as a
    failure (None: a firm `slower`)."""
    if fmt not in FORMATS:
        raise BadInput(f"--format: {shown(fmt)} is not a report format; use one of: {', '.join(FORMATS)}")
    module = importlib.import_module(f"layerbench.report.{FORMATS[fmt]}")
    path = directory / f"report.{EXTENSIONS[fmt]}"
    text = module.render(report, gate) if fmt == "junit" else module.render(report)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except (FileExistsError, NotADirectoryError, IsADirectoryError, PermissionError) as error:
        raise BadInput(f"--output: {shown(str(directory), 120)} cannot hold the report ({type(error).__name__}: "
                       f"{error.strerror}); give a folder") from None
    return path
