"""Neighbours without starting anything: the campaign's `neighbours:` (models, hostile input, one-line errors,
`extends:` inheritance), the machine checks of preflight, the tools' command lines, the parsers of their own
reports (real captured outputs in tests/data/neighbours), the stored record, and the plan's words."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.analysis.busy import busy_run
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.neighbours import tools
from layerbench.neighbours.model import Neighbour
from layerbench.records import Usage
from layerbench.records.neighbours import FORMAT, NeighbourRecords, NeighbourRun
from layerbench.records.run import StoredFacts
from layerbench.run.neighbour_checks import check_neighbours
from layerbench.run.neighbour_plan import neighbour_lines

DATA = Path(__file__).parent.parent / "data" / "neighbours"


def campaign(neighbours: Any = None, variant_neighbours: Any = None, **extra: Any) -> dict[str, Any]:
    noisy: dict[str, Any] = {"name": "noisy", "extends": "base"}
    if variant_neighbours is not None:
        noisy["neighbours"] = variant_neighbours
    data: dict[str, Any] = {"name": "c", "baseline": "base", "variants": [{"name": "base", "backend": "host"}, noisy],
                            "workload": {"tables": 1, "table_size": 1000}, **extra}
    if neighbours is not None:
        data["neighbours"] = neighbours
    return data


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(BadInput) as caught:
        check_neighbours(parse_campaign(data))
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# --- the campaign file ------------------------------------------------------------------------------------


def test_a_variants_neighbours_are_inherited_and_the_campaigns_apply_to_all() -> None:
    parsed = parse_campaign(campaign([{"name": "disk", "kind": "disk"}], [{"name": "hog", "kind": "cpu", "load": 50}]))
    more = parsed.model_copy(update={"variants": parsed.variants})
    assert [n.name for n in more.neighbours_of(more.variant("base"))] == ["disk"]
    assert [n.name for n in more.neighbours_of(more.variant("noisy"))] == ["disk", "hog"]
    data = campaign(None, [{"name": "hog", "kind": "cpu"}])
    data["variants"].append({"name": "child", "extends": "noisy"})
    child = parse_campaign(data)
    assert [n.name for n in child.neighbours_of(child.variant("child"))] == ["hog"]


@pytest.mark.parametrize(("entry", "said"), [
    ({"name": "x", "kind": "gpu"}, "kind 'gpu' is not a kind of neighbour; use one of: cpu, memory, disk, network"),
    ({"name": "x", "kind": "cpu", "load": 150}, "neighbours[0].load: Input should be less than or equal to 100"),
    ({"name": "x", "kind": "cpu", "load": 0}, "neighbours[0].load"),
    ({"name": "x", "kind": "cpu", "pattern": "read"}, "pattern: only a disk neighbour has it"),
    ({"name": "x", "kind": "disk", "size": "lots"}, "'lots' is not a size"),
    ({"name": "x", "kind": "network", "bitrate": "fast"}, "'fast' is not a bit rate"),
    ({"name": "x", "kind": "cpu", "placement": "container"}, "'container': not yet"),
    ({"name": "x", "kind": "cpu", "qos": "burstable"}, "qos: only a neighbour with placement: docker or kubernetes"),
    ({"name": "x", "kind": "cpu", "resources": {"cpus": 1}}, "resources: only a neighbour with placement: docker"),
    ({"name": "x", "kind": "cpu", "placement": "kubernetes", "cpus": "0"}, "cpus: x runs in a kubernetes pod"),
    ({"name": "x", "kind": "cpu", "placement": "kubernetes", "qos": "besteffort", "resources": {"cpus": 1}},
     "resources: a BestEffort pod has no requests or limits"),
    ({"name": "x", "kind": "cpu", "node": "n1"}, "node: 'n1' is only for placement: kubernetes"),
    ({"name": "x", "kind": "cpu", "placement": "kubernetes", "node": "n1\nx"}, "node"),
    ({"name": "x", "kind": "cpu", "placement": "kubernetes", "qos": 10**400}, "qos"),
    ({"name": "x", "kind": "cpu", "placement": "kubernetes", "resources": ["cpus", 1]}, "resources"),
    ({"name": "x", "kind": "network", "placement": "kubernetes"}, "a network neighbour in a pod is not yet"),
    ({"name": "x", "kind": "cpu", "placement": "docker", "qos": "gold"}, "qos"),
    ({"name": "x", "kind": "cpu", "placement": "docker", "resources": {"memory": "lots"}}, "resources.memory"),
    ({"name": "x", "kind": "cpu", "placement": "docker", "qos": "guaranteed-pinned", "resources": {"cpus": 1.5}},
     "guaranteed-pinned needs whole CPUs"),
    ({"name": "x", "kind": "network", "placement": "docker"}, "to: a network neighbour in a container sends to a host"),
    ({"name": "x", "kind": "cpu", "placement": "ssh"}, "host: a neighbour with placement: ssh names the host"),
    ({"name": "x", "kind": "cpu", "host": "app"}, "host: 'app' is only for placement: ssh"),
    ({"name": "x", "kind": "disk", "placement": "ssh", "host": "app", "folder": "/tmp"}, "folder: an ssh-placed"),
    ({"name": "x", "kind": "cpu", "placement": "pod"}, "'pod': not yet"),
    ({"name": "x", "kind": "cpu", "cpus": "0-x"}, "is not a CPU list"),
    ({"name": "x", "kind": "cpu", "nice": -5}, "nice"),
    ({"name": "x", "kind": "cpu", "colour": "red"}, "unknown key"),
    ({"name": "x", "kind": "memory", "size": "100G"}, "more than 64G"),
])
def test_bad_entries_are_refused_in_one_line(entry: dict[str, Any], said: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_campaign(campaign(None, [entry]))
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_one_name_twice_is_refused() -> None:
    with pytest.raises(BadInput, match="two neighbours are named 'a'"):
        parse_campaign(campaign([{"name": "a", "kind": "cpu"}, {"name": "a", "kind": "disk"}]))
    assert "both use this name" in refused(campaign([{"name": "a", "kind": "cpu"}], [{"name": "a", "kind": "cpu"}]))


hostile = st.one_of(st.text(max_size=30), st.integers(), st.just(10**400), st.floats(), st.none(), st.booleans(),
                    st.lists(st.text(max_size=5), max_size=3), st.just("[/x]"), st.just("a\nb"), st.just(""),
                    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2))


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(["name", "kind", "placement", "cpus", "nice", "workers", "load", "method", "size",
                            "pattern", "block_size", "folder", "to", "bitrate", "streams", "host", "qos",
                            "resources", "node"]), value=hostile, placement=st.sampled_from(["host", "kubernetes"]))
def test_hostile_values_give_one_line_or_a_valid_neighbour(key: str, value: Any, placement: str) -> None:
    entry = {"name": "x", "kind": "cpu", "placement": placement, key: value}
    try:
        parsed = parse_campaign(campaign(None, [entry]))
    except BadInput as error:
        assert "\n" not in str(error) and len(str(error)) < 600
        return
    (n,) = parsed.neighbours_of(parsed.variant("noisy"))
    assert n.kind in ("cpu", "memory", "disk", "network") and n.intensity()


@settings(max_examples=100, deadline=None)
@given(value=hostile)
def test_a_hostile_neighbours_list_gives_one_line(value: Any) -> None:
    try:
        parse_campaign(campaign(value))
    except BadInput as error:
        assert "\n" not in str(error)


# --- the machine checks (preflight, so `validate` says them) --------------------------------------------------


def test_more_workers_than_cpus_times_the_factor_is_refused() -> None:
    cpus = len(os.sched_getaffinity(0))
    said = refused(campaign(None, [{"name": "hog", "kind": "cpu", "workers": cpus * 4 + 1}]))
    assert f"variants.noisy.neighbours.hog.workers: {cpus * 4 + 1} workers" in said and "at most" in said
    check_neighbours(parse_campaign(campaign(None, [{"name": "hog", "kind": "cpu", "workers": cpus * 4}])))


def test_a_cpu_that_is_not_here_is_refused() -> None:
    assert "hog.cpus: CPU 4000 does not exist here" in refused(
        campaign(None, [{"name": "hog", "kind": "cpu", "cpus": "4000"}]))


def test_a_disk_neighbour_larger_than_the_free_space_is_refused(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    too_big = f"{free // 2**30 + 2}G"
    said = refused(campaign(None, [{"name": "d", "kind": "disk", "size": too_big, "folder": str(tmp_path)}]))
    assert f"neighbours.d.size: {too_big} does not fit" in said
    check_neighbours(parse_campaign(campaign(None, [{"name": "d", "kind": "disk", "size": "1M",
                                                     "folder": str(tmp_path)}])))
    assert "is not a folder here" in refused(campaign(None, [{"name": "d", "kind": "disk",
                                                              "folder": str(tmp_path / "no")}]))


def test_a_network_neighbour_to_an_unknown_or_unreachable_host_is_refused() -> None:
    assert "to: 'far' is not a host of `hosts:`; use one of: loopback" in refused(
        campaign(None, [{"name": "n", "kind": "network", "to": "far"}]))
    hosts = {"here": {"local": True}, "lab": {"ssh": "root@10.0.0.2"}}
    said = refused(campaign(None, [{"name": "n", "kind": "network", "to": "here", "placement": "docker"}],
                            hosts=hosts))
    assert "to: here is this machine at a loopback address, which a client in a container cannot reach" in said
    check_neighbours(parse_campaign(campaign(None, [{"name": "n", "kind": "network", "to": "here"}], hosts=hosts)))


# --- the tools: command lines and their own reports ----------------------------------------------------------


def test_command_lines() -> None:
    hog = Neighbour(name="hog", kind="cpu", workers=2, load=60)
    assert tools.stress_ng_command(hog, Path("/r/h.yaml")) == [
        "stress-ng", "--cpu", "2", "--cpu-load", "60", "--timeout", "0", "--metrics-brief", "--yaml", "/r/h.yaml"]
    vm = Neighbour(name="m", kind="memory", method="vm", size="8M")
    assert tools.stress_ng_command(vm, Path("/y"))[1:5] == ["--vm", "1", "--vm-bytes", "8M"]
    disk = tools.fio_command(Neighbour(name="d", kind="disk", pattern="fsync", size="16M"), Path("/f"), Path("/j"))
    assert "--rw=randwrite" in disk and "--fsync=1" in disk and "--size=16M" in disk and "--directory=/f" in disk
    client = tools.iperf3_client_command(Neighbour(name="n", kind="network", bitrate="50M", streams=2), "127.0.0.1",
                                         5201, Path("/j"))
    assert client[:3] == ["iperf3", "-c", "127.0.0.1"] and client[9:11] == ["-b", "50M"] and "-P" in client


def test_the_tools_own_reports_are_read() -> None:
    cpu = tools.stress_ng_achieved((DATA / "stress-ng-cpu.yaml").read_text())
    assert cpu == {"bogo_ops_per_second": 485.39, "cpu_percent_per_worker": 28.0, "seconds": 2.02}
    stream = tools.stress_ng_achieved((DATA / "stress-ng-stream.yaml").read_text())
    assert stream["read_mb_per_second"] == 3632.2 and stream["write_mb_per_second"] == 2421.4
    assert "read_mb_per_second" not in cpu
    disk = tools.fio_achieved((DATA / "fio-fsync-sigterm.json").read_text())
    assert disk["write_iops"] == 892.5 and disk["fsyncs"] > 0 and "read_iops" not in disk
    net = tools.iperf3_achieved((DATA / "iperf3-client-sigterm.json").read_text())
    assert 99e6 < net["bits_per_second"] < 101e6


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200))
def test_a_damaged_report_is_a_value_error(text: str) -> None:
    for parse in (tools.stress_ng_achieved, tools.fio_achieved, tools.iperf3_achieved):
        with contextlib.suppress(ValueError):
            parse(text)


# --- the record, the busy check, the plan ---------------------------------------------------------------------


def test_the_record_round_trips_and_reads_damaged_input() -> None:
    run = NeighbourRun("hog", "cpu", "host", "0", 5, "1 worker(s) at 100 %", "stress-ng", {"name": "hog"},
                       {"running": True, "cpu_percent": 99.0}, {"cpu_percent_per_worker": 98.0,
                                                                 "bogo_ops_per_second": 500.0}, ("w",), None, (0,))
    records = NeighbourRecords((run,))
    assert records.to_json()["format"] == FORMAT
    assert NeighbourRecords.from_json(records.to_json()) == records
    assert StoredFacts.from_json({"neighbours": records.to_json()}).neighbours == records
    assert StoredFacts.from_json({}).neighbours == NeighbourRecords()
    assert NeighbourRecords.from_json({"neighbours": [None, "x", {"achieved": {"a": "b"}}]}).neighbours[2].name == "?"
    assert run.achieved_text() == "98 % CPU per worker, 500 bogo ops/s"


def test_a_neighbours_cpu_is_not_a_busy_machine() -> None:
    usage = Usage({"server": 10.0, "client": 5.0, "neighbour:hog": 10.0, "other": 0.5, "idle": 4.5}, {}, 0.0, ())
    assert busy_run(usage) is None
    usage = Usage({"server": 10.0, "client": 5.0, "other": 10.5, "idle": 4.5}, {}, 0.0, ())
    assert busy_run(usage) is not None


def test_the_plan_names_each_variants_neighbours() -> None:
    parsed = parse_campaign(campaign(None, [{"name": "hog", "kind": "cpu", "load": 70, "cpus": "0", "nice": 3}]))
    lines = neighbour_lines(parsed)
    assert lines[0].startswith("neighbours of noisy") and "hog: cpu, 1 worker(s) at 70 %, on the host, CPUs 0, nice 3" \
        in lines[0]
    assert lines[1] == "no neighbours: base"
    assert neighbour_lines(parse_campaign(campaign())) == []


def test_a_child_that_sets_neighbours_replaces_its_parents_list() -> None:
    data = campaign(None, [{"name": "hog", "kind": "cpu"}])
    data["variants"].append({"name": "child", "extends": "noisy", "neighbours": [{"name": "disk", "kind": "disk"}]})
    parsed = parse_campaign(data)
    assert [n.name for n in parsed.neighbours_of(parsed.variant("child"))] == ["disk"]


def test_the_report_row_takes_the_median_of_what_each_run_achieved() -> None:
    from layerbench.analysis.neighbours import row

    runs = [NeighbourRun("d", "disk", "host", None, 0, "fsync 4K blocks on a 1M file in /a|b<x>", "fio",
                         achieved={"write_iops": v, "write_bytes_per_second": v * 4096}) for v in (100.0, 300.0, 200.0)]
    shown = row("noisy", runs)
    assert shown.achieved == "200 write IOPS (0.8 MiB/s)" and shown.runs == 3 and shown.placement == "host"
    failed = row("noisy", [NeighbourRun("h", "cpu", "host", "0", 3, "i", "stress-ng", error="no report from x")])
    assert failed.achieved == "no report from x" and failed.placement == "host, CPUs 0, nice 3"


@pytest.mark.parametrize(("entry", "said"), [
    ({"name": "x", "kind": "gpu"}, "kind 'gpu' is not a kind of neighbour"),
    ({"name": "x", "kind": "cpu", "load": 150}, "load: Input should be less than or equal to 100"),
    ({"name": "x", "kind": "cpu", "workers": 4 * len(os.sched_getaffinity(0)) + 1}, "workers on a machine of"),
    ({"name": "x", "kind": "disk", "size": "9999999G"}, "size: 9999999G does not fit"),
    ({"name": "x", "kind": "network", "to": "nowhere"}, "'nowhere' is not a host of `hosts:`"),
])
def test_validate_refuses_in_one_line_with_exit_2(tmp_path: Path, entry: dict[str, Any], said: str) -> None:
    import subprocess
    import sys

    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(campaign(None, [entry], output=str(tmp_path / "out"))))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], lines
    assert not (tmp_path / "out").exists()


def test_a_network_neighbour_sends_to_loopback_or_a_local_hosts_address() -> None:
    import socket

    from layerbench.hosts.inventory import HostEntry
    from layerbench.neighbours.network import listening, peer_of

    loop = Neighbour(name="n", kind="network")
    assert peer_of(loop, None).address == "127.0.0.1" and peer_of(loop, {}).host is None
    assert peer_of(loop.model_copy(update={"to": "here"}), {"here": HostEntry(local=True)}).address == "127.0.0.1"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        assert not listening(port)
        server.listen()
        assert listening(port)


# --- placements: docker and ssh: (#32) ------------------------------------------------------------------------


def test_a_neighbour_placed_on_an_unknown_or_local_host_is_refused() -> None:
    hosts = {"here": {"local": True}, "lab": {"ssh": "root@10.0.0.2"}}
    said = refused(campaign(None, [{"name": "s", "kind": "cpu", "placement": "ssh", "host": "far"}], hosts=hosts))
    assert "neighbours.s.host: 'far' is not a host of `hosts:`; use one of: lab" in said
    said = refused(campaign(None, [{"name": "s", "kind": "cpu", "placement": "ssh", "host": "here"}], hosts=hosts))
    assert "neighbours.s.host: 'here' is this machine; use placement: host" in said
    said = refused(campaign(None, [{"name": "s", "kind": "cpu", "placement": "ssh", "host": "x"}]))
    assert "none (add the ssh: host to hosts:)" in said


def test_a_docker_neighbour_without_a_daemon_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no.sock")  # a daemon that is not there, really
    said = refused(campaign(None, [{"name": "c", "kind": "cpu", "placement": "docker"}]))
    assert said.startswith("variants.noisy.neighbours.c.placement: docker: no Docker daemon answers at unix://")
    assert said.endswith("or use placement: host")


def test_a_docker_neighbours_limits_are_a_preset_of_the_docker_backend_or_its_own() -> None:
    from layerbench.backends.docker.neighbours import container_limits

    burst = Neighbour(name="b", kind="cpu", placement="docker", qos="burstable", resources={"cpus": 1, "memory": "1g"})
    assert container_limits(burst) == {"cpu_shares": 512, "nano_cpus": 10**9, "mem_limit": "1g"}
    assert container_limits(Neighbour(name="b", kind="cpu", placement="docker", qos="besteffort")) == {
        "cpu_shares": 2}
    pinned = Neighbour(name="p", kind="cpu", placement="docker", qos="guaranteed-pinned", cpus="1")
    assert container_limits(pinned)["cpuset_cpus"] == "1" and "nano_cpus" not in container_limits(pinned)
    own = Neighbour(name="o", kind="cpu", placement="docker", resources={"cpus": 0.5}, cpus="0")
    assert container_limits(own) == {"nano_cpus": 5 * 10**8, "cpuset_cpus": "0"}
    assert burst.where() == "docker (qos burstable, 1 CPU, memory 1g)"
    assert Neighbour(name="s", kind="cpu", placement="ssh", host="app", nice=5).where() == "ssh host app, nice 5"


def test_an_ssh_neighbours_command_runs_from_its_own_folder_there() -> None:
    from layerbench.neighbours.remote import remote_command, start_script, stop_script

    hog = Neighbour(name="hog", kind="cpu", placement="ssh", host="app", cpus="1", nice=3)
    cmd = remote_command(hog, "/tmp/lb1-nb-hog", "/tmp/lb1-nb-hog/hog.stress-ng.yaml")
    assert cmd[:6] == ["nice", "-n", "3", "taskset", "-c", "1"] and cmd[-1] == "/tmp/lb1-nb-hog/hog.stress-ng.yaml"
    disk = remote_command(Neighbour(name="d", kind="disk", placement="ssh", host="app"), "/tmp/f", "/tmp/f/d.json")
    assert "--directory=/tmp/f/data" in disk and "--output=/tmp/f/d.json" in disk
    script = start_script("/tmp/f", cmd)
    assert "setsid nice -n 3" in script and "echo $! > /tmp/f/neighbour.pid" in script
    assert "kill -TERM -42" in stop_script(42, 15) and "seq 75" in stop_script(42, 15)


# --- the evidence beside them: CPU pressure, throttling, and the fairness note (#32) ---------------------------


def test_cpu_pressure_is_read_from_the_kernels_counters(tmp_path: Path) -> None:
    from layerbench.measure.pressure import parse_pressure, pressure_files, pressure_window, read_pressure

    text = "some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"
    assert parse_pressure(text) == {"some": 2500000, "full": 7}
    assert parse_pressure("") == {} and parse_pressure("some total=x") == {}
    group = tmp_path / "cg"
    group.mkdir()
    (group / "cpu.pressure").write_text("some avg10=0 avg60=0 avg300=0 total=1000000\n")
    files = pressure_files([group, tmp_path / "none"])
    assert files[1:] == [group / "cpu.pressure"]
    start = read_pressure(files)
    (group / "cpu.pressure").write_text("some avg10=0 avg60=0 avg300=0 total=3500000\n")
    window = pressure_window(start, read_pressure(files))
    assert window[str(group)] == {"some_seconds": 2.5}
    if Path("/proc/pressure/cpu").exists():  # this kernel has PSI: the machine's own counter moves forward
        assert window["system"]["some_seconds"] >= 0


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200) | st.just("some total=" + "9" * 400))
def test_a_hostile_pressure_file_reads_as_counts_or_nothing(text: str) -> None:
    from layerbench.measure.pressure import parse_pressure

    assert all(k in ("some", "full") and v >= 0 for k, v in parse_pressure(text).items())


def contention_analysis(runs: list[Any]) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(runs=runs, definition=SimpleNamespace(variants=[SimpleNamespace(name="quiet"),
                                                                          SimpleNamespace(name="noisy")]))


def stored_run(variant: str, neighbours: tuple[NeighbourRun, ...], usage: Usage) -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(variant=variant, status="ok",
                           facts=StoredFacts(usage=usage, neighbours=NeighbourRecords(neighbours)))


def test_the_servers_contention_is_shown_for_every_variant_beside_the_neighbours() -> None:
    from layerbench.analysis.neighbours import contention_rows
    from layerbench.records import Throttling

    hog = NeighbourRun("hog", "cpu", "docker", None, 0, "1 worker(s) at 100 %", "stress-ng",
                       asked={"name": "hog", "kind": "cpu", "placement": "docker", "qos": "burstable"})
    quiet = Usage(window_seconds=10, pressure={"system": {"some_seconds": 1.0}})
    noisy = Usage(window_seconds=10, throttling={"/sys/fs/cgroup/cpu/docker/x": Throttling(100, 25, 0.5)},
                  pressure={"system": {"some_seconds": 6.0}, "/sys/fs/cgroup/x": {"some_seconds": 3.0}})
    rows = contention_rows(contention_analysis([stored_run("quiet", (), quiet), stored_run("noisy", (hog,), noisy)]))
    assert [r.cells() for r in rows] == [["quiet", "none", "-", "-", "10 %", "-", "1"],
                                         ["noisy", "hog", "25 %", "0.50", "60 %", "30 %", "1"]]
    assert contention_rows(contention_analysis([stored_run("quiet", (), quiet)])) == []
    from layerbench.analysis.neighbours import where_text

    assert where_text(hog) == "docker (qos burstable)"


def test_the_fairness_section_says_when_two_variants_had_different_neighbours() -> None:
    from layerbench.analysis.fairness import neighbour_differences, neighbour_words

    hog = NeighbourRecords((NeighbourRun("hog", "cpu", "host", None, 0, "1 worker(s) at 100 %", "stress-ng"),))
    said = neighbour_differences("quiet", {"quiet": set(), "noisy": neighbour_words(hog), "same": set()})
    assert len(said) == 1 and said[0].asked
    text = said[0].text("quiet")
    assert text == ("`noisy` differs from `quiet` in neighbours (load started beside the server): hog (cpu, 1 "
                    "worker(s) at 100 %, host) vs none (asked by the campaign: the delta measures them together "
                    "with the layer)")
    assert neighbour_differences("quiet", {"noisy": set()}) == []


@pytest.mark.parametrize(("entry", "env", "said"), [
    ({"name": "x", "kind": "cpu", "placement": "ssh", "host": "nowhere"}, {},
     "variants.noisy.neighbours.x.host: 'nowhere' is not a host of `hosts:`"),
    ({"name": "x", "kind": "cpu", "placement": "docker"}, {"DOCKER_HOST": "unix:///nonexistent/neigh.sock"},
     "variants.noisy.neighbours.x.placement: docker: no Docker daemon answers at unix:///nonexistent/neigh.sock"),
])
def test_validate_refuses_a_placement_it_cannot_reach_in_one_line_with_exit_2(
        tmp_path: Path, entry: dict[str, Any], env: dict[str, str], said: str) -> None:
    import subprocess
    import sys

    import yaml

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(campaign(None, [entry], output=str(tmp_path / "out"))))
    done = subprocess.run([sys.executable, "-m", "layerbench", "validate", str(path)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "300", **env})
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], lines
    assert not (tmp_path / "out").exists()
