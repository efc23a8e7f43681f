"""The typed, versioned records: a store written by an earlier version (before the run facts had a format
number) still reads and reports exactly as that version reported it; what is written now reads back the same."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from golden import differences
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.records import (
    CAMPAIGN_FORMAT,
    FORMAT,
    AdaptiveRepetitions,
    CampaignRecord,
    Environment,
    IoCounters,
    QuietWait,
    Reset,
    RunFacts,
    RunRecord,
    StoredFacts,
    Usage,
)
from layerbench.records.campaign import ROUNDS_MAX, ROUNDS_MIN
from layerbench.report import csv_export, json_export, markdown
from layerbench.store import Store

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


RELEASE_STORE = DATA / "stores" / "v3-host-campaign.db"  # main 39415ee: run facts format 1, a definition without one


@pytest.mark.parametrize(("module", "golden"), [(markdown, "store_v3_report.md"), (json_export, "store_v3_report.json"),
                                                (csv_export, "store_v3_report.csv")])
def test_a_store_of_the_release_before_records_owned_their_json_reports_as_it_did(tmp_path: Path, module,
                                                                                   golden: str) -> None:
    """Adaptive repetitions, busy runs kept, I/O counters, latency distributions: as that release reported them."""
    path = tmp_path / "release.db"
    shutil.copy(RELEASE_STORE, path)
    with Store(path) as store:
        definition, text = store.campaign(1).definition, module.render(report_model(analyze(store, 1)))
    assert definition.format == 0 and isinstance(definition.repetitions, AdaptiveRepetitions)
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
    facts = RunFacts(reset=Reset.of("reprepare", 1.5, {}), data_bytes=4096,
                     resources=Usage.from_json({"cpu_seconds": {"server": 1.0, "other": 0.1},
                                                "top_other": [{"name": "x", "cpu_seconds": 0.1}]}),
                     other={"server_start_seconds": 0.8})
    document = facts.to_json()
    assert document["format"] == FORMAT and RunFacts.from_json(document) == facts
    with Store(tmp_path / "lb.db") as store:
        cid = store.create_campaign(CampaignRecord.from_json({"name": "c", "baseline": "a"}), str(tmp_path))
        store.save_run(RunRecord(cid, "a", "w", 1, 1, facts=facts))
        (run,) = store.runs(cid)
        stored = json.loads(store.db.execute("SELECT details FROM runs").fetchone()[0])
    assert stored["format"] == FORMAT and run.facts == StoredFacts.from_json(document)
    assert run.facts.usage is not None and [(p.name, p.cpu_seconds) for p in run.facts.usage.top_other] == [("x", 0.1)]
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


def test_a_stored_definition_carries_its_format_and_one_without_reads_as_format_0(tmp_path: Path) -> None:
    with Store(tmp_path / "lb.db") as store:
        cid = store.create_campaign(CampaignRecord.from_json({"name": "c", "baseline": "a"}), str(tmp_path))
        stored = json.loads(store.db.execute("SELECT definition FROM campaigns").fetchone()[0])
        record = store.campaign(cid).definition
    assert stored == {"format": CAMPAIGN_FORMAT, "name": "c", "baseline": "a"}
    assert record.format == CAMPAIGN_FORMAT and "format" not in record.to_json()  # resume parses to_json()
    with Store(copy_of_old_store(tmp_path)) as store:
        assert store.campaign("latest").definition.format == 0


def copy_of_old_store(tmp_path: Path) -> Path:
    path = tmp_path / "old.db"
    shutil.copy(OLD_STORE, path)
    return path


def test_the_campaign_model_produces_the_adaptive_record_the_analysis_reads() -> None:
    from layerbench.campaign.models import campaign_as_dict, parse_campaign
    from layerbench.campaign.rounds import Adaptive

    adaptive = Adaptive.model_validate({"auto": True, "max": 9, "budget": "2h"})
    assert adaptive.record() == AdaptiveRepetitions(ROUNDS_MIN, 9, "2h")
    assert Adaptive.model_validate({"auto": True}).record() == AdaptiveRepetitions()  # one set of defaults
    campaign = parse_campaign({"name": "c", "baseline": "a", "variants": [{"name": "a", "backend": "host"}],
                               "workload": {"test": "oltp_read_only"}, "repetitions": {"auto": True, "min": 3}})
    record = CampaignRecord.from_json(campaign_as_dict(campaign))
    assert record.repetitions == AdaptiveRepetitions(3, ROUNDS_MAX) == campaign.repetitions.record()
    assert campaign_as_dict(campaign)["repetitions"] == record.repetitions.to_json()


RECORD_KEYS = st.sampled_from(["cpu_seconds", "throttling", "steal_seconds", "top_other", "window_seconds", "samples",
                               "ctx_voluntary", "ctx_involuntary", "harness_cpus", "waited_seconds", "quiet",
                               "busy_share", "max_seconds", "processes", "cgroups", "server_status", "errors",
                               "notes", "min", "max", "budget", "method", "seconds", "restore", "host", "backend"])
HOSTILE = (JSON_VALUES | st.sampled_from([10**400, "[/x]", "a\nb", float("inf"), [1, "x"], ""])
           | st.dictionaries(st.sampled_from(["a", "[/x]", ""]), JSON_VALUES, max_size=3))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(RECORD_KEYS, HOSTILE, max_size=10))
def test_every_record_reads_hostile_json_and_writes_what_it_reads_back(document: dict) -> None:
    """Each record type writes the JSON it reads: what from_json made of any document survives to_json and back."""
    for kind in (Usage, QuietWait, IoCounters, AdaptiveRepetitions, Reset, Environment):
        record = kind.from_json(document)
        written = json.dumps(record.to_json(), default=str)  # NaN is written as NaN: compare the JSON text
        assert json.dumps(kind.from_json(json.loads(written)).to_json(), default=str) == written, kind.__name__
