"""Host processes and cgroups of a container: its server, the docker-proxy of its published port, and its
containerd shim, for CPU accounting."""

from __future__ import annotations

from pathlib import Path

from layerbench.hosts.procfs import cmdline, parent_of


def proxies_for(host_port: int) -> list[int]:
    """docker-proxy processes that forward the given host port."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            args = cmdline(int(proc.name))
            if args and args[0].endswith("docker-proxy") and str(host_port) in args:
                found.append(int(proc.name))
    return found


def docker_components(server_pid: int | None, host_port: int | None) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    if server_pid:
        out["server"] = [server_pid]
        shim = parent_of(server_pid)
        if shim and any("containerd-shim" in part for part in cmdline(shim)[:1]):
            out["containerd-shim"] = [shim]
    if host_port:
        proxies = proxies_for(host_port)
        if proxies:
            out["docker-proxy"] = proxies
    return out
