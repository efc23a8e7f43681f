"""The family over which p is Holm-corrected (`correction: point | sweep`): the same raw p-values corrected over
a 3-point thread sweep give larger adjusted p with `sweep` than with `point`, the verdict rule counts the whole
family, and the report says which family it used."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import fill_store, synthetic_campaign
from layerbench.analysis.aggregate import Analysis
from layerbench.analysis.attainable import runs_needed
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.analysis.stats import holm
from layerbench.campaign.models import parse_campaign
from layerbench.cli.main import main
from layerbench.cli.terminal import STATE
from layerbench.errors import BadInput
from layerbench.report import html, markdown
from layerbench.statistics_settings import Overrides
from layerbench.store import Store

THREADS = (2, 4, 8)


def analysed(tmp_path: Path, correction: str | None, threads: tuple[int, ...] = THREADS) -> Analysis:
    """Unpaired, so that the rule text names the family (the paired t-test's floor does not depend on it; the
    paired families are tests/unit/test_paired.py's)."""
    db = tmp_path / f"{correction}.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.95}, reps=6, threads=threads,
                     extra={"estimator": "unpaired"} | ({"correction": correction} if correction else {}))
    with Store(db) as store:
        return analyze(store, cid)


def tps_comparisons(analysis: Analysis) -> dict[int | None, tuple[float, float]]:
    """threads -> (raw p, adjusted p) of `vm`'s TPS comparison."""
    out = {}
    for point in analysis.points:
        found = next(v for v in point.variants if v.variant == "vm").verdict("tps")
        assert found is not None and found.p is not None and found.p_adjusted is not None
        out[point.threads] = (found.p, found.p_adjusted)
    return out


def test_a_sweep_family_corrects_the_same_p_values_more_than_a_point_family(tmp_path: Path) -> None:
    point, sweep = analysed(tmp_path, None), analysed(tmp_path, "sweep")
    by_point, by_sweep = tps_comparisons(point), tps_comparisons(sweep)
    assert set(by_point) == set(THREADS)
    for threads in THREADS:
        raw_point, adjusted_point = by_point[threads]
        raw_sweep, adjusted_sweep = by_sweep[threads]
        assert raw_point == raw_sweep  # the same data, the same test
        assert adjusted_point == raw_point  # one comparison per point: nothing to correct
        assert adjusted_sweep > adjusted_point
    raw = [by_sweep[t][0] for t in THREADS]
    assert [by_sweep[t][1] for t in THREADS] == pytest.approx(holm(raw))


def test_the_report_names_the_family(tmp_path: Path) -> None:
    point, sweep = analysed(tmp_path, None), analysed(tmp_path, "sweep")
    said = markdown.render(report_model(point))
    assert ("p Holm-corrected across the variants of each point (workload and thread count), not across the points "
            "of a sweep (correction: point; `correction: sweep` corrects them together)") in said
    assert "after the Holm correction for 1 comparison(s)" in said
    said = markdown.render(report_model(sweep))
    assert "p Holm-corrected across every variant and thread count of each workload's sweep (correction: sweep)" in said
    assert "after the Holm correction for 3 comparison(s)" in said
    assert "correction: sweep" in html.render(report_model(sweep))
    assert [runs_needed(comparisons=m, alpha=0.05) for m in (1, 6)] == [4, 5]  # as docs/statistics.md says
    single = markdown.render(report_model(analysed(tmp_path / "one", None, threads=(2,))))
    assert "p Holm-corrected across the variants of each point," in single


def test_a_store_from_before_the_setting_reads_as_point(tmp_path: Path) -> None:
    """A stored definition without `correction` (every store before it) keeps today's family."""
    analysis = analysed(tmp_path, None)
    assert analysis.definition.correction == "point"
    document = {k: v for k, v in analysis.definition.to_json().items() if k != "correction"}
    from layerbench.records import CampaignRecord

    assert CampaignRecord.from_json(document).correction == "point"


@pytest.mark.parametrize("value", ["points", "Sweep", "", 1, ["sweep"], None, "sweep\n"])
def test_an_unknown_family_is_refused_in_one_line(value: object) -> None:
    with pytest.raises(BadInput) as error:
        parse_campaign({**synthetic_campaign({"a": 1.0, "b": 1.0}), "correction": value})
    assert "correction" in str(error.value) and "\n" not in str(error.value)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=8), st.lists(st.floats(0, 1), max_size=8))
def test_a_larger_family_never_lowers_an_adjusted_p(pvalues: list[float], others: list[float]) -> None:
    alone, together = holm(pvalues), holm(pvalues, others)
    assert len(together) == len(pvalues)
    assert all(t >= a - 1e-12 for a, t in zip(alone, together, strict=True))
    assert all(p - 1e-12 <= t <= 1.0 for p, t in zip(pvalues, together, strict=True))


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), capsys.readouterr().err


def test_report_and_import_take_the_family_for_one_analysis(tmp_path: Path, capsys,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`report --correction sweep` re-analyses a stored campaign over the sweep (the store keeps `point`);
    `import --correction sweep` stores it with the imported campaign; a wrong value is one line, exit 2."""
    monkeypatch.setitem(STATE, "debug", False)  # an earlier in-process `--debug` (test_cli) stays set otherwise
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.95}, reps=6, threads=THREADS, extra={"estimator": "unpaired"})
    with Store(db) as store:
        again = tps_comparisons(analyze(store, cid, Overrides(correction="sweep")))
        assert store.campaign(cid).definition.correction == "point"
    assert again == tps_comparisons(analysed(tmp_path, "sweep"))
    code, err = run_cli(["report", str(cid), "-f", "md", "-o", str(tmp_path / "r"), "--correction", "sweep",
                         "--db", str(db)], capsys)
    assert code == 0, err
    assert "(correction: sweep)" in (tmp_path / "r" / "report.md").read_text()
    table = tmp_path / "t.csv"
    table.write_text("variant,iteration,threads,tps\n" + "".join(
        f"{v},{i},{t},{(100 if v == 'host' else 90) + i}\n" for v in ("host", "vm") for t in THREADS
        for i in range(1, 6)))
    code, err = run_cli(["import", str(table), "--name", "t", "--baseline", "host", "--correction", "sweep",
                         "--db", str(db)], capsys)
    assert code == 0, err
    with Store(db) as store:
        assert store.campaign("t").definition.correction == "sweep"
    for command in (["report", str(cid)], ["import", str(table), "--name", "u", "--baseline", "host"]):
        code, err = run_cli([*command, "--correction", "sweeps", "--db", str(db)], capsys)
        assert code == 2 and err.strip().count("\n") == 0
        assert "--correction: 'sweeps' is not a family of comparisons; use point" in err
