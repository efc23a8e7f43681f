"""The resource sampler: parsers on real /proc and cgroup text from this machine, and a real busy process."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.hosts.procfs import ProcStat, parse_machine_stat, parse_proc_stat_line
from layerbench.measure.cpu import (
    ResourceSampler,
    parse_cpu_stat,
    parse_status,
    reaped_ticks,
)
from layerbench.records import Usage

DATA = Path(__file__).resolve().parents[1] / "data" / "proc"


def test_stat_line_with_spaces_and_parentheses_in_the_command() -> None:
    stat = parse_proc_stat_line((DATA / "stat_odd_comm.txt").read_text())
    assert (stat.pid, stat.ppid, stat.ticks, stat.start) == (19009, 19006, 6, 455760)
    assert parse_proc_stat_line((DATA / "stat_init.txt").read_text()).pid == 1


def test_machine_status_and_cgroup_files() -> None:
    busy, idle = parse_machine_stat((DATA / "machine_stat.txt").read_text())
    assert busy > 0 and idle > 0
    voluntary, involuntary = parse_status((DATA / "status.txt").read_text())
    assert voluntary >= 0 and involuntary >= 0
    v1 = parse_cpu_stat((DATA / "cgroup_v1_cpu.stat").read_text())
    assert v1 == {"nr_periods": 104, "nr_throttled": 101, "throttled_seconds": pytest.approx(3.481592508)}
    v2 = parse_cpu_stat((DATA / "cgroup_v2_cpu.stat").read_text())
    assert v2["nr_throttled"] == 411 and v2["throttled_seconds"] == pytest.approx(20.877412)


@given(st.text(max_size=400))
def test_parsers_raise_only_value_error(text: str) -> None:
    for parse in (parse_proc_stat_line, parse_machine_stat, parse_status, parse_cpu_stat):
        with contextlib.suppress(ValueError):
            parse(text)


def test_a_busy_server_is_counted_once() -> None:
    """A child born inside the window burns 1.5 s of CPU (by its own clock): the sampler sees about that much,
    whatever else the machine is doing, and counts it under its component only."""
    burn = "import time\nwhile time.process_time() < 1.5: pass"
    pids: list[int] = []
    sampler = ResourceSampler(components=lambda: {"server": list(pids)}, cgroups=[], client_pids=lambda: [],
                              interval=0.1)
    sampler.start()
    child = subprocess.Popen([sys.executable, "-c", burn])
    pids.append(child.pid)
    while child.poll() is None:
        time.sleep(0.02)
    usage = sampler.stop()
    assert usage.samples >= 3
    assert 1.2 <= usage.cpu_seconds["server"] <= 1.65  # minus at most one interval before the child exited
    total = sum(v for k, v in usage.cpu_seconds.items() if k != "idle")
    assert total <= 2 * usage.window_seconds * 1.15  # 2 CPUs: nothing is counted twice
    again = Usage.from_json(usage.to_json())
    assert again.cpu_seconds == usage.cpu_seconds
    assert set(usage.cpu_seconds) >= {"server", "other", "idle"}


def test_the_client_is_looked_up_until_found_then_kept() -> None:
    """Finding sysbench reads every process's command line (milliseconds): once found it is not looked up again,
    and its CPU, and the harness's own, are still counted to the end."""
    burn = "import time\nwhile time.process_time() < 0.6: pass"
    lookups: list[int] = []
    child: list[subprocess.Popen] = []

    def client_pids() -> list[int]:
        lookups.append(1)
        return [child[0].pid] if child else []

    sampler = ResourceSampler(components=lambda: {}, cgroups=[], client_pids=client_pids, interval=0.05)
    sampler.start()
    time.sleep(0.4)  # full scans (every FULL_SCAN_EVERY samples) before the client exists
    before = len(lookups)
    child.append(subprocess.Popen([sys.executable, "-c", burn]))
    while child[0].poll() is None:
        time.sleep(0.02)
    time.sleep(0.4)
    usage = sampler.stop()
    assert before >= 1
    assert len(lookups) == before + 1  # found at the first full scan after it started, then never asked again
    assert usage.cpu_seconds["client"] >= 0.4
    assert usage.harness_cpu_seconds >= usage.sampler_cpu_seconds > 0


def test_a_client_that_is_two_processes_one_after_the_other_is_counted_whole() -> None:
    """pgbench's warm-up and measured run are a process each, shorter than the regular full scan's period: each is
    looked up when it says it started (client_started), so both count as the client, not as other load."""
    burn = "import time\nwhile time.process_time() < 0.5: pass"
    current: list[subprocess.Popen] = []
    sampler = ResourceSampler(components=lambda: {}, cgroups=[], client_pids=lambda: [current[-1].pid] if current
                              and current[-1].poll() is None else [], interval=0.1)
    sampler.start()
    time.sleep(0.15)  # the first full scan is over: without client_started the next comes 0.5 s later
    for _ in range(2):
        current.append(subprocess.Popen([sys.executable, "-c", burn]))
        time.sleep(0.02)
        sampler.client_started()
        while current[-1].poll() is None:
            time.sleep(0.02)
    usage = sampler.stop()
    assert usage.cpu_seconds["client"] >= 2 * 0.5 - 2 * 0.1 - 0.1  # each less at most one interval at its end


def test_the_wait_for_quiet_says_where_it_read_and_ends_on_a_reading_that_fails() -> None:
    """wait_for_quiet on this machine's /proc/stat (LOCAL_LOAD), and on an ssh: host that does not answer (a real
    ssh to a name that does not resolve: measure/remote_cpu.py host_load)."""
    from layerbench.hosts.inventory import Host, HostEntry
    from layerbench.measure.cpu import LOCAL_LOAD, wait_for_quiet
    from layerbench.measure.remote_cpu import host_load

    quiet = wait_for_quiet(5.0, threshold=1.0, step=0.05)  # every share is at most 1: quiet after one step
    assert (quiet.quiet, quiet.at, quiet.error) == (True, "this machine", None) and quiet.busy_share is not None
    busy = wait_for_quiet(0.2, threshold=-1.0, step=0.05, load=LOCAL_LOAD)  # never quiet: it waits to its limit
    assert not busy.quiet and busy.waited_seconds >= 0.2 and busy.at == "this machine"
    nowhere = wait_for_quiet(30.0, load=host_load(Host("offn", HostEntry(ssh="root@offn-nowhere.invalid"))))
    assert nowhere.at == "offn" and nowhere.quiet and nowhere.busy_share is None  # never counted as staying busy
    assert str(nowhere.error).startswith("RunFailed: hosts.offn ") and "\n" not in str(nowhere.error)


def test_the_wait_reads_an_ssh_hosts_own_cgroup_when_its_init_runs_in_one() -> None:
    """A slice of a shared kernel (the isolated lab's hosts): the wait's busy time is its cgroup's, as the busy rule's
    `other@<host>` is (measure/remote_cpu.py CGROUP), not the kernel's whole `cpu` line."""
    from layerbench.hosts.procfs import parse_machine_stat
    from layerbench.measure.remote_cpu import load_counters, parse_reading

    kernel = "cpu  900 0 100 1000 0 0 0 0 0 0\n"  # 1000 busy and 1000 idle ticks: 20 s at 100 ticks a second
    sliced = "TICK 100\nCG 2000000000 /lbdevi-db\n" + kernel
    assert load_counters(parse_reading(sliced), parse_machine_stat(sliced)) == (2.0, 18.0)
    whole = "TICK 100\n" + kernel
    assert load_counters(parse_reading(whole), parse_machine_stat(whole)) == (1000.0, 1000.0)


SPAWNER = """
import resource, subprocess, sys, time
burn = "import time\\nwhile time.process_time() < 0.15: pass"
sys.stdin.readline()  # once the sampler's first sample has seen this parent
for _ in range(4):
    subprocess.run([sys.executable, "-c", burn], check=True)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(used.ru_utime + used.ru_stime, flush=True)
time.sleep(60)
"""


def test_children_that_end_between_two_samples_count_through_their_parent() -> None:
    """PostgreSQL forks a backend per connection; a short run's backends end between two samples (or before the
    last), so the sampler never sees them. Their parent's reaped-children time counts them: here a parent runs four
    children one after another, each burning 0.15 s of CPU by its own clock, while the sampler takes no sample
    between its first and its last."""
    parent = subprocess.Popen([sys.executable, "-c", SPAWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        sampler = ResourceSampler(components=lambda: {"server": [parent.pid]}, cgroups=[], client_pids=lambda: [],
                                  interval=3600)
        sampler.start()
        while sampler.tally.samples < 1:
            time.sleep(0.01)
        assert parent.stdin is not None and parent.stdout is not None
        parent.stdin.write("go\n")
        parent.stdin.flush()
        children_cpu = float(parent.stdout.readline())  # the children's CPU, as the kernel gave it to the parent
        usage = sampler.stop()
    finally:
        parent.kill()
        parent.wait()
    assert children_cpu >= 0.55
    assert usage.samples == 2  # the first and the last: no child was alive at either
    assert children_cpu - 0.05 <= usage.cpu_seconds["server"] <= children_cpu + 0.2  # 10 ms ticks; the parent's own


def test_a_child_seen_before_it_ended_is_not_counted_twice_and_the_clients_are_left_alone() -> None:
    """The postmaster (10) reaped 80 ticks of children: backend 12 was seen at 30 (counted), 13 never seen; the
    client (20), reaped by the harness, ended too and keeps what it was counted."""
    first = {10: ProcStat(10, 1, 100, 5, child_ticks=7), 12: ProcStat(12, 10, 0, 50), 20: ProcStat(20, 2, 0, 60)}
    last = {10: ProcStat(10, 1, 110, 5, child_ticks=87), 12: ProcStat(12, 10, 30, 50), 20: ProcStat(20, 2, 40, 60)}
    owner = {10: "server", 12: "server", 20: "client"}
    assert reaped_ticks(first, last, owner, present={10}) == {"server": 50}
    zombie = {**last, 10: ProcStat(10, 1, 110, 5, child_ticks=57)}  # 12 ended, not reaped yet: 13's 50 only
    assert reaped_ticks(first, zombie, owner, present={10, 12}) == {"server": 50}
    assert reaped_ticks(first, last, owner, present=set()) == {}
