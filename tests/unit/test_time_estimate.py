"""The plan's time estimate beside the wall time: stored with its parts when a campaign starts, split the same way
from the runs' records afterwards, stated by the report ("estimated X, took Y", the parts that differed most) and
by `validate` for the last campaign of that name; the model counts restores by size and busy reruns."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.analysis.timing import measured_parts, time_account
from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.cli.main import main
from layerbench.cli.terminal import STATE
from layerbench.records import CampaignRecord, RunRecord, StoredCampaign, StoredFacts
from layerbench.records.estimate import TimeEstimate
from layerbench.records.run import Reset
from layerbench.records.stored import RunMetrics, StoredRun
from layerbench.report import json_export, markdown
from layerbench.run import diskspace
from layerbench.run.orchestrator import Orchestrator
from layerbench.run.plan import (
    CLONE_RESTORE_SECONDS,
    DEFAULT_RESTORE_RATE,
    Past,
    learn_from_facts,
    make_plan,
    past_costs,
)
from layerbench.run.schedule import build_schedule
from layerbench.store import Store

T0 = 1_700_000_000.0
DATA: dict[str, Any] = {"name": "t", "baseline": "h", "repetitions": 2, "variants": [{"name": "h", "backend": "host"}],
                        "workload": {"tables": 1, "table_size": 1000, "duration": 10, "warmup": 2}}


@pytest.fixture(autouse=True)
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "cache" / "datasets"))


def facts(**data: Any) -> StoredFacts:
    return StoredFacts.from_json(data)


def restored(seconds: float, size: int = 1 << 30, check: float = 0.5) -> dict[str, Any]:
    return {"reset": {"method": "snapshot", "seconds": 0.0, "check_seconds": check,
                      "restore": {"method": "copy", "verified": "x", "bytes": size, "seconds": seconds}}}


def stored(start: float, end: float, status: str = "ok", **data: Any) -> StoredRun:
    return StoredRun(1, 0, 1, "h", "default", 1, 1, status, None, start, RunMetrics(), None, facts(**data),
                     finished_at=end)


def test_the_wall_time_splits_into_the_estimates_parts() -> None:
    runs = [stored(T0, T0 + 30, **restored(4.5), dataset_seconds=60),  # the first run built the snapshot
            stored(T0 + 31, T0 + 50, status="replaced"),  # a busy run, rerun later
            stored(T0 + 50, T0 + 90, reset={"method": "reprepare", "seconds": 20.0},
                   quiet_wait={"waited_seconds": 5.0, "quiet": True})]
    parts = measured_parts(runs, took=100.0)
    assert parts == pytest.approx({"prepare": 80.0, "restores": 5.0, "runs": 30 - 65 + 40 - 25,
                                   "waits": 19 + 5 + (100 - 89)})
    assert sum(parts.values()) == pytest.approx(100.0)


def test_the_account_says_estimated_took_and_the_parts_that_differed_most() -> None:
    estimate = TimeEstimate({"prepare": 60, "restores": 60, "runs": 600, "waits": 0}, 12, "estimate from 12 past runs")
    campaign = StoredCampaign(4, "t", "finished", T0, T0 + 1000, CampaignRecord.from_json({}), None, "r", "h", None)
    runs = [stored(T0, T0 + 990, **restored(240, check=0)), stored(T0 + 990, T0 + 995)]
    account = time_account(campaign, estimate, runs)
    assert account is not None and account.off == pytest.approx(1000 / 720 - 1)
    assert account.text() == ("estimated 12 min, took 17 min (+39 %); differed most: restores 240 s (estimated 60 s), "
                              "runs 13 min (estimated 10 min) (estimate from 12 past runs)")  # 750 + 5 s
    assert time_account(campaign, None, runs) is None and time_account(campaign, estimate, []) is None


def past_store(db: Path, restore_seconds: float, size: int, replaced: int = 0) -> None:
    """A finished campaign of 8 runs of 12 s measured, each ending 12 + 30 + its restore after the one before."""
    campaign = parse_campaign({**DATA, "repetitions": 8})
    with Store(db) as store:
        cid = store.create_campaign(CampaignRecord.from_json(campaign_as_dict(campaign)), "results")
        for i, spec in enumerate(build_schedule(campaign)):
            end = T0 + (i + 1) * (42 + restore_seconds)
            record = RunRecord(cid, spec.variant, spec.workload, spec.threads, spec.repetition, idx=spec.idx,
                               started_at=end - 42 - restore_seconds, finished_at=end)
            record.facts.reset = Reset.from_json(restored(restore_seconds, size, check=0)["reset"])
            record.status = "replaced" if i < replaced else "ok"
            store.save_run(record)
        store.finish_campaign(cid, "finished")


def test_past_restores_give_a_rate_and_leave_the_backends_overhead_alone(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    past_store(db, restore_seconds=10.0, size=1 << 30)  # 1 GiB in 10 s
    past = past_costs(db)
    assert past.restore_rates["host"] == pytest.approx([(1 << 30) / 10] * 8)
    assert past.overheads["host"] == pytest.approx([30.0] * 7)  # not 40: the restore is its own part
    plan = make_plan(parse_campaign(DATA), db)
    datadir = 1000 * 260 + (128 << 20)
    assert plan.parts["restores"] == pytest.approx(2 * datadir / ((1 << 30) / 10))
    assert plan.parts["runs"] == pytest.approx(2 * (12 + 30))
    rough = make_plan(parse_campaign(DATA), tmp_path / "none.db")
    assert rough.parts["restores"] == pytest.approx(2 * datadir / DEFAULT_RESTORE_RATE)


def test_a_restore_that_will_clone_costs_a_constant_and_past_clones_give_no_copy_rate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the work folder clones from the snapshots' (a reflink filesystem) a restore costs
    CLONE_RESTORE_SECONDS at any size, not the size at a copy's rate; a past clone's seconds teach no copy rate
    (0.1 s for 45 GiB would make every later copy look instant)."""
    monkeypatch.setattr(diskspace, "clones_between", lambda _snapshots, _folder: True)
    huge = {**DATA, "workload": {**DATA["workload"], "tables": 20, "table_size": 10_000_000}}
    assert make_plan(parse_campaign(huge), tmp_path / "none.db").parts["restores"] == pytest.approx(
        2 * CLONE_RESTORE_SECONDS)
    monkeypatch.setattr(diskspace, "clones_between", lambda _snapshots, _folder: False)
    assert make_plan(parse_campaign(huge), tmp_path / "none.db").parts["restores"] > 60 * 2 * CLONE_RESTORE_SECONDS
    past = Past()
    learn_from_facts(past, "host", facts(reset={"method": "snapshot", "seconds": 0.0, "check_seconds": 0.2, "restore": {
        "method": "clone (host folder of a local-driver volume)", "verified": "x", "bytes": 48 << 30, "seconds": 0.1}}))
    learn_from_facts(past, "host", facts(**restored(10.0)))
    assert past.restore_rates == {"host": [pytest.approx((1 << 30) / 10.5)]}


def test_busy_reruns_of_the_past_are_counted_in_waits(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    past_store(db, restore_seconds=0.0, size=0, replaced=2)  # a quarter of the past runs were replaced
    plan = make_plan(parse_campaign({**DATA, "repetitions": 8, "busy": {"policy": "rerun", "wait": "20s"}}), db)
    # a quarter of 8 runs rerun, each with the next run's wait for quiet (busy.wait: no past quiet wait is shorter)
    assert plan.parts["waits"] == pytest.approx((plan.parts["runs"] + plan.parts["restores"]) / 4 + 2 * 20)
    kept = make_plan(parse_campaign({**DATA, "repetitions": 8, "busy": "keep"}), db)
    assert kept.parts["waits"] == 0


def test_a_campaign_stores_its_estimate_as_it_starts_and_the_report_states_it(tmp_path: Path) -> None:
    campaign = parse_campaign({**DATA, "output": str(tmp_path / "out")})
    with Store(tmp_path / "lb.db") as store:
        cid = Orchestrator(campaign, store).start()
        estimate = store.estimate(cid)
        assert estimate is not None and set(estimate.parts) >= {"runs", "restores", "prepare"}
        for spec in build_schedule(campaign):
            record = RunRecord(cid, spec.variant, spec.workload, spec.threads, spec.repetition, idx=spec.idx,
                               started_at=T0 + spec.idx * 20, finished_at=T0 + spec.idx * 20 + 18)
            store.save_run(record)
        store.db.execute("UPDATE campaigns SET started_at=?, finished_at=? WHERE id=?", (T0, T0 + 40, cid))
        store.db.commit()
        report = report_model(analyze(store, cid))
    line = next(x for x in markdown.render(report).splitlines() if x.startswith("- Time: "))
    assert line.startswith(f"- Time: estimated {round(estimate.seconds)} s, took 40 s (")
    assert json.loads(json_export.render(report))["timing"]["took_seconds"] == 40.0


def test_validate_says_how_far_the_last_estimate_was_off(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(STATE, "debug", False)  # an earlier in-process `--debug` (test_cli) stays set otherwise
    db, path = tmp_path / "lb.db", tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump({**DATA, "output": str(tmp_path / "out")}))
    with Store(db) as store:
        cid = store.create_campaign(CampaignRecord.from_json(campaign_as_dict(parse_campaign(DATA))), "r")
        store.save_estimate(cid, TimeEstimate({"runs": 100.0, "restores": 0.0}, 0, "rough estimate"))
        store.save_run(RunRecord(cid, "h", "default", 1, 1, idx=0, started_at=T0, finished_at=T0 + 150))
        store.db.execute("UPDATE campaigns SET started_at=?, finished_at=? WHERE id=?", (T0, T0 + 150, cid))
        store.db.commit()
    with pytest.raises(SystemExit) as done:
        main(["validate", str(path), "--db", str(db)])
    out = capsys.readouterr().out
    assert done.value.code in (0, None)
    assert f"last run of t (campaign {cid}): estimated 100 s, took 150 s (+50 %); differed most: runs 150 s " \
           "(estimated 100 s) (rough estimate)" in out


def test_validate_never_migrates_an_older_store(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    with Store(db):
        pass
    con = sqlite3.connect(db)
    con.execute("DROP TABLE estimates")
    con.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    con.commit()
    con.close()
    assert Store.read_only(db) is None and Store.read_only(tmp_path / "missing.db") is None
    assert not (tmp_path / "missing.db").exists()
    con = sqlite3.connect(db)
    assert con.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "2"
    con.close()


@settings(max_examples=100, deadline=None)
@given(parts=st.one_of(st.dictionaries(st.text(max_size=8), st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-(10**400), max_value=10**400),
    st.text(max_size=5), st.none(), st.lists(st.integers(), max_size=2))), st.text(max_size=5), st.none()),
       past=st.one_of(st.integers(), st.text(max_size=5), st.none()))
def test_a_hostile_stored_estimate_reads_as_finite_seconds(parts: Any, past: Any) -> None:
    estimate = TimeEstimate.from_json({"parts": parts, "past_runs": past, "basis": "[/x]\\n"})
    assert all(v >= 0 and v != float("inf") for v in estimate.parts.values())
    again = TimeEstimate.from_json(json.loads(json.dumps(estimate.to_json())))  # stored to 0.1 s
    assert estimate.seconds >= 0 and again.parts == pytest.approx(estimate.parts, abs=0.051, rel=1e-9)
