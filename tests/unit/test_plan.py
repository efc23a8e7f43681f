"""The plan `validate` prints: one distinct line per variant, the runs per workload, first-time costs, the output
folder, and an estimate calibrated on this machine's past runs when the store has them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from layerbench.campaign import campaign_as_dict, parse_campaign
from layerbench.plan import IMAGE_BUILD_SECONDS, RUN_OVERHEAD, make_plan, past_overheads
from layerbench.records import CampaignRecord
from layerbench.schedule import build_schedule
from layerbench.store import RunRecord, Store

EXAMPLES = Path(__file__).resolve().parents[2] / "src/layerbench/data/examples"
DATA = {
    "name": "p", "baseline": "h", "repetitions": 10,
    "variants": [{"name": "h", "backend": "host"}, {"name": "d", "backend": "docker"}],
    "workload": {"threads": [4, 8, 16], "duration": 60, "warmup": 10, "tables": 8, "table_size": 100000},
}


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A machine where nothing was built or prepared yet."""
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "cache" / "datasets"))
    return tmp_path


def example(name: str):
    return parse_campaign(yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text()))


def test_a_rough_plan_counts_runs_and_first_time_costs(empty_cache: Path) -> None:
    plan = make_plan(parse_campaign(DATA), empty_cache / "none.db")
    assert plan.runs == 60 and plan.past_runs == 0
    measured = 60 * 70 + 30 * (RUN_OVERHEAD["host"] + RUN_OVERHEAD["docker"])
    assert measured + IMAGE_BUILD_SECONDS < plan.seconds < measured + IMAGE_BUILD_SECONDS + 60
    assert "rough estimate" in plan.estimate_text()
    text = "\n".join(plan.lines)
    assert "threads 4, 8, 16 x 10 repetitions x 2 variants = 60 runs of 10 s warm-up + 60 s" in text
    assert "first time: the server image" in text and "prepared once" in text
    assert "output: reports in results/<id>-p/, runs stored in" in text
    assert not (empty_cache / "none.db").exists()


def test_every_docker_variant_of_the_storage_network_study_has_its_own_line(empty_cache: Path) -> None:
    lines = [line for line in make_plan(example("docker-storage-network")).lines if line.startswith("variant ")]
    assert len(lines) == 7 and len({line.split(": ", 1)[1] for line in lines}) == 7
    assert sum("docker-proxy" in line for line in lines) == 3 and sum("bind-mounted" in line for line in lines) == 2


def test_the_vm_line_names_the_network_it_uses(empty_cache: Path) -> None:
    vm = next(line for line in make_plan(example("vm-thread-sweep")).lines if line.startswith("variant vm"))
    assert "QEMU user networking" in vm and "tap" not in vm
    assert "threads 4, 8, 16, 32 x 6 repetitions" in "\n".join(make_plan(example("vm-thread-sweep")).lines)


def store_past_runs(db: Path, overhead: float, runs: int = 8) -> None:
    """A finished campaign on this 'machine': each run ends `warmup + duration + overhead` after the one before."""
    campaign = parse_campaign({**DATA, "repetitions": runs // 2, "workload": {"duration": 10, "warmup": 2}})
    with Store(db) as store:
        cid = store.create_campaign(CampaignRecord.from_json(campaign_as_dict(campaign)), "results")
        for i, spec in enumerate(build_schedule(campaign)):
            end = 1_700_000_000.0 + i * (12 + overhead)
            store.save_run(RunRecord(cid, spec.variant, spec.workload, spec.threads, spec.repetition, idx=spec.idx,
                                     started_at=end - 12, finished_at=end))


def test_the_estimate_is_calibrated_on_past_runs(empty_cache: Path) -> None:
    db = empty_cache / "lb.db"
    store_past_runs(db, overhead=30.0)
    assert sorted(past_overheads(db)) == ["docker", "host"]
    rough, calibrated = make_plan(parse_campaign(DATA), None), make_plan(parse_campaign(DATA), db)
    assert calibrated.past_runs == 7 and "estimate from 7 past runs on this machine" in calibrated.estimate_text()
    assert calibrated.seconds - rough.seconds == pytest.approx(
        30 * (30 - RUN_OVERHEAD["host"]) + 30 * (30 - RUN_OVERHEAD["docker"]), abs=1)


def test_a_backend_without_past_runs_stays_rough(empty_cache: Path) -> None:
    db = empty_cache / "lb.db"
    store_past_runs(db, overhead=30.0)
    data = {**DATA, "variants": [*DATA["variants"], {"name": "v", "backend": "vm"}]}
    assert "rough for vm" in make_plan(parse_campaign(data), db).estimate_text()


def test_a_pause_between_runs_is_not_a_run_cost(empty_cache: Path) -> None:
    db = empty_cache / "lb.db"
    store_past_runs(db, overhead=5000.0)
    assert past_overheads(db) == {}


def test_the_plan_names_the_hosts_of_a_placed_variant() -> None:
    from layerbench.campaign import parse_campaign
    from layerbench.plan import variant_line

    campaign = parse_campaign({
        "name": "placed", "baseline": "near",
        "hosts": {"db": {"local": True, "address": "10.231.77.1"}, "app": {"ssh": "root@10.231.77.2"}},
        "variants": [{"name": "near", "backend": "host"},
                     {"name": "far", "backend": "host", "server_host": "db", "client_host": "app"}],
        "workload": {"tables": 1, "table_size": 1000}})
    near, far = (variant_line(v) for v in campaign.variants)
    assert "server on host db; sysbench on host app (over SSH)" in far and "on host" not in near
