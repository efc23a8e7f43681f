"""The harness heartbeat's pure parts (backends/kubernetes/heartbeat.py) and clean's rule for objects another
machine made (cleanup.ours); the Leases themselves are exercised on the real cluster by
tests/integration/test_k8s_harness.py."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.kubernetes import heartbeat
from layerbench.backends.kubernetes.cleanup import ours
from layerbench.backends.kubernetes.manifests import host_label, labels


@given(st.floats(min_value=0, max_value=4_000_000_000, allow_nan=False))
def test_a_renew_time_reads_back_to_the_microsecond(epoch: float) -> None:
    assert abs(heartbeat.parse_time(heartbeat.micro_time(epoch)) - epoch) < 1e-5


def test_a_whole_second_keeps_its_six_digits() -> None:
    from kubernetes.client import ApiClient, V1Lease

    text = heartbeat.micro_time(1_795_000_000.0)
    assert text.endswith(".000001Z")  # isoformat() of the client's model would drop ".000000"
    lease = ApiClient().sanitize_for_serialization(V1Lease.from_dict({"spec": {"renewTime": text}}))
    assert lease["spec"]["renewTime"].split("T")[1][8] == "."


@given(st.one_of(st.none(), st.text(max_size=40), st.integers()))
def test_a_hostile_time_is_none_or_a_number(value: object) -> None:
    parsed = heartbeat.parse_time(value)
    assert parsed is None or isinstance(parsed, float)


def test_the_clients_datetimes_and_text_agree() -> None:
    moment = dt.datetime(2026, 11, 29, 1, 2, 3, 456789, tzinfo=dt.UTC)
    assert heartbeat.parse_time(moment) == heartbeat.parse_time("2026-11-29T01:02:03.456789Z") == moment.timestamp()
    assert heartbeat.parse_time(moment.replace(tzinfo=None)) == moment.timestamp()  # naive: UTC, as the API's


def test_every_object_names_its_owner_token() -> None:
    from layerbench.hosts.lease import harness_id

    made = labels("c", "run-1", "server")
    assert made[heartbeat.OWNER_LABEL] == harness_id() and len(harness_id()) <= 63


def test_another_machines_object_is_removed_only_when_its_heartbeat_says_gone() -> None:
    theirs = {"layerbench.host": "ci-runner-7", "layerbench.harness": "1", heartbeat.OWNER_LABEL: "abc"}
    assert not ours(theirs, include_live=False)  # no heartbeat reader: never another machine's
    assert not ours(theirs, include_live=True, elsewhere=lambda meta: False)  # --all never reaches a live one
    assert ours(theirs, include_live=False, elsewhere=lambda meta: meta[heartbeat.OWNER_LABEL] == "abc")
    mine = {"layerbench.host": host_label(), "layerbench.harness": "1"}  # PID 1 lives: this machine's rule
    assert not ours(mine, include_live=False, elsewhere=lambda meta: True)


def test_the_renewing_thread_ends_once_nothing_is_held_and_when_told_at_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """No renewing thread outlives its Leases (one whose namespace is gone, 404, is dropped), and at the process's
    exit (`end`, an atexit hook) the thread stops rather than be cut off mid-request while the process shuts down."""
    calls: list[str] = []
    monkeypatch.setattr(heartbeat, "renew", lambda api, ns, name, offset: calls.append(ns) or len(calls) < 3)
    beats = heartbeat._Beats(every=0.01)
    beats.add(object(), "ns", "lease-a", 0.0)
    thread = beats.thread
    assert thread is not None
    thread.join(timeout=60)
    assert not thread.is_alive() and beats.thread is None and beats.held == {} and calls == ["ns"] * 3
    beats.add(object(), "ns2", "lease-b", 0.0)  # a Lease held again: a new thread renews it
    assert beats.thread is not None and beats.thread is not thread
    monkeypatch.setattr(heartbeat, "renew", lambda api, ns, name, offset: True)  # held for ever, until the exit
    running = beats.thread
    beats.end(wait=60)
    assert not running.is_alive() and beats.held  # ended though a Lease is still held
