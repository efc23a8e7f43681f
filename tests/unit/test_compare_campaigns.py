from __future__ import annotations

from pathlib import Path

from helpers import fill_store
from layerbench.analysis.aggregate import analyze
from layerbench.analysis.campaigns import compare_campaigns
from layerbench.cli import main
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
