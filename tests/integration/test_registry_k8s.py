"""Images from a registry (issue #41 item 2), for real: `layerbench image push` copies the MariaDB and MySQL
images to the lab registry of scripts/k8s-local (Debian's docker-registry on the node IP), and a smoke campaign
runs a MariaDB pod and a MySQL pod whose `image:` names them there (the MySQL pod's sysbench Job runs the MariaDB
image of the same registry). The node's containerd must really pull them: the test first removes those
references from the node (only they: nothing else of the cluster is touched), and afterwards finds them back with
the digests the push printed, as the run records do (image_id). The images' architecture is recorded and was
checked against the node's before the first run. The MySQL rootfs is built here when missing (about 80 s)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign, smoke_version
from layerbench.hosts.architecture import this_machine
from layerbench.run import orchestrator
from layerbench.server.mysql_rootfs import ensure_rootfs
from layerbench.server.postgresql_image import postgresql_image_built
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]

OWN = f"it-registry-{os.getpid()}"
STATE = Path(os.environ.get("K8S_LOCAL_DIR") or "/var/tmp/layerbench-k8s")
POD = {"backend": "kubernetes", "kind": "pod", "qos": "burstable", "requests": {"cpu": "100m", "memory": "512Mi"}}
PUSHED = re.compile(r"^(?P<ref>\S+)@(?P<digest>sha256:[0-9a-f]{64}) \((?P<arch>\w+), \d+ s\)$")


def lab_registry() -> str:
    facts = dict(line.split("=", 1) for line in (STATE / "cluster.env").read_text().splitlines() if "=" in line)
    assert "REGISTRY" in facts, "the cluster was started without its registry: scripts/k8s-local down && up"
    return facts["REGISTRY"].strip()


def node_images() -> dict[str, str]:
    """reference -> digest of what the node's containerd holds (its k8s.io namespace)."""
    done = subprocess.run(["ctr", "--address", str(STATE / "run" / "containerd.sock"), "-n", "k8s.io", "images", "ls"],
                          capture_output=True, text=True, timeout=60, check=True)
    return {f[0]: f[2] for f in (line.split() for line in done.stdout.splitlines()[1:]) if len(f) > 2}


@pytest.fixture(scope="module")
def pushed(k8s_cluster) -> dict[str, tuple[str, str]]:
    """repository -> (reference, digest) of this module's push."""
    ensure_rootfs("9.7")
    registry = lab_registry()
    done = subprocess.run([sys.executable, "-m", "layerbench", "image", "push", registry], capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    found = {}
    for line in done.stdout.splitlines():
        if match := PUSHED.match(line.strip()):
            assert match["arch"] == this_machine()
            found[match["ref"].split("/", 1)[1].split(":")[0]] = (match["ref"], match["digest"])
    postgresql = {"layerbench/postgresql"} if postgresql_image_built() else set()  # pushed once built here
    assert set(found) == {"layerbench/mariadb", "layerbench/mysql", "layerbench/neighbours", *postgresql}, done.stdout
    found.pop("layerbench/neighbours")  # a pod neighbour's image off a node: test_k8s_harness.py pulls it
    found.pop("layerbench/postgresql", None)  # not run from a registry (a postgresql pod runs on a node)
    for ref, _ in found.values():  # the node must pull them during the campaign: only these references go
        if ref in node_images():
            subprocess.run(["ctr", "--address", str(STATE / "run" / "containerd.sock"), "-n", "k8s.io", "images",
                            "rm", ref], capture_output=True, timeout=60, check=True)
    assert not {ref for ref, _ in found.values()} & set(node_images())
    return found


@pytest.fixture(scope="module")
def campaign(pushed: dict[str, tuple[str, str]], tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("registry-k8s")
    data = {
        "name": OWN, "baseline": "mariadb",
        "variants": [{"name": "mariadb", **POD, "image": pushed["layerbench/mariadb"][0], "client_cpus": "0"},
                     {"name": "mysql", **POD, "image": pushed["layerbench/mysql"][0], "client": "job",
                      "server": {"flavour": "mysql", "version": "9.7"}}],
        "workload": {"tables": 1, "table_size": 1000, "threads": 1, "duration": 2, "warmup": 0},
        "output": str(out), "busy": "keep",
    }
    with Store(out / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(smoke_version(parse_campaign(data)), store, source_path=None)
        rows = [{**dict(r), "details": json.loads(r["details"] or "{}")} for r in stored_rows(store,
                                                                                             outcome.campaign_id)]
    return {"outcome": outcome, "runs": {r["variant"]: r for r in rows}}


def test_pods_of_both_flavours_run_images_the_node_pulled_from_the_registry(pushed: dict, campaign: dict) -> None:
    runs = campaign["runs"]
    assert (campaign["outcome"].ok, campaign["outcome"].failed) == (2, 0), [r["error"] for r in runs.values()]
    on_node = node_images()
    for variant, repository in (("mariadb", "layerbench/mariadb"), ("mysql", "layerbench/mysql")):
        ref, digest = pushed[repository]
        backend = runs[variant]["details"]["environment"]["backend"]
        assert backend["image"] == ref and backend["image_id"].endswith(f"@{digest}"), backend.get("image_id")
        assert backend["image_architecture"] == backend["node_architecture"] == this_machine()
        assert on_node.get(ref) == digest  # pulled by the node's containerd during the campaign
        assert runs[variant]["tps"] > 0
    mysql = runs["mysql"]["details"]["environment"]
    assert mysql["backend"]["server_flavour"] == "mysql"
    assert mysql["server_variables"]["version"].startswith("9.7.")


def foreign_image(registry: str, tmp: Path) -> str:
    """A one-layer image whose config says arm64 (or amd64 on an arm64 machine), pushed to the registry: an empty
    tar imported into Docker, copied out by skopeo, its config's architecture rewritten and its digest with it."""
    other = "arm64" if this_machine() != "arm64" else "amd64"
    tag, ref = f"{OWN}-foreign:1", f"{registry}/layerbench-test/foreign:{os.getpid()}"  # one repository, ever
    subprocess.run(["tar", "-cf", str(tmp / "empty.tar"), "-T", "/dev/null"], check=True, timeout=60)
    subprocess.run(["docker", "import", str(tmp / "empty.tar"), tag], check=True, capture_output=True, timeout=120)
    try:
        subprocess.run(["skopeo", "copy", "-q", f"docker-daemon:{tag}", f"dir:{tmp / 'img'}"], check=True,
                       capture_output=True, timeout=300)
    finally:
        subprocess.run(["docker", "rmi", tag], capture_output=True, timeout=120)
    manifest = json.loads((tmp / "img" / "manifest.json").read_text())
    old = manifest["config"]["digest"].split(":")[1]
    config = json.loads((tmp / "img" / old).read_text()) | {"architecture": other}
    blob = json.dumps(config).encode()
    new = hashlib.sha256(blob).hexdigest()
    (tmp / "img" / old).unlink()
    (tmp / "img" / new).write_bytes(blob)
    manifest["config"] |= {"digest": f"sha256:{new}", "size": len(blob)}
    (tmp / "img" / "manifest.json").write_text(json.dumps(manifest))
    subprocess.run(["skopeo", "copy", "-q", "--dest-tls-verify=false", f"dir:{tmp / 'img'}", f"docker://{ref}"],
                   check=True, capture_output=True, timeout=300)
    return ref


def test_an_image_of_another_architecture_is_refused_by_validate_before_anything_runs(
        k8s_cluster, tmp_path: Path) -> None:
    registry = lab_registry()
    ref = foreign_image(registry, tmp_path)
    try:
        path = tmp_path / "campaign.yaml"
        path.write_text(json.dumps({"name": f"{OWN}-arch", "baseline": "a", "variants": [
            {"name": "a", **POD, "image": ref}], "workload": {"tables": 1, "table_size": 1000, "duration": 2}}))
        done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 2, done.stdout + done.stderr
        line = done.stderr.strip()
        assert "\n" not in line and line.startswith(f"error: variants.a.image: image {ref} is built for ")
        assert f"but layerbench-node ({this_machine()}) is not; push an image built for the nodes'" in line
    finally:  # the manifest goes (the registry's storage is the cluster's state dir)
        digest = subprocess.run(["skopeo", "inspect", "--tls-verify=false", "--format", "{{.Digest}}",
                                 f"docker://{ref}"], capture_output=True, text=True, timeout=120).stdout.strip()
        subprocess.run(["skopeo", "delete", "--tls-verify=false", f"docker://{ref.rsplit(':', 1)[0]}@{digest}"],
                       capture_output=True, timeout=120)
