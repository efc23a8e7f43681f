"""The busy-machine flag: on a resource record recorded on this machine while other work took the CPUs
(tests/data/proc/usage_busy.json: a spinning python and other helpers' servers outside the run), on a
quiet one, and on a real sampler."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from layerbench.analysis.busy import busy_run, busy_warning, quiet_wait_warning
from layerbench.hosts.procfs import ProcStat, parse_steal
from layerbench.measure.cpu import ResourceSampler, busy_share, top_processes, wait_for_quiet
from layerbench.records import QuietWait, Usage

DATA = Path(__file__).resolve().parents[1] / "data" / "proc"


def test_a_recorded_busy_run_is_flagged_with_its_busiest_processes() -> None:
    usage = json.loads((DATA / "usage_busy.json").read_text())
    found = busy_run(Usage.from_json(usage))
    assert found is not None and found.share > 0.5
    assert found.top[0][0] == "python"
    text = busy_warning([("run 3", found)], 10)
    assert text is not None
    assert text.startswith("the machine was busy during 1 of 10 runs (run 3): processes outside the runs took up to")
    # two mariadbd of other work (summed by name) and the spinning python
    assert "busiest: mariadbd (2.0 CPU-s), python (1.3 CPU-s)." in text and "threshold 15 %" in text


def test_a_quiet_run_is_not_flagged_and_old_records_are_read() -> None:
    quiet = {"cpu_seconds": {"server": 3.1, "client": 2.2, "other": 0.3, "idle": 6.4}}
    assert busy_run(Usage.from_json(quiet)) is None  # 2.5 % of the machine: no steal or top list needed
    assert busy_run(Usage.from_json({})) is None and busy_warning([], 5) is None
    steal = {"cpu_seconds": {"server": 1.0, "other": 4.0, "idle": 5.0}, "steal_seconds": 3.0}
    found = busy_run(Usage.from_json(steal))
    assert found is not None and round(found.steal_share, 2) == 0.3
    assert "hypervisor steal up to 30 %" in (busy_warning([("run 1", found)], 1) or "")


def test_steal_and_the_top_processes_from_recorded_proc_text() -> None:
    assert parse_steal((DATA / "machine_stat.txt").read_text()) == 10097  # this VM had steal
    assert parse_steal("cpu  10 0 5 100 1 0 2 37 0 0\ncpu0 5 0 2 50 0 0 1 20 0 0\n") == 37
    first = {1: ProcStat(1, 0, 100, 5, "make"), 2: ProcStat(2, 1, 50, 6, "mariadbd"), 3: ProcStat(3, 1, 9, 7, "x")}
    last = {1: ProcStat(1, 0, 400, 5, "make"), 2: ProcStat(2, 1, 950, 6, "mariadbd"),
            3: ProcStat(3, 1, 20, 99, "reused"), 4: ProcStat(4, 1, 200, 100, "cc1")}
    top = top_processes(first, last, exclude={2})  # 2 is the run's own server
    assert [p.name for p in top] == ["make", "cc1", "reused"]  # a reused pid counts from zero


def test_the_sampler_names_a_real_busy_process_outside_the_run() -> None:
    spin = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 3\nwhile time.time() < end: pass"])
    sleeper = subprocess.Popen(["sleep", "10"])
    try:
        sampler = ResourceSampler(lambda: {"server": [sleeper.pid]}, [], lambda: [], interval=0.2)
        sampler.start()
        time.sleep(2.5)
        usage = sampler.stop()
    finally:
        spin.kill(), sleeper.kill(), spin.wait(), sleeper.wait()
    assert usage.cpu_seconds["other"] > 0.5
    assert all(p.pid != sleeper.pid for p in usage.top_other)
    assert usage.top_other and usage.top_other[0].cpu_seconds > 0


def test_wait_for_quiet_is_bounded_and_recorded() -> None:
    never = wait_for_quiet(0.4, threshold=-1.0, step=0.2)  # no machine is ever below -1: the wait runs out
    assert never.quiet is False and never.waited_seconds >= 0.4 and never.max_seconds == 0.4
    always = wait_for_quiet(60, threshold=1.0, step=0.1)  # every machine is at most 100 % busy: no wait
    assert always.quiet is True and always.busy_share is not None and 0 <= always.busy_share <= 1
    assert busy_share((100, 300), (150, 350)) == 0.5
    never, always = QuietWait.from_json(never.to_json()), QuietWait.from_json(always.to_json())  # as stored
    text = quiet_wait_warning([(1, never), (2, always)])
    assert text is not None and text.startswith("waiting for quiet: 1 of 2 runs started on a busy machine after "
                                                "waiting the longest allowed (run 1)")
    assert quiet_wait_warning([(2, always)]) is None
