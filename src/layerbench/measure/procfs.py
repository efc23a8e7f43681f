"""/proc as the backends read it: a process's command line and parent, and the cgroup directory whose limits and
throttling apply to it (shared by the container and pod backends; a leaf module)."""

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
