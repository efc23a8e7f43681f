"""Leases: how `layerbench clean`, from any machine and with empty state, tells a live harness from a dead one.

Each harness holds one lease per machine it starts something on: an exclusive `flock` on the file
`<work dir>/leases/<id>[@<host>].lock` of that machine, `<id>` a random token of the harness (never its hostname
or PID).
On this machine the lock is held by an open file of the process; on an ssh: host by one SSH session
(`flock ... cat`), as `server/remote_files.py:host_lock` holds a host's lock. The kernel lets go of a lock
when its holder ends, however it ends: a SIGKILLed harness's file descriptors close, its SSH sessions' stdin
closes and their remote `flock` exits. So a lease is live exactly while its file's lock is held, which anyone on
that machine can test (`flock -n`), whatever its hostname, PID namespace or clock.

Everything a harness leaves for `clean` names its lease's file: owner records here (owners.py) and on the hosts,
the labels of its Docker objects (`layerbench.lease`). `may_sweep` is the one rule, pure."""

from __future__ import annotations

import atexit
import contextlib
import enum
import fcntl
import os
import re
import secrets
import shlex
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from layerbench.hosts.workdirs import work_root

LEASE_LABEL = "layerbench.lease"  # the label (Docker) and record key naming a lease's file
LOCKED = "LB-LEASED"
LEASE_PATH = re.compile(r"/[A-Za-z0-9_./-]{1,400}/leases/[0-9a-f]{16,64}(@[A-Za-z0-9][A-Za-z0-9_.-]{0,62})?\.lock")


class State(enum.Enum):
    LIVE = "live"  # its lock is held: the harness runs
    DEAD = "dead"  # no one holds it (or the file is gone): the harness ended
    UNKNOWN = "unknown"  # the machine did not answer


def may_sweep(lease: str | None, states: Mapping[str, State], *, cleaner: frozenset[str] = frozenset(),
              include_live: bool = False) -> bool:
    """Whether `clean` may remove a thing whose lease is `lease` (its file's path), given what the probe of the
    lease's machine found. With include_live (`clean --all`) anything with a well-formed lease is; a lease of the
    cleaning process itself (`cleaner`: it runs no campaign while it cleans) is; else only one known DEAD. No
    lease, a malformed one, or a machine that did not answer: kept (what `clean` cannot tell is never removed)."""
    if lease is None or not LEASE_PATH.fullmatch(lease) or "/../" in lease:
        return False
    return include_live or lease in cleaner or states.get(lease, State.UNKNOWN) is State.DEAD


def own_leases() -> frozenset[str]:
    """The lease files this process holds (here and on hosts)."""
    return frozenset(_OWN) if os.getpid() == _ID_PID else frozenset()


def harness_id() -> str:
    """This process's random token (a child forked from it gets its own)."""
    global _ID, _ID_PID
    if _ID is None or os.getpid() != _ID_PID:
        _ID, _ID_PID = secrets.token_hex(12), os.getpid()
        _HELD.clear()
        _ON_HOSTS.clear()
        _ON_HOSTS_GENERATIONS.clear()
        _OWN.clear()
    return _ID


_ID: str | None = None
_ID_PID = 0
_HELD: dict[str, Any] = {}  # a lease file here -> its open file
_ON_HOSTS: dict[str, tuple[contextlib.ExitStack, Any, str]] = {}  # a host's lease key -> (session, process, file)
_OWN: set[str] = set()  # the paths of those leases (here and on hosts)
_ON_HOSTS_GENERATIONS: dict[str, int] = {}  # a host's lease name -> the generation of its newest file
_GUARD = threading.Lock()


def lease_file(work_dir: str | Path, host: str | None = None, generation: int = 0) -> str:
    """The lease's file in a work dir; on an ssh: host named after the host too (two entries may reach one machine,
    or share this machine's file system, as the lab's do: each holds a file of its own); `generation` > 0: a
    later lease of this harness on that host, taken after the session holding the earlier one ended (its remote
    lock may outlive it until that host's sshd notices)."""
    token = harness_id() + (f"{generation:02x}" if generation else "")
    return f"{str(work_dir).rstrip('/')}/leases/{token}{f'@{host}' if host else ''}.lock"


def local_lease() -> str:
    """This harness's lease on this machine, taken on first use and held until the process ends."""
    path = lease_file(work_root())
    with _GUARD:
        if path not in _HELD:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            _HELD[path] = locked_file(path)
            _OWN.add(path)
    return path


def locked_file(path: str) -> IO[bytes]:
    """The lease file, created and locked; taken again when a `clean` removed it between the two (it removes a
    file no one holds, under its own lock: remove_dead_local), so the lock held is always on the file at `path`."""
    while True:
        handle: IO[bytes] = open(path, "ab")  # noqa: SIM115 (held for the process's life)
        fcntl.flock(handle, fcntl.LOCK_EX)  # a cleaner holds it only while it removes the file
        try:
            if os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
                return handle
        except FileNotFoundError:
            pass
        handle.close()


def remove_dead_local(work_dir: str | Path) -> list[str]:
    """Remove the lease files of ended harnesses in a work dir (a SIGKILLed one leaves its file): each one no one
    holds is locked, then removed while locked, so a harness that opened it meanwhile takes a new one (locked_file).
    Returns the files removed."""
    removed = []
    for path in sorted(Path(work_dir, "leases").glob("*.lock")):
        if str(path) in own_leases() or not LEASE_PATH.fullmatch(str(path)):
            continue
        try:
            with open(path, "rb") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                path.unlink()
                removed.append(str(path))
        except OSError:  # held (BlockingIOError), gone meanwhile, or unreadable: left as it is
            continue
    return removed


def host_lease(host: Any) -> str:
    """This harness's lease on `host` (hosts/inventory.py:Host): on this machine `local_lease`; on an ssh: host
    an SSH session holding the lock there, opened on first use (RunFailed when the host does not answer)."""
    if host.is_local:
        return local_lease()
    from layerbench.errors import RunFailed
    from layerbench.hosts.procs import held

    name = lease_file(host.work_dir, host.name)  # one lease per host name and work dir, whichever entry reaches it
    key = f"{name} {host.entry.ssh}:{host.entry.port or 22}"  # but two machines of one name (two inventories in one
    with _GUARD:  # process: the test suite's two labs both have an app), or two sshds of one host, hold a session
        held_now = _ON_HOSTS.get(key)  # each, on a file of its own (the next generation: they may share a disk)
        if held_now is not None and held_now[1].poll() is None:
            return held_now[2]
        fresh = held_now is None and name not in _ON_HOSTS_GENERATIONS
        generation = 0 if fresh else _ON_HOSTS_GENERATIONS.get(name, 0) + 1
        _ON_HOSTS_GENERATIONS[name] = generation
        path = lease_file(host.work_dir, host.name, generation)
        q = shlex.quote(path)
        held_while = shlex.quote(f"echo {LOCKED}; cat > /dev/null; rm -f {q}")  # its file goes as it ends
        script = f"mkdir -p $(dirname {q}) && exec flock -x -n {q} sh -c {held_while}"
        stack = contextlib.ExitStack()
        proc = stack.enter_context(held(own_connection(host.command(["sh", "-c", script])), timeout=10))
        said = []  # ssh may speak first (a host's Banner, a warning): only the lease's own word counts
        for line in iter(proc.stdout.readline, ""):
            if line.strip() == LOCKED:
                break
            said.append(line.strip())
        else:
            stack.close()
            raise RunFailed(f"hosts.{host.name}: cannot take this harness's lease {path} there: "
                            f"{' '.join(said)[:200] or 'no answer'}")
        _ON_HOSTS[key] = (stack, proc, path)
        _OWN.add(path)
    return path


def own_connection(cmd: list[str]) -> list[str]:
    """An ssh command line on a connection of its own, not the host's shared ControlMaster: closing the campaign's
    connection (Host.close) must not end the lease."""
    swapped = {"ControlMaster=auto": "ControlMaster=no"}
    return [swapped.get(arg, "ControlPath=none" if arg.startswith("ControlPath=") else arg) for arg in cmd]


def probe_local(paths: set[str]) -> dict[str, State]:
    """Each lease file's state on this machine."""
    return {path: _probe_file(path) for path in paths if LEASE_PATH.fullmatch(path)}


def _probe_file(path: str) -> State:
    if path in own_leases():
        return State.LIVE
    try:
        handle = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return State.DEAD
    except OSError:
        return State.UNKNOWN
    with handle:  # a dead lease's file is left where it is: removing it could race with its holder's first lock
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return State.LIVE
        return State.DEAD


def probe_script(paths: set[str]) -> str:
    """sh text that prints `LEASE <live|dead> <path>` for each lease file on a host (a missing file is dead)."""
    lines = []
    for path in sorted(p for p in paths if LEASE_PATH.fullmatch(p)):
        q = shlex.quote(path)
        lines.append(f"if [ ! -e {q} ]; then echo LEASE dead {q}; elif flock -s -n {q} true; then "
                     f"echo LEASE dead {q}; else echo LEASE live {q}; fi")
    return "\n".join(lines) or "true"


def parse_probe(text: str) -> dict[str, State]:
    """`LEASE <live|dead> <path>` lines -> states (any other line, or a malformed one, is ignored)."""
    out: dict[str, State] = {}
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) == 3 and parts[0] == "LEASE" and parts[1] in ("live", "dead") and LEASE_PATH.fullmatch(parts[2]):
            out[parts[2]] = State(parts[1])
    return out


def release_all() -> None:
    """Let go of every lease (at the end of the process; the kernel would anyway)."""
    with _GUARD:
        for where, handle in _HELD.items():
            with contextlib.suppress(OSError, ValueError):
                os.unlink(where)  # a file here, removed while still locked (the id is never taken again)
                handle.close()
        for stack, _, _ in _ON_HOSTS.values():
            with contextlib.suppress(OSError, ValueError):
                stack.close()  # the SSH session: its stdin closes, its remote flock ends and removes the file
        _HELD.clear()
        _ON_HOSTS.clear()
        _OWN.clear()


atexit.register(release_all)
