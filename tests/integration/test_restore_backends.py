"""The restore paths of the Docker volume and the VM data disk on the real things (Docker Engine, QEMU under TCG):
a run restores by the new method (a host folder under a local-driver volume; a qcow2 overlay of a base image
built once per snapshot), its tables hold the snapshot's rows (CHECKSUM TABLE through the variant's server equals
the values taken when the snapshot was built), and nothing is left after down() or after a SIGTERM during the
restore (run in its own work and dataset folders, so what is left is only this test's)."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest
import yaml

from layerbench.backends.base import ServerSpec
from layerbench.backends.docker.local import DockerBackend
from layerbench.backends.docker.variant import DockerVariant
from layerbench.backends.vm.datadisk import BASE_NAME, METHOD, base_path
from layerbench.backends.vm.local import VMBackend
from layerbench.backends.vm.variant import VMVariant
from layerbench.campaign.workload import Workload
from layerbench.hosts.owners import cmdline
from layerbench.secrets import generate_password
from layerbench.server.prepare import ensure_snapshot
from layerbench.server.restore import read_facts
from layerbench.server.snapshot import Snapshot
from layerbench.server.tables import table_checksums, table_names

pytestmark = pytest.mark.integration
TINY = {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0}
NAME = f"it-restore-{os.getpid()}"


def labelled(campaign: str) -> list[str]:
    client = docker.from_env()
    label = f"layerbench.campaign={campaign}"
    found = [f"container {c.name}" for c in client.containers.list(all=True, filters={"label": label})]
    return found + [f"volume {v.name}" for v in client.volumes.list(filters={"label": label})]


def qemus(marker: str) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and
            cmdline(int(p.name)).startswith("qemu-system-x86_64") and marker in cmdline(int(p.name))]


def spec_for(tmp_path: Path, snapshot: Snapshot, label: str) -> ServerSpec:
    (tmp_path / "run").mkdir()
    (tmp_path / "priv").mkdir(mode=0o700)
    return ServerSpec(NAME, label, tmp_path / "run", tmp_path / "priv", tmp_path / "work",
                      password=generate_password(), snapshot=snapshot.path)


def rows_match(backend, spec: ServerSpec, snapshot: Snapshot, workload: Workload) -> str:
    """Up, CHECKSUM TABLE through the variant's server against the snapshot's, down; the restore's method."""
    try:
        endpoint = backend.up(spec)
        got = table_checksums(endpoint, table_names(workload))
        assert got == {k: v for k, v in snapshot.meta["checksums"].items() if k in got} and got
    finally:
        backend.down()
    facts = read_facts(spec.run_dir)
    assert facts is not None
    return str(facts["method"])


@pytest.mark.docker
@pytest.mark.parametrize("storage", ["volume", "data-container"])
def test_docker_volume_is_restored_on_the_host_and_holds_the_rows(tmp_path: Path, storage: str) -> None:
    workload = Workload(**TINY)
    snapshot = ensure_snapshot(workload, None, log_dir=tmp_path / "prep")
    spec = spec_for(tmp_path, snapshot, f"lbrestore-{secrets.token_hex(3)}")
    variant = DockerVariant(name="v", backend="docker", network="bridge-direct", storage=storage)
    method = rows_match(DockerBackend(variant), spec, snapshot, workload)
    assert method.endswith("into the host folder of a local-driver volume (type=none, o=bind)")
    assert method.split()[0] in ("clone", "copy")
    assert labelled(NAME) == [] and not (tmp_path / "work" / "docker" / spec.label).exists()


@pytest.mark.vm
@pytest.mark.slow
def test_vm_data_disk_is_an_overlay_of_a_base_built_once(tmp_path: Path) -> None:
    workload = Workload(**TINY)
    snapshot = ensure_snapshot(workload, None, log_dir=tmp_path / "prep")
    spec = spec_for(tmp_path, snapshot, f"lbrestore-{secrets.token_hex(3)}")
    method = rows_match(VMBackend(VMVariant(name="v", backend="vm")), spec, snapshot, workload)
    assert method == METHOD and base_path(snapshot.path).is_file()
    assert not (tmp_path / "work" / "vm" / spec.label).exists() and qemus(spec.label) == []
    assert list(snapshot.folder.glob(f".{BASE_NAME}.part-*")) == []


def term_during_restore(tmp_path: Path, variant: dict, restoring: Callable[[Path, Path], bool]) -> tuple[int, str]:
    """`layerbench run` in its own work and dataset folders, SIGTERM the moment `restoring(work, datasets)`."""
    work, datasets, tmp = tmp_path / "work", tmp_path / "datasets", tmp_path / "tmp"
    tmp.mkdir()
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": NAME, "baseline": "v", "variants": [{"name": "v", **variant}],
                                   "repetitions": 1, "output": str(tmp_path / "out"), "formats": ["json"],
                                   "workload": TINY}))
    env = {**os.environ, "LAYERBENCH_WORK_DIR": str(work), "LAYERBENCH_DATASET_DIR": str(datasets),
           "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None and not restoring(work, datasets):
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    return proc.returncode, out


def left_in(work: Path) -> list[str]:
    owners = [f"owner record {p.name}" for p in (work / "owners").glob("*.json")] if (work / "owners").exists() else []
    runs = [str(p) for kind in ("docker", "vm") for p in (work / "work" / kind).glob("*")]
    return owners + runs


@pytest.mark.docker
def test_sigterm_while_a_volume_is_restored_leaves_nothing(tmp_path: Path) -> None:
    code, out = term_during_restore(tmp_path, {"backend": "docker", "storage": "volume"},
                                    lambda work, _d: any((work / "work" / "docker").glob("*/datadir")))
    assert code in (130, -signal.SIGTERM), out[-2000:]
    assert labelled(NAME) == [] and left_in(tmp_path / "work") == []


@pytest.mark.vm
@pytest.mark.slow
def test_sigterm_while_a_vm_base_is_built_leaves_nothing(tmp_path: Path) -> None:
    code, out = term_during_restore(tmp_path, {"backend": "vm", "network": "user"},
                                    lambda _w, datasets: any(datasets.glob(f"*/.{BASE_NAME}.part-*")))
    assert code in (130, -signal.SIGTERM), out[-2000:]
    assert "building the VM data disk" in out, out[-2000:]
    assert list((tmp_path / "datasets").glob(f"*/.{BASE_NAME}.part-*")) == []
    assert left_in(tmp_path / "work") == [] and qemus(str(tmp_path)) == []

