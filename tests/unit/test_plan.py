"""The plan `validate` prints: one distinct line per variant, the runs per workload, first-time costs, the output
folder, and an estimate calibrated on this machine's past runs when the store has them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from layerbench.backends.base import SERVER_IMAGE_COST
from layerbench.backends.registry import BY_KIND
from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.records import CampaignRecord, RunRecord
from layerbench.run.diskspace import BYTES_PER_ROW, DATADIR_OVERHEAD
from layerbench.run.plan import DEFAULT_RESTORE_RATE, PREPARE_ROWS_PER_SECOND, make_plan, past_overheads
from layerbench.run.schedule import build_schedule
from layerbench.store import Store

RUN_OVERHEAD = {kind: variant.run_overhead for kind, variant in BY_KIND.items()}  # each backend's fixed overhead
IMAGE_BUILD_SECONDS = SERVER_IMAGE_COST.seconds

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
    datadir = 8 * 100_000 * BYTES_PER_ROW + DATADIR_OVERHEAD  # estimated: nothing prepared yet
    assert plan.parts == pytest.approx({"runs": measured, "first time": IMAGE_BUILD_SECONDS, "waits": 0,
                                        "prepare": 800_000 / PREPARE_ROWS_PER_SECOND,
                                        "restores": 60 * datadir / DEFAULT_RESTORE_RATE})
    assert plan.seconds == pytest.approx(sum(plan.parts.values()))
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


REMOTE_CLIENT_PATHS = {  # examples/remote-client.yaml: db is this machine (local: true), app the lab's namespace
    "host-remote": "server on host db (this machine, no SSH), sysbench on host app (root@10.231.77.2, over SSH): "
                   "TCP from app to db (10.231.77.1) over the network",
    "docker-nat-remote": "server on host db (this machine, no SSH), sysbench on host app (root@10.231.77.2, over "
                         "SSH): published port on 10.231.77.1 from another host: kernel NAT (iptables DNAT), no "
                         "docker-proxy",
    "docker-hostnet-remote": "server on host db (this machine, no SSH), sysbench on host app (root@10.231.77.2, over "
                             "SSH): host network: TCP from app to db (10.231.77.1) over the network",
    "host-loopback": "server and sysbench on host db (this machine, no SSH): TCP over loopback (127.0.0.1)",
    "docker-proxy-loopback": "server and sysbench on host db (this machine, no SSH): published port on 127.0.0.1: "
                             "docker-proxy (a userland copy)",
    "docker-hostnet-loopback": "server and sysbench on host db (this machine, no SSH): host network: TCP over "
                               "loopback (127.0.0.1)",
}
LOCAL = "server and sysbench on this machine: "
LOCAL_PATHS = {  # the examples without hosts: every variant here
    ("container-overhead", "host"): LOCAL + "TCP over loopback (127.0.0.1)",
    ("container-overhead", "docker"): LOCAL + "published port on 127.0.0.1: docker-proxy (a userland copy)",
    ("docker-storage-network", "volume-hostnet"): LOCAL + "host network: TCP over loopback (127.0.0.1)",
    ("docker-storage-network", "bind-bridge"): LOCAL + "published port on 127.0.0.1: docker-proxy (a userland copy)",
    ("vm-thread-sweep", "vm"): LOCAL + "TCP over loopback (127.0.0.1), forwarded to the guest by QEMU's user "
                                       "networking (slirp, in the QEMU process)",
    ("k8s-qos", "pod-guaranteed"): "server in the cluster, sysbench on this machine: this machine to the Service's "
                                   "cluster IP (kube-proxy)",
    ("tuning-ladder", "flushing"): LOCAL + "TCP over loopback (127.0.0.1)",
}


@pytest.mark.parametrize("name", sorted(REMOTE_CLIENT_PATHS))
def test_each_remote_client_variant_says_exactly_the_path_it_takes(name: str) -> None:
    from layerbench.run.plan import path_text

    campaign = example("remote-client")
    variant = next(v for v in campaign.variants if v.name == name)
    assert path_text(campaign.hosts, variant) == REMOTE_CLIENT_PATHS[name]
    line = next(line for line in make_plan(campaign).lines if line.startswith(f"variant {name} "))
    assert f"; {REMOTE_CLIENT_PATHS[name]}; server CPUs 0; sysbench CPUs 1" in line
    assert "127.0.0.1" not in line.split("; server", 1)[0]  # the backend's own words hold no address


@pytest.mark.parametrize(("study", "name"), sorted(LOCAL_PATHS))
def test_each_local_variant_says_exactly_the_path_it_takes(study: str, name: str, no_cluster_kubeconfig: Path
                                                           ) -> None:
    from layerbench.run.plan import path_text

    campaign = example(study)
    variant = next(v for v in campaign.variants if v.name == name)
    assert path_text(campaign.hosts, variant) == LOCAL_PATHS[(study, name)]
    assert "over SSH" not in "\n".join(make_plan(campaign).lines) and "on host" not in path_text(None, variant)


HOSTS = {"db": {"local": True, "address": "10.231.77.1"}, "app": {"ssh": "root@10.231.77.2"},
         "db2": {"ssh": "bench@10.0.0.7"}, "here": {"local": True}}


@pytest.mark.parametrize(("variant", "words"), [
    ({"backend": "host", "server_host": "db2", "client_host": "db2"},
     "server and sysbench on host db2 (bench@10.0.0.7, over SSH): TCP to db2's own address 10.0.0.7 (the kernel's "
     "loopback path)"),
    ({"backend": "host", "server_host": "db2", "client_host": "app"},
     "server on host db2 (bench@10.0.0.7, over SSH), sysbench on host app (root@10.231.77.2, over SSH): TCP from "
     "app to db2 (10.0.0.7) over the network"),
    ({"backend": "host", "server_host": "db2"},
     "server on host db2 (bench@10.0.0.7, over SSH), sysbench on this machine: TCP from local to db2 (10.0.0.7) "
     "over the network"),
    ({"backend": "host", "client_host": "here"},  # two names of this machine are one machine
     "server on this machine, sysbench on host here (this machine, no SSH): TCP over loopback (127.0.0.1)"),
    ({"backend": "docker", "network": "bridge", "server_host": "db2", "client_host": "db2"},
     "server and sysbench on host db2 (bench@10.0.0.7, over SSH): published port on db2's own address 10.0.0.7 "
     "from that host: kernel NAT (iptables DNAT for local traffic), no docker-proxy"),
    ({"backend": "docker", "client": "container"},
     "server on this machine, sysbench in a container of its own on the server's Docker daemon: container to "
     "container on a bridge network of the run's own (no NAT, no proxy)"),
    ({"backend": "docker", "network": "bridge-direct"},
     "server and sysbench on this machine: the container's own address on a bridge network of the run's own, from "
     "this machine (no NAT, no proxy)"),
    ({"backend": "vm", "server_host": "db2", "client_host": "app"},
     "server on host db2 (bench@10.0.0.7, over SSH), sysbench on host app (root@10.231.77.2, over SSH): TCP from "
     "app to db2 (10.0.0.7) over the network, forwarded to the guest by QEMU's user networking (slirp, in the QEMU "
     "process)"),
    ({"backend": "vm", "network": "tap"},
     "server and sysbench on this machine: to the guest's own address on a tap device (virtio-net) on a bridge"),
    ({"backend": "kubernetes", "client": "job"},
     "server in the cluster, sysbench as a Job in the cluster: a Job's pod in the cluster to the Service's cluster "
     "IP"),
    ({"backend": "kubernetes", "client": "port-forward"},
     "server in the cluster, sysbench on this machine: kubectl port-forward from this machine (a slow path)"),
    ({"backend": "external", "host": "10.0.0.9", "port": 3307, "password_env": "PW"},
     "sysbench on this machine: TCP to the external server 10.0.0.9:3307"),
])
def test_every_placement_says_its_hosts_and_path(variant: dict, words: str) -> None:
    from layerbench.run.plan import path_text

    campaign = parse_campaign({"name": "placed", "baseline": "v", "hosts": HOSTS, "workload": {"reset": "reprepare"},
                               "variants": [{"name": "v", **variant}]})
    assert path_text(campaign.hosts, campaign.variants[0]) == words


def test_a_variant_line_keeps_its_backends_words_and_shows_my_cnf_as_the_file_writes_it() -> None:
    from layerbench.run.plan import variant_line

    config = {"skip-log-bin": True, "performance_schema": False, "innodb_buffer_pool_size": "64M"}
    campaign = parse_campaign({"name": "cnf", "baseline": "a", "workload": {"tables": 1, "table_size": 1000},
                               "variants": [{"name": "a", "backend": "host", "server": {"config": config}}]})
    line = variant_line(campaign.variant("a"))
    assert line.startswith("variant a (host): a private mariadbd (free port), its own datadir copy; ")
    assert line.endswith("my.cnf: skip-log-bin, performance_schema=OFF, innodb_buffer_pool_size=64M")
