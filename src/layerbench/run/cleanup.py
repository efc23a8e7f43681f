"""The `clean` command's work: remove what the owner records (owners.py) name, and the Docker objects and
Kubernetes namespaces labelled by layerbench, whose harness is gone (or all of them), and nothing else."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

from layerbench.backends.kubernetes.cluster import local_kubeconfig
from layerbench.backends.kubernetes.manifests import host_label
from layerbench.backends.kubernetes.pod import delete_namespace
from layerbench.hosts.owners import Owned, cmdline, forget, processes_with, recorded
from layerbench.hosts.procs import pid_alive
from layerbench.hosts.remote import clean_remote


def stop_process(pid: int, marker: str, timeout: float = 30.0) -> bool:
    """SIGTERM, then SIGKILL, the process if it is still the one we started; True if one was stopped."""
    if not pid_alive(pid) or marker not in cmdline(pid):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid_alive(pid) and marker in cmdline(pid):
        time.sleep(0.2)
    if pid_alive(pid) and marker in cmdline(pid):
        os.kill(pid, signal.SIGKILL)
    return True


def clean_recorded(include_live: bool = False) -> list[str]:
    """Remove what crashed harnesses left; with include_live also what live harnesses own. Returns a log."""
    done = []
    for owned in recorded():
        if pid_alive(owned.harness_pid) and owned.harness_pid != os.getpid() and not include_live:
            continue
        done += clean_owned(owned)
    return done


def clean_owned(owned: Owned, keep: frozenset[Path] = frozenset()) -> list[str]:
    """Stop the processes of one owner record, remove its folders (except those in `keep`), then forget it (a
    remote host that does not answer keeps it for the next `clean`). Returns a log."""
    done = []
    pids = set(processes_with(owned.marker)) | ({owned.pid} if owned.pid else set())
    for pid in sorted(pids):
        if stop_process(pid, owned.marker):
            done.append(f"stopped process {pid} ({owned.label})")
    for path in owned.paths:
        if Path(path).exists() and Path(path) not in keep:
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"removed {path}")
    if owned.remote:
        said, removed = clean_remote(owned.remote)
        done += said
        if not removed:
            return done  # the host did not answer: keep the record for the next `clean`
    forget(owned.label)
    return done


def leftovers() -> list[Owned]:
    """What crashed harnesses left behind (for `layerbench doctor`)."""
    return [o for o in recorded() if not pid_alive(o.harness_pid)]


def clean_docker(include_live: bool = False) -> list[str]:
    """Remove containers, volumes and networks labelled layerbench=1 whose harness is gone (or all)."""
    try:
        import docker

        client = docker.from_env(timeout=30)
        client.ping()
    except Exception:  # no daemon: nothing of ours can be running in it
        return []
    done: list[str] = []
    for kind in ("containers", "volumes", "networks"):
        collection = getattr(client, kind)
        items = collection.list(all=True, filters={"label": "layerbench=1"}) if kind == "containers" else \
            collection.list(filters={"label": "layerbench=1"})
        for item in items:
            harness = int((item.attrs.get("Labels") or item.attrs.get("Config", {}).get("Labels") or {}).get(
                "layerbench.run.harness", "0") or 0)
            if harness and pid_alive(harness) and harness != os.getpid() and not include_live:
                continue
            item.remove(force=True) if kind == "containers" else item.remove()
            done.append(f"removed {kind[:-1]} {item.name}")
    return done


def kubernetes_namespaces(include_live: bool = False) -> list[str]:
    """Namespaces labelled layerbench=1 made from this machine whose harness is gone (or all of this machine's),
    on the cluster of $KUBECONFIG, ~/.kube/config or the local one; [] when there is no cluster to ask."""
    core = _kubernetes_core()
    if core is None:
        return []
    found = []
    for ns in core.list_namespace(label_selector="layerbench=1", _request_timeout=10).items:
        meta = ns.metadata.labels or {}
        if meta.get("layerbench.host") != host_label() or ns.status.phase == "Terminating":
            continue
        harness = int(meta.get("layerbench.run.harness", "0") or 0)
        if harness and pid_alive(harness) and harness != os.getpid() and not include_live:
            continue
        found.append(ns.metadata.name)
    return found


def clean_kubernetes(include_live: bool = False) -> list[str]:
    """Delete the namespaces `kubernetes_namespaces` finds (and with them everything a run created)."""
    names = kubernetes_namespaces(include_live)
    if not names:
        return []
    core = _kubernetes_core()
    for name in names:
        delete_namespace(core, name)
    return [f"deleted namespace {name}" for name in names]


def _kubernetes_core() -> object | None:
    try:
        from kubernetes import client, config

        paths = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(":") if p]
        paths += [Path.home() / ".kube" / "config", local_kubeconfig()]
        path = next((p for p in paths if p.is_file()), None)
        if path is None:
            return None
        core = client.CoreV1Api(config.new_client_from_config(config_file=str(path)))
        core.list_namespace(limit=1, _request_timeout=5)
        return core
    except Exception:  # no cluster answers: nothing of ours can be running in it
        return None


__all__ = ["Owned", "clean_docker", "clean_kubernetes", "clean_owned", "clean_recorded", "kubernetes_namespaces",
           "leftovers", "processes_with", "stop_process"]
