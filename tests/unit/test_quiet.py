"""Waiting for quiet learns from the machine (analysis/quiet.py's rule, run/quiet_waits.py in the campaign loop of
run/orchestrator.py, analysis/busy.py's decide and warnings, the reports, run/plan.py's estimate): once waits end at
their limit the campaign stops waiting, keeps busy runs instead of rerunning them, stores after which run, and says
so; the plan counts no more waiting than the rule allows."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from helpers import SaidLines, synthetic_run
from layerbench.analysis.busy import decide, quiet_wait_warning, what_was_done
from layerbench.analysis.loading import analyze
from layerbench.analysis.quiet import (
    STOP_IN_A_ROW,
    WAIT_SHARE,
    keep_waiting,
    learning,
    limits_text,
    ran_out,
    stopped_text,
    wait_limit,
)
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.records import BusyDecision, QuietWait, RunRecord, Usage
from layerbench.report import json_export, markdown
from layerbench.run.orchestrator import Orchestrator, Outcome
from layerbench.run.schedule import RunSpec
from layerbench.store import Store

OUT = QuietWait(30.0, False, 0.6, 30.0)  # a wait that ended at its limit
QUIET = QuietWait(2.0, True, 0.05, 30.0)  # one that ended because the machine got quiet
BUSY = {"cpu_seconds": {"server": 1.0, "client": 1.0, "other": 6.0, "idle": 2.0}, "steal_seconds": 0.0,
        "top_other": [{"pid": 9, "name": "stress-ng-cpu", "cpu_seconds": 6.0}]}


@pytest.fixture(autouse=True)
def _defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default busy policy (the suite sets LAYERBENCH_BUSY=keep) and the default of learning."""
    monkeypatch.delenv("LAYERBENCH_BUSY", raising=False)
    monkeypatch.delenv("LAYERBENCH_WAIT_FOR_QUIET", raising=False)


# --- the rule ------------------------------------------------------------------------------------------------------


def test_two_waits_in_a_row_at_their_limit_stop_waiting_however_long_the_campaign() -> None:
    assert STOP_IN_A_ROW == 2 and WAIT_SHARE == 0.1
    long = 1e6  # a long campaign: the share rule alone would go on waiting
    assert keep_waiting([], 0.0)
    assert keep_waiting([QUIET, QUIET, QUIET], 0.0)  # waits that ended quiet cost nothing the rule counts
    assert keep_waiting([OUT], long) and keep_waiting([OUT, QUIET, OUT], long)
    assert not keep_waiting([OUT, OUT], long) and not keep_waiting([QUIET, OUT, QUIET, OUT, OUT], long)


def test_waits_at_their_limit_over_a_tenth_of_the_campaign_stop_waiting() -> None:
    assert keep_waiting([OUT], 300.0)  # 30 s of 300 s: a tenth, not more
    assert not keep_waiting([OUT], 299.0)
    assert not keep_waiting([QUIET, OUT], 60.0)  # the first wait that ran out, 30 s into a 60 s campaign
    assert keep_waiting([OUT, QUIET, OUT], 600.0) and not keep_waiting([OUT, QUIET, OUT], 599.0)


def test_a_stored_stop_stays_a_stop() -> None:
    """After `resume`: the stored wait that stopped waiting stops it again, whatever came after."""
    stopped = QuietWait(30.0, False, 0.6, 30.0, stopped_waiting=True)
    assert not keep_waiting([stopped, QUIET, QUIET], 1e9)


waits = st.lists(st.builds(QuietWait, st.floats(0, 7200, allow_nan=False), st.booleans(),
                           st.none() | st.floats(0, 1), st.none() | st.floats(1, 3600)), max_size=40)


@given(waits, st.floats(allow_nan=True, allow_infinity=True))
@example([OUT], math.nan)
@example([OUT], -1.0)
@example([QuietWait(0.0, False)], 0.0)
def test_while_it_waits_the_lost_time_is_at_most_a_tenth_and_never_two_in_a_row(found: list[QuietWait],
                                                                                elapsed: float) -> None:
    """Any waits, any elapsed time (hostile: NaN, infinities, negative): when the rule keeps waiting, the waits that
    ran out took at most a tenth of the campaign so far, and the last two did not both run out."""
    lost = sum(w.waited_seconds for w in found if ran_out(w))
    if keep_waiting(found, elapsed):
        assert lost <= 0 or lost <= WAIT_SHARE * elapsed
        assert not (len(found) >= 2 and lost > 0 and ran_out(found[-1]) and ran_out(found[-2]))


def test_each_wait_is_cut_to_what_is_left_of_the_tenth() -> None:
    assert wait_limit(30.0, [], 244.0) == 24.0  # the demo's estimate: its first wait, not the whole 30 s
    assert wait_limit(30.0, [], 3600.0) == 30.0 and wait_limit(0.0, [], 3600.0) == 0.0
    assert wait_limit(30.0, [QuietWait(24.0, False, 0.6, 24.0)], 244.0) == 1.0  # the quiet check's one sample
    assert wait_limit(30.0, [QUIET, QUIET], 60.0) == 6.0  # waits that ended quiet are not lost


@given(st.floats(0, 3600), waits, st.floats(allow_nan=True, allow_infinity=True))
@example(30.0, [], math.nan)
@example(30.0, [], -5.0)
def test_a_wait_limit_is_never_more_than_asked_nor_past_the_tenth_by_more_than_a_sample(
        asked: float, found: list[QuietWait], elapsed: float) -> None:
    limit = wait_limit(asked, found, elapsed)
    assert 0.0 <= limit <= asked and (asked == 0 or limit >= min(asked, 1.0))
    lost = sum(w.waited_seconds for w in found if ran_out(w))
    budget = WAIT_SHARE * elapsed if math.isfinite(elapsed) and elapsed > 0 else 0.0  # hostile: no budget
    if keep_waiting(found, elapsed) and asked > 0:
        assert lost + limit <= budget + 1.0


@given(st.text(max_size=60))
@example("")
@example("always\n")
@example("\x1b[31m")
def test_the_setting_is_learn_or_always_else_one_line(word: str) -> None:
    if word in ("learn", "always"):
        assert learning(word) is (word == "learn")
        return
    with pytest.raises(BadInput) as error:
        learning(word)
    text = str(error.value)
    assert text.startswith("LAYERBENCH_WAIT_FOR_QUIET: ") and "learn or always" in text and "\n" not in text


def test_the_report_sentence_names_the_run_the_waits_and_their_limit() -> None:
    stopped = QuietWait(3.0, False, 0.9, 3.0, stopped_waiting=True)
    assert stopped_text([(1, QUIET), (2, OUT), (4, stopped)]) == (
        "stopped waiting for quiet after run 4: 2 waits of 3-30 s ended at their limit")
    assert stopped_text([(1, QuietWait(30.0, False, 0.6, 30.0, stopped_waiting=True))]) == (
        "stopped waiting for quiet after run 1: 1 wait of 30 s ended at its limit")
    assert stopped_text([(1, OUT), (2, OUT)]) is None
    said = quiet_wait_warning([(1, OUT), (2, QuietWait(30.0, False, 0.6, 30.0, stopped_waiting=True))])
    assert said is not None and said.endswith("; stopped waiting for quiet after run 2: 2 waits of 30 s ended at "
                                              "their limit, so later runs did not wait")


def test_once_waiting_stopped_busy_rerun_keeps_a_busy_run_and_says_why() -> None:
    from layerbench.analysis.busy import Busy

    busy = Busy(0.6, 0.0, (("stress-ng-cpu", 6.0),))
    kept = decide(busy, "rerun", 1, 4, 12, waiting=False)
    assert (kept.action, kept.waiting_stopped, kept.replaced_by, kept.reruns_used) == ("kept", True, None, 1)
    assert decide(busy, "rerun", 1, 4, 12).action == "replaced"
    assert not decide(busy, "rerun", 4, 4, 12, waiting=False).waiting_stopped  # the limit was reached first
    assert not decide(busy, "keep", 0, 0, 12, waiting=False).waiting_stopped
    assert BusyDecision.from_json(json.loads(json.dumps(kept.to_json()))) == kept
    assert "waiting_stopped" not in decide(busy, "rerun", 4, 4, 12).to_json()  # older records read the same
    text = what_was_done([("run 5", kept)])
    assert text == ("1 busy run(s) (run 5) are kept in the analysis, not rerun, because the campaign had stopped "
                    "waiting for quiet (a rerun would fall in the same busy spell); their numbers may swing")


def test_the_stop_is_stored_with_the_wait_and_read_back() -> None:
    stopped = QuietWait(30.0, False, 0.6, 30.0, stopped_waiting=True)
    assert QuietWait.from_json(json.loads(json.dumps(stopped.to_json()))) == stopped
    assert "stopped_waiting" not in OUT.to_json() and QuietWait.from_json(OUT.to_json()) == OUT


# --- in the campaign loop, on a real store (the runs synthetic) ----------------------------------------------------


def busy_campaign(tmp_path: Path, asked: list[tuple[int, float]]) -> tuple[SaidLines, Store, int]:
    """A campaign with wait_for_quiet: 30s on a machine that stays busy: every wait runs out, every run is busy."""
    data = {"name": "quiet-learn", "baseline": "v0", "repetitions": 3, "seed": 5, "wait_for_quiet": "30s",
            "variants": [{"name": "v0", "backend": "host"}, {"name": "v1", "backend": "host"}],
            "workload": {"tables": 1, "table_size": 1000, "threads": [1], "duration": 3}, "busy": "rerun"}
    said, store = SaidLines(), Store(tmp_path / "lb.db")
    orchestrator = Orchestrator(parse_campaign(data), store, progress=said)  # type: ignore[arg-type]
    cid = orchestrator.start()

    def execute_run(campaign_id: int, spec: RunSpec, out: Path, quiet_first: float = 0.0) -> RunRecord:
        asked.append((spec.idx, quiet_first))
        record = synthetic_run(campaign_id, spec, 1.0, random.Random(spec.idx), False)
        record.facts.resources = Usage.from_json(BUSY)
        if quiet_first > 0:
            record.facts.quiet_wait = QuietWait(quiet_first, False, 0.6, quiet_first)
        record.finished_at = (record.started_at or 0.0) + quiet_first + 10.0
        return record

    orchestrator.execute_run = execute_run  # type: ignore[method-assign]
    orchestrator._run_all(Outcome(cid, tmp_path))
    return said, store, cid


def test_on_a_machine_that_stays_busy_the_campaign_stops_waiting_and_rerunning_and_says_so(tmp_path: Path) -> None:
    asked: list[tuple[int, float]] = []
    said, store, cid = busy_campaign(tmp_path, asked)
    with store:
        runs = store.runs(cid)
        estimate = store.estimate(cid)
        report = report_model(analyze(store, cid))
    assert estimate is not None and estimate.seconds < 300  # a campaign of seconds: its tenth is under one wait
    tenth = WAIT_SHARE * estimate.seconds
    # the first wait is cut to the tenth, the second to what is left of it (at least 1 s), and both ran out
    waits = [seconds for _, seconds in asked if seconds > 0]
    assert asked[0] == (0, min(30.0, max(1.0, math.floor(tenth)))) and len(waits) == 2 and len(asked) == 7
    assert sum(waits) <= tenth + 1.0 and all(seconds == 0.0 for _, seconds in asked[2:])
    stop = next(r for r in runs if r.facts.quiet_wait is not None and r.facts.quiet_wait.stopped_waiting)
    assert stop.idx == asked[1][0]
    # run 1 was busy while the campaign still waited: rerun; every busy run after the stop is kept (a rerun that
    # does not wait would be as busy)
    assert {r.idx: r.status for r in runs} == {0: "replaced"} | {idx: "ok" for idx in range(1, 7)}
    assert all(r.facts.busy is not None and r.facts.busy.waiting_stopped for r in runs if r.idx != 0)
    sentence = (f"stopped waiting for quiet after run {stop.idx + 1}: 2 waits of {limits_text(waits)} ended at their "
                "limit")
    assert f"{sentence} (the machine stays busy): later runs start without waiting; busy runs are kept, not " \
           "rerun" in said.lines
    assert any(line.endswith("kept, not rerun: the campaign stopped waiting for quiet, a rerun would be as busy")
               for line in said.lines)
    text = markdown.render(report)
    assert sentence in text and f"- Waited for quiet: {sum(waits):.0f} s (2 waits) beside " in text
    document = json.loads(json_export.render(report))
    assert document["waiting"]["stopped_waiting_after_run"] == stop.idx + 1
    assert document["waiting"]["waited_seconds"] == sum(waits)


def test_always_waits_before_every_run_as_before_the_rule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_WAIT_FOR_QUIET", "always")
    asked: list[tuple[int, float]] = []
    _, store, cid = busy_campaign(tmp_path, asked)
    with store:
        runs = store.runs(cid)
    assert all(seconds >= 30.0 for _, seconds in asked)
    assert not any(r.facts.quiet_wait and r.facts.quiet_wait.stopped_waiting for r in runs)
    assert any(r.status == "replaced" for r in runs)  # busy: rerun replaces runs again


def test_a_bad_setting_stops_before_anything_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_WAIT_FOR_QUIET", "sometimes")
    data = {"name": "quiet-bad", "baseline": "v0", "variants": [{"name": "v0", "backend": "host"}],
            "workload": {"tables": 1, "table_size": 1000, "threads": [1], "duration": 3}}
    with Store(tmp_path / "lb.db") as store, pytest.raises(BadInput, match="LAYERBENCH_WAIT_FOR_QUIET"):
        Orchestrator(parse_campaign(data), store)


def test_the_plan_counts_no_more_waiting_than_the_rule_lets_a_busy_machine_cost(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from layerbench.run.plan import quiet_wait_seconds

    assert quiet_wait_seconds(30.0, 30.0, 100, 1000.0) == 60.0  # two waits in a row at their limit
    assert quiet_wait_seconds(30.0, 30.0, 100, 100.0) == 11.0  # a tenth of the runs' 100 s and a last 1 s wait
    assert quiet_wait_seconds(30.0, 0.5, 100, 1000.0) == 50.0  # a machine that gets quiet at once: the median
    monkeypatch.setenv("LAYERBENCH_WAIT_FOR_QUIET", "always")
    assert quiet_wait_seconds(30.0, 30.0, 100, 1000.0) == 3000.0


def test_a_busy_spell_at_the_start_of_a_long_campaign_costs_a_wait_not_the_rest(tmp_path: Path) -> None:
    """run/quiet_waits.py: the tenth is of the plan's estimate when that is longer than the time so far."""
    from layerbench.run.quiet_waits import QuietWaits

    data = {"name": "quiet-long", "baseline": "v0", "variants": [{"name": "v0", "backend": "host"}],
            "wait_for_quiet": "30s", "workload": {"tables": 1, "table_size": 1000, "threads": [1], "duration": 3}}
    said = SaidLines()
    waits = QuietWaits(parse_campaign(data), said)
    waits.planned = 3600.0
    for idx in range(4):
        spec = RunSpec(idx, 1, "v0", "default", 1, 1)
        record = synthetic_run(1, spec, 1.0, random.Random(idx), False)
        record.facts.quiet_wait = OUT if idx != 1 else QUIET
        waits.learn(spec, record)
        if idx < 3:
            assert waits.waiting and waits.seconds(0.0) == 30.0 and not said.lines
    # the fourth: the second in a row at its limit
    assert not waits.waiting and waits.seconds(7.0) == 0.0 and record.facts.quiet_wait.stopped_waiting
    assert said.lines == ["stopped waiting for quiet after run 4: 3 waits of 30 s ended at their limit (the machine "
                          "stays busy): later runs start without waiting; busy runs are kept, not rerun"]


def test_the_plan_says_until_when_a_campaign_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    from layerbench.run.plan import make_plan, quiet_lines

    data = {"name": "quiet-plan", "baseline": "v0", "variants": [{"name": "v0", "backend": "host"}],
            "workload": {"tables": 1, "table_size": 1000, "threads": [1], "duration": 3}}
    assert quiet_lines(parse_campaign(data), True) == []
    waits = parse_campaign(data | {"wait_for_quiet": "45s"})
    assert quiet_lines(waits, True) == ["waiting for quiet: up to 45 s before each run, until waits end at their "
                                        "limit (two in a row, or more than a tenth of the campaign: then no run "
                                        "waits and busy runs are kept)"]
    assert quiet_lines(waits, False) == ["waiting for quiet: up to 45 s before each run, every time "
                                         "(LAYERBENCH_WAIT_FOR_QUIET=always)"]
    monkeypatch.setenv("LAYERBENCH_WAIT_FOR_QUIET", "never")
    with pytest.raises(BadInput, match="LAYERBENCH_WAIT_FOR_QUIET: 'never' is not a setting"):
        make_plan(waits, None)  # validate says it in one line before anything starts
