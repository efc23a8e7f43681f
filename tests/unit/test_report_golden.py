"""Golden-file tests of the reports: set LAYERBENCH_UPDATE_GOLDEN=1 to rewrite the expected files."""

from __future__ import annotations

import os
from pathlib import Path

from helpers import fill_store
from layerbench.analysis.aggregate import analyze
from layerbench.report.markdown import render
from layerbench.store import Store

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("LAYERBENCH_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(text)
    assert text == path.read_text(), f"{name} changed; rerun with LAYERBENCH_UPDATE_GOLDEN=1 if intended"


def test_markdown_report_golden(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "docker-bridge": 0.9, "docker-host": 0.995}, reps=7, fail={4})
    with Store(db) as store:
        text = render(analyze(store, cid))
    assert "`docker-bridge` vs `host`" in text and "failed: sysbench was killed by signal 9" in text
    assert "| `docker-bridge` | default, 2 threads | **slower** | -9.91% [-11.0, -8.8] (p=0.002, n=6+7)" in text
    assert "| `docker-host` | default, 2 threads | **~** |" in text or "**within noise**" in text
    check("report_basic.md", text)


def test_markdown_sweep_and_price_golden(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.95}, reps=3, threads=(2, 4), costs={"host": 200.0, "vm": 120.0})
    with Store(db) as store:
        text = render(analyze(store, cid))
    assert "## Thread sweep" in text and "## Price-performance" in text
    check("report_sweep_price.md", text)
