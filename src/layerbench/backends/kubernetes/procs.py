"""Host processes of a pod on a node that is this machine, for CPU accounting: found by the pod's UID in their
cgroup path (the kubelet names pod cgroups `pod<uid>`, with '-' or '_' in the UID depending on the driver)."""

from __future__ import annotations

from pathlib import Path

from layerbench.hosts.procfs import cgroup, cmdline, parent_of, pids


def pod_components(uid: str, program: str) -> dict[str, list[int]]:
    """{"server": [the server, its `program` name: mariadbd, mysqld], "pod-other": [the pod's other processes],
    "containerd-shim": [...]}."""
    keys = {f"pod{uid}", f"pod{uid.replace('-', '_')}"}
    server: list[int] = []
    other: list[int] = []
    for pid in pids():
        groups = cgroup(pid)
        if not any(key in groups for key in keys):
            continue
        name = Path(cmdline(pid)[0] or "?").name
        (server if name == program else other).append(pid)
    out: dict[str, list[int]] = {}
    if server:
        out["server"] = server
        shim = parent_of(server[0])
        if shim and "containerd-shim" in " ".join(cmdline(shim)[:1]):
            out["containerd-shim"] = [shim]
    if other:
        out["pod-other"] = other
    return out


def pod_processes(uid: str) -> list[int]:
    """The top processes of a pod's containers (their children are found by the sampler), its pause
    process left out: those whose parent is outside the pod."""
    keys = {f"pod{uid}", f"pod{uid.replace('-', '_')}"}
    inside = [pid for pid in pids() if any(key in cgroup(pid) for key in keys)]
    found = set(inside)
    return [pid for pid in inside if parent_of(pid) not in found and Path(cmdline(pid)[0] or "?").name != "pause"]
