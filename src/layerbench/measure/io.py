"""Where the I/O went during a run's measured window: per component, the kernel's per-process counters
(/proc/PID/io), the server cgroup's block I/O (cgroup v2 io.stat, v1 blkio.throttle.*), and the server's own
InnoDB counters (SHOW GLOBAL STATUS), each read once right before and once right after sysbench's measured
window (the warm-up excluded). Parsing is pure; reading /proc, /sys and the server is kept to a few functions.

No background thread: two readings per run, so the measurement costs nothing during the window."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.hosts.procfs import all_processes, descendants, read, read_file, some_processes, uptime_ticks
from layerbench.records import IoCounters

PROC_IO_KEYS = ("rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes")
CGROUP_IO_KEYS = ("rbytes", "wbytes", "rios", "wios")

# SHOW GLOBAL STATUS counters kept as deltas over the measured window (all cumulative since server start)
STATUS_COUNTERS = (
    "Innodb_buffer_pool_read_requests",  # logical page reads (from the pool or not)
    "Innodb_buffer_pool_reads",  # logical reads the pool could not serve: the page was read from the file
    "Innodb_buffer_pool_read_ahead",  # pages read ahead (prefetched) from the files
    "Innodb_buffer_pool_write_requests",  # page modifications in the pool
    "Innodb_buffer_pool_pages_flushed",  # dirty pages written back to the files
    "Innodb_buffer_pool_wait_free",  # waits for a free page (the pool was too small to keep up)
    "Innodb_pages_read",
    "Innodb_pages_written",
    "Innodb_data_read",  # bytes read from the data files
    "Innodb_data_written",  # bytes written to data files, doublewrite buffer and redo log
    "Innodb_data_reads",
    "Innodb_data_writes",
    "Innodb_data_fsyncs",
    "Innodb_os_log_written",  # bytes written to the redo log
    "Innodb_log_writes",
    "pg_blks_read",  # PostgreSQL (pg_stat_database of the benchmark's database): blocks not in shared_buffers
    "pg_blks_hit",  # blocks found in shared_buffers
)
# PostgreSQL's counters of the benchmark's database, as (name, value) rows like SHOW GLOBAL STATUS's.
PG_STATUS_SQL = ("SELECT 'pg_blks_read', blks_read FROM pg_stat_database WHERE datname = current_database() "
                 "UNION ALL SELECT 'pg_blks_hit', blks_hit FROM pg_stat_database WHERE datname = current_database()")


# --- parsing (pure) ---------------------------------------------------------------------------------------


def parse_proc_io(text: str) -> dict[str, int]:
    """/proc/PID/io: `key: value` lines; every one of PROC_IO_KEYS must be there."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in PROC_IO_KEYS:
            try:
                found[key.strip()] = int(value.strip())
            except ValueError:
                raise ValueError(f"non-numeric {key.strip()} in /proc/PID/io") from None
    if len(found) != len(PROC_IO_KEYS):
        raise ValueError("missing fields in /proc/PID/io")
    return found


def parse_io_stat(text: str) -> dict[str, int]:
    """cgroup v2 io.stat (`MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. dbytes=.. dios=..` per device), summed
    over the devices."""
    total = dict.fromkeys(CGROUP_IO_KEYS, 0)
    for line in text.splitlines():
        for pair in line.split()[1:]:
            key, sep, value = pair.partition("=")
            if sep and key in total:
                if not value.isdigit():
                    raise ValueError(f"non-numeric {key} in io.stat")
                total[key] += int(value)
    return total


def parse_blkio_v1(text: str) -> tuple[int, int]:
    """(read, write) of a cgroup v1 blkio.throttle.io_service_bytes or io_serviced file (`MAJ:MIN Read N`
    lines per device and operation, and a `Total` line), summed over the devices."""
    reads = writes = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 3 and ":" in parts[0] and parts[1] in ("Read", "Write"):
            if not parts[2].isdigit():
                raise ValueError(f"non-numeric {parts[1]} in blkio")
            if parts[1] == "Read":
                reads += int(parts[2])
            else:
                writes += int(parts[2])
    return reads, writes


def parse_status_rows(rows: list[tuple[Any, ...]]) -> dict[str, int]:
    """The STATUS_COUNTERS among SHOW GLOBAL STATUS rows (name, value); a counter the server lacks is absent."""
    wanted = {name.lower(): name for name in STATUS_COUNTERS}
    out = {}
    for row in rows:
        if len(row) >= 2 and str(row[0]).lower() in wanted and str(row[1]).strip().isdigit():
            out[wanted[str(row[0]).lower()]] = int(str(row[1]).strip())
    return out


def deltas(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """after - before for every key both have; a counter that went backwards (a restart) is dropped."""
    return {k: after[k] - before[k] for k in after if k in before and after[k] >= before[k]}


# --- reading ----------------------------------------------------------------------------------------------


def proc_io(pid: int) -> dict[str, int] | None:
    """A process's I/O counters (all its threads, and its reaped children); None when gone or not readable."""
    text = read(f"/proc/{pid}/io")
    try:
        return parse_proc_io(text) if text else None
    except ValueError:
        return None


def io_cgroup_dir(pid: int, root: Path = Path("/sys/fs/cgroup")) -> Path | None:
    """The cgroup directory holding pid's block I/O counters: the v2 unified one, or v1's blkio."""
    for line in read(f"/proc/{pid}/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[1] == "" and (root / parts[2].lstrip("/") / "io.stat").exists():
            return root / parts[2].lstrip("/")
        if "blkio" in parts[1].split(","):
            for mount in ("blkio", "blkio,io"):  # distributions name the v1 mount either way
                found = root / mount / parts[2].lstrip("/")
                if (found / "blkio.throttle.io_service_bytes").exists():
                    return found
    return None


def own_io_cgroup(pid: int) -> Path | None:
    """pid's I/O cgroup when it is not layerbench's own (a container's or a pod's, never the whole machine's)."""
    mine, theirs = io_cgroup_dir(os.getpid()), io_cgroup_dir(pid)
    return theirs if theirs is not None and theirs != mine else None


NOT_COUNTED = "the server's cgroup does not count block I/O (cgroup v1 counts it only under a throttle rule)"
THROTTLE_RULES = ("read_bps_device", "write_bps_device", "read_iops_device", "write_iops_device")


def v1_counts(directory: Path) -> bool:
    """cgroup v1 counts a cgroup's block I/O in blkio.throttle.* only while it has a throttle rule (seen here on
    kernel 6.18: a cgroup without one shows `Total 0` after direct reads and writes)."""
    return any(read(directory / f"blkio.throttle.{name}").strip() for name in THROTTLE_RULES)


def cgroup_io(directory: Path) -> dict[str, int] | None:
    """Block I/O of a cgroup since it was made: rbytes, wbytes, rios, wios; None where it is not counted."""
    text = read_file(directory / "io.stat")
    try:
        if text is not None:
            return parse_io_stat(text)
        if not v1_counts(directory):
            return None
        done = read_file(directory / "blkio.throttle.io_service_bytes")
        ops = read_file(directory / "blkio.throttle.io_serviced")
        if done is None or ops is None:
            return None
        (rbytes, wbytes), (rios, wios) = parse_blkio_v1(done), parse_blkio_v1(ops)
    except ValueError:
        return None
    return {"rbytes": rbytes, "wbytes": wbytes, "rios": rios, "wios": wios}


# --- one reading and the window ---------------------------------------------------------------------------


Procs = dict[int, tuple[str, int, dict[str, int]]]  # pid -> (component, start time in ticks, counters)


@dataclass
class Reading:
    """Everything read at one moment: per pid (component, start time, counters), per cgroup, the server's."""

    procs: Procs = field(default_factory=dict)
    remote: Procs = field(default_factory=dict)  # the server host's, when it is another host
    remote_uptime: int = 0  # that host's uptime in its ticks
    cgroups: dict[str, dict[str, int]] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    at: float = field(default_factory=time.monotonic)


def read_processes(named: dict[str, list[int]]) -> Procs:
    """The I/O counters of every process of every component (its root PIDs and their descendants)."""
    procs = all_processes()
    out: Procs = {}
    for name, roots in named.items():
        for pid in sorted(descendants(list(roots), procs)):
            counters = proc_io(pid)
            if pid not in out and counters is not None:
                out[pid] = (name, procs[pid].start, counters)
    return out


def reread(known: Procs) -> Procs:
    """The counters of processes already known, read first at the window's end: sysbench exits moments after
    its final report, and a full scan of /proc could come too late for it."""
    alive = some_processes(list(known))
    return {pid: (known[pid][0], stat.start, counters) for pid, stat in alive.items()
            if stat.start == known[pid][1] and (counters := proc_io(pid)) is not None}


def process_deltas(before: Reading, after: Reading, born_after: int) -> dict[str, dict[str, int]]:
    """Per component, the sum of its processes' counter deltas; a process first seen at the end counts from 0
    when it started inside the window (`born_after`, ticks since boot), else it is left out (not measurable).
    The server host's processes, when it is another host, are summed the same way against its own clock."""
    return proc_deltas(before.procs, after.procs, born_after) | \
        proc_deltas(before.remote, after.remote, before.remote_uptime)


def proc_deltas(before: Procs, after: Procs, born_after: int) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for pid, (name, start, counters) in after.items():
        seen = before.get(pid)
        if seen is not None and seen[1] == start:
            change = deltas(seen[2], counters)
        elif start >= born_after:
            change = counters
        else:
            continue
        total = out.setdefault(name, dict.fromkeys(PROC_IO_KEYS, 0))
        for key, value in change.items():
            total[key] += value
    return out


class IoWindow:
    """Reads every counter at begin() and at end() of sysbench's measured window; result() gives the deltas.
    Never raises: what could not be read is named in the result's `errors`."""

    def __init__(self, components: Callable[[], dict[str, list[int]]], client_pids: Callable[[], list[int]],
                 server_status: Callable[[], list[tuple[Any, ...]]],
                 remote: Callable[[], tuple[int, Procs]] | None = None) -> None:
        """remote: a reading of the server host's processes when it is another host
        (remote_cpu.RemoteCpuWindow.io_reading)."""
        self.components, self.client_pids, self.server_status = components, client_pids, server_status
        self.remote = remote
        self.readings: list[Reading] = []
        self.cgroup_dirs: list[Path] = []
        self.notes: list[str] = []
        self.born_after = 0

    def _read(self) -> Reading:
        reading = Reading()
        try:
            early = reread(self.readings[0].procs) if self.readings else {}
            named = {**self.components(), "client": self.client_pids()}
            if not self.readings:
                self.cgroup_dirs = [d for pid in named.get("server", [])[:1] if (d := own_io_cgroup(pid))]
            reading.procs = early | read_processes(named)
            reading.cgroups = {str(d): c for d in self.cgroup_dirs if (c := cgroup_io(d)) is not None}
            if any(str(d) not in reading.cgroups for d in self.cgroup_dirs):
                self.notes = [NOT_COUNTED]
        except Exception as error:  # a process tree that changed under us: the figures are missing, not wrong
            reading.errors.append(f"processes: {type(error).__name__}: {error}"[:200])
        if self.remote is not None:
            try:
                reading.remote_uptime, reading.remote = self.remote()
            except Exception as error:  # the host stopped answering: its figures are missing, not wrong
                reading.errors.append(f"processes on the server host: {type(error).__name__}"[:200])
        try:
            reading.status = parse_status_rows(self.server_status())
        except Exception as error:  # the server unreachable from this host (a cluster's Job client, say)
            reading.errors.append(f"server status: {type(error).__name__}"[:200])
        return reading

    def begin(self) -> None:
        if not self.readings:
            self.born_after = uptime_ticks()
            self.readings.append(self._read())

    def end(self) -> None:
        if len(self.readings) == 1:
            self.readings.append(self._read())

    def result(self) -> IoCounters | None:
        """The record of the window (records/io.py): seconds, per-component process counters, cgroup block I/O,
        server counters; None when the window never ended (a failed run)."""
        if len(self.readings) < 2:
            return None
        before, after = self.readings
        return IoCounters(round(after.at - before.at, 3), process_deltas(before, after, self.born_after),
                          {d: deltas(before.cgroups[d], c) for d, c in after.cgroups.items() if d in before.cgroups},
                          deltas(before.status, after.status), tuple(sorted(set(before.errors + after.errors))),
                          tuple(self.notes))


class WindowMarks:
    """Feeds sysbench's output lines to an IoWindow: the window begins at the warm-up's checkpoint report (the
    first cumulative record when there is a warm-up; before sysbench starts when there is none) and ends at the
    final cumulative record, while sysbench and its connections are still there."""

    def __init__(self, window: IoWindow, warmup: float) -> None:
        self.window, self.totals_expected, self.seen = window, 2 if warmup > 0 else 1, 0
        if warmup <= 0:
            window.begin()

    def total_record(self) -> None:
        self.seen += 1
        if self.seen == self.totals_expected - 1:
            self.window.begin()
        elif self.seen == self.totals_expected:
            self.window.end()


def status_sql() -> str:
    """SHOW GLOBAL STATUS for just the STATUS_COUNTERS: the server builds 15 rows, not about 600."""
    names = ", ".join(f"'{name}'" for name in STATUS_COUNTERS)  # constants of this module, no user text
    return f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})"


class ServerStatus:
    """The server's counters through one connection opened before sysbench starts and kept for the run: a
    reading inside the measured window is one small query, not a TCP handshake, a login and a new server
    thread landing in the middle of the benchmark. PyMySQL in this process: the password never reaches a
    command line or a log. A failed open is kept and raised at each reading (the window names it)."""

    def __init__(self, endpoint: Any, through: Callable[[str], list[tuple[Any, ...]]] | None = None) -> None:
        from layerbench.server.datadir import connect

        self.conn: Any = None
        self.error: Exception | None = None
        self.through = through  # the backend's own path to the server's SQL (Backend.server_sql): no connection
        self.postgresql = bool(getattr(endpoint, "is_postgresql", False))
        try:
            self.conn = None if through is not None else connect(endpoint)
        except Exception as error:  # the server unreachable from this host (a cluster's Job client, say)
            self.error = error

    def __call__(self) -> list[tuple[Any, ...]]:
        if self.through is not None:
            return self.through(PG_STATUS_SQL if self.postgresql else status_sql())
        if self.conn is None:
            raise self.error or RuntimeError("no connection")
        with self.conn.cursor() as cursor:
            cursor.execute(PG_STATUS_SQL if self.postgresql else status_sql())
            return list(cursor.fetchall())

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):  # already gone with the server
                self.conn.close()
            self.conn = None

    def __enter__(self) -> ServerStatus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
