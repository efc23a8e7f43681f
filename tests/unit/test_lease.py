"""The lease rule of hosts/lease.py (pure, with hostile inputs) and a lease's life on this machine: held while
its process lives, free once the process is SIGKILLed, read by anyone on the machine (whatever its PID or
hostname), through the same sh probe an ssh: host runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.hosts import lease
from layerbench.hosts.inventory import Host
from layerbench.hosts.lease import State, may_sweep, parse_probe, probe_local, probe_script

LEASE = "/var/tmp/lblab-db/leases/" + "ab" * 12 + ".lock"


def test_only_a_dead_lease_is_swept_unless_all_is_asked() -> None:
    assert may_sweep(LEASE, {LEASE: State.DEAD})
    assert not may_sweep(LEASE, {LEASE: State.LIVE})  # a live campaign's things are never swept
    assert not may_sweep(LEASE, {LEASE: State.UNKNOWN})  # a host that did not answer
    assert not may_sweep(LEASE, {})  # not probed
    assert not may_sweep(None, {LEASE: State.DEAD})
    assert may_sweep(LEASE, {LEASE: State.LIVE}, include_live=True)
    assert may_sweep(LEASE, {LEASE: State.LIVE}, cleaner=frozenset({LEASE}))  # the cleaner's own leftovers


@given(st.text(max_size=300), st.sampled_from(list(State)), st.booleans())
def test_a_malformed_lease_is_never_swept(text: str, state: State, include_live: bool) -> None:
    if not lease.LEASE_PATH.fullmatch(text) or "/../" in text:
        assert not may_sweep(text, {text: state}, include_live=include_live)


@given(st.from_regex(r"/[a-z]{1,8}/leases/[0-9a-f]{24}\.lock", fullmatch=True))
def test_a_live_lease_is_kept_whatever_else_the_probe_says(path: str) -> None:
    assert not may_sweep(path, {path: State.LIVE, LEASE: State.DEAD})


@given(st.text(max_size=400))
def test_the_probe_parser_takes_only_well_formed_lines(text: str) -> None:
    for path, state in parse_probe(text).items():
        assert lease.LEASE_PATH.fullmatch(path) and f"LEASE {state.value} {path}" in text


def test_the_probe_parser_reads_states_and_ignores_noise() -> None:
    text = f"banner\nLEASE live {LEASE}\nLEASE dead /x/leases/{'cd' * 12}.lock\nLEASE odd {LEASE}\nLEASE dead /etc\n"
    assert parse_probe(text) == {LEASE: State.LIVE, f"/x/leases/{'cd' * 12}.lock": State.DEAD}


HOLDER = """
import sys, time
from layerbench.hosts.lease import local_lease
print(local_lease(), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("probe", ["python", "sh"])
def test_a_lease_is_live_while_its_holder_runs_and_dead_after_sigkill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   probe: str) -> None:
    monkeypatch.setenv("LAYERBENCH_WORK_DIR", str(tmp_path))
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "LAYERBENCH_WORK_DIR": str(tmp_path)})
    try:
        assert holder.stdout is not None
        path = holder.stdout.readline().strip()
        assert path.startswith(f"{tmp_path}/leases/") and Path(path).exists()

        def state() -> State:
            if probe == "python":
                return probe_local({path})[path]
            done = Host("local").shell(probe_script({path}), timeout=30)
            return parse_probe(done.output)[path]

        assert state() is State.LIVE
        assert state() is State.LIVE  # a probe takes nothing away
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)
        assert state() is State.DEAD
        Path(path).unlink()
        assert state() is State.DEAD  # and a missing file is dead
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_this_process_s_own_lease_is_live_to_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_WORK_DIR", str(tmp_path))
    path = lease.local_lease()
    try:
        assert probe_local({path}) == {path: State.LIVE} and path in lease.own_leases()
    finally:
        lease.release_all()


def test_a_host_s_lease_is_named_after_the_host_and_rides_on_no_shared_connection() -> None:
    path = lease.lease_file("/var/tmp/lb", "db-2.lab")
    assert path == f"/var/tmp/lb/leases/{lease.harness_id()}@db-2.lab.lock" and lease.LEASE_PATH.fullmatch(path)
    cmd = lease.own_connection(["ssh", "-o", "ControlMaster=auto", "-o", "ControlPath=/tmp/x-%C", "--", "h", "true"])
    assert cmd == ["ssh", "-o", "ControlMaster=no", "-o", "ControlPath=none", "--", "h", "true"]


def test_clean_removes_the_file_of_a_killed_holder_and_keeps_a_live_one_and_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGKILLed harness cannot remove its lease file: `clean` does (remove_dead_local), but never a held one."""
    monkeypatch.setenv("LAYERBENCH_WORK_DIR", str(tmp_path))
    env = {**os.environ, "LAYERBENCH_WORK_DIR": str(tmp_path)}
    holders = [subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, text=True, env=env)
               for _ in range(2)]
    try:
        killed, live = (h.stdout.readline().strip() for h in holders if h.stdout is not None)
        holders[0].send_signal(signal.SIGKILL)
        holders[0].wait(timeout=60)
        mine = lease.local_lease()
        assert Path(killed).exists()
        assert lease.remove_dead_local(tmp_path) == [killed]
        assert not Path(killed).exists() and Path(live).exists() and Path(mine).exists()
        assert probe_local({live, mine}) == {live: State.LIVE, mine: State.LIVE}
    finally:
        lease.release_all()
        for holder in holders:
            if holder.poll() is None:
                holder.kill()
                holder.wait()


def test_a_later_lease_on_a_host_is_a_file_of_its_own_that_still_reads_as_a_lease() -> None:
    """After the session holding a host's lease ended, the next one takes another file: the old lock may outlive
    its session there until that host's sshd notices."""
    first, later = lease.lease_file("/var/tmp/lb", "db"), lease.lease_file("/var/tmp/lb", "db", generation=1)
    assert first != later and all(lease.LEASE_PATH.fullmatch(p) for p in (first, later))
