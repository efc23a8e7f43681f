"""Golden-file tests of the reports (tests/golden.py: how each format is compared); set
LAYERBENCH_UPDATE_GOLDEN=1 to rewrite the expected files."""

from __future__ import annotations

from pathlib import Path

import pytest

from golden import GOLDEN, check
from helpers import fill_store
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.report.markdown import render
from layerbench.store import Store


def test_markdown_report_golden(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "docker-bridge": 0.9, "docker-host": 0.995}, reps=7, fail={4})
    with Store(db) as store:
        text = render(report_model(analyze(store, cid)))
    assert "`docker-bridge` vs `host`" in text and "failed: sysbench was killed by signal 9" in text
    assert ("| `docker-bridge` | default, 2 threads | **slower** | -9.69% [-10.7, -8.7] (p<0.001, n=6 pairs of 6+7 "
            "runs)") in text  # the paired t-test (6 pairs; the signed-rank test needed 7 for 2 comparisons)
    assert "| `docker-host` | default, 2 threads | **~** |" in text or "**within noise**" in text
    check("report_basic.md", text)


def test_markdown_sweep_and_price_golden(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.95}, reps=3, threads=(2, 4), costs={"host": 200.0, "vm": 120.0})
    with Store(db) as store:
        text = render(report_model(analyze(store, cid)))
    assert "## Thread sweep" in text and "## Price-performance" in text
    check("report_sweep_price.md", text)


IMPORTS = GOLDEN.parent / "import"


def reanalysed(tmp_path: Path, name: str, baseline: str, fmt: str = "md") -> str:
    """A published table imported and reported; the absolute source path (machine-dependent) as <source>."""
    import importlib
    import shutil

    from layerbench.importing.table import import_csv

    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / name
    shutil.copy(IMPORTS / name, source)
    module = importlib.import_module({"md": "layerbench.report.markdown", "html": "layerbench.report.html",
                                      "json": "layerbench.report.json_export"}[fmt])
    with Store(tmp_path / "lb.db") as store:
        text = module.render(report_model(analyze(store, import_csv(store, source, "study", baseline))))
    return text.replace(str(source.resolve()), "<source>")


def test_reanalysis_of_4_vs_4_gives_a_verdict_and_the_evidence_of_both_metrics(tmp_path: Path) -> None:
    """A published 4-vs-4 table: TPS separates completely (exact Mann-Whitney p = 2/70 = 0.029 < 0.05, which
    4+4 runs can reach), the p95 samples overlap (p = 0.686): 'slower' for one, '~' for the other, both with
    interval, p and n."""
    text = reanalysed(tmp_path, "study-4v4.csv", "study-host")
    row = next(line for line in text.splitlines() if line.startswith("| `study-docker` | imported |"))
    assert "| **slower** | -10.08% [-11.1, -9.3] (p=0.029, n=4+4) |" in row
    assert "| ~ | +3.74% [-22.1, +60.0] (p=0.686, n=4+4) |" in row
    assert "need" not in row
    check("report_reanalysis_4v4.md", text)
    html = reanalysed(tmp_path / "h", "study-4v4.csv", "study-host", "html")
    assert "-10.08% [-11.1, -9.3] (p=0.029, n=4+4)" in html and "~: +3.74% [-22.1, +60.0] (p=0.686, n=4+4)" in html


def test_single_value_tables_show_undefined_not_zero(tmp_path: Path) -> None:
    """One number per cell, as most studies publish: no sd 0.00, CV 0.0 % or zero-width CI; the deltas are plain
    differences with no claim, and the report says how many runs a verdict needs."""
    text = reanalysed(tmp_path, "study-n1.csv", "host")
    assert "0.0 %" not in text.split("## Aggregated")[0] and "| 0.00 |" not in text
    assert "-9.49% (plain difference, n=1+1: interval and p undefined for a single value); need >= 5 runs" in text
    assert "| 1 | 1,204 | 1,204 | undefined (n=1) | undefined (n=1) | 1,204 | 1,204 | undefined (n=1) |" in text
    check("report_single_values.md", text)
    import json

    doc = json.loads(reanalysed(tmp_path / "j", "study-n1.csv", "host", "json"))
    docker = next(v for v in doc["points"][0]["variants"] if v["variant"] == "docker")
    assert docker["summaries"]["tps"]["sd"] is None and "single value" in docker["summaries"]["tps"]["undefined"]
    tps = docker["comparisons"]["tps"]
    assert tps["p"] is None and tps["delta"]["low"] is None and tps["delta"]["delta"] == pytest.approx(-0.0949, 1e-3)
    assert tps["annotation"] == "need >= 5 runs per side" and "plain difference" in tps["evidence"]


def test_report_options_change_the_verdict_without_touching_the_store(tmp_path: Path) -> None:
    """--alpha 0.01: 4+4 runs can no longer reach it (smallest p 0.029), so the TPS delta is shown with
    'need >= 5 runs per side'; --min-runs 6 does the same as a floor of the user's."""
    import shutil

    from layerbench.importing.table import import_csv

    shutil.copy(IMPORTS / "study-4v4.csv", tmp_path / "s.csv")
    with Store(tmp_path / "lb.db") as store:
        cid = import_csv(store, tmp_path / "s.csv", "study", "study-host")
        strict = analyze(store, cid, {"alpha": 0.01})
        floor = analyze(store, cid, {"min_runs": 6})
        plain = analyze(store, cid)
    kinds = [a.points[0].variants[1].verdict("tps").verdict for a in (strict, floor, plain)]
    assert kinds[0].text.startswith("need >= 5 runs per side (have 4 and 4: smallest attainable p = 0.0286")
    assert kinds[1].text == "need >= 6 runs per side (have 4 and 4: min_runs is 6)"
    assert kinds[2].kind == "slower"
