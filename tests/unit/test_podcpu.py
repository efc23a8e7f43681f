"""backends/kubernetes/podcpu.py: the reading printed in the server container (cgroup v1 and v2, the node's
/proc/stat lines of its cpuset), the window's CPU per component, throttling and steal, and hostile text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.backends.kubernetes import podcpu
from layerbench.records import Throttling, Usage

V1 = """USAGE {usage}
STAT nr_periods {periods}
STAT nr_throttled {throttled}
STAT throttled_time {throttled_ns}
CPUS 0
PROC cpu  {all_busy} 0 0 {all_idle} 0 0 0 0 0 0
PROC cpu0 {busy0} 0 0 {idle0} 0 0 0 {steal0} 0 0
PROC cpu1 {busy1} 0 0 {idle1} 0 0 0 0 0 0
PROC intr 1 2 3
PSI some avg10=0.00 avg60=0.00 avg300=0.00 total={some}
PSI full avg10=0.00 avg60=0.00 avg300=0.00 total=0
"""


def v1(**changes: int) -> str:
    values = {"usage": 0, "periods": 0, "throttled": 0, "throttled_ns": 0, "all_busy": 0, "all_idle": 0,
              "busy0": 0, "idle0": 0, "steal0": 0, "busy1": 0, "idle1": 0, "some": 0} | changes
    return V1.format(**values)


def test_a_v1_window_gives_the_server_its_nodes_other_and_idle_on_the_containers_cpus_only() -> None:
    first = podcpu.parse_reading(v1(usage=10**9, busy0=500, idle0=1000, busy1=7000, idle1=50))
    last = podcpu.parse_reading(v1(usage=4 * 10**9, periods=100, throttled=30, throttled_ns=2 * 10**9,
                                   busy0=1000, idle0=1400, steal0=12, busy1=9000, idle1=50, some=1_500_000))
    assert first.cpus == frozenset({0}) and first.usage_ns == 10**9
    assert podcpu.cpu_seconds(first, last, "node-a") == {"server@node-a": 3.0, "other@node-a": 2.12, "idle": 4.0}
    # steal is busy time of another guest (as in /proc/stat`s machine line); CPU 1, not in the cpuset, counts nowhere
    assert podcpu.throttling(first, last) == Throttling(100, 30, 2.0)
    assert podcpu.node_window(first, last)[2] == 0.12


def test_a_v2_reading_takes_usage_usec_and_throttled_usec() -> None:
    first = podcpu.parse_reading("STAT usage_usec 1000000\nSTAT nr_periods 5\nSTAT nr_throttled 1\n"
                                 "STAT throttled_usec 100\nCPUS 0-1\nPROC cpu0 1 0 0 1 0\nPROC cpu1 1 0 0 1 0\n")
    last = podcpu.parse_reading("STAT usage_usec 2500000\nSTAT nr_periods 15\nSTAT nr_throttled 4\n"
                                "STAT throttled_usec 500100\nCPUS 0-1\nPROC cpu0 201 0 0 1 0\nPROC cpu1 101 0 0 1 0\n")
    assert first.usage_ns == 10**9 and first.cpus == frozenset({0, 1})
    assert podcpu.cpu_seconds(first, last, "n") == {"server@n": 1.5, "other@n": 1.5, "idle": 0.0}
    assert podcpu.throttling(first, last) == Throttling(10, 3, 0.5)


def test_without_the_containers_usage_nothing_is_claimed() -> None:
    no_usage = podcpu.parse_reading("CPUS 0\nPROC cpu0 1 0 0 1 0\n")
    assert podcpu.cpu_seconds(no_usage, no_usage, "n") == {}
    assert podcpu.throttling(no_usage, no_usage) is None


def test_an_unknown_cpuset_reads_every_cpu_line() -> None:
    first = podcpu.parse_reading("USAGE 0\nPROC cpu0 0 0 0 0 0\nPROC cpu1 0 0 0 0 0\n")
    last = podcpu.parse_reading("USAGE 0\nPROC cpu0 100 0 0 0 0\nPROC cpu1 100 0 0 0 0\n")
    assert podcpu.cpu_seconds(first, last, "n")["other@n"] == 2.0


def test_the_window_puts_the_pods_figures_in_place_of_this_machines() -> None:
    window = podcpu.PodCpuWindow(None, "ns", "server-0", "server", "node-a")
    window.first = podcpu.parse_reading(v1(usage=0, busy0=0, idle0=0))
    window.last = podcpu.parse_reading(v1(usage=10**9, periods=10, throttled=2, busy0=300, idle0=700, some=1_500_000))
    usage = Usage({"other": 9.0, "idle": 1.0, "client": 0.5}, top_other=())
    got = window.usage_of(usage)
    assert got.cpu_seconds == {"client": 0.5, "server@node-a": 1.0, "other@node-a": 2.0, "idle": 7.0}
    assert got.throttling == {"ns/server-0/server": Throttling(10, 2, 0.0)}
    assert got.pressure == {"system": {"some_seconds": 1.5, "full_seconds": 0.0}}  # the node's, as an ssh: host's
    assert window.facts()["cpus"] == "0" and window.facts()["complete"] is True
    window.last = None  # a reading that failed: neither the server's nor this machine's other, and a note why
    window.error = "ApiException: (403)"
    failed = window.usage_of(usage)
    assert failed.cpu_seconds == {"client": 0.5} and window.facts()["error"] == "ApiException: (403)"
    assert failed.notes == ("the server's CPU was not read in its pod on node node-a (ApiException: (403)); this "
                            "machine is not a node, so its /proc holds none of it",)
    assert Usage.from_json(failed.to_json()).notes == failed.notes and "notes" not in usage.to_json()


def test_a_neighbour_pod_read_in_it_is_its_own_component_and_not_its_nodes_other_load() -> None:
    """As on a node, where the sampler counts a neighbour's processes as `neighbour:<name>`: off one its pod's cgroup
    is read in it, and only its time on the server's CPUs comes out of other@<node> (v1: per CPU)."""
    window = podcpu.PodCpuWindow(None, "ns", "server-0", "server", "node-a")
    window.first = podcpu.parse_reading(v1(usage=0, busy0=0, idle0=0))
    window.last = podcpu.parse_reading(v1(usage=10**9, busy0=400, idle0=600))  # CPU 0: 4 s busy, 1 s the server's
    hog, far = podcpu.PodRef("hog", "nb-hog-1", "neighbour", "node-a"), podcpu.PodRef("far", "nb-far", "neighbour", "b")
    window.beside = {
        hog: [podcpu.parse_reading("USAGE 0\nPERCPU 0 0\nCPUS 0-1\n"),
              podcpu.parse_reading("USAGE 3500000000\nPERCPU 2500000000 1000000000\nCPUS 0-1\n")],
        far: [podcpu.parse_reading("USAGE 0\nCPUS 0\n"), podcpu.parse_reading("USAGE 2000000000\nCPUS 0\n")]}
    got = window.usage_of(Usage({"other": 9.0, "idle": 1.0, "neighbour:hog": 0.0, "neighbour:far": 0.0}, top_other=()))
    assert got.cpu_seconds == {"server@node-a": 1.0, "other@node-a": 0.5, "idle": 6.0, "neighbour:hog@node-a": 3.5,
                               "neighbour:far@b": 2.0}  # hog: 2.5 s on CPU 0; far: on another node
    assert window.facts()["neighbours"] == ["far", "hog"]


def test_without_per_cpu_usage_a_neighbour_counts_on_the_servers_cpus_only_when_its_cpuset_meets_them() -> None:
    first, last = podcpu.parse_reading("USAGE 0\nCPUS 1\n"), podcpu.parse_reading("USAGE 2000000000\nCPUS 1\n")
    assert podcpu.seconds_on(first, last, frozenset({0})) == 0.0  # pinned apart: none of it on the server's CPU
    assert podcpu.seconds_on(first, last, frozenset({0, 1})) == 2.0
    assert podcpu.parse_reading("PERCPU 1 x 3\n").per_cpu == ()  # garbage: no per-CPU figures at all


def test_cpu_lists() -> None:
    assert podcpu.cpu_set_text("0-2,5\n") == frozenset({0, 1, 2, 5})
    assert podcpu.cpus_text(frozenset({0, 1, 2, 5, 7, 8})) == "0-2,5,7-8"
    for bad in ("", "x", "3-1", "0-99999", "1,,2", "٣", "-1", "0-" + "9" * 30):
        assert podcpu.cpu_set_text(bad) == frozenset()


def test_counters_beyond_64_bits_or_not_digits_are_dropped() -> None:
    assert podcpu.counter(str(2**64 - 1)) == 2**64 - 1
    for bad in (str(2**64), "1e9", "-5", "٣", " ", "9" * 100):
        assert podcpu.counter(bad) is None
    reading = podcpu.parse_reading(f"USAGE {2**70}\nSTAT nr_periods x\nPROC cpu0 1 2\nPROC cpuX 1 2 3 4 5\n")
    assert reading.usage_ns is None and reading.stat == {} and reading.node == {}


LINES = st.sampled_from(["USAGE", "STAT", "CPUS", "PROC", "PSI", "", "X"])
WORDS = st.one_of(st.text(max_size=30), st.integers(min_value=-2**80, max_value=2**80).map(str),
                  st.sampled_from(["cpu", "cpu0", "cpu1", "nr_periods", "throttled_time", "usage_usec", "0-3",
                                   "some total=5", "\x00", "\u0663"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LINES, st.lists(WORDS, max_size=12)), max_size=40),
       st.lists(st.tuples(LINES, st.lists(WORDS, max_size=12)), max_size=40))
def test_hostile_readings_never_raise_and_never_give_negative_seconds(a: list, b: list) -> None:
    texts = ["\n".join(f"{key} {' '.join(words)}" for key, words in lines) for lines in (a, b)]
    first, last = (podcpu.parse_reading(t) for t in texts)
    for value in podcpu.cpu_seconds(first, last, "n").values():
        assert value >= 0
    throttled = podcpu.throttling(first, last)
    assert throttled is None or (throttled.periods >= 0 and throttled.seconds >= 0)
    assert all(v >= 0 for v in podcpu.node_window(first, last))


def test_the_clients_batch_rows_and_the_sql_path_said_in_the_record() -> None:
    from layerbench.backends.kubernetes import podexec

    assert podexec.parse_rows("Innodb_rows_read\t12\nversion\t11.8.3-MariaDB\\tx\n\n") == [
        ("Innodb_rows_read", "12"), ("version", "11.8.3-MariaDB\\tx")]
    assert "--user=root" in podexec.CLIENT and not any("password" in word for word in podexec.CLIENT)
    assert "exec in the server container" in podexec.server_sql_path(False, "mariadb")
    assert "psql" in podexec.server_sql_path(False, "postgresql")
    assert "the mysql client" in podexec.server_sql_path(False, "mysql")
    assert podexec.MYSQL_CLIENT[0] == "mysql" and podexec.MYSQL_CLIENT[1:] == podexec.CLIENT[1:]
    assert "harness is a node" in podexec.server_sql_path(True, "mariadb")


def test_status_and_variables_go_through_the_backends_path_without_a_connection() -> None:
    from layerbench.endpoint import Endpoint
    from layerbench.measure.environment import server_variables
    from layerbench.measure.io import ServerStatus, status_sql

    asked: list[str] = []

    def through(sql: str) -> list[tuple[str, ...]]:
        asked.append(sql)
        return [("a", "1"), ("short",), ("b", "2")]

    nowhere = Endpoint("192.0.2.1", 1, "u", "p", "d")  # TEST-NET: a connection would fail
    assert server_variables(nowhere, through) == {"a": "1", "b": "2"}
    with ServerStatus(nowhere, through) as status:
        assert status.conn is None and status.error is None
        assert status() == [("a", "1"), ("short",), ("b", "2")]
    assert asked == ["SHOW GLOBAL VARIABLES", status_sql()]


def test_postgresqls_settings_and_counters_go_through_the_backends_path_too() -> None:
    """Off a node a PostgreSQL server is read by psql in its pod (podexec.PodSql): pg_settings and
    pg_stat_database's blocks hit and read go through it, never a connection from here."""
    from layerbench.endpoint import Endpoint
    from layerbench.measure.environment import server_variables
    from layerbench.measure.io import PG_STATUS_SQL, ServerStatus, parse_status_rows

    asked: list[str] = []

    def through(sql: str) -> list[tuple[str, ...]]:
        asked.append(sql)
        return [("pg_blks_read", "7"), ("pg_blks_hit", "1200")] if "pg_stat_database" in sql else \
            [("shared_buffers", "16384"), ("version", "15.18 (Debian 15.18-0+deb12u1)")]

    nowhere = Endpoint("192.0.2.1", 1, "u", "p", "d", driver="pgsql")  # TEST-NET: a connection would fail
    assert server_variables(nowhere, through)["shared_buffers"] == "16384"
    with ServerStatus(nowhere, through) as status:
        assert status.conn is None and parse_status_rows(status()) == {"pg_blks_read": 7, "pg_blks_hit": 1200}
    assert "pg_settings" in asked[0] and asked[1] == PG_STATUS_SQL


def test_the_wait_for_quiet_reads_the_nodes_other_load_as_the_busy_rule_does() -> None:
    """node_load's two readings give the share of other@<node> in the container's CPUs' time: the figure the busy
    rule later judges the run by (the idle server's own CPU is not busy)."""
    from layerbench.measure.cpu import busy_share

    first = podcpu.parse_reading(v1(usage=10**9, busy0=500, idle0=1000, busy1=7000, idle1=50))
    last = podcpu.parse_reading(v1(usage=4 * 10**9, busy0=1000, idle0=1400, steal0=12, busy1=9000, idle1=50))
    window = podcpu.cpu_seconds(first, last, "n")
    before, after = podcpu.node_load(first), podcpu.node_load(last)
    assert before is not None and after is not None
    assert busy_share(before, after) == pytest.approx(window["other@n"] / sum(window.values()))  # 2.12 / 9.12
    assert podcpu.node_load(podcpu.parse_reading(v1(usage=0).replace("USAGE 0\n", ""))) is None
    assert podcpu.node_load(podcpu.parse_reading("USAGE 5\n")) is None  # no CPU line of the node


@settings(max_examples=300)
@given(st.text(alphabet=st.sampled_from(list("USAGEPROCcpu0123456789 -,\n\x00é")), max_size=400))
def test_hostile_text_gives_no_load_or_two_finite_figures(text: str) -> None:
    found = podcpu.node_load(podcpu.parse_reading(text))
    assert found is None or (len(found) == 2 and all(abs(v) < 2**64 for v in found))
