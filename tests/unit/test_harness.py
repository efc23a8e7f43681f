"""Where the harness runs during a measured run (harness.py): the CPU arithmetic, and real affinity changes of
this process's threads, restored afterwards."""

from __future__ import annotations

import os
import threading

from hypothesis import given
from hypothesis import strategies as st

from layerbench.campaign.models import parse_campaign
from layerbench.run.harness import cpu_text, harness_cpus, pinned
from layerbench.vocabulary.cpus import cpu_set


def variant(**pins):
    campaign = parse_campaign({"name": "h", "baseline": "v", "variants": [{"name": "v", "backend": "host", **pins}],
                               "workload": {"tables": 1, "table_size": 10, "duration": 5}})
    return campaign.variant("v")


def docker_variant(**pins):
    campaign = parse_campaign({"name": "h", "baseline": "v",
                               "variants": [{"name": "v", "backend": "docker", **pins}],
                               "workload": {"tables": 1, "table_size": 10, "duration": 5}})
    return campaign.variant("v")


def test_cpu_lists() -> None:
    assert cpu_set("0") == {0}
    assert cpu_set("0,2-4") == {0, 2, 3, 4}
    assert cpu_text({3, 1, 2}) == "1,2,3"


@given(st.sets(st.integers(0, 63), min_size=1))
def test_cpu_text_round_trips(cpus: set[int]) -> None:
    assert cpu_set(cpu_text(cpus)) == cpus


def test_the_harness_moves_to_what_server_and_client_leave_free() -> None:
    assert harness_cpus(variant(cpus="0", client_cpus="1"), {0, 1, 2, 3}, remote=False) == {2, 3}
    assert harness_cpus(variant(cpus="0-1", client_cpus="2"), {0, 1, 2, 3}, remote=False) == {3}
    assert harness_cpus(docker_variant(resources={"cpuset": "0"}, client_cpus="1"), {0, 1, 2}, remote=False) == {2}


def test_no_move_when_nothing_is_free_or_something_floats() -> None:
    assert harness_cpus(variant(cpus="0", client_cpus="1"), {0, 1}, remote=False) == set()  # this 2-core machine
    assert harness_cpus(variant(cpus="0"), {0, 1, 2, 3}, remote=False) == set()  # sysbench would inherit it
    assert harness_cpus(variant(client_cpus="1"), {0, 1, 2, 3}, remote=False) == set()
    assert harness_cpus(variant(cpus="0", client_cpus="1"), {0, 1, 2, 3}, remote=True) == set()


def test_pinned_moves_every_thread_and_restores_them() -> None:
    before = os.sched_getaffinity(0)
    target = {min(before)}
    seen: dict[str, set[int]] = {}
    ready, release = threading.Event(), threading.Event()

    def older() -> None:
        ready.set()
        release.wait(10)
        seen["older thread at the end"] = os.sched_getaffinity(0)

    thread = threading.Thread(target=older)
    thread.start()
    ready.wait(10)
    with pinned(target) as moved:
        seen["main"] = os.sched_getaffinity(0)
        seen["older thread"] = os.sched_getaffinity(thread.native_id)
        inner = threading.Thread(target=lambda: seen.__setitem__("new thread", os.sched_getaffinity(0)))
        inner.start()
        inner.join()
    release.set()
    thread.join()
    assert moved == cpu_text(target)
    assert seen["main"] == seen["older thread"] == seen["new thread"] == target
    assert os.sched_getaffinity(0) == before
    assert seen["older thread at the end"] == before


def test_pinned_with_no_cpus_changes_nothing() -> None:
    before = os.sched_getaffinity(0)
    with pinned(set()) as moved:
        assert os.sched_getaffinity(0) == before
    assert moved is None
