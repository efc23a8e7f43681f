"""The shipped least-privilege rights (deploy/kubernetes/rbac.yaml) on the real cluster: a ServiceAccount bound
only to the shipped Role in a namespace of this test runs a campaign in namespace-scoped mode (smoke mode), its
objects gone afterwards and the namespace kept; with one right taken out of a copy of the Role, validate names
it in one line and exits 2, before anything is created. The variant writes no `client:`: validate's plan says it
is a Job, the default off a node (namespace-scoped mode reads no node), and the missing right is the Job's. The
token goes only into a 0600 kubeconfig file, removed at the end, and is never printed."""

from __future__ import annotations

import contextlib
import copy
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_host_campaign import campaign_file, run_cli

from layerbench.backends.kubernetes import access, pod
from layerbench.backends.kubernetes.cluster import kubeconfig_client, local_kubeconfig
from layerbench.backends.kubernetes.variant import KubernetesVariant

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
TINY = {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3, "warmup": 1, "reset": "reprepare"}


@pytest.fixture(scope="module", autouse=True)
def cluster(k8s_cluster) -> None:
    return None


def admin() -> Any:
    return kubeconfig_client(local_kubeconfig(), None, "kubeconfig")


def namespace_objects(ns: str) -> list[dict[str, Any]]:
    """The shipped file's namespace-scoped objects (ServiceAccount, Role, RoleBinding) moved to namespace `ns`."""
    found = []
    for body in yaml.safe_load_all((ROOT / access.RBAC_FILE).read_text()):
        if body["kind"] in ("ServiceAccount", "Role", "RoleBinding"):
            body["metadata"]["namespace"] = ns
            for subject in body.get("subjects", []):
                subject["namespace"] = ns
            found.append(body)
    return found


def write_kubeconfig(path: Path, token: str) -> None:
    """The local cluster's server and CA with the ServiceAccount's token, readable by this user only."""
    source = yaml.safe_load(local_kubeconfig().read_text())
    server = copy.deepcopy(source["clusters"][0])
    ca = server["cluster"].get("certificate-authority")
    if ca:  # relative to the kubeconfig it came from
        server["cluster"]["certificate-authority"] = str((local_kubeconfig().parent / ca).resolve())
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [server], "current-context": "rbac",
              "contexts": [{"name": "rbac", "context": {"cluster": server["name"], "user": "rbac"}}],
              "users": [{"name": "rbac", "user": {"token": token}}]}
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(yaml.safe_dump(config))


@pytest.fixture
def account(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    with shipped_role_account(tmp_path, "rbac") as found:
        yield found


@contextlib.contextmanager
def shipped_role_account(tmp_path: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    """A namespace <prefix>-<random>, the shipped ServiceAccount, Role and RoleBinding in it, and a kubeconfig with
    the account's token; all removed at the end."""
    with role_account(tmp_path, "rbac") as found:
        yield found


@contextlib.contextmanager
def role_account(tmp_path: Path, prefix: str) -> Iterator[tuple[str, Path]]:
    """A namespace <prefix>-<random> with the shipped namespace-scoped objects, and a 0600 kubeconfig with the
    ServiceAccount's token (also for tests/integration/test_k8s_seed.py); all removed at the end."""
    from kubernetes import client, utils

    api = admin()
    core, ns = client.CoreV1Api(api), f"{prefix}-{secrets.token_hex(4)}"
    path = tmp_path / f"{prefix}-kubeconfig"
    core.create_namespace({"metadata": {"name": ns, "labels": {f"{prefix}-test": "1"}}})
    try:
        for body in namespace_objects(ns):
            utils.create_from_dict(api, body, namespace=ns)
        token = core.create_namespaced_service_account_token(
            "layerbench", ns, {"spec": {"expirationSeconds": 3600}}).status.token
        write_kubeconfig(path, token)
        yield ns, path
    finally:
        path.unlink(missing_ok=True)
        pod.delete_namespace(core, ns)


def run_objects(ns: str) -> list[str]:
    from kubernetes import client

    found = client.CoreV1Api(admin()).list_namespaced_pod(ns, label_selector="layerbench=1").items
    return [p.metadata.name for p in found]


def test_the_shipped_role_alone_runs_a_campaign_and_a_missing_right_is_named_by_validate(
        tmp_path: Path, account: tuple[str, Path]) -> None:
    from kubernetes import client

    ns, kubeconfig = account
    assert kubeconfig.stat().st_mode & 0o777 == 0o600
    pod.ensure_image_on_nodes(KubernetesVariant.model_validate({"name": "k", "backend": "kubernetes"}), print)
    variant = {"name": "k", "backend": "kubernetes", "kubeconfig": str(kubeconfig), "namespace": ns,
               "qos": "burstable", "reset": "reprepare"}  # no client: off a node (no node read) the default is job
    path = campaign_file(tmp_path, name=f"rbac-{ns}", repetitions=1, baseline="k", variants=[variant], workload=TINY)
    checked = run_cli(["validate", str(path)])
    assert checked.returncode == 0, checked.stderr
    assert f"the existing namespace {ns} (namespace-scoped mode, which gives up: a namespace per run" in \
        checked.stdout and "at the cluster scope" not in checked.stdout
    assert "client: job (the default off a node)" in checked.stdout, checked.stdout
    done = run_cli(["run", "--smoke", str(path)], timeout=600)
    assert done.returncode == 0 and "1 runs ok, 0 failed" in done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    assert run_objects(ns) == []  # the run's objects are gone, the namespace stays
    client.CoreV1Api(admin()).read_namespace(ns)

    rbac = client.RbacAuthorizationV1Api(admin())
    role = rbac.read_namespaced_role("layerbench", ns)
    for rule in role.rules:  # a copy of the Role without `create jobs`
        if rule.resources == ["jobs"]:
            rule.verbs = [verb for verb in rule.verbs if verb != "create"]
    rbac.replace_namespaced_role("layerbench", ns, role)
    wait_refused(kubeconfig, ns)
    refused = run_cli(["validate", str(path)])
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.returncode == 2 and len(lines) == 1, refused.stderr
    assert f"missing right 1/1: create jobs (API group batch) in namespace {ns} (for sysbench as a Job)" in lines[0]
    assert run_objects(ns) == []


def wait_refused(kubeconfig: Path, ns: str) -> None:
    """Until the API server's authorizer has seen the Role's change (its cache follows a watch)."""
    api = kubeconfig_client(kubeconfig, None, "kubeconfig")
    right = access.Right("create", "jobs", "batch", False, "")
    for _ in range(300):
        if access.missing_rights(api, [right], ns):
            return
        time.sleep(0.1)
    pytest.fail("the Role's change did not reach the authorizer")
