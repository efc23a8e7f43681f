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
from layerbench.measure.remote_cpu import SCRIPT, RemoteCpuWindow, parse_reading


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
