"""Rounds as blocks (issue #30): the paired signed-rank comparison against SciPy and against its own interval,
its calibration by seeded simulation (A/A error rate with and without drift, power under drift, coverage), the
pairing of runs by round, and how a stored campaign chooses and names its estimator. Issue #43: the paired t-test
against SciPy, the simulation's verdicts against stats.verdict, and the A/A rate of today's rule and of the
t-test in every scenario of this machine's conditions."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as sp

from helpers import synthetic_campaign, synthetic_run
from layerbench.analysis.attainable import T_MIN_PAIRS
from layerbench.analysis.blocks_simulation import (
    DIFFERENT,
    SCENARIOS,
    Scenario,
    fewest_rounds,
    simulate,
    simulate_places,
    simulate_rules,
    verdict_kinds,
)
from layerbench.analysis.loading import analyze
from layerbench.analysis.paired import (
    pair_by_round,
    pairs_needed,
    signed_rank_intervals,
    smallest_p,
    t_intervals,
)
from layerbench.analysis.report_model import method_line, report_model
from layerbench.analysis.stats import DeltaCI, Shifts, verdict
from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.errors import BadInput
from layerbench.records import CampaignRecord
from layerbench.report.evidence import evidence
from layerbench.report.markdown import render
from layerbench.run.schedule import build_schedule
from layerbench.statistics_settings import Settings
from layerbench.store import Store

ALPHA, CAMPAIGNS = 0.05, 3000


def margin(rate: float = ALPHA) -> float:
    """Two standard errors of a simulated rate near `rate` over CAMPAIGNS campaigns."""
    return 2 * (rate * (1 - rate) / CAMPAIGNS) ** 0.5


# --- the test and its interval ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [4, 5, 7, 10, 20, 50])
def test_the_exact_p_is_scipys(n: int) -> None:
    rng = np.random.default_rng(n)
    base = np.exp(rng.normal(0, 0.05, (50, n)))
    variant = base * np.exp(rng.normal(-0.02, 0.05, (50, n)))
    found = signed_rank_intervals(base, variant)
    expected = [sp.wilcoxon(np.log(v) - np.log(b), method="exact").pvalue for b, v in zip(base, variant, strict=True)]
    assert found.p == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_with_ties_and_zeros_p_is_scipys_normal_approximation() -> None:
    base = np.array([100.0, 100, 100, 100, 100, 100, 100, 100])
    variant = np.array([100.0, 90, 90, 110, 80, 80, 80, 95])  # a zero and tied |log-ratios|
    found = signed_rank_intervals(base, variant)
    d = np.log(variant) - np.log(base)
    assert found.p[0] == pytest.approx(sp.wilcoxon(d, zero_method="zsplit", correction=True, method="approx").pvalue)
    assert found.low[0] <= found.delta[0] <= found.high[0]


@pytest.mark.parametrize("n", [6, 8, 10, 25])
def test_the_interval_excludes_zero_exactly_when_p_is_below_alpha(n: int) -> None:
    rng = np.random.default_rng(400 + n)
    base = np.exp(rng.normal(0, 0.05, (2000, n)))
    found = signed_rank_intervals(base, base * 0.97 * np.exp(rng.normal(0, 0.05, (2000, n))), ALPHA)
    assert 0 < (found.p < ALPHA).mean() < 1
    assert np.array_equal((found.low > 0) | (found.high < 0), found.p < ALPHA)


def test_the_delta_is_the_median_of_the_walsh_averages() -> None:
    """log-ratios 0.01, 0.02, 0.06: Walsh averages 0.01, 0.015, 0.02, 0.035, 0.04, 0.06; median 0.0275."""
    found = signed_rank_intervals(np.ones(3), np.exp([0.01, 0.02, 0.06]))
    assert found.delta[0] == pytest.approx(np.expm1(0.0275))
    assert (found.low[0], found.high[0]) == (-1.0, np.inf)  # 3 pairs (smallest p 0.25): -100 % to +inf


def test_the_smallest_p_and_the_pairs_a_verdict_needs() -> None:
    assert smallest_p(5) == 0.0625 and smallest_p(0) == 1.0 and smallest_p(5000) == 0.0
    assert pairs_needed(comparisons=1, alpha=0.05) == 6 and pairs_needed(comparisons=2, alpha=0.05) == 7
    assert pairs_needed(comparisons=2, alpha=0.01) == 9


# --- calibration: the demo's shape (a baseline and 2 variants, Holm) -------------------------------------------


@pytest.mark.parametrize("estimator", ["paired", "unpaired", "auto"])
@pytest.mark.parametrize("drift", [0.0, 0.3])
@pytest.mark.parametrize("rounds", [5, 10])
def test_the_a_a_error_rate_is_at_most_alpha(rounds: int, drift: float, estimator: str) -> None:
    found = simulate((0.0, 0.0), rounds=rounds, drift=drift, estimator=estimator, campaigns=CAMPAIGNS, seed=rounds)
    assert found.any_different() <= ALPHA + margin(), found.any_different()


@pytest.mark.parametrize("drift", [0.1, 0.2, 0.3])
@pytest.mark.parametrize("effect", [-0.03, -0.10])
def test_paired_has_more_power_than_unpaired_under_drift(drift: float, effect: float) -> None:
    """10 rounds: a firm `slower` more often paired (at 10 % drift by a few points, at 30 % by several times)."""
    def power(estimator: str) -> float:
        return simulate((effect, 0.0), rounds=10, drift=drift, estimator=estimator, campaigns=CAMPAIGNS,
                        seed=7).share({"slower"})
    assert power("paired") > power("unpaired") + (0.01 if drift < 0.2 else 0.05)


def test_drift_does_not_change_the_paired_answer() -> None:
    quiet, drifting = (simulate((-0.10, 0.0), rounds=10, drift=d, estimator="paired", campaigns=500, seed=3)
                       for d in (0.0, 0.3))
    assert np.allclose(quiet.low, drifting.low) and np.array_equal(quiet.kinds, drifting.kinds)


@pytest.mark.parametrize("drift", [0.0, 0.3])
def test_the_paired_interval_covers_the_true_effect(drift: float) -> None:
    found = simulate((-0.10, 0.0), rounds=10, drift=drift, estimator="paired", campaigns=CAMPAIGNS, seed=11)
    assert found.coverage(-0.10) >= 0.94


def test_five_rounds_cannot_reach_alpha_paired_so_auto_is_unpaired() -> None:
    paired, unpaired, auto = (simulate((-0.10, 0.0), rounds=5, drift=0.0, estimator=e, campaigns=300, seed=5)
                              for e in ("paired", "unpaired", "auto"))
    assert paired.share({"slower", "slower?"}) == 0 and np.array_equal(auto.kinds, unpaired.kinds)


# --- the paired t-test (issue #43): SciPy's, and the rules compared by simulation ------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 6, 10, 30])
def test_the_t_test_is_scipys_on_the_log_ratios(n: int) -> None:
    rng = np.random.default_rng(43 + n)
    base = np.exp(rng.normal(0, 0.3, (40, n)))
    variant = base * np.exp(rng.normal(-0.03, 0.08, (40, n)))
    found = t_intervals(base, variant, 0.05)
    d = np.log(variant) - np.log(base)
    one = sp.ttest_1samp(d, 0.0, axis=1)
    assert found.p == pytest.approx(sp.ttest_rel(np.log(variant), np.log(base), axis=1).pvalue, rel=1e-9)
    assert found.p == pytest.approx(one.pvalue, rel=1e-9)
    interval = one.confidence_interval(0.95)
    assert np.log1p(found.low) == pytest.approx(interval.low) and np.log1p(found.high) == pytest.approx(interval.high)
    assert np.log1p(found.delta) == pytest.approx(d.mean(axis=1)) and (found.confidence == 0.95).all()


def test_the_t_interval_excludes_zero_exactly_when_p_is_below_alpha() -> None:
    rng = np.random.default_rng(8)
    base = np.exp(rng.normal(0, 0.05, (3000, 6)))
    found = t_intervals(base, base * 0.97 * np.exp(rng.normal(0, 0.05, (3000, 6))), ALPHA)
    assert 0 < (found.p < ALPHA).mean() < 1
    assert np.array_equal((found.low > 0) | (found.high < 0), found.p < ALPHA)


def test_the_t_test_without_spread_or_without_pairs() -> None:
    one = t_intervals(np.ones(1), np.full(1, 0.9))
    assert (one.p[0], one.low[0], one.high[0]) == (1.0, -1.0, np.inf)
    equal = t_intervals(np.ones(3), np.full(3, 0.9))  # every ratio 0.9: t infinite
    assert equal.p[0] == 0.0 and equal.low[0] == equal.high[0] == pytest.approx(-0.1)
    same = t_intervals(np.full(4, 100.0), np.full(4, 100.0))
    assert (same.p[0], same.delta[0], same.low[0], same.high[0]) == (1.0, 0.0, 0.0, 0.0)


def test_the_t_test_of_values_not_all_positive_is_on_the_raw_differences() -> None:
    base, variant = np.array([10.0, 12.0, 0.0, 11.0]), np.array([9.0, 10.0, -1.0, 10.5])
    found = t_intervals(base, variant)
    one = sp.ttest_1samp(variant - base, 0.0)
    scale = np.median(base)
    assert found.p[0] == pytest.approx(one.pvalue) and found.delta[0] == pytest.approx((variant - base).mean() / scale)
    assert found.low[0] == pytest.approx(one.confidence_interval(0.95).low / scale)


def test_the_t_tests_floor_of_pairs_raises_no_cell_of_the_simulation() -> None:
    """docs/statistics.md, "Choosing the paired rule": the easiest cell (normal runs, CV 5 %, -30 %, one variant)
    reaches 80 % firm verdicts at exactly the floor (2 pairs: about 40 %), so no cell needs fewer pairs."""
    assert fewest_rounds("t-test", SCENARIOS[0], (-0.30,), campaigns=2000) == T_MIN_PAIRS == 3


def verdict_one_by_one(found: Shifts, p: np.ndarray, n: int, comparisons: int) -> list[str]:
    rule = Settings(0.02, ALPHA)
    return [verdict(DeltaCI(found.delta[i], found.low[i], found.high[i]), p[i], n, n, rule,
                    comparisons=comparisons).kind for i in range(len(p))]


@pytest.mark.parametrize(("n", "comparisons"), [(3, 1), (4, 2), (6, 3), (10, 6)])
def test_the_simulations_verdicts_are_stats_verdicts(n: int, comparisons: int) -> None:
    """Every region: effects from -6 % to +6 % around the ±2 % band, p around alpha; `need more runs` where the
    gate of n runs per side says so (3 runs; 4 runs with 2 comparisons: 2 x 2 / C(8, 4) > 0.05)."""
    rng = np.random.default_rng(n)
    base = np.exp(rng.normal(0, 0.03, (4000, n)))
    found = t_intervals(base, base * np.exp(rng.normal(0, 0.03, (4000, n)) + rng.uniform(-0.06, 0.06, (4000, 1))))
    p = np.minimum(1.0, found.p * comparisons)
    gated = verdict_one_by_one(found, p, n, comparisons)[0] == "need more runs"
    kinds = verdict_kinds(found, p, gated, 0.02, ALPHA)
    assert list(kinds) == verdict_one_by_one(found, p, n, comparisons)
    assert gated == (n <= 4)
    assert gated or {"slower", "slower?", "faster", "faster?", "within noise", "~"} <= set(kinds)


AA_CAMPAIGNS = 10_000


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_a_a_rate_of_both_rules_is_at_most_alpha_in_every_scenario(scenario: Scenario) -> None:
    """10,000 seeded campaigns per cell, k = 1, 2, 3 and 6 variants at 2, 4, 6 and 10 rounds: the share of campaigns
    with a `slower`/`faster` (or ?) for some variant stays under alpha + 4 standard errors (5.9 %), a bound the
    t-test, exact at alpha for normal runs, exceeds by chance with probability 3e-5 per cell."""
    bound = ALPHA + 4 * (ALPHA * (1 - ALPHA) / AA_CAMPAIGNS) ** 0.5
    for k in (1, 2, 3, 6):
        for rounds in (2, 4, 6, 10):
            found = simulate_rules(scenario, (0.0,) * k, rounds=rounds, campaigns=AA_CAMPAIGNS, seed=100 * k + rounds)
            for rule, outcome in found.items():
                assert outcome.any_different() <= bound, (rule, k, rounds, outcome.any_different())


def test_the_t_test_decides_in_fewer_rounds_at_minus_30_percent() -> None:
    """Normal runs, CV 5 %, 30 % drift, one variant: 80 % firm `slower` in 3 rounds by the t-test, 6 today (the
    signed-rank test needs 6 pairs to reach alpha at all)."""
    scenario = SCENARIOS[0]
    assert fewest_rounds("t-test", scenario, (-0.30,), campaigns=2000) <= 4
    assert fewest_rounds("t-test", scenario, (-0.30, 0.0, 0.0, 0.0, 0.0, 0.0), campaigns=2000) <= 5
    assert fewest_rounds("today", scenario, (-0.30,), campaigns=2000) >= 6


def test_the_storage_studys_shape_is_decided_by_the_t_test_and_not_today() -> None:
    """6 rounds, 6 variants: three at -31, -25, -19 %, three at 0; normal runs, CV 5 %, 30 % drift."""
    found = simulate_rules(SCENARIOS[0], (-0.31, -0.25, -0.19, 0.0, 0.0, 0.0), rounds=6, campaigns=2000)
    assert found["t-test"].all_of({"slower"}, slice(0, 3)) > 0.9 > 0.05 > found["today"].all_of({"slower"}, slice(0, 3))
    assert found["t-test"].any_different(slice(3, 6)) <= ALPHA + margin()
    assert not np.isin(found["today"].kinds[:, 3:], list(DIFFERENT)).any()


def test_the_simulation_is_seeded_and_the_rules_see_the_same_campaigns() -> None:
    scenario = SCENARIOS[-1]
    first, again = (simulate_rules(scenario, (-0.1, 0.0), rounds=12, campaigns=300, seed=5) for _ in range(2))
    assert np.array_equal(first["t-test"].kinds, again["t-test"].kinds)
    # at 12 rounds both are paired on the same log-ratios: the estimates differ, the campaigns do not
    assert not np.array_equal(first["t-test"].low, first["today"].low)
    assert (first["t-test"].low < -0.1).mean() == pytest.approx((first["today"].low < -0.1).mean(), abs=0.15)


# --- pairing runs by round -----------------------------------------------------------------------------------


def test_runs_are_paired_within_their_round_and_a_run_without_partner_is_left_out() -> None:
    base = [(1, 100.0), (2, 101.0), (3, 99.0), (5, 98.0)]  # round 4: the baseline's run failed
    variant = [(1, 90.0), (2, 91.0), (3, 89.0), (4, 92.0), (5, 88.0), (6, 93.0)]  # round 6: a rerun elsewhere
    pairs = pair_by_round(base, variant)
    assert pairs.baseline == (100.0, 101.0, 99.0, 98.0) and pairs.variant == (90.0, 91.0, 89.0, 88.0)
    assert pairs.unpaired == 2


def test_a_rerun_in_the_same_round_pairs_in_run_order() -> None:
    pairs = pair_by_round([(1, 100.0), (1, 102.0)], [(1, 90.0)])
    assert pairs.baseline == (100.0,) and pairs.variant == (90.0,) and pairs.unpaired == 1


# --- a stored campaign chooses its estimator and says why ---------------------------------------------------------


def drifting_store(path: Path, *, rounds: int = 8, estimator: str | None = "paired", order: str = "rounds",
                   fail: set[int] = frozenset(), threads: tuple[int, ...] = (2,)) -> int:
    """docker-bridge 10 % below host, docker-host 0 %, and round r at 1 - 0.3 * ((3 r) mod 7) / 6: a drift between
    rounds that the unpaired comparison cannot see through at 8 rounds."""
    variants = {"host": 1.0, "docker-bridge": 0.9, "docker-host": 1.0}
    document = synthetic_campaign(variants, rounds, threads) | {"order": order}
    campaign = parse_campaign(document | ({"estimator": estimator} if estimator else {}))
    stored = campaign_as_dict(campaign)
    if estimator is None:
        stored.pop("estimator")  # as a campaign stored before the setting existed
    rng = random.Random(5)
    with Store(path) as store:
        cid = store.create_campaign(CampaignRecord.from_json(stored), "results", None)
        specs = build_schedule(campaign)
        store.save_schedule(cid, [s.as_row() for s in specs])
        for spec in specs:
            drift = 1 - 0.3 * ((3 * spec.round) % 7) / 6
            store.save_run(synthetic_run(cid, spec, variants[spec.variant] * drift, rng, spec.idx in fail))
        store.finish_campaign(cid, "finished")
    return cid


def tps(path: Path, cid: int, variant: str = "docker-bridge", point: int = 0):
    with Store(path) as store:
        analysis = analyze(store, cid)
    found = next(v for v in analysis.points[point].variants if v.variant == variant).verdict("tps")
    return analysis, found


def test_drift_between_rounds_paired_gives_the_verdict_unpaired_cannot(tmp_path: Path) -> None:
    analysis, paired = tps(tmp_path / "a.db", drifting_store(tmp_path / "a.db"))
    _, unpaired = tps(tmp_path / "b.db", drifting_store(tmp_path / "b.db", estimator="unpaired"))
    assert paired.pairs == 8 and paired.verdict.kind == "slower" and paired.delta.delta == pytest.approx(-0.1, abs=0.02)
    assert unpaired.pairs is None and unpaired.verdict.kind == "~"
    assert "paired by round" in method_line(analysis) and "Unpaired instead" not in method_line(analysis)


def test_a_failed_run_leaves_its_round_unpaired(tmp_path: Path) -> None:
    cid = drifting_store(tmp_path / "a.db", rounds=9)
    with Store(tmp_path / "a.db") as store:
        first = next(r for r in store.runs(cid) if r.variant == "host")
    cid = drifting_store(tmp_path / "b.db", rounds=9, fail={first.idx})
    analysis, found = tps(tmp_path / "b.db", cid)
    assert (found.pairs, found.n_baseline, found.n_variant) == (8, 8, 9)
    assert "n=8 pairs of 8+9 runs)" in evidence(found) and "n=8 pairs of" in render(report_model(analysis))


def test_too_few_pairs_fall_back_to_unpaired_and_the_report_says_so(tmp_path: Path) -> None:
    """2 rounds: below the t-test's floor of 3 pairs the comparison is unpaired, which 2 + 2 runs cannot decide
    either; its 'need more runs' and the method line say the rounds pairing needs, not Mann-Whitney's 4 a side."""
    analysis, found = tps(tmp_path / "a.db", drifting_store(tmp_path / "a.db", rounds=2))
    assert found.pairs is None and found.n_baseline == 2 and found.verdict.kind == "need more runs"
    assert found.verdict.text == "need >= 3 rounds holding both runs (have 2 pairs: the paired t-test's floor)"
    line = method_line(analysis)
    assert "Unpaired instead" in line and "fewer than 3 rounds hold both runs, the paired t-test's floor" in line
    assert "paired t-test" in line and "Wilcoxon" not in line


def test_three_rounds_are_paired_and_decide_through_the_drift(tmp_path: Path) -> None:
    """3 rounds, the t-test's floor: paired, and the -10 % is seen through 30 % drift between rounds."""
    analysis, found = tps(tmp_path / "a.db", drifting_store(tmp_path / "a.db", rounds=3))
    assert found.pairs == 3 and found.verdict.kind == "slower" and found.delta.delta == pytest.approx(-0.1, abs=0.02)
    assert "Unpaired instead" not in method_line(analysis)
    assert "a verdict needs >= 3 rounds holding both runs here" in report_model(analysis).rule


def test_each_point_of_a_sweep_is_paired_on_its_own(tmp_path: Path) -> None:
    cid = drifting_store(tmp_path / "a.db", threads=(2, 4))
    for point in (0, 1):
        _, found = tps(tmp_path / "a.db", cid, point=point)
        assert found.pairs == 8 and found.verdict.kind == "slower"


@pytest.mark.parametrize(("estimator", "order", "why"), [
    ("unpaired", "rounds", "unpaired because it was asked for (estimator: unpaired):"),
    (None, "rounds", "unpaired because the campaign was stored before paired analysis existed"),
    ("paired", "sequential", "unpaired because its runs were not interleaved in rounds (order: sequential):")])
def test_the_report_says_why_a_campaign_is_unpaired(tmp_path: Path, estimator: str | None, order: str,
                                                    why: str) -> None:
    analysis, found = tps(tmp_path / "a.db", drifting_store(tmp_path / "a.db", estimator=estimator, order=order))
    assert found.pairs is None and why in method_line(analysis) and analysis.settings.estimator == "unpaired"


def test_an_imported_campaign_has_no_rounds_and_is_unpaired(tmp_path: Path) -> None:
    import shutil

    from layerbench.importing.table import import_csv

    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "import" / "study-4v4.csv", tmp_path / "s.csv")
    with Store(tmp_path / "lb.db") as store:
        analysis = analyze(store, import_csv(store, tmp_path / "s.csv", "study", "study-host"))
    assert "unpaired because its rounds are not available (imported results):" in method_line(analysis)


@pytest.mark.parametrize("value", ["both", ["paired"], 1, "", "[/x]"])
def test_a_bad_estimator_is_one_line_naming_the_field(value: object) -> None:
    document = synthetic_campaign({"host": 1.0, "v": 1.0}) | {"estimator": value}
    with pytest.raises(BadInput) as error:
        parse_campaign(document)
    assert str(error.value).startswith("estimator: ") and "\n" not in str(error.value)


def test_new_campaigns_are_paired_and_say_so_in_their_definition() -> None:
    stored = campaign_as_dict(parse_campaign(synthetic_campaign({"host": 1.0, "v": 1.0})))
    assert stored["estimator"] == "paired" and CampaignRecord.from_json(stored).settings().estimator == "paired"
    del stored["estimator"]
    assert CampaignRecord.from_json(stored).settings().estimator == "unpaired"


# --- any values a run can give ---------------------------------------------------------------------------------

PAIRS = st.integers(1, 60).flatmap(lambda n: st.tuples(*(st.lists(
    st.one_of(st.floats(-1e6, 1e6), st.integers(0, 3).map(float)), min_size=n, max_size=n),) * 2))


@given(PAIRS)
def test_any_pairs_give_an_ordered_interval_and_a_p_in_0_1(pairs: tuple[list[float], list[float]]) -> None:
    base, variant = (np.array(side) for side in pairs)
    if np.median(base) == 0 and not ((base > 0).all() and (variant > 0).all()):
        with pytest.raises(ValueError):
            signed_rank_intervals(base, variant)
        with pytest.raises(ValueError):
            t_intervals(base, variant)
        return
    found = signed_rank_intervals(base, variant)
    assert 0 <= found.p[0] <= 1 and found.low[0] <= found.delta[0] <= found.high[0]
    t = t_intervals(base, variant)  # the paired t-test (issue #43): the same guarantees
    assert 0 <= t.p[0] <= 1 and t.low[0] <= t.delta[0] <= t.high[0]
    if not ((base > 0).all() and (variant > 0).all()):
        return
    d = np.log(variant) - np.log(base)
    if d.size <= 50 and len(set(np.abs(d))) == d.size and d.all():  # SciPy's exact case
        assert found.p[0] == pytest.approx(sp.wilcoxon(d, method="exact").pvalue)


def test_a_sweep_family_is_paired_at_every_point_and_corrected_together(tmp_path: Path) -> None:
    """6 rounds at 3 thread counts: the t-test's floor does not grow with the family, so correction point and
    correction sweep both pair every point, and sweep corrects those paired p-values together."""
    from helpers import fill_store
    from layerbench.analysis.stats import holm

    found = {}
    for correction in ("point", "sweep"):
        cid = fill_store(tmp_path / f"{correction}.db", {"host": 1.0, "vm": 0.95}, reps=6, threads=(2, 4, 8),
                         extra={"correction": correction})
        with Store(tmp_path / f"{correction}.db") as store:
            analysis = analyze(store, cid)
        found[correction] = [next(v for v in p.variants if v.variant == "vm").verdict("tps") for p in analysis.points]
    assert all(c.pairs == 6 for c in found["point"]) and all(c.pairs == 6 for c in found["sweep"])
    assert [c.p for c in found["sweep"]] == pytest.approx([c.p for c in found["point"]])
    assert [c.p_adjusted for c in found["sweep"]] == pytest.approx(holm([c.p for c in found["sweep"]]))


def test_report_estimator_reanalyses_a_stored_campaign_paired_without_touching_the_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A campaign stored before the setting keeps unpaired; `report --estimator paired` analyses it paired for
    that report only; a wrong value is one line, exit 2."""
    from layerbench.cli.main import main
    from layerbench.cli.terminal import STATE
    from layerbench.statistics_settings import Overrides

    monkeypatch.setitem(STATE, "debug", False)
    db = tmp_path / "lb.db"
    cid = drifting_store(db, estimator=None)
    with Store(db) as store:
        paired = analyze(store, cid, Overrides(estimator="paired"))
        assert store.campaign(cid).definition.estimator == "unpaired"
    assert "paired by round" in method_line(paired)
    said = {}
    for value in ("paired", "both"):
        with pytest.raises(SystemExit) as done:
            main(["report", str(cid), "-f", "md", "-o", str(tmp_path / "r"), "--db", str(db), "--estimator", value])
        said[value] = (int(done.value.code or 0), capsys.readouterr().err)
    assert said["paired"][0] == 0 and "paired by round" in (tmp_path / "r" / "report.md").read_text()
    assert said["both"][0] == 2
    from layerbench.cli.statistics_options import statistics_options

    with pytest.raises(BadInput) as error:
        statistics_options(None, None, None, None, "both")
    assert str(error.value).startswith("--estimator: 'both' is not an estimator; use paired")


def test_a_busy_run_replaced_in_its_round_is_paired_through_its_rerun() -> None:
    """busy: rerun stores the busy run as `replaced` and its rerun in the same round: the pair of that round is
    the rerun's, and the replaced run is in no pair."""
    from layerbench.analysis.point_statistics import round_values
    from layerbench.analysis.runs import RunRow

    def row(idx: int, rnd: int, variant: str, tps: float, status: str = "ok") -> RunRow:
        return RunRow(idx, idx, rnd, variant, "default", 2, rnd, status, None, {"tps": tps})

    runs = [row(0, 1, "host", 100.0), row(1, 1, "v", 40.0, "replaced"), row(2, 2, "v", 91.0),
            row(3, 2, "host", 101.0), row(4, 1, "v", 90.0)]
    found = round_values(runs, ["host", "v"], "tps")
    pairs = pair_by_round(found["host"], found["v"])
    assert pairs.baseline == (100.0, 101.0) and pairs.variant == (90.0, 91.0) and pairs.unpaired == 0


def test_balanced_rounds_take_most_of_a_place_effect_out_of_the_a_a_rate() -> None:
    """The places measured in the quiet A/A campaigns of issue #43 (docs/statistics.md, "The order within a
    round"): with balanced blocks the A/A rate is below alpha and below that of a shuffle per round."""
    quiet = Scenario("quiet", round_sd=0.03, cv=0.025)
    places = (0.003, 0.013, -0.015, -0.001)
    shuffled = simulate_places(quiet, places, rounds=6, orders="shuffled", campaigns=10_000).any_different()
    balanced = simulate_places(quiet, places, rounds=6, orders="balanced", campaigns=10_000).any_different()
    assert balanced <= 0.05 and balanced < shuffled - 0.005


def test_a_noisier_baseline_keeps_the_a_a_rate_of_four_identical_variants() -> None:
    """Every comparison shares the baseline's runs, so an unlucky baseline moves all three together (the second A/A
    campaign of issue #43: the baseline lowest in 5 of 6 rounds); Holm stays valid under that dependence."""
    for noisier in (2.0, 3.0):
        scenario = Scenario(f"baseline at {noisier:g}x", noisier_baseline=noisier)
        found = simulate_rules(scenario, (0.0, 0.0, 0.0), rounds=6, campaigns=10_000, rules=("t-test",),
                               min_pairs=T_MIN_PAIRS)["t-test"]
        assert found.any_different() <= 0.05 + 4 * (0.05 * 0.95 / 10_000) ** 0.5
