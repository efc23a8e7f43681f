"""Every example campaign validates and runs end to end in --smoke mode (tiny data), so none of them rots."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import folders_postgres_enters

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "src/layerbench/data/examples"
# Examples that need a cluster this module cannot start beside its one-node cluster run in smoke mode in the module
# that owns theirs, by the fixture or test named here (the test below checks it is there and uses smoke_version).
RUN_ELSEWHERE = {"k8s-two-nodes": ("tests/integration/test_k8s_cluster_campaign.py",
                                   "campaign"),  # its module fixture runs the example in smoke mode
                 # in smoke mode, asserting what each QoS class and the neighbour pods do: its 7 runs instead of a
                 # smoke run of 7 here and more runs there
                 "k8s-qos": ("tests/integration/test_kubernetes_backend.py",
                             "test_the_qos_example_each_class_and_a_pinned_pod_keeps_its_cpu_beside_a_burstable_"
                             "neighbour_pod"),
                 # PostgreSQL pods of each QoS class against the host, beside a VolumeSnapshot PVC and a hostpath pod
                 "k8s-qos-postgresql": ("tests/integration/test_postgresql_k8s.py", "campaign"),
                 # MariaDB, MySQL and PostgreSQL on the host, twice, its fairness and I/O checked (issue #46)
                 "database-families": ("tests/integration/test_postgresql_host.py", "campaign"),
                 # PostgreSQL on the host and in Docker over both networks, with a pgbench workload added there
                 "postgresql-container-overhead": ("tests/integration/test_postgresql_docker.py", "campaign"),
                 # MySQL 9.7 on the host and in Docker over both networks, with a `mysqld:` variant added there
                 "mysql-container-overhead": ("tests/integration/test_mysql_docker.py", "host_and_docker"),
                 # the host and its VM on the user network, beside a tap VM added there
                 "vm-thread-sweep": ("tests/integration/test_vm_backend.py",
                                     "test_vm_runs_through_both_network_modes_and_is_marked_emulated"),
                 # off a node: from the isolated harness of scripts/k8s-local, with the registry's image
                 "k8s-remote": ("tests/integration/test_k8s_harness.py",
                                "test_the_remote_example_run_from_inside_in_smoke_mode_completes_with_its_pods_on_the_"
                                "nodes"),
                 # off a node end to end, on the two-node CSI cluster: from the isolated harness beside it
                 "k8s-remote-two-node": ("tests/integration/test_k8s_cluster_campaign.py",
                                         "test_the_remote_two_node_example_runs_from_the_isolated_harness")}
EXAMPLES = sorted(e for e in EXAMPLES_DIR.glob("*.yaml") if e.stem not in RUN_ELSEWHERE)


@pytest.fixture
def postgres_folders() -> Iterator[Path]:
    """Work and dataset folders (the environment the CLI inherits) that the user postgres can enter: pytest's own
    are 0700, and validate refuses them for a PostgreSQL variant."""
    with folders_postgres_enters("lb-e2e-pg-") as base:
        yield base


def cli(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "layerbench", *args], capture_output=True, text=True, timeout=timeout)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 1


def test_every_example_run_elsewhere_is_run_there() -> None:
    root = EXAMPLES_DIR.parents[3]
    for stem, (module, test) in RUN_ELSEWHERE.items():
        assert (EXAMPLES_DIR / f"{stem}.yaml").exists(), stem
        source = (root / module).read_text()
        assert f"def {test}(" in source and f"examples/{stem}.yaml" in source and "smoke_version(" in source, (
            stem, module, test)


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_validates_and_runs_in_smoke_mode(example: Path, tmp_path: Path, request: pytest.FixtureRequest,
                                                  ) -> None:
    if "backend: kubernetes" in example.read_text():
        request.getfixturevalue("k8s_cluster")  # the local cluster, started for this module when not running
    if "/run/lblab/" in example.read_text():
        request.getfixturevalue("lab_hosts")  # the two-host lab of scripts/lab-hosts, up for this session
    if "flavour: mysql" in example.read_text():  # validate refuses a MySQL that is not built: build it (cached)
        assert cli("server", "build", "mysql", "9.7").returncode == 0
    if "flavour: postgresql" in example.read_text():  # its server runs as user postgres: folders it can enter
        request.getfixturevalue("postgres_folders")
    checked = cli("validate", str(example))
    assert checked.returncode == 0 and "valid;" in checked.stdout, checked.stderr
    done = cli("run", "--smoke", str(example), "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    statuses = [r[0] for r in sqlite3.connect(tmp_path / "layerbench.db").execute("SELECT status FROM runs")]
    assert statuses and set(statuses) == {"ok"}
    assert list(tmp_path.glob("*/report.md"))
