"""The `busy:` policy: where a replacement runs, the rerun limit, what is decided and stored, resume, `fail`, and
what the analysis and the reports make of replaced runs. The runs are synthetic records written to a real store
(tests/helpers.py); the integration test tests/integration/test_busy_rerun.py loads a real run with stress-ng."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import SaidLines, fill_store, synthetic_run
from layerbench.analysis.aggregate import busy_summary
from layerbench.analysis.busy import busy_run, decide, what_was_done
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign, stored_campaign
from layerbench.errors import BadInput, MachineBusy
from layerbench.records import BusyDecision, RunRecord, StoredFacts, Usage
from layerbench.report import csv_export, json_export, markdown
from layerbench.run.orchestrator import Orchestrator
from layerbench.run.schedule import RunSpec, build_schedule, execution_order, replacement
from layerbench.store import Store

BUSY = {"cpu_seconds": {"server": 1.0, "client": 1.0, "other": 6.0, "idle": 2.0}, "steal_seconds": 0.5,
        "top_other": [{"pid": 9, "name": "stress-ng-cpu", "cpu_seconds": 3.0},
                      {"pid": 10, "name": "stress-ng-cpu", "cpu_seconds": 2.5}]}
QUIET = {"cpu_seconds": {"server": 3.0, "client": 2.0, "other": 0.2, "idle": 4.8}}


@pytest.fixture(autouse=True)
def _default_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the default policy: tests/conftest.py sets LAYERBENCH_BUSY=keep for the suite's runs."""
    monkeypatch.delenv("LAYERBENCH_BUSY", raising=False)


def campaign(reps: int = 3, order: str = "rounds", busy: object = None, variants: int = 2):
    data = {"name": "bp", "baseline": "v0", "repetitions": reps, "order": order, "seed": 5,
            "variants": [{"name": f"v{i}", "backend": "host"} for i in range(variants)],
            "workload": {"tables": 1, "table_size": 1000, "threads": [1], "duration": 3}}
    return parse_campaign(data | ({"busy": busy} if busy is not None else {}))


# --- where a replacement runs -----------------------------------------------------------------------------------


def test_a_replacement_runs_at_the_end_of_its_round() -> None:
    specs = build_schedule(campaign(variants=3))  # 3 rounds of 3
    first = replacement(specs[1], 9)  # round 1
    again = replacement(first, 10)  # the replacement was busy too
    later = replacement(specs[4], 11)  # round 2
    order = [s.idx for s in execution_order([*specs, first, again, later], "rounds")]
    assert order == [0, 1, 2, 9, 10, 3, 4, 5, 11, 6, 7, 8]
    assert (first.round, first.variant, first.repetition) == (specs[1].round, specs[1].variant, specs[1].repetition)


def test_with_sequential_order_a_replacement_ends_its_variants_repetitions() -> None:
    specs = build_schedule(campaign(order="sequential"))  # v0 x3, then v1 x3
    extra = replacement(specs[1], 6)
    assert [s.idx for s in execution_order([*specs, extra], "sequential")] == [0, 1, 2, 6, 3, 4, 5]


@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(["rounds", "sequential"]),
       st.lists(st.integers(0, 100), max_size=6))
def test_execution_order_keeps_the_schedule_and_puts_each_replacement_after_its_run(
        n: int, reps: int, order: str, picks: list[int]) -> None:
    specs = build_schedule(campaign(reps=reps, order=order, variants=n))
    everything = list(specs)
    for pick in picks:  # replace any run so far (a replacement may be replaced again)
        everything.append(replacement(everything[pick % len(everything)], len(everything)))
    ran = execution_order(everything, order)
    assert sorted(s.idx for s in ran) == list(range(len(everything)))
    assert [s for s in ran if s.idx < len(specs)] == specs  # the planned runs keep their order
    position = {s.idx: i for i, s in enumerate(ran)}
    for extra in everything[len(specs):]:
        same_group = [s for s in specs if (s.round if order == "rounds" else (s.variant, s.workload, s.threads)) ==
                      (extra.round if order == "rounds" else (extra.variant, extra.workload, extra.threads))]
        assert position[extra.idx] > max(position[s.idx] for s in same_group)  # after its whole group
        later = [s for s in specs if position[s.idx] > position[same_group[-1].idx]]
        assert all(position[extra.idx] < position[s.idx] for s in later)  # before the next group


# --- the decision and the limit ---------------------------------------------------------------------------------


def test_decide_replaces_until_the_limit_then_keeps_and_fail_stops() -> None:
    found = busy_run(Usage.from_json(BUSY))
    assert found is not None
    first = decide(found, "rerun", 0, 2, 12)
    assert (first.action, first.replaced_by, first.reruns_used, first.max_reruns) == ("replaced", 12, 1, 2)
    assert decide(found, "rerun", 1, 2, 13).action == "replaced"
    over = decide(found, "rerun", 2, 2, 14)
    assert (over.action, over.replaced_by, over.reruns_used) == ("kept", None, 2)
    assert decide(found, "keep", 0, 0, 12).action == "kept" and decide(found, "fail", 0, 0, 12).action == "stopped"
    assert BusyDecision.from_json(first.to_json()) == first


def test_the_default_limit_is_a_quarter_of_the_planned_runs() -> None:
    assert campaign().busy_policy.policy == "rerun"
    assert campaign(reps=3).busy_policy.reruns_allowed(campaign(reps=3).planned_runs) == 2  # 6 runs
    demo = campaign(reps=5, variants=3)
    assert demo.planned_runs == 15 and demo.busy_policy.reruns_allowed(15) == 4
    assert campaign(reps=1, variants=1).busy_policy.reruns_allowed(1) == 1
    assert campaign(busy={"policy": "rerun", "max_reruns": 0}).busy_policy.reruns_allowed(6) == 0
    assert campaign(busy="keep").busy_policy.reruns_allowed(6) == 0


@pytest.mark.parametrize(("value", "said"), [
    ({"policy": "keep", "max_reruns": 3}, "busy.max_reruns: is for reruns, but policy is 'keep'"),
    ({"policy": "fail", "wait": "10s"}, "busy.wait: is for reruns, but policy is 'fail'"),
    ({"wait": "2d"}, "busy.wait: '2d' is not a wait from 0 s to 1 h"),
    ({"wait": "61m"}, "busy.wait: '61m' is not a wait from 0 s to 1 h"),
    ({"wait": "[/x]\n5s"}, "busy.wait: '[/x]\\n5s' is not a wait"),
    ({"wait": 30}, "busy.wait: Input should be a valid string"),
    ({"wait": ["5s"]}, "busy.wait: Input should be a valid string"),
    ("sometimes", "busy: 'sometimes' is not a policy; use rerun, keep or fail"),
    ("[/x]\nnext", "busy: '[/x]\\nnext' is not a policy"),
    ([1], "busy: [1] is not a policy"),
    ({"policy": 10**400}, "busy.policy: Input should be 'rerun', 'keep' or 'fail'"),
    ({"max_reruns": -1}, "busy.max_reruns: Input should be greater than or equal to 0"),
    ({"max_reruns": "3"}, "busy.max_reruns: Input should be a valid integer"),
    ({"polcy": "rerun"}, "busy.polcy: unknown key"),
])
def test_a_wrong_busy_key_is_one_line_naming_it(value: object, said: str) -> None:
    with pytest.raises(BadInput) as error:
        campaign(busy=value)
    assert str(error.value).startswith(said) and "\n" not in str(error.value)


def test_the_wait_after_a_replaced_run_defaults_to_30_s_and_0s_turns_it_off() -> None:
    assert campaign().busy_policy.wait_after_replaced() == 30.0
    assert campaign(busy={"policy": "rerun", "wait": "2m"}).busy_policy.wait_after_replaced() == 120.0
    assert campaign(busy={"wait": "0s"}).busy_policy.wait_after_replaced() == 0.0


def test_the_run_after_a_replaced_one_first_waits_for_quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The campaign loop itself (runs synthetic): run 2 busy and replaced, so the next run (its rerun) is asked to
    wait up to busy.wait for quiet (cut to a tenth of the campaign's estimate: analysis/quiet.py), and only that
    one."""
    asked: list[tuple[int, float]] = []
    with Store(tmp_path / "lb.db") as store:
        said = SaidLines()
        orchestrator = Orchestrator(campaign(busy={"policy": "rerun", "wait": "7s"}), store, progress=said)  # type: ignore[arg-type]
        cid = orchestrator.start()

        def execute_run(campaign_id: int, spec: RunSpec, out: Path, quiet_first: float = 0.0) -> RunRecord:
            asked.append((spec.idx, quiet_first))
            return finished(campaign_id, spec, BUSY if spec.idx == 1 else QUIET)

        monkeypatch.setattr(orchestrator, "execute_run", execute_run)
        from layerbench.run.orchestrator import Outcome
        orchestrator._run_all(Outcome(cid, tmp_path))
        estimate = store.estimate(cid)
    assert estimate is not None
    wait = min(7.0, max(1.0, math.floor(estimate.seconds / 10)))
    assert asked == [(0, 0.0), (1, 0.0), (6, wait), (2, 0.0), (3, 0.0), (4, 0.0), (5, 0.0)]
    assert any(line.endswith(f"; the next run first waits up to {wait:.0f} s for quiet (busy.wait)")
               for line in said.lines)


def test_the_default_policy_stays_out_of_the_stored_definition() -> None:
    """Campaigns stored before `busy:` and new ones with the default read back alike (and report alike)."""
    from layerbench.campaign.models import campaign_as_dict

    assert "busy" not in campaign_as_dict(campaign())
    assert campaign_as_dict(campaign(busy="fail"))["busy"] == {"policy": "fail"}


# --- in the campaign loop, on a real store ------------------------------------------------------------------------


def finished(cid: int, spec: RunSpec, usage: dict | None, seed: int = 1) -> RunRecord:
    record = synthetic_run(cid, spec, 1.0, random.Random(seed), False)
    record.facts.resources = None if usage is None else Usage.from_json(usage)
    return record


def step(orchestrator: Orchestrator, cid: int, usage: dict | None) -> tuple[RunSpec, BusyDecision | None]:
    """What the loop does after a run (orchestrator._run_all), without the run itself: decide, store, count."""
    todo, _ = orchestrator.pending(cid)
    spec = todo[0]
    record = finished(cid, spec, usage)
    decision = orchestrator.busy_decision(cid, record)
    extra = replacement(spec, decision.replaced_by).as_row() if decision and decision.replaced_by else None
    orchestrator.store.save_run(record, extra)
    return spec, decision


def test_replacements_are_stored_with_their_run_and_resume_knows_the_reruns_left(tmp_path: Path) -> None:
    with Store(tmp_path / "lb.db") as store:
        first = Orchestrator(campaign(busy={"policy": "rerun", "max_reruns": 2}), store)
        cid = first.start()
        spec, decision = step(first, cid, BUSY)
        assert decision is not None and decision.action == "replaced" and decision.replaced_by == 6
        todo, total = first.pending(cid)
        assert total == 7 and [s.idx for s in todo] == [1, 6, 2, 3, 4, 5]  # its rerun ends round 1
        assert (todo[1].variant, todo[1].round) == (spec.variant, spec.round)
        # resumed by another process: the stored campaign, the same pending runs, one rerun left
        resumed = Orchestrator(stored_campaign(store.campaign(cid).definition.to_json()), store)
        assert [s.idx for s in resumed.pending(cid)[0]] == [1, 6, 2, 3, 4, 5]
        assert step(resumed, cid, QUIET)[1] is None
        spec, decision = step(resumed, cid, BUSY)  # the rerun (idx 6) was busy too: the last rerun
        assert spec.idx == 6 and decision is not None and decision.replaced_by == 7 and decision.reruns_used == 2
        spec, decision = step(resumed, cid, BUSY)
        assert spec.idx == 7 and decision is not None and decision.action == "kept"  # the limit is reached
        runs = {r.idx: r for r in store.runs(cid)}
        assert [runs[i].status for i in (0, 1, 6, 7)] == ["replaced", "ok", "replaced", "ok"]
        assert runs[7].facts.busy is not None and runs[7].facts.busy.action == "kept"
        assert store.replaced_count(cid) == 2 and [s.idx for s in resumed.pending(cid)[0]] == [2, 3, 4, 5]


def test_a_failed_or_quiet_run_is_left_alone(tmp_path: Path) -> None:
    with Store(tmp_path / "lb.db") as store:
        orchestrator = Orchestrator(campaign(), store)
        cid = orchestrator.start()
        spec = orchestrator.pending(cid)[0][0]
        failed = finished(cid, spec, BUSY)
        failed.status = "failed"
        assert orchestrator.busy_decision(cid, failed) is None and failed.facts.busy is None
        assert orchestrator.busy_decision(cid, finished(cid, spec, QUIET)) is None
        assert orchestrator.busy_decision(cid, finished(cid, spec, None)) is None  # no resource record


def test_busy_fail_stops_with_one_line_naming_the_run(tmp_path: Path) -> None:
    with Store(tmp_path / "lb.db") as store:
        orchestrator = Orchestrator(campaign(busy="fail"), store)
        cid = orchestrator.start()
        spec, decision = step(orchestrator, cid, BUSY)
        assert decision is not None and decision.action == "stopped"
        with pytest.raises(MachineBusy) as error:
            orchestrator._busy_said(spec, decision)
        text = str(error.value)
        assert text.startswith(f"run {spec.idx + 1} was busy (processes outside the run took 60 % of the CPUs")
        assert "busy: fail stops the campaign" in text and "\n" not in text
        assert store.runs(cid)[0].status == "ok"  # stored as measured, flagged, before the campaign stops


class Said:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)


def test_each_decision_is_said_in_one_line(tmp_path: Path) -> None:
    found = busy_run(Usage.from_json(BUSY))
    assert found is not None
    spec = RunSpec(4, 2, "v1", "default", 1, 2)
    said = Said()
    with Store(tmp_path / "lb.db") as store:
        orchestrator = Orchestrator(campaign(), store, progress=said)  # type: ignore[arg-type]
        for policy, used in (("rerun", 0), ("rerun", 2), ("keep", 0)):
            orchestrator._busy_said(spec, decide(found, policy, used, 2, 9))
    assert said.lines[0].startswith("run 5 was busy (processes outside the run took 60 % of the CPUs, hypervisor "
                                    "steal 5 %; busiest: stress-ng-cpu (5.5 CPU-s); threshold 15 %): replaced by "
                                    "run 10 at the end of round 2 (rerun 1 of 2)")
    assert said.lines[1].endswith("kept, the machine never got quiet: the limit of 2 reruns (busy: max_reruns) is "
                                  "reached")
    assert said.lines[2].endswith(": kept (busy: keep)")


# --- the analysis and the reports ---------------------------------------------------------------------------------


def campaign_with_a_replacement(path: Path, keep_over_limit: bool = False) -> int:
    """6 planned runs; run 2 busy and replaced by run 7 (which runs next: the end of round 1); with
    `keep_over_limit`, run 7 busy too and kept (limit 1)."""
    with Store(path) as store:
        orchestrator = Orchestrator(campaign(busy={"policy": "rerun", "max_reruns": 1}), store)
        cid = orchestrator.start()
        for n in range(7):
            step(orchestrator, cid, BUSY if n == 1 or (keep_over_limit and n == 2) else QUIET)
        store.finish_campaign(cid, "finished")
    return cid


def test_the_analysis_leaves_a_replaced_run_out_and_every_format_lists_it(tmp_path: Path) -> None:
    cid = campaign_with_a_replacement(tmp_path / "lb.db")
    with Store(tmp_path / "lb.db") as store:
        analysis = analyze(store, cid)
    assert {v.variant: (v.n, v.failed) for v in analysis.points[0].variants} == {"v0": (3, 0), "v1": (3, 0)}
    assert [(r.run, r.replaced_by) for r in analysis.replaced] == [(2, 7)]
    assert "failed" not in " ".join(analysis.warnings)
    busy = next(w for w in analysis.warnings if w.startswith("the machine was busy"))
    assert busy.endswith("Replaced 1 of them by reruns at the end of their rounds (busy: rerun, 1 of 1 reruns "
                         "used); the verdicts use the clean runs")
    assert busy_summary(analysis) == ["busy machine: 1 run(s) replaced by reruns (run 2 by run 7); the analysis "
                                      "uses the clean runs"]
    md = markdown.render(report_model(analysis))
    assert "## Replaced runs (busy machine)" in md
    second = next(r.variant for r in analysis.runs if r.idx == 1)
    assert (f"| run 2 | {second} | default, 1 threads | 1 | run 7 | busy: processes outside the run took 60 % of the "
            "CPUs, hypervisor steal 5 %; busiest: stress-ng-cpu (5.5 CPU-s) |") in md
    assert "replaced by run 7: busy: processes outside" in md  # the run table
    document = json_export.document(report_model(analysis))
    assert [r["run"] for r in document["replaced_runs"]] == [2]
    assert next(r for r in document["runs"] if r["index"] == 2)["busy"]["action"] == "replaced"
    row = next(line for line in csv_export.render(report_model(analysis)).splitlines() if line.startswith(f"{cid},2,"))
    assert ',replaced,"replaced by run 7: busy: processes outside the run took 60 %' in row


def test_when_the_limit_is_reached_the_report_and_run_say_so_plainly(tmp_path: Path) -> None:
    cid = campaign_with_a_replacement(tmp_path / "lb.db", keep_over_limit=True)
    with Store(tmp_path / "lb.db") as store:
        analysis = analyze(store, cid)
    busy = next(w for w in analysis.warnings if w.startswith("the machine was busy"))
    assert "the machine never got quiet: the limit of 1 reruns was reached, so 1 busy run(s) (run 7) are kept" in busy
    assert busy_summary(analysis)[1].startswith("the machine never got quiet: the limit of 1 reruns (busy: "
                                                "max_reruns) was reached, so 1 busy run(s) are in the analysis (run 7)")


def test_what_was_done_says_kept_stopped_and_waited_and_nothing_for_old_campaigns() -> None:
    found = busy_run(Usage.from_json(BUSY))
    assert found is not None
    assert what_was_done([("run 1", None)]) is None  # stored before busy: the old advice stays
    keep = what_was_done([("run 1", decide(found, "keep", 0, 0, 5)), ("run 3", None)], 42.4)
    assert keep == "kept 2 (run 1, run 3; busy: keep): their numbers may swing; wait_for_quiet waited 42 s in all " \
                   "before runs"
    assert what_was_done([("run 4", decide(found, "fail", 0, 0, 5))]) == "the campaign stopped at run 4 (busy: fail)"


def test_load_the_campaign_asks_for_is_not_other_work() -> None:
    """The hook for neighbours: load sampled as a named component of the run is not "other", never busy."""
    asked = {"cpu_seconds": {"server": 1.0, "client": 1.0, "neighbours": 6.0, "other": 0.2, "idle": 1.8}}
    assert busy_run(Usage.from_json(asked)) is None
    assert StoredFacts.from_json({"busy": {"action": "kept", "top": [["x", "inf"], "bad", [1]]}}).busy is not None


def test_the_plan_says_what_happens_to_busy_runs() -> None:
    from layerbench.run.plan import busy_line

    assert busy_line(campaign()) == ("busy runs: replaced by reruns at the end of their round, at most 2, the next "
                                     "run first waiting up to 30 s for quiet (busy: rerun; the time above counts "
                                     "them at the share of past runs they replaced)")
    assert busy_line(campaign(busy={"wait": "0s"})).startswith("busy runs: replaced by reruns at the end of their "
                                                              "round, at most 2 (busy: rerun;")
    assert busy_line(campaign(busy="keep")) == "busy runs: kept and flagged (busy: keep)"
    assert busy_line(campaign(busy="fail")) == "busy runs: the first one stops the campaign (busy: fail)"


def test_an_old_busy_run_in_a_resumed_campaign_is_said_kept_without_a_policy() -> None:
    found = busy_run(Usage.from_json(BUSY))
    assert found is not None
    text = what_was_done([("run 1", None), ("run 5", decide(found, "rerun", 0, 2, 9))])
    assert text == ("replaced 1 of them by reruns at the end of their rounds (busy: rerun, 1 of 2 reruns used); the "
                    "verdicts use the clean runs; kept 1 (run 1): their numbers may swing")


@pytest.mark.parametrize("word", ["keep", "fail", "rerun"])
def test_layerbench_busy_sets_the_default_and_the_plan_says_where_it_came_from(
        word: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from layerbench.run.plan import busy_line

    monkeypatch.setenv("LAYERBENCH_BUSY", word)
    assert campaign().busy_policy.policy == word
    assert ("from LAYERBENCH_BUSY" in busy_line(campaign())) is (word != "rerun")  # rerun is the default anyway
    assert campaign(busy="rerun").busy_policy.policy == "rerun"  # a campaign's own busy: wins
    assert "LAYERBENCH_BUSY" not in busy_line(campaign(busy="keep"))


@pytest.mark.parametrize("word", ["later", "[/x]", "keep\nrerun", "KEEP"])
def test_a_layerbench_busy_that_is_not_a_policy_is_one_line(word: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_BUSY", word)
    with pytest.raises(BadInput, match=r"^LAYERBENCH_BUSY: .* is not a policy; set it to rerun, keep or fail"):
        _ = campaign().busy_policy


def test_an_empty_layerbench_busy_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_BUSY", "")
    assert campaign().busy_policy.policy == "rerun"


@pytest.mark.parametrize("usage", [BUSY, QUIET])
def test_an_undecided_comparison_on_a_busy_machine_says_so(tmp_path: Path, usage: dict) -> None:
    """The busy demo of issue #43: `~` with every run busy reads as "this machine could not tell", not "no cost"."""
    db = tmp_path / "lb.db"
    fill_store(db, {"base": 1.0, "small": 0.975, "big": 0.7}, usage=usage)
    with Store(db) as store:
        analysis = analyze(store, store.campaign("latest").id)
    kinds = {v.variant: v.comparisons["tps"].verdict.kind for p in analysis.points for v in p.variants
             if v.comparisons}
    notes = report_model(analysis).verdict_notes
    said = [n for n in notes if "not decided on a busy machine" in n]
    assert kinds["big"] == "slower" and kinds["small"] in {"~", "slower?"}, kinds
    if usage is BUSY:
        assert len(said) == 1 and said[0].startswith("`small`, default / 2 threads, TPS: not decided on a busy "
                                                     "machine: 18 of 18 runs at this point"), notes
        assert "took up to 60 % of the CPUs" in said[0]
        assert "not decided" in markdown.render(report_model(analysis))
    else:
        assert said == []


@pytest.mark.parametrize(("swing", "said"), [(1.62, "1.62x"), (math.inf, "to 0")])
def test_an_unstable_runs_swing_is_a_number_or_a_drop_to_zero(swing: float, said: str) -> None:
    from layerbench.analysis.aggregate import swing_text
    from layerbench.report.cells import swing_cell

    assert swing_cell(swing) == said and "inf" not in swing_text(swing)
