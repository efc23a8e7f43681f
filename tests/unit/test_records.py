"""The typed, versioned records: a store written by an earlier version (before the run facts had a format
number) still reads and reports exactly as that version reported it; what is written now reads back the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from golden import differences
from layerbench.analysis.aggregate import analyze
from layerbench.analysis.report_model import report_model
from layerbench.records import FORMAT, CampaignRecord, RunFacts, StoredFacts
from layerbench.report import csv_export, json_export, markdown
from layerbench.store import RunRecord, Store

DATA = Path(__file__).resolve().parents[1] / "data"
OLD_STORE = DATA / "stores" / "v2-host-campaign.db"


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    shutil.copy(OLD_STORE, path)
    return path


@pytest.mark.parametrize(("module", "golden"), [(markdown, "store_v2_report.md"), (json_export, "store_v2_report.json"),
                                                (csv_export, "store_v2_report.csv")])
def test_a_store_of_the_previous_version_reports_as_it_did(old_store: Path, module, golden: str) -> None:
    """The markdown as printed; the exports' numbers at the precision another CPU reproduces (tests/golden.py)."""
    with Store(old_store) as store:
        text = module.render(report_model(analyze(store, 1)))
    expected = (DATA / "golden" / golden).read_text()
    assert differences(golden, text, expected) == []
    assert text == expected or golden.endswith((".json", ".csv"))


def test_the_old_store_reads_as_typed_records(old_store: Path) -> None:
    with Store(old_store) as store:
        campaign, runs = store.campaign("latest"), store.runs(1)
    assert campaign.definition.baseline == "base" and campaign.definition.variant("relaxed-flush").config_keys == {
        "innodb_flush_log_at_trx_commit"}
    assert campaign.definition.workloads[0].buffer_pool == "50%" and campaign.definition.compare_percentiles == (99.0,)
    first = runs[0].facts
    assert first.reset is not None and first.reset.method == "snapshot"
    assert first.environment is not None and first.environment.host.cpu_count
    assert first.usage is not None and "server" in first.usage.cpu_seconds
    assert first.quiet_wait is not None and first.data_bytes and first.buffer_pool_ratio == "50%"
    assert all(len(r.intervals) >= 3 and r.latency for r in runs)


def test_run_facts_are_written_with_their_format_and_read_back(tmp_path: Path) -> None:
    facts = RunFacts(reset={"method": "reprepare", "seconds": 1.5}, data_bytes=4096,
                     resources={"cpu_seconds": {"server": 1.0, "other": 0.1}, "top_other": [{"name": "x",
                                                                                                "cpu_seconds": 0.1}]},
                     other={"server_start_seconds": 0.8})
    document = facts.to_json()
    assert document["format"] == FORMAT and RunFacts.from_json(document) == facts
    with Store(tmp_path / "lb.db") as store:
        cid = store.create_campaign(CampaignRecord.from_json({"name": "c", "baseline": "a"}), str(tmp_path))
        store.save_run(RunRecord(cid, "a", "w", 1, 1, facts=facts))
        (run,) = store.runs(cid)
        stored = json.loads(store.db.execute("SELECT details FROM runs").fetchone()[0])
    assert stored["format"] == FORMAT and run.facts == StoredFacts.from_json(document)
    assert run.facts.usage is not None and run.facts.usage.top_other == (("x", 0.1),)
    assert run.facts.reset is not None and run.facts.reset.seconds == 1.5


def test_a_stored_run_keeps_when_it_started_and_finished(tmp_path: Path) -> None:
    """bench/scale.py's harness time per run is finished_at - started_at of the stored runs."""
    with Store(tmp_path / "lb.db") as store:
        cid = store.create_campaign(CampaignRecord.from_json({"name": "c", "baseline": "a"}), str(tmp_path))
        store.save_run(RunRecord(cid, "a", "w", 1, 1, started_at=100.0, finished_at=107.5))
        store.save_run(RunRecord(cid, "a", "w", 1, 2))
        done, unfinished = store.runs(cid)
    assert (done.started_at, done.finished_at) == (100.0, 107.5) and unfinished.finished_at is None


def test_a_campaign_record_keeps_its_document_whole() -> None:
    document = {"name": "c", "baseline": "a", "repetitions": {"min": 4, "max": 9, "budget": "1h"}, "alpha": 0.1,
                "variants": [{"name": "a", "backend": "host", "server": {"config": {"max_connections": 9}}}],
                "future_key": {"kept": True}}
    record = CampaignRecord.from_json(document)
    assert record.to_json() == document and CampaignRecord.from_json(record.to_json()) == record
    assert record.settings().alpha == pytest.approx(0.1 / 6)  # six looks, each at its share of alpha


def test_hostile_stored_values_read_as_defaults_not_crashes() -> None:
    record = CampaignRecord.from_json({"name": 3, "variants": [5, {"name": "x", "vcpus": "many"}], "alpha": "x",
                                       "workloads": "no"})
    assert record.variants[1].vcpus == 1 and record.alpha == 0.05 and record.workloads == ()
    facts = StoredFacts.from_json({"reset": [], "environment": {"host": "?", "server_variables": {"a": 1}},
                                   "resources": {"cpu_seconds": {"server": "n/a"}}})
    assert facts.reset is None and facts.environment is not None and facts.environment.server_variables == {"a": "1"}
    assert facts.usage is not None and facts.usage.cpu_seconds == {"server": 0.0}


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=4), max_leaves=20)
KEYS = st.sampled_from(["name", "baseline", "variants", "workloads", "repetitions", "alpha", "min_runs", "seed",
                        "reset", "environment", "resources", "quiet_wait", "data_bytes", "host", "backend",
                        "server_variables", "cpu_seconds", "throttling", "top_other", "format", "threads", "busy",
                        "action", "top", "replaced_by", "reruns_used"])


@given(st.dictionaries(KEYS, JSON_VALUES, max_size=8))
@example({"name": None, "repetitions": float("inf")})  # found by hypothesis: int(inf) raised
def test_any_stored_json_reads_without_a_crash(document: dict) -> None:
    """A store edited by hand or damaged: every record reads (unknown shapes become defaults), never raises."""
    CampaignRecord.from_json(document).settings()
    StoredFacts.from_json(document)
    assert RunFacts.from_json(document).to_json()["format"] == FORMAT
