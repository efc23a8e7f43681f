from __future__ import annotations

import shutil
from pathlib import Path

from helpers import fill_store
from layerbench.analysis.cross_campaign import compare_campaigns
from layerbench.analysis.loading import analyze
from layerbench.cli.main import main
from layerbench.cli.terminal import STATE
from layerbench.importing.sources import import_results
from layerbench.statistics_settings import Overrides
from layerbench.store import Store


def test_a_change_between_campaigns_is_found(tmp_path: Path, capsys) -> None:
    db = tmp_path / "lb.db"
    first = fill_store(db, {"host": 1.0, "docker": 0.9}, reps=6, seed=1)
    second = fill_store(db, {"host": 1.0, "docker": 0.8}, reps=6, seed=2)
    with Store(db) as store:
        rows = compare_campaigns(analyze(store, first), analyze(store, second))
    by = {(r.variant, r.metric): r.comparison.verdict.kind for r in rows}
    assert by[("docker", "tps")] == "slower" and by[("host", "tps")] in {"~", "within noise"}
    try:
        main(["compare", str(first), str(second), "--db", str(db)])
    except SystemExit as done:
        assert done.code == 0
    assert "| `docker` | default, 2 thr | tps |" in capsys.readouterr().out


def test_campaigns_of_different_percentiles_compare_tps_not_the_percentile_latency(tmp_path: Path, capsys,
                                                                                    monkeypatch) -> None:
    """Two imported archives: `rate40` reports the 95th percentile in A, the 100th in B (real 1.0.20 logs)."""
    monkeypatch.setitem(STATE, "debug", False)
    logs = Path(__file__).resolve().parents[1] / "data" / "logs"
    shutil.copytree(logs / "captured-1.0.20" / "unlimited", tmp_path / "b" / "unlimited")
    shutil.copytree(logs / "captured-1.0.20-p100" / "rate40-p100", tmp_path / "b" / "rate40")
    db = tmp_path / "lb.db"
    with Store(db) as store:
        first = import_results(store, str(logs / "captured-1.0.20"), "a", "unlimited", Overrides())
        second = import_results(store, str(tmp_path / "b"), "b", "unlimited", Overrides())
        rows = compare_campaigns(analyze(store, first), analyze(store, second))
    by = {(r.variant, r.metric): r.comparison.verdict for r in rows}
    assert by[("rate40", "lat_pct_ms")].kind == "not compared" and by[("rate40", "lat_pct_ms")].text == "95th vs 100th"
    assert by[("rate40", "tps")].kind in {"~", "within noise", "slower", "slower?", "faster", "faster?"}
    assert by[("unlimited", "lat_pct_ms")].kind != "not compared"  # 95th in both: compared
    try:
        main(["compare", str(first), str(second), "--db", str(db)])
    except SystemExit as done:
        assert done.code == 0
    assert "| `rate40` | imported, 2 thr | lat_pct_ms | 3.55 | 37.33 | not compared | 95th vs 100th |" in (
        capsys.readouterr().out)
