"""Host processes and cgroups of a container: its server, the docker-proxy of its published port, and its
containerd shim, for CPU accounting; the cgroup directories whose limits and throttling apply to it."""

from __future__ import annotations

from pathlib import Path


def read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def cmdline(pid: int) -> list[str]:
    return read(Path(f"/proc/{pid}/cmdline")).split("\0")


def parent_of(pid: int) -> int | None:
    text = read(Path(f"/proc/{pid}/stat"))
    if not text:
        return None
    fields = text.rsplit(")", 1)[-1].split()
    return int(fields[1]) if len(fields) > 1 else None


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


def cgroup_dirs(pid: int) -> list[Path]:
    """The cpu controller's cgroup directory of pid (cgroup v1 cpu,cpuacct or the v2 unified tree)."""
    dirs = []
    for line in read(Path(f"/proc/{pid}/cgroup")).splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            for mount in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
                if Path(mount + path).is_dir():
                    dirs.append(Path(mount + path))
                    break
        elif controllers == "" and Path("/sys/fs/cgroup" + path).is_dir():
            dirs.append(Path("/sys/fs/cgroup" + path))
    return dirs[:1]
