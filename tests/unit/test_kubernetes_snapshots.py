"""Reset by VolumeSnapshot and the client's placement, built without a cluster: the PVC made from the run's
VolumeSnapshot, the pre-provisioned content that shares the seed's snapshot, the in-pod sha256 check (real sh and
sha256sum over a real folder), the connect-time wrapper of the run Job (real bash), and the refusals."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.analysis.placement import placement_rows
from layerbench.analysis.runs import RunRow
from layerbench.backends.kubernetes import job, volsnap
from layerbench.backends.kubernetes import manifests as m
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput, RunFailed
from layerbench.records.run import StoredFacts
from layerbench.server.flavour import MARIADB
from layerbench.server.manifest import build_manifest, write_manifest
from layerbench.server.servers import IMAGE_PROGRAMS, ServerProgram

SNAP = {"storage": "pvc", "storage_class": "csi", "snapshot_class": "csi-snap"}

MARIADB_IMAGE = ServerProgram(MARIADB, (IMAGE_PROGRAMS["mariadb"],))  # the local image's server


def variant(**kw):
    data = {"name": "c", "baseline": "k", "workload": {},
            "variants": [{"name": "k", "backend": "kubernetes", "qos": "burstable", **kw}]}
    return parse_campaign(data).variants[0]


def test_a_restored_statefulset_claim_comes_from_the_runs_volume_snapshot_and_is_checked_before_mariadbd() -> None:
    v = variant(**SNAP)
    objects = m.server_objects(v, MARIADB_IMAGE,
                               "img", "ns", m.labels("c", "run-1", "server"), snapshot_path="/host/snap",
                               host_datadir=None, restored=True)
    kinds = [o["kind"] for o in objects]
    assert kinds == ["PersistentVolumeClaim", "StatefulSet", "Service"]  # bound before the set's pod exists
    claim = objects[0]
    assert claim["metadata"]["name"] == f"data-{m.SERVER}-0"
    assert claim["spec"]["dataSource"] == {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                                           "name": volsnap.RUN_SNAPSHOT}
    assert claim["spec"]["storageClassName"] == "csi"
    pod = objects[1]["spec"]["template"]["spec"]
    assert objects[1]["spec"]["volumeClaimTemplates"][0]["spec"] == claim["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["verify"]
    assert pod["initContainers"][0]["volumeMounts"][0]["readOnly"] is True
    command = pod["containers"][0]["command"][-1]
    assert "cp -a" not in command and "install-db" not in command and command.endswith("init.sql")
    assert all("hostPath" not in vol for vol in pod["volumes"])  # no snapshot from this host


def test_a_restored_bare_pod_claims_the_same_way() -> None:
    objects = m.server_objects(variant(kind="pod", **SNAP), MARIADB_IMAGE,
                               "img", "ns", m.labels("c", "r", "server"),
                               snapshot_path="/s", host_datadir=None, restored=True)
    assert objects[0]["kind"] == "PersistentVolumeClaim" and objects[0]["spec"]["dataSource"]["kind"] == \
        "VolumeSnapshot"
    assert objects[1]["spec"]["initContainers"][0]["name"] == "verify"


def test_without_restore_nothing_changes() -> None:
    objects = m.server_objects(variant(**SNAP), MARIADB_IMAGE,
                               "img", "ns", m.labels("c", "r", "server"), snapshot_path="/s",
                               host_datadir=None)
    assert [o["kind"] for o in objects] == ["StatefulSet", "Service"]
    assert "dataSource" not in objects[0]["spec"]["volumeClaimTemplates"][0]["spec"]
    assert "initContainers" not in objects[0]["spec"]["template"]["spec"]


def test_the_runs_content_shares_the_seeds_handle_and_keeps_it_on_delete() -> None:
    labels = m.labels("c", "run-1", "snapshot")
    content = volsnap.run_content(volsnap.content_name("ns-1"), "ns-1", "drv", "snap-123", "csi-snap", labels)
    assert content["spec"] == {"deletionPolicy": "Retain", "driver": "drv", "source": {"snapshotHandle": "snap-123"},
                               "volumeSnapshotRef": {"name": volsnap.RUN_SNAPSHOT, "namespace": "ns-1"},
                               "volumeSnapshotClassName": "csi-snap"}
    assert content["metadata"]["labels"]["layerbench.campaign"] == "c"
    snap = volsnap.volume_snapshot(volsnap.RUN_SNAPSHOT, "ns-1", "csi-snap",
                                   {"volumeSnapshotContentName": content["metadata"]["name"]}, labels)
    assert snap["spec"]["source"] == {"volumeSnapshotContentName": "ns-1-data"}


def test_the_seed_is_one_per_campaign_and_dataset(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "datadir", tmp_path / "b" / "datadir"
    assert volsnap.seed_name("c", a) == volsnap.seed_name("c", a)
    assert len({volsnap.seed_name("c", a), volsnap.seed_name("c", b), volsnap.seed_name("d", a)}) == 3
    assert m.dns_name(volsnap.seed_name("C " * 80, a)) == volsnap.seed_name("C " * 80, a)


def dataset(tmp_path: Path) -> Path:
    datadir = tmp_path / "snap" / "datadir"
    (datadir / "sbtest").mkdir(parents=True)
    (datadir / "ibdata1").write_bytes(b"\x01" * 70000)
    (datadir / "sbtest" / "sbtest1.ibd").write_bytes(bytes(range(256)) * 100)
    write_manifest(datadir.parent, build_manifest(datadir))
    return datadir


def pod_hashes(folder: Path) -> str:
    """What the init container prints (the same script, real sh, find, sort and sha256sum)."""
    script = m.VERIFY_SCRIPT.format(datadir=folder)
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout


def test_the_in_pod_check_passes_on_the_same_bytes_and_names_a_changed_file(tmp_path: Path) -> None:
    datadir = dataset(tmp_path)
    expected = volsnap.expected_hashes(datadir)
    assert set(expected) == {"ibdata1", "sbtest/sbtest1.ibd"}
    volsnap.compare(expected, volsnap.parse_hashes(pod_hashes(datadir)), "pvc")
    copy = tmp_path / "restored"
    subprocess.run(["cp", "-a", str(datadir), str(copy)], check=True)
    (copy / "extra.log").write_text("the server's own file")
    volsnap.compare(expected, volsnap.parse_hashes(pod_hashes(copy)), "pvc")
    with open(copy / "sbtest" / "sbtest1.ibd", "r+b") as handle:
        handle.seek(100)
        handle.write(b"\xff")
    with pytest.raises(RunFailed, match=r"restored file sbtest/sbtest1.ibd differs"):
        volsnap.compare(expected, volsnap.parse_hashes(pod_hashes(copy)), "pvc")
    (copy / "ibdata1").unlink()
    with pytest.raises(RunFailed, match=r"restored file ibdata1 missing"):
        volsnap.compare(expected, volsnap.parse_hashes(pod_hashes(copy)), "pvc")


def test_a_dataset_changed_since_its_manifest_is_refused(tmp_path: Path) -> None:
    datadir = dataset(tmp_path)
    (datadir / "ibdata1").write_bytes(b"\x02" * 70000)
    with pytest.raises(RunFailed, match=r"ibdata1 differs from its manifest"):
        volsnap.expected_hashes(datadir)


@given(st.text(max_size=300))
def test_hash_lines_parser_takes_any_text(text: str) -> None:
    found = volsnap.parse_hashes(text)
    assert all(len(v) == 64 for v in found.values())


def test_the_run_job_times_tcp_connects_before_sysbench() -> None:
    with socket.create_server(("127.0.0.1", 0), backlog=16) as server:
        port = server.getsockname()[1]
        done = subprocess.run(job.wait_for_server("127.0.0.1", port, ["echo", "sysbench ran"], rtt=True),
                              capture_output=True, text=True, timeout=30)
    lines = done.stdout.splitlines()
    assert lines[-1] == "sysbench ran" and lines[0].startswith(job.RTT_PREFIX)
    times = job.parse_rtt(done.stdout)
    assert len(times) == job.RTT_CONNECTS and all(t > 0 for t in times)
    assert job.parse_rtt("no such line\n") == []


def test_the_network_path_names_the_nodes_relation_and_the_target() -> None:
    assert job.network_path("a", "b", "service").startswith("cross-node")
    assert "Service cluster IP" in job.network_path("a", "b", "service")
    assert job.network_path("a", "a", "pod") == "on-node (the node's bridge), via the pod IP"


@pytest.mark.parametrize(("kw", "expected"), [
    ({"snapshot_class": "x", "storage": "hostpath"},
     r"variants\.k\.snapshot_class: .* storage is 'hostpath'; set storage: pvc or emptydir"),
    ({"storage_class": "x"}, r"variants\.k\.storage_class: .* storage is 'emptydir' without snapshot_class; set "),
    ({"client_target": "pod"}, r"variants\.k\.client_target: .* client is 'host'; set client: job"),
])
def test_option_combinations_refused_at_validation(kw: dict, expected: str) -> None:
    with pytest.raises(BadInput, match=expected):
        variant(**kw)


def test_a_pvc_smaller_than_the_dataset_is_refused_in_one_line() -> None:
    v = variant(storage="pvc", storage_size="100Mi")
    v.check_data_room(100 * 2**20)
    with pytest.raises(BadInput, match=r"^variants\.k\.storage_size: 100Mi is smaller than the dataset \(0\.10 GiB"):
        v.check_data_room(100 * 2**20 + 1)
    variant(storage="emptydir").check_data_room(10**15)  # an emptyDir has no size of its own


def placed_run(variant: str, placement: object, status: str = "ok") -> RunRow:
    facts = StoredFacts.from_json({"environment": {"backend": {"backend": "kubernetes", "placement": placement}}})
    return RunRow(1, 0, 1, variant, "w", 1, 1, status, None, {}, facts=facts)


def test_the_report_rows_name_each_variants_nodes_path_and_median_connect_time() -> None:
    cross = {"server_node": "n1", "client_node": "n2", "network_path": "cross-node, via the pod IP"}
    runs = [placed_run("a", {**cross, "rtt_median_us": 50}), placed_run("a", {**cross, "rtt_median_us": 70}),
            placed_run("a", {**cross, "rtt_median_us": 60}), placed_run("a", {**cross, "rtt_median_us": 1}, "failed"),
            placed_run("b", {"server_node": "n1"}), placed_run("c", "not a dict"),
            placed_run("d", {"server_node": "n1", "client_node": "n1", "rtt_median_us": "x"})]
    rows = placement_rows(runs)
    assert [(r.variant, r.server_node, r.client_node, r.network_path, r.rtt_us) for r in rows] == [
        ("a", "n1", "n2", "cross-node, via the pod IP", 60.0), ("d", "n1", "n1", "-", None)]
    md = "\n".join(placement_lines_for(rows))
    assert "| `a` | n1 | n2 | cross-node, via the pod IP | 60.00 |" in md


def placement_lines_for(rows: list) -> list[str]:
    from types import SimpleNamespace

    from layerbench.report.markdown import placement_lines

    return placement_lines(SimpleNamespace(placement=tuple(rows)))  # the markdown needs only the rows
