"""Evidence from where the server runs (issue #41 item 4) on the shared cluster: a harness that is not a node, here
namespace-scoped mode with only the shipped Role (it reads no nodes, so `cluster.harness_is_a_node` is false), runs a
tiny campaign of a MariaDB and a MySQL pod; the server's CPU and throttling come from each pod through the exec API
(podcpu.py), each server's status and variables from its own client in its container (podexec.py: mariadb, and
MySQL's mysql from the image's mysql-client-core), the busy rule reads `other@<node>`, "Where the overhead went" has
each pod's server, and the run's record names each source. Nothing of the harness's own machine is counted as the
server's: the backend finds no process of the pod here. The variants write no `client:`: off a node the default is a
Job (issue #41 item 5), stored as such, while the admin's kubeconfig, on a node, gets host. Each run's wait for quiet
read the server pod's node in the pod (`quiet_wait.at`), once it was up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_kubernetes_rbac import shipped_role_account

from helpers import stored_rows
from layerbench.analysis.busy import busy_key, run_busy
from layerbench.analysis.loading import analyze
from layerbench.analysis.overhead import overhead_rows
from layerbench.backends.kubernetes import cluster, manifests, pod
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.campaign.models import parse_campaign
from layerbench.records import RunFacts
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.k8s, pytest.mark.slow]


@pytest.fixture
def account(k8s_cluster, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A namespace evid-<random> with the shipped ServiceAccount, Role and RoleBinding (test_kubernetes_rbac.py)."""
    with shipped_role_account(tmp_path, "evid") as found:
        yield found


def test_off_a_node_the_servers_cpu_throttling_and_status_come_from_its_pod(
        tmp_path: Path, account: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_WAIT_FOR_QUIET", "always")  # each run waits, whatever the shared machine's load
    ns, kubeconfig = account
    mysql = {"name": "m", "backend": "kubernetes", "server": {"flavour": "mysql", "version": "9.7"}}
    for variant in ({"name": "k", "backend": "kubernetes"}, mysql):
        pod.ensure_image_on_nodes(KubernetesVariant.model_validate(variant), print)
    data = {"name": ns, "baseline": "k", "repetitions": 1, "estimates_only": True, "busy": "keep",
            "wait_for_quiet": "1s", "output": str(tmp_path / "out"),
            "variants": [{"name": "k", "backend": "kubernetes", "kubeconfig": str(kubeconfig), "namespace": ns,
                          "qos": "burstable", "limits": {"cpu": "300m"}, "reset": "reprepare"},  # client: unwritten
                         {**mysql, "extends": "k"}],
            "workload": {"tables": 1, "table_size": 1000, "threads": 2, "duration": 4, "warmup": 1}}
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store, source_path=None)
        rows = stored_rows(store, outcome.campaign_id)
        assert (outcome.ok, outcome.failed) == (2, 0), [r["error"] for r in rows]
        runs = {r["variant"]: json.loads(r["details"]) for r in rows}
        analysis = analyze(store, outcome.campaign_id)
        stored = store.campaign(outcome.campaign_id).definition.to_json()
    assert {v["name"]: v["client"] for v in stored["variants"]} == {"k": "job", "m": "job"}  # the default off a node
    assert all(details["environment"]["backend"]["client"] == "job" for details in runs.values())
    assert cluster.default_client(KubernetesVariant.model_validate(mysql)) == ("host", "on a node")  # the admin's
    nodes = {variant: pod_read_there(ns, details) for variant, details in runs.items()}
    for variant, client, version in (("k", "mariadb", "MariaDB"), ("m", "mysql", "9.7.")):
        details = runs[variant]
        assert details["environment"]["backend"]["server_sql"].startswith(f"exec in the server container: the {client}")
        variables = details["environment"]["server_variables"]
        assert "_error" not in variables and version in variables["version"], variables
        assert details["io"]["server_status"], details["io"]  # InnoDB counters of SHOW GLOBAL STATUS, read in the pod
    assert "innodb_flush_log_at_trx_commit" in runs["m"]["environment"]["server_variables"]

    rows = {r.variant: r for r in overhead_rows(analysis)}
    for variant, node in nodes.items():
        assert rows[variant].cpu_per_1000_tx[f"server@{node}"] > 0 and rows[variant].throttled_share is not None


def pod_read_there(ns: str, details: dict) -> str:
    """The run's server CPU, throttling and busy key came from its pod's node; that node."""
    backend = details["environment"]["backend"]
    node = backend["node"]
    assert backend["server_cpu_node"] == node and "through the exec API" in backend["server_cpu_source"]
    wait = details["quiet_wait"]  # read in the pod once it was up: no pod of the run exists before
    assert wait["at"] == f"node {node}" and "error" not in wait and wait["busy_share"] is not None, wait
    read = details["server_cpu"]
    assert read["node"] == node and "error" not in read and read["complete"] and len(read["exec_seconds"]) == 2
    cpu = details["resources"]["cpu_seconds"]
    assert cpu[f"server@{node}"] > 0 and f"other@{node}" in cpu and "idle" in cpu
    # nothing of this machine's /proc as the server's node's, nor the Job's sysbench found here by its hook
    assert not {"server", "other", "client"} & set(cpu), cpu
    [(where, throttled)] = details["resources"]["throttling"].items()
    assert where.startswith(f"{ns}/") and where.endswith(f"/{manifests.SERVER}")  # the server container's
    assert throttled["nr_periods"] > 0 and throttled["nr_throttled"] >= 0  # a CFS quota of 300m: periods counted
    facts = RunFacts.from_json(details)
    assert facts.environment is not None and facts.environment.server_place() == (node, frozenset())
    assert busy_key(facts.environment.server_place()[0]) == f"other@{node}"
    run_busy(facts)  # decided on the node's figures (whatever the shared machine's load was)
    return node
