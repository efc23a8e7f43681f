"""Host processes and cgroups of a container: its server, the docker-proxy of its published port, and its
containerd shim, for CPU accounting."""

from __future__ import annotations

from layerbench.hosts.procfs import cmdline, parent_of, pids


def proxies_for(host_port: int) -> list[int]:
    """docker-proxy processes that forward the given host port."""
    found = []
    for pid in pids():
        args = cmdline(pid)
        if args and args[0].endswith("docker-proxy") and str(host_port) in args:
            found.append(pid)
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
