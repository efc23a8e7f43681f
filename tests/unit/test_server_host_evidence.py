"""Evidence read on the server's host (issue #42 item 4; hosts/remote.py FACTS_SCRIPT and host_tuning,
measure/remote_cpu.py's CPU pressure): the tuning facts the survey reads over SSH are the ones this machine's own
reader gives (the script run here, compared with measure/environment.py), and the host's CPU pressure over the
window comes from its /proc/pressure/cpu lines."""

from __future__ import annotations

import subprocess

from hypothesis import given
from hypothesis import strategies as st

from layerbench.hosts.inventory import Host
from layerbench.hosts.remote import FACTS_SCRIPT, host_tuning, parse_facts
from layerbench.measure.environment import tuning_facts
from layerbench.measure.remote_cpu import SCRIPT, RemoteCpuWindow, component_seconds, parse_reading


def test_the_surveys_tuning_facts_are_the_local_readers() -> None:
    done = Host("local").shell("LB_PEER=; " + FACTS_SCRIPT, timeout=60)
    assert host_tuning(parse_facts(done.output)) == tuning_facts()
    assert host_tuning({}) == dict.fromkeys(tuning_facts())  # a host that has none of the files


def test_the_hosts_cpu_pressure_over_the_window() -> None:
    window = RemoteCpuWindow(Host("local"), dict)
    window.first = parse_reading("TICK 100\ncpu  1 0 1 10 0 0 0 0 0 0\n"
                                 "PSI some avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n"
                                 "PSI full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    window.last = parse_reading("TICK 100\ncpu  2 0 2 20 0 0 0 0 0 0\n"
                                "PSI some avg10=9.00 avg60=0.00 avg300=0.00 total=3500000\n"
                                "PSI full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                                "some avg10=0 total=99999999999\n")  # not a PSI line of the script: ignored
    assert window.pressure() == {"system": {"some_seconds": 2.5, "full_seconds": 0.0}}
    window.first = parse_reading("cpu  1 0 1 10 0 0 0 0 0 0\n")  # a kernel without PSI
    assert window.pressure() == {}


def test_the_cpu_script_reads_this_machines_pressure_when_it_has_psi() -> None:
    reading = parse_reading(subprocess.run(["sh", "-c", SCRIPT], capture_output=True, text=True, check=True).stdout)
    try:
        with open("/proc/pressure/cpu", encoding="ascii") as psi:
            has_psi = "total=" in psi.read()
    except OSError:
        has_psi = False
    assert ("some" in reading.pressure) == has_psi


@given(st.text(max_size=300))
def test_any_reading_text_gives_counters_or_nothing(text: str) -> None:
    pressure = parse_reading(text).pressure
    assert set(pressure) <= {"some", "full"} and all(v >= 0 for v in pressure.values())


def test_a_host_whose_init_runs_in_a_cgroup_is_that_cgroups_cpu_not_its_kernels() -> None:
    """The isolated lab's host (a cgroup of a shared kernel): the machine's /proc/stat says 30 s busy, of which its
    cgroup used 4 s: the server's 3 s leave 1 s of the host's own other, not 27 s of the kernel's other tenants."""
    first = parse_reading("TICK 100\nUPTIME 100\nCG 1000000000 /lb-db\ncpu  100 0 0 1000 0 0 0 0 0 0\n"
                          "P 7 (mariadbd) S 1 7 7 0 -1 0 0 0 0 0 100 0 0 0 20 0 1 0 50 0 0\n")
    last = parse_reading("TICK 100\nUPTIME 110\nCG 5000000000 /lb-db\ncpu  3100 0 0 1500 0 0 0 0 0 0\n"
                         "P 7 (mariadbd) S 1 7 7 0 -1 0 0 0 0 0 400 0 0 0 20 0 1 0 50 0 0\n")
    assert first.cgroup == (1_000_000_000, "/lb-db")
    seconds = component_seconds(first, last, {"server": [7]})
    assert seconds == {"server": 3.0, "other": 1.0, "idle": 5.0}
    without = parse_reading("TICK 100\nUPTIME 110\ncpu  3100 0 0 1500 0 0 0 0 0 0\n"
                            "P 7 (mariadbd) S 1 7 7 0 -1 0 0 0 0 0 400 0 0 0 20 0 1 0 50 0 0\n")
    assert component_seconds(first, without, {"server": [7]})["other"] == 27.0  # no cgroup: the kernel's busy time


def test_this_machine_in_the_root_cgroup_is_read_from_proc_stat() -> None:
    """This machine's init runs in the root cgroup (or systemd's /init.scope), so the script prints no CG line."""
    done = subprocess.run(["sh", "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60)
    with open("/proc/1/cgroup", encoding="ascii") as lines:
        paths = {line.strip().split(":", 2)[2] for line in lines if "cpuacct" in line.split(":")[1] or
                 line.startswith("0::")}
    assert (parse_reading(done.stdout).cgroup is None) == (paths <= {"/", "/init.scope"}), paths


@given(st.text(max_size=300))
def test_any_cg_line_gives_a_cgroup_or_none(text: str) -> None:
    cgroup = parse_reading(text).cgroup
    assert cgroup is None or (cgroup[0] >= 0 and cgroup[1].startswith("/"))
