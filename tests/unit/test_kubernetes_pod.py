"""A run's namespace goes pods first (pod.remove_run_namespace): the run waits for its pods, not for the namespace
controller's fixed 5 s delay, unless its data is on a PVC; the campaign's end waits for the namespaces. The real
cluster's side is tests/integration/test_kubernetes_backend.py's (namespaces gone after every campaign). And the
command of a port-forward (pod.port_forward)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from layerbench.backends import base
from layerbench.backends.kubernetes import pod
from layerbench.backends.kubernetes.variant import KubernetesVariant


class Cluster:
    """The calls a run's removal makes, in order; pods and the namespace disappear after `lag` reads each."""

    def __init__(self, lag: int = 2) -> None:
        self.calls: list[str] = []
        self.pod_reads, self.ns_reads, self.lag = 0, 0, lag

    def delete_collection_namespaced_pod(self, ns: str, **_: Any) -> None:
        self.calls.append("delete pods")

    def delete_namespace(self, ns: str, **_: Any) -> None:
        self.calls.append("delete namespace")

    def list_namespaced_pod(self, ns: str, **_: Any) -> SimpleNamespace:
        self.pod_reads += 1
        return SimpleNamespace(items=[] if self.pod_reads > self.lag else ["server"])

    def read_namespace(self, ns: str, **_: Any) -> None:
        self.ns_reads += 1
        if self.ns_reads > self.lag:
            raise ApiException(status=404)


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pod.time, "sleep", lambda _s: None)


def test_pods_first_and_the_namespace_at_the_campaign_end() -> None:
    core = Cluster()
    pod.remove_run_namespace(core, "lb-run-1", data_on_pvc=False)
    assert core.calls == ["delete pods", "delete namespace"] and core.pod_reads == 3 and core.ns_reads == 0
    base.campaign_ended()
    assert core.ns_reads == 3  # waited until it was gone


def test_data_on_a_pvc_waits_for_the_namespace_in_the_run() -> None:
    core = Cluster()
    pod.remove_run_namespace(core, "lb-run-2", data_on_pvc=True)
    assert core.calls == ["delete pods", "delete namespace"] and core.ns_reads == 3
    base.campaign_ended()
    assert core.ns_reads == 3


def test_a_namespace_already_gone_registers_nothing() -> None:
    core = Cluster()
    core.delete_namespace = lambda ns, **_: (_ for _ in ()).throw(ApiException(status=404))  # type: ignore[method-assign]
    pod.remove_run_namespace(core, "lb-run-3", data_on_pvc=False)
    base.campaign_ended()
    assert core.pod_reads == 0 and core.ns_reads == 0


def test_pods_that_never_go_fail_the_run_with_the_command_to_look(monkeypatch: pytest.MonkeyPatch) -> None:
    core = Cluster(lag=10**9)
    clock = iter(range(0, 10**6, 100))
    monkeypatch.setattr(pod.time, "monotonic", lambda: float(next(clock)))
    with pytest.raises(pod.RunFailed, match="kubectl get pods -n lb-run-4"):
        pod.remove_run_namespace(core, "lb-run-4", data_on_pvc=False, timeout=500)
    monkeypatch.setattr(pod.time, "monotonic", lambda: 0.0)
    core.lag = 0
    base.campaign_ended()


@pytest.mark.parametrize("context", [None, "other-cluster"])
def test_a_port_forward_goes_through_the_variants_kubeconfig_and_context(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, context: str | None) -> None:
    """kubectl port-forward is told the kubeconfig and the context every API call of the run used: without
    --context it would forward through the kubeconfig's current context, another cluster's namespace."""
    kubeconfig, kubectl = tmp_path / "kubeconfig", tmp_path / "kubectl"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    kubectl.write_text("")
    started: list[list[str]] = []
    monkeypatch.setattr(pod.shutil, "which", lambda _name: str(kubectl))
    monkeypatch.setattr(pod, "start", lambda _what, cmd, **_kw: started.append(cmd) or "process")
    variant = KubernetesVariant.model_validate({"name": "k", "backend": "kubernetes", "client": "port-forward",
                                                "kubeconfig": str(kubeconfig), "context": context})
    process, port = pod.port_forward(variant, "lb-ns", tmp_path)
    (cmd,) = started
    assert process == "process" and cmd[0] == str(kubectl) and f"--kubeconfig={kubeconfig}" in cmd
    assert [w for w in cmd if w.startswith("--context")] == ([f"--context={context}"] if context else [])
    assert cmd[cmd.index("-n") + 1] == "lb-ns" and f"{port}:3306" in cmd and "--address=127.0.0.1" in cmd
