"""The family over which p is Holm-corrected (`correction: point | sweep`): the same raw p-values corrected over
a 3-point thread sweep give larger adjusted p with `sweep` than with `point`, the verdict rule counts the whole
family, and the report says which family it used."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import fill_store, synthetic_campaign
from layerbench.analysis.aggregate import Analysis, analyze
from layerbench.analysis.attainable import runs_needed
from layerbench.analysis.report_model import report_model
from layerbench.analysis.stats import holm
from layerbench.campaign import parse_campaign
from layerbench.errors import BadInput
from layerbench.report import html, markdown
from layerbench.store import Store

THREADS = (2, 4, 8)


def analysed(tmp_path: Path, correction: str | None, threads: tuple[int, ...] = THREADS) -> Analysis:
    db = tmp_path / f"{correction}.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.95}, reps=6, threads=threads,
                     extra={"correction": correction} if correction else None)
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
    said = markdown.render(point)
    assert ("p Holm-corrected across the variants of each point (workload and thread count), not across the points "
            "of a sweep (correction: point; `correction: sweep` corrects them together)") in said
    assert "after the Holm correction for 1 comparison(s)" in said
    said = markdown.render(sweep)
    assert "p Holm-corrected across every variant and thread count of each workload's sweep (correction: sweep)" in said
    assert "after the Holm correction for 3 comparison(s)" in said
    assert "correction: sweep" in html.render(report_model(sweep))
    assert [runs_needed(comparisons=m, alpha=0.05) for m in (1, 6)] == [4, 5]  # as docs/statistics.md says
    single = markdown.render(analysed(tmp_path / "one", None, threads=(2,)))
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
