"""The inventory, placement validation, and the pure parts of remote runs (ssh failures, facts, ping, CPU)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.docker.variant import DockerVariant
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.inventory import Host, HostEntry, explain_ssh_failure
from layerbench.hosts.placement import placement_of
from layerbench.hosts.remote import CPU_MARK, parse_facts, parse_ping, placed_usage, split_cpu_mark

APP = {"ssh": "bench@10.0.0.6", "identity_file": "~/.ssh/bench", "known_hosts": "/tmp/kh"}


def campaign(variant: dict, hosts: dict | None = None) -> dict:
    return {"name": "c", "baseline": "v", "workload": {}, "variants": [{"name": "v", **variant}],
            "hosts": {"db": {"local": True, "address": "10.0.0.5"}, "app": APP} if hosts is None else hosts}


def test_without_hosts_every_variant_stays_on_this_machine() -> None:
    parsed = parse_campaign({"name": "c", "baseline": "v", "workload": {},
                             "variants": [{"name": "v", "backend": "host"}]})
    place = placement_of(parsed.hosts, parsed.variants[0])
    assert (place.server_host, place.client_host, place.listen_address) == ("local", "local", "127.0.0.1")


def test_a_remote_client_is_given_the_server_hosts_address() -> None:
    parsed = parse_campaign(campaign({"backend": "docker", "server_host": "db", "client_host": "app"}))
    place = placement_of(parsed.hosts, parsed.variants[0])
    assert place.listen_address == "10.0.0.5" and place.remote_client
    assert "kernel NAT" in parsed.variants[0].network_path(place)
    loop = placement_of(parsed.hosts, parsed.variants[0].model_copy(update={"client_host": "db"}))
    assert loop.listen_address == "127.0.0.1"
    assert "docker-proxy" in parsed.variants[0].network_path(loop)


def test_a_server_on_an_ssh_host_listens_on_its_address_for_every_client() -> None:
    parsed = parse_campaign(campaign({"backend": "host", "server_host": "app", "client_host": "app"}))
    place = placement_of(parsed.hosts, parsed.variants[0])
    assert place.listen_address == "10.0.0.6" and not place.remote_client
    assert "own address 10.0.0.6" in parsed.variants[0].network_path(place)
    remote = placement_of(parsed.hosts, parsed.variants[0].model_copy(update={"client_host": "db"}))
    assert remote.listen_address == "10.0.0.6" and remote.remote_client
    docker = DockerVariant(name="v", backend="docker", network="bridge", client="host", server_host="app",
                           client_host="app")  # the same placement, a docker server (its own words for the path)
    assert "app's own address 10.0.0.6 from that host: kernel NAT" in docker.network_path(place)


@pytest.mark.parametrize(("variant", "hosts", "words"), [
    ({"backend": "host", "client_host": "nowhere"}, None, "variants.v.client_host: 'nowhere' names no host"),
    ({"backend": "kubernetes", "server_host": "app"}, None,
     "variants.v.server_host: app is an ssh: host; a kubernetes server"),
    ({"backend": "host"}, {"x": {"ssh": "a@b", "work_dir": "rel/dir"}}, "hosts.x.work_dir"),
    ({"backend": "host"}, {"x": {"ssh": "a@b", "work_dir": "/tmp"}}, "give a folder of its own"),
    ({"backend": "host"}, {"x": {"ssh": "a@b", "work_dir": "/a/../etc"}}, "give a folder of its own"),
    ({"backend": "host"}, {"x": {"ssh": "a@b", "work_dir": "/a b;rm"}}, "hosts.x.work_dir"),
    ({"backend": "host"}, {"x": {"local": True, "work_dir": "/srv/lb"}}, "belong to an ssh: host"),
    ({"backend": "vm", "server_host": "db", "client_host": "app"}, None,
     "backends host, docker (and vm on an ssh: host), not vm"),
    ({"backend": "docker", "network": "bridge-direct", "server_host": "db", "client_host": "app"}, None,
     "bridge-direct"),
    ({"backend": "docker", "client": "container", "server_host": "db", "client_host": "app"}, None,
     "client: container"),
    ({"backend": "docker", "client": "container", "server_host": "app"}, None,
     "variants.v.client: client: container with the server on ssh: host app is not supported; use client_host: app"),
    ({"backend": "host", "server_host": "db", "client_host": "app"}, {"db": {"local": True}, "app": APP},
     "set hosts.db.address"),
    ({"backend": "host"}, {"local": {"local": True}}, "hosts.local: the name is taken"),
    ({"backend": "host"}, {"x": {"local": True, "ssh": "a@b"}}, "give either ssh"),
    ({"backend": "host"}, {"x": {"ssh": "-oProxyCommand=evil"}}, "hosts.x.ssh"),
    ({"backend": "host"}, {"x": {"ssh": "a@b", "password": "p"}}, "hosts.x.password: unknown key"),
])
def test_bad_placements_are_one_line_errors(variant: dict, hosts: dict | None, words: str) -> None:
    with pytest.raises(BadInput) as error:
        parse_campaign(campaign(variant, hosts))
    assert words in str(error.value) and "\n" not in str(error.value)


def test_the_ssh_command_checks_host_keys_and_never_prompts() -> None:
    cmd = Host("app", HostEntry(**APP, port=2222)).command(["echo", "a b"])
    text = " ".join(cmd)
    assert "BatchMode=yes" in text and "StrictHostKeyChecking=yes" in text and "ControlMaster=auto" in text
    assert "StrictHostKeyChecking=no" not in text and "-p 2222" in text
    assert cmd[-2:] == ["bench@10.0.0.6", "echo 'a b'"]
    assert Host("local").command(["echo", "a b"]) == ["echo", "a b"]


def control_path(host: Host) -> str:
    return next(option for option in host.ssh_command() if option.startswith("ControlPath="))


def test_each_process_shares_its_ssh_connections_with_no_other_process() -> None:
    """Every command ends its connections when it is over (Host.close: ssh -O exit); a command of another layerbench
    process riding on one of them would end with ssh's 255 and no output ("does not answer over SSH: no output
    from ssh", seen when another campaign, or validate, ended while one ran on the same host)."""
    import subprocess
    import sys

    here = control_path(Host("app", HostEntry(**APP)))
    assert here == control_path(Host("app2", HostEntry(**APP)))  # one connection for the commands of this process
    assert here != control_path(Host("app", HostEntry(**{**APP, "port": 2222})))
    other = subprocess.run([sys.executable, "-c", "from layerbench.hosts.inventory import Host, HostEntry; "
                            f"print(next(o for o in Host('app', HostEntry(**{APP!r})).ssh_command() "
                            "if o.startswith('ControlPath=')))"], capture_output=True, text=True, check=True)
    assert other.stdout.strip().startswith("ControlPath=") and other.stdout.strip() != here


def test_ssh_failures_become_one_line_causes() -> None:
    changed = "@@@\nWARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!\nHost key verification failed.\n"
    text = explain_ssh_failure("app", "root@h", changed, "/kh")
    assert text.startswith("hosts.app (root@h): the host key does not match") and "ssh-keygen -R h" in text
    assert "refused our key" in explain_ssh_failure("app", "root@h", "root@h: Permission denied (publickey).", None)
    gone = explain_ssh_failure("app", "root@h", "ssh: connect to host h port 22: No route to host\n", None)
    assert gone == ("hosts.app (root@h) does not answer over SSH: ssh: connect to host h port 22: No route to host; "
                    "check that it is up and that hosts.app.ssh (and port) reach its sshd")


@given(st.text())
def test_fact_parsing_survives_any_output(text: str) -> None:
    facts = parse_facts(text)
    assert all("\n" not in k and "=" not in k for k in facts)


def test_facts_and_ping_are_read_from_real_output() -> None:
    assert parse_facts("kernel=6.1.0\nnoise\nmtu=1500\nsysbench_version=sysbench 1.0.20\n") == {
        "kernel": "6.1.0", "mtu": "1500", "sysbench_version": "sysbench 1.0.20"}
    ping = ("10 packets transmitted, 10 received, 0% packet loss, time 1820ms\n"
            "rtt min/avg/max/mdev = 0.041/0.066/0.121/0.022 ms\n")
    assert parse_ping(ping) == 0.066
    assert parse_ping("ping: connect: Network is unreachable") is None


@given(st.text())
def test_the_cpu_mark_never_breaks_the_output(text: str) -> None:
    kept, seconds = split_cpu_mark(text)
    assert CPU_MARK not in kept or seconds is None


def test_remote_sysbench_cpu_is_named_with_its_host_and_taken_out_of_a_shared_kernels_other() -> None:
    kept, seconds = split_cpu_mark(f"a\n{CPU_MARK} 150 50 100\nb\n")
    assert kept == "a\nb\n" and seconds == 2.0

    class Client:
        host = Host("app", HostEntry(**APP))
        cpu_seconds = 2.0

    cpu = {"server": 5.0, "client": 0.0, "other": 3.0, "idle": 1.0}
    assert placed_usage(cpu, "db", Client(), same_kernel=True) == {  # type: ignore[arg-type]
        "server@db": 5.0, "other@db": 1.0, "idle": 1.0, "sysbench@app": 2.0}
    assert placed_usage(cpu, "db", None, same_kernel=False) == {
        "server@db": 5.0, "sysbench@db": 0.0, "other@db": 3.0, "idle": 1.0}
