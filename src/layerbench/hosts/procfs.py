"""The one reader of /proc (and the small /sys files beside it): a file read with one system call, a process's
stat line, status, command line, parent, threads and cgroup, every process's PID, the machine's CPU ticks and
uptime, its mounts. The CPU sampler (cpu.py), the I/O window (io.py), the server host's readings over SSH
(remote_cpu.py: the same parsers on text a script printed there), the backends' process finders and the mount
table's readers all read through here; tests/unit/test_architecture.py allows no /proc path opened elsewhere.
Parsing is pure; reading is kept to the few functions under "reading"."""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePath

TICKS = os.sysconf("SC_CLK_TCK")
CPU_PRESSURE = Path("/proc/pressure/cpu")  # the machine's CPU pressure (PSI): measure/pressure.py reads it


@dataclass(frozen=True)
class ProcStat:
    pid: int
    ppid: int
    ticks: int  # utime + stime, all threads
    start: int  # starttime in ticks since boot (detects PID reuse)
    name: str = ""  # the command name (comm), kept so a process that ended can still be named
    child_ticks: int = 0  # cutime + cstime: the CPU of its children it has reaped (a PostgreSQL backend that ended)


# --- parsing (pure) ---------------------------------------------------------------------------------------


def parse_proc_stat_line(text: str) -> ProcStat:
    """/proc/<pid>/stat; the command may hold spaces and parentheses, so split after the LAST ')'."""
    head, sep, tail = text.rpartition(")")
    if not sep or "(" not in head:
        raise ValueError("not a /proc/<pid>/stat line")
    fields = tail.split()
    if len(fields) < 20:
        raise ValueError("too few fields in /proc/<pid>/stat")
    try:
        pid, _, name = head.partition("(")
        return ProcStat(int(pid), int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[19]), name[:40],
                        int(fields[13]) + int(fields[14]))
    except ValueError:
        raise ValueError("non-numeric field in /proc/<pid>/stat") from None


def cpu_line(text: str) -> list[str] | None:
    """The fields of /proc/stat's `cpu` line (all CPUs), or None when there is none."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            return parts[1:]
    return None


def parse_machine_stat(text: str) -> tuple[int, int]:
    """(busy ticks, idle ticks) of all CPUs from /proc/stat's `cpu` line (idle includes iowait)."""
    fields = cpu_line(text)
    if fields is None:
        raise ValueError("no cpu line in /proc/stat")
    try:
        values = [int(v) for v in fields[:8]]
    except ValueError:
        raise ValueError("non-numeric cpu line in /proc/stat") from None
    if len(values) < 5:
        raise ValueError("short cpu line in /proc/stat")
    idle = values[3] + values[4]
    return sum(values) - idle, idle


def parse_steal(text: str) -> int:
    """Steal ticks of all CPUs (time a hypervisor gave this VM's CPUs to others) from /proc/stat's `cpu` line."""
    fields = cpu_line(text) or []
    return int(fields[7]) if len(fields) > 7 and fields[7].isdigit() else 0


def descendants(roots: list[int], procs: dict[int, ProcStat]) -> set[int]:
    """The roots that exist in procs and every process below them."""
    children: dict[int, list[int]] = {}
    for stat in procs.values():
        children.setdefault(stat.ppid, []).append(stat.pid)
    found, stack = set(), [p for p in roots if p in procs]
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack += children.get(pid, [])
    return found


# --- reading ----------------------------------------------------------------------------------------------


def read_file(path: str | Path) -> str | None:
    """A small /proc or /sys file, read with one system call (cheaper than open()); None when unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 65536).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def read(path: str | Path) -> str:
    """A small /proc or /sys file; "" when unreadable (a process that ended, a file the kernel lacks)."""
    return read_file(path) or ""


def read_whole(path: str | Path) -> str | None:
    """A /proc or /sys file of any size (cpuinfo and mounts outgrow one read on large machines); None when
    unreadable."""
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


def tasks(pid: int) -> list[str]:
    """The thread ids of a process (its /proc/<pid>/task entries; os.getpid() for this one's); none when it is
    gone."""
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def tcp_sockets() -> str:
    """This machine's TCP sockets: /proc/net/tcp and tcp6 one after the other (either may be missing)."""
    return "".join(read_whole(table) or "" for table in ("/proc/net/tcp", "/proc/net/tcp6"))


def socket_inodes(pid: int) -> set[int]:
    """The inodes of a process's open sockets here (its /proc/<pid>/fd links `socket:[N]`); none when it is gone."""
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    out = set()
    for name in names:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{name}")
        except OSError:
            continue
        if found := re.fullmatch(r"socket:\[([0-9]{1,20})\]", link):
            out.add(int(found.group(1)))
    return out


def pids() -> list[int]:
    """Every process's PID now."""
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def net_namespace(pid: int | str) -> str | None:
    """The network namespace a process is in (`net:[4026531840]`, the link of /proc/<pid>/ns/net); None when the
    process is gone or its namespace may not be read."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def in_net_namespace(namespace: str) -> list[int]:
    """The PIDs of the processes in that network namespace now (the namespace lab's hosts: one per host)."""
    return [pid for pid in pids() if net_namespace(pid) == namespace]


def parse_namespace_lines(text: str) -> dict[int, str]:
    """`N /proc/<pid>/ns/net net:[<inode>]` lines (find -printf over a host's processes) -> {pid: namespace};
    other and malformed lines are skipped."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[0] != "N" or not re.fullmatch(r"net:\[[0-9]{1,20}\]", parts[2]):
            continue
        found = re.fullmatch(r"/proc/([0-9]{1,10})/ns/net", parts[1])
        if found:
            out[int(found.group(1))] = parts[2]
    return out


def parse_socket_lines(text: str) -> dict[int, set[int]]:
    """`S /proc/<pid>/fd/<n> socket:[<inode>]` lines (find -printf over a host's processes' descriptors) ->
    {pid: its socket inodes}; other and malformed lines are skipped."""
    out: dict[int, set[int]] = {}
    for line in text.splitlines():
        found = re.fullmatch(r"S /proc/([0-9]{1,10})/fd/[0-9]{1,10} socket:\[([0-9]{1,20})\]", line.strip())
        if found:
            out.setdefault(int(found.group(1)), set()).add(int(found.group(2)))
    return out


def hex_address(text: str) -> str:
    """An address of /proc/net/tcp (IPv4: 8 hex digits of a little-endian word; IPv6: four such words) as text,
    an IPv4-mapped IPv6 address as its IPv4 form (how SSH_CONNECTION names a client of a dual-stack sshd)."""
    raw = bytes.fromhex(text)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    if len(raw) != 16:
        raise ValueError(f"not an address of /proc/net/tcp: {text[:40]}")
    six = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return str(six.ipv4_mapped or six)


def parse_tcp_connections(text: str) -> dict[int, tuple[str, int, str, int]]:
    """The rows of /proc/net/tcp and tcp6 (the header lines and malformed rows are skipped) -> {socket inode:
    (local address, local port, remote address, remote port)}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 10 or not parts[9].isdigit() or parts[9] == "0":
            continue
        try:
            (here, here_port), (there, there_port) = (part.split(":") for part in parts[1:3])
            out[int(parts[9])] = (hex_address(here), int(here_port, 16), hex_address(there), int(there_port, 16))
        except ValueError:
            continue
    return out


def exists(pid: int) -> bool:
    """Whether /proc lists the process (one that ended but is not reaped yet included)."""
    return os.path.isdir(f"/proc/{pid}")


def status(pid: int) -> str:
    """/proc/<pid>/status (its `Key: value` lines); "" when the process is gone."""
    return read(f"/proc/{pid}/status")


def cgroup(pid: int) -> str:
    """/proc/<pid>/cgroup (`id:controllers:path` lines); "" when the process is gone."""
    return read(f"/proc/{pid}/cgroup")


def stat_of(pid: int) -> ProcStat | None:
    try:
        return parse_proc_stat_line(read(f"/proc/{pid}/stat"))
    except ValueError:
        return None


def some_processes(wanted: list[int]) -> dict[int, ProcStat]:
    """The stat of each of these PIDs that is still there."""
    return {pid: stat for pid in wanted if (stat := stat_of(pid)) is not None}


def all_processes() -> dict[int, ProcStat]:
    """The stat of every process (keyed by the PID its stat line names)."""
    return {stat.pid: stat for pid in pids() if (stat := stat_of(pid)) is not None}


def uptime_ticks() -> int:
    """Time since boot in clock ticks (the unit of a process's start time)."""
    try:
        return int(float(read("/proc/uptime").split()[0]) * TICKS)
    except (IndexError, ValueError):
        return 0


def cmdline(pid: int) -> list[str]:
    return read_bytes(Path(f"/proc/{pid}/cmdline")).decode(errors="replace").split("\0")


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def parent_of(pid: int) -> int | None:
    stat = stat_of(pid)
    return stat.ppid if stat is not None else None


def cgroup_dirs(pid: int) -> list[Path]:
    """The cpu controller's cgroup directory of pid (cgroup v1 cpu,cpuacct or the v2 unified tree)."""
    dirs = []
    for line in cgroup(pid).splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if "cpu" in controllers.split(","):
            for mount in ("/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"):
                if Path(mount + path).is_dir():
                    dirs.append(Path(mount + path))
                    break
        elif controllers == "" and Path("/sys/fs/cgroup" + path).is_dir():
            dirs.append(Path("/sys/fs/cgroup" + path))
    return dirs[:1]


MOUNT_ESCAPE = re.compile(r"\\([0-7]{3})")


def unescape_mount_field(field: str) -> str:
    """/proc/self/mounts writes space, tab, newline and backslash in a field as octal escapes (\\040 ...)."""
    return MOUNT_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text: str) -> list[dict[str, str]]:
    """Lines of /proc/self/mounts as device, mount point, filesystem type and options; malformed lines skipped."""
    mounts = []
    for line in text.split("\n"):  # only "\n" ends a line: other control characters are kept in fields
        parts = line.split(" ")
        if len(parts) >= 4 and all(parts[:4]):
            device, point, fstype, options = (unescape_mount_field(p) for p in parts[:4])
            mounts.append({"device": device, "mount_point": point, "fstype": fstype, "options": options})
    return mounts


def mounts() -> list[dict[str, str]]:
    """This machine's mounts now (/proc/self/mounts), parsed as parse_mounts does; none when unreadable."""
    return parse_mounts(read_whole("/proc/self/mounts") or "")


def mount_of(path: PurePath, text: str | None = None) -> dict[str, str] | None:
    """Filesystem type, device and options of the mount holding path (the longest mount point that contains it;
    the last one listed when one point is mounted over)."""
    target = str(path.resolve()) if isinstance(path, Path) else str(path)  # a PurePath: another host's, resolved
    best: dict[str, str] | None = None
    for mount in parse_mounts(text) if text is not None else mounts():
        point = mount["mount_point"]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best["mount_point"])):
            best = mount
    return best
