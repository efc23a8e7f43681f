"""Plans that can answer (issue #43 item 2; run/answerable.py, analysis/attainable.py point_needs): validate's
per-point fewest rounds for a verdict under the plan's alpha, Holm family and adaptive looks, the refusal of a plan
that never reaches one (exit 2, one line naming what to set), `estimates_only: true`, and the report's rule line
saying the same number as validate."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

from helpers import fill_store, synthetic_campaign
from layerbench.analysis.attainable import T_MIN_PAIRS, point_needs, rounds_needed
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import Campaign, load_campaign, parse_campaign, smoke_version, with_scale
from layerbench.errors import BadInput
from layerbench.run import answerable
from layerbench.store import Store

FAMILIES = (1, 2, 3, 6)


def plan(k: int, repetitions: Any, **keys: Any) -> Campaign:
    """A baseline and k variants on the host backend."""
    variants = {"base": 1.0} | {f"v{i}": 1.0 for i in range(k)}
    return parse_campaign(synthetic_campaign(variants, repetitions) | keys)


def mann_whitney_need(comparisons: int, alpha: float) -> int:
    """The fewest runs a side at which k x 2 / C(2n, n) < alpha, counted here from the formula alone."""
    n = 2
    while comparisons * 2 / comb(2 * n, n) >= alpha:
        n += 1
    return n


@pytest.mark.parametrize("k", FAMILIES)
def test_paired_plans_need_the_t_tests_floor_whatever_the_family(k: int) -> None:
    """Paired by round the t-test reaches any alpha from 3 pairs: 3 rounds for k = 1, 2, 3 and 6 alike."""
    assert [n.rounds for n in answerable.needs(plan(k, 3))] == [T_MIN_PAIRS] == [3]
    answerable.check(plan(k, 3))
    with pytest.raises(BadInput) as refused:
        answerable.check(plan(k, 2))
    assert str(refused.value) == ("repetitions: 2 gives 2 rounds; a verdict needs >= 3 (paired t-test, floor 3 "
                                  "pairs): set repetitions: 3, or estimates_only: true")


@pytest.mark.parametrize("k", FAMILIES)
def test_unpaired_plans_need_what_mann_whitney_can_reach_after_holm(k: int) -> None:
    need = mann_whitney_need(k, 0.05)
    assert need == {1: 4, 2: 5, 3: 5, 6: 5}[k]
    found = answerable.needs(plan(k, need, estimator="unpaired"))
    assert [(n.comparisons, n.rounds) for n in found] == [(k, need)]
    answerable.check(plan(k, need, estimator="unpaired"))
    with pytest.raises(BadInput) as refused:
        answerable.check(plan(k, need - 1, estimator="unpaired"))
    assert str(refused.value).startswith(f"repetitions: {need - 1} gives {need - 1} rounds; a verdict needs >= {need} "
                                         f"(unpaired Mann-Whitney at alpha 0.05 after Holm over {k})")
    assert str(refused.value).endswith(f"set repetitions: {need}, or estimates_only: true")


def test_order_sequential_is_unpaired_and_a_sweep_family_counts_every_thread_count() -> None:
    sweep = parse_campaign(synthetic_campaign({"a": 1.0, "b": 1.0, "c": 1.0}, 5, threads=(1, 2, 4))
                           | {"correction": "sweep", "order": "sequential"})
    assert [(n.point, n.comparisons, n.rounds) for n in answerable.needs(sweep)] == [
        (f"default / {t} threads", 6, mann_whitney_need(6, 0.05)) for t in (1, 2, 4)]


@pytest.mark.parametrize("k", FAMILIES)
def test_adaptive_plans_pay_their_looks_only_when_unpaired(k: int) -> None:
    """An adaptive plan tests at alpha / looks: nothing to the t-test, more runs to Mann-Whitney; a refusal names
    the fewest max whose own looks it reaches."""
    auto = {"auto": True, "min": 2, "max": 2}
    with pytest.raises(BadInput) as refused:
        answerable.check(plan(k, auto))
    assert str(refused.value) == ("repetitions: max 2 gives at most 2 rounds; a verdict needs >= 3 (paired t-test, "
                                  "floor 3 pairs): set repetitions.max: 3, or estimates_only: true")
    answerable.check(plan(k, auto | {"max": 3}))
    unpaired = plan(k, auto | {"max": 4}, estimator="unpaired")  # 3 looks: alpha 0.05 / 3 per look
    assert answerable.needs(unpaired)[0].rounds == mann_whitney_need(k, 0.05 / 3)
    with pytest.raises(BadInput) as refused:
        answerable.check(unpaired)
    wanted = next(top for top in range(5, 100) if mann_whitney_need(k, 0.05 / (top - 1)) <= top)
    assert f"alpha 0.05 / 3 looks after Holm over {k}" in str(refused.value)
    assert str(refused.value).endswith(f"set repetitions.max: {wanted}, or estimates_only: true")
    answerable.check(plan(k, auto | {"max": wanted}, estimator="unpaired"))


def test_one_variant_needs_no_verdict_and_min_runs_raises_the_floor() -> None:
    answerable.check(plan(0, 1))
    assert answerable.lines(plan(0, 1)) == ["verdicts: none to make (one variant: no comparison with the baseline)"]
    assert [n.rounds for n in answerable.needs(plan(2, 5, min_runs=5))] == [5]
    assert rounds_needed(paired=True, comparisons=6, alpha=0.001, min_runs=0) == 3


def test_estimates_only_takes_the_plan_and_says_it_gives_no_verdict() -> None:
    wanted = plan(2, 2, estimates_only=True)
    answerable.check(wanted)
    assert answerable.lines(wanted) == [
        "verdicts at default / 2 threads: 2 comparison(s) in the Holm family (paired t-test, floor 3 pairs): a "
        "verdict from round 3; estimates only (estimates_only: true): the plan's 2 round(s) give none"]
    assert answerable.lines(plan(2, 6))[0].endswith("a verdict from round 3; the plan runs 6 rounds")


def test_smoke_mode_wants_estimates_only() -> None:
    smoke = smoke_version(plan(3, 6))
    assert smoke.repetitions == 1 and smoke.estimates_only is True
    answerable.check(smoke)


@given(st.one_of(st.text(max_size=20), st.integers(), st.floats(), st.lists(st.booleans(), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.booleans(), max_size=2)))
def test_estimates_only_takes_true_or_false_only(value: object) -> None:
    with pytest.raises(BadInput) as refused:
        parse_campaign(synthetic_campaign({"a": 1.0, "b": 1.0}) | {"estimates_only": value})
    said = str(refused.value)
    assert said.startswith("estimates_only: ") and "true or false" in said and "\n" not in said


def test_validate_refuses_a_plan_that_cannot_decide_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    document = synthetic_campaign({"base": 1.0, "other": 1.0}, 2) | {"output": str(tmp_path / "out")}
    path.write_text(json.dumps(document))
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    assert "repetitions: 2 gives 2 rounds; a verdict needs >= 3" in err and "estimates_only: true" in err
    assert not (tmp_path / "out").exists()  # nothing created


@pytest.mark.parametrize(("keys", "said"), [
    ({}, "a verdict needs >= {} rounds holding both runs here"),
    ({"estimator": "unpaired"}, "so it needs >= {} runs per side here")])
def test_the_report_states_the_rounds_validate_prints(tmp_path: Path, keys: dict[str, str], said: str) -> None:
    """One rule: the report's rule line says the need of point_needs for the same campaign."""
    variants = {"host": 1.0, "a": 0.9, "b": 0.95}
    cid = fill_store(tmp_path / "lb.db", variants, reps=6, extra=keys)
    with Store(tmp_path / "lb.db") as store:
        rule = report_model(analyze(store, cid)).rule
    (need,) = answerable.needs(parse_campaign(synthetic_campaign(variants, 6) | keys))
    assert need.rounds == point_needs([("default", 2)], 3, paired=not keys, alpha=0.05)[0].rounds
    assert said.format(need.rounds) in rule and "Estimates only" not in rule


def test_an_estimates_only_report_says_so_instead_of_warning(tmp_path: Path) -> None:
    cid = fill_store(tmp_path / "lb.db", {"host": 1.0, "vm": 0.9}, reps=2, extra={"estimates_only": True})
    with Store(tmp_path / "lb.db") as store:
        report = report_model(analyze(store, cid))
    assert report.rule.startswith("Estimates only (estimates_only: true): ")
    assert report.answer[0].tps is not None and report.answer[0].tps.verdict.kind == "need more runs"
    assert not [w for w in report.warnings if "too few runs for a verdict" in w]


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "src" / "layerbench" / "data" / "examples").glob("*.yaml"))
DEMO = Path(__file__).resolve().parents[2] / "src" / "layerbench" / "data" / "default-campaign.yaml"


@pytest.mark.parametrize("path", [*EXAMPLES, DEMO], ids=lambda p: p.stem)
def test_every_example_its_scales_and_its_smoke_run_can_answer(path: Path) -> None:
    """The examples and the demo plan rounds enough for a verdict at every point; so do their `--scale` versions
    (which change the workloads, not the rounds); their `run --smoke` version wants estimates only."""
    campaign = load_campaign(path)
    answerable.check(campaign)
    assert all(n.rounds <= campaign.rounds for n in answerable.needs(campaign))
    for mode in ("published", "machine"):
        size = campaign.published.size if campaign.published else None
        if size is not None and (mode == "published" or size.ram is not None):
            answerable.check(with_scale(campaign, mode, ram_here=16 * 2**30))  # type: ignore[arg-type]
    answerable.check(smoke_version(campaign))
