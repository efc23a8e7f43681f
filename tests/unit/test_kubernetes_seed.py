"""A dataset made in the cluster (backends/kubernetes/seed.py), built without a cluster: its names (valid
Kubernetes names whatever the campaign is called), the seed's server pod, hash pod and PVC, the size lines of the
hash pod (real sh, find and sha256sum over a real folder), the files a restore must hold, a run's PVC made from
the seed in namespace-scoped mode, an emptydir filled by its init container from a read-only PVC, and the
record's words for each path."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.kubernetes import cluster, job, seed, volsnap
from layerbench.backends.kubernetes import manifests as m
from layerbench.campaign.models import parse_campaign
from layerbench.server.flavour import MARIADB
from layerbench.server.servers import IMAGE_PROGRAMS, ServerProgram

DNS_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
LABEL_VALUE = re.compile(r"([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?")
MARIADB_IMAGE = ServerProgram(MARIADB, (IMAGE_PROGRAMS["mariadb"],))


def variant(**kw):
    data = {"name": "c", "baseline": "k", "workload": {},
            "variants": [{"name": "k", "backend": "kubernetes", "qos": "burstable", **kw}]}
    return parse_campaign(data).variants[0]


@given(st.text(max_size=300), st.text(max_size=80), st.text(max_size=200))
def test_hostile_campaign_names_still_give_valid_kubernetes_names(campaign: str, key: str, place: str) -> None:
    prefix = seed.seed_prefix(campaign, key, place)
    names = [seed.seed_namespace(campaign, prefix), prefix, f"{prefix}-db", f"{prefix}-sha256", f"{prefix}-mycnf",
             f"{prefix}-init", job.job_name(["mariadb-admin", "x", "shutdown"]) + "-files"]
    assert all(DNS_LABEL.fullmatch(name) for name in names), names
    labels = m.labels(campaign, prefix, seed.ROLE)
    assert all(LABEL_VALUE.fullmatch(value) for value in labels.values()), labels
    assert labels["layerbench.label"] == prefix and labels["layerbench.role"] == "seed"


def test_the_seed_is_one_per_campaign_dataset_and_place() -> None:
    one = seed.seed_prefix("c", "1x100-abc", seed.place_of(variant(), "csi-snap"))
    assert one == seed.seed_prefix("c", "1x100-abc", seed.place_of(variant(), "csi-snap"))
    assert one != seed.seed_prefix("c2", "1x100-abc", seed.place_of(variant(), "csi-snap"))
    assert one != seed.seed_prefix("c", "1x200-abc", seed.place_of(variant(), "csi-snap"))
    assert one != seed.seed_prefix("c", "1x100-abc", seed.place_of(variant(), "other"))
    assert one != seed.seed_prefix("c", "1x100-abc", seed.place_of(variant(context="b"), "csi-snap"))


def test_the_seed_server_inits_its_own_datadir_on_the_pvc_and_ends_on_its_own() -> None:
    body = seed.seed_server_pod("seed-x-db", "ns", "img", MARIADB_IMAGE, "seed-x", m.labels("c", "seed-x", "seed"))
    spec = body["spec"]
    assert spec["restartPolicy"] == "Never"  # a clean shutdown leaves the pod Succeeded, exit code 0
    command = spec["containers"][0]["command"][-1]
    assert "install-db" in command and "cp -a" not in command and command.endswith("init.sql")
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["data"] == {"name": "data", "persistentVolumeClaim": {"claimName": "seed-x"}}
    assert volumes["conf"]["configMap"]["name"] == "seed-x-mycnf"
    assert volumes["init"]["secret"]["secretName"] == "seed-x-init"
    assert all("hostPath" not in v for v in spec["volumes"])  # nothing of this machine reaches it


def test_the_hash_pod_reads_the_seed_pvc_read_only() -> None:
    body = seed.hash_pod("seed-x-sha256", "ns", "img", "seed-x", {})
    spec = body["spec"]
    assert spec["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "seed-x", "readOnly": True}}]
    assert spec["containers"][0]["volumeMounts"][0]["readOnly"] is True


def test_the_seed_pvc_has_the_variants_class_and_size() -> None:
    claim = seed.seed_claim(variant(storage="pvc", storage_class="csi", storage_size="3Gi"), "seed-x", "ns", {})
    assert claim["spec"]["storageClassName"] == "csi" and claim["spec"]["resources"]["requests"]["storage"] == "3Gi"
    assert "dataSource" not in claim["spec"]
    assert "storageClassName" not in seed.seed_claim(variant(), "seed-x", "ns", {})["spec"]  # the default class


def test_the_hash_script_prints_every_files_sha256_and_size(tmp_path: Path) -> None:
    data = tmp_path / "data"
    files = {"sbtest/sbtest1.ibd": b"x" * 5000, "ibdata1": b"y" * 10, "ib_buffer_pool": b"warm"}
    for name, content in files.items():
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_bytes(content)
    script = seed.HASH_SCRIPT.replace(m.DATADIR, str(data))
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True).stdout
    hashes = volsnap.parse_hashes(out)
    assert set(hashes) == {"sbtest/sbtest1.ibd", "ibdata1", "ib_buffer_pool"}
    assert seed.parse_sizes(out) == {"sbtest/sbtest1.ibd": 5000, "ibdata1": 10, "ib_buffer_pool": 4}
    assert set(seed.recorded_hashes(hashes)) == {"sbtest/sbtest1.ibd", "ibdata1"}  # no buffer pool dump


@given(st.text(max_size=500))
def test_size_lines_parser_takes_any_text(text: str) -> None:
    sizes = seed.parse_sizes(text)
    assert all(isinstance(v, int) and v >= 0 and name for name, v in sizes.items())


def test_size_lines_parser_keeps_only_its_own_lines() -> None:
    text = "layerbench-size 12 a b\nlayerbench-size -3 x\nlayerbench-size ١٢ y\nsize 4 z\nlayerbench-size 7\n"
    assert seed.parse_sizes(text) == {"a b": 12}


def test_the_shutdown_client_file_names_the_pod_and_the_account() -> None:
    from layerbench.endpoint import Endpoint
    from layerbench.secrets import Secret

    text = seed.client_cnf(Endpoint("10.0.0.7", 3306, "layerbench", Secret("pw"), "sbtest"))
    assert text.splitlines() == ["[client]", "host=10.0.0.7", "port=3306", "user=layerbench", "password=pw"]
    assert job.job_name(["mariadb-admin", "--defaults-extra-file=/x", "shutdown"]) == "sysbench-shutdown"
    mysql = seed.shutdown_command(False, Path("/x"))  # MySQL 8.0+ answers mariadb-admin's COM_SHUTDOWN: Unknown command
    assert mysql == ["mariadb", "--defaults-extra-file=/x", "-e", "SHUTDOWN"] and job.job_name(mysql) == \
        "sysbench-shutdown"
    assert seed.shutdown_command(True, Path("/x")) == ["mariadb-admin", "--defaults-extra-file=/x", "shutdown"]


def test_namespace_mode_makes_the_runs_pvc_from_the_seeds_own_snapshot() -> None:
    v = variant(namespace="team", storage="pvc", snapshot_class="csi-snap", reset="snapshot", kind="pod")
    objects = m.server_objects(v, MARIADB_IMAGE, "img", "team", m.labels("c", "r", "server"), snapshot_path=None,
                               host_datadir=None, restored=True, source="seed-abc")
    claim = next(o for o in objects if o["kind"] == "PersistentVolumeClaim")
    assert claim["spec"]["dataSource"]["name"] == "seed-abc"


def test_an_emptydir_is_filled_by_its_init_container_from_a_read_only_pvc_of_the_snapshot() -> None:
    v = variant()
    objects = m.server_objects(v, MARIADB_IMAGE, "img", "ns", m.labels("c", "r", "server"), snapshot_path=None,
                               host_datadir=None, restored=True)
    assert [o["kind"] for o in objects] == ["PersistentVolumeClaim", "StatefulSet", "Service"]
    source = objects[0]
    assert source["metadata"]["name"] == m.SOURCE_CLAIM
    assert source["spec"]["dataSource"]["name"] == volsnap.RUN_SNAPSHOT
    assert "volumeClaimTemplates" not in objects[1]["spec"]
    pod = objects[1]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["data"] == {"name": "data", "emptyDir": {}}
    assert volumes["snapshot"]["persistentVolumeClaim"] == {"claimName": m.SOURCE_CLAIM, "readOnly": True}
    init = pod["initContainers"][0]
    assert init["name"] == "verify" and init["command"][-1].startswith(f"cp -a {m.SNAPSHOT}/. {m.DATADIR}/ && ")
    assert {x["mountPath"]: x.get("readOnly", False) for x in init["volumeMounts"]} == {m.DATADIR: False,
                                                                                        m.SNAPSHOT: True}
    assert "cp -a" not in pod["containers"][0]["command"][-1]  # the server starts on the filled datadir


def test_the_record_says_which_path_made_the_data() -> None:
    assert seed.data_words(None, "pvc").endswith(f"({volsnap.COPIED})")
    assert seed.data_words({}, "pvc").startswith(seed.SEEDED) and "emptydir" not in seed.data_words({}, "pvc")
    assert "emptydir" in seed.data_words({}, "emptydir")


def node_at(address: str) -> SimpleNamespace:
    """A node as the API lists it, as far as the rule reads it: its addresses."""
    return SimpleNamespace(status=SimpleNamespace(addresses=[SimpleNamespace(type="InternalIP", address=address)]))


def test_the_dataset_is_made_here_only_when_every_node_is_this_machine_and_the_nodes_are_read() -> None:
    """cluster.dataset_made_here, the one rule seed.cluster_seeds and KubernetesVariant.snapshot_made_here follow:
    a hostPath of this machine reaches the pod only on a node that is this machine (loopback is one of its
    addresses); another machine's node, no node read, or namespace-scoped mode: made in the cluster."""
    here, elsewhere = node_at("127.0.0.1"), node_at("192.0.2.7")  # TEST-NET-1: never an address of this machine
    assert cluster.dataset_made_here(variant(), [here])
    assert not cluster.dataset_made_here(variant(), [here, elsewhere])
    assert not cluster.dataset_made_here(variant(), [])
    scoped = variant(namespace="lb", reset="reprepare")
    assert not cluster.dataset_made_here(scoped, [here])
    assert not scoped.snapshot_made_here()  # reads no node, asks no API
