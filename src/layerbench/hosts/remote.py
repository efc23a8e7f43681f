"""sysbench on another host of the inventory, and the evidence gathered there: its CPU time, the host's facts
(kernel, CPUs, memory, NIC and MTU, sysbench version, clock offset) and the round-trip time to the server.

The facts come from one small sh script that runs the same way on this machine and over SSH, so every host is
described by the same code path. Parsing is pure (tested with hostile inputs)."""

from __future__ import annotations

import contextlib
import re
import shlex
import time
from pathlib import Path
from typing import Any

from layerbench.errors import RunFailed
from layerbench.hosts.inventory import Host
from layerbench.hosts.procs import Completed
from layerbench.secrets import Secret

CPU_MARK = "LAYERBENCH-CLIENT-CPU"
FACTS_SCRIPT = r"""
echo "kernel=$(uname -r)"
echo "cpus=$(nproc 2>/dev/null)"
echo "memory_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
echo "cpu_model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)"
echo "sysbench_version=$(sysbench --version 2>/dev/null)"
echo "server_version=$(mariadbd --version 2>/dev/null || /usr/sbin/mariadbd --version 2>/dev/null)"
echo "boot_id=$(cat /proc/sys/kernel/random/boot_id)"
echo "netns=$(readlink /proc/self/ns/net 2>/dev/null)"
echo "transparent_hugepage=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"
echo "swappiness=$(cat /proc/sys/vm/swappiness 2>/dev/null)"
echo "dirty_ratio=$(cat /proc/sys/vm/dirty_ratio 2>/dev/null)"
echo "cpu_governor=$(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null)"
echo "cgroup_version=$([ -e /sys/fs/cgroup/cgroup.controllers ] && echo v2 || echo v1)"
echo "hostname=$(hostname 2>/dev/null || cat /proc/sys/kernel/hostname)"
echo "free_kb=$(df -Pk /tmp | awk 'NR==2 {print $4}')"
if [ -n "$LB_PEER" ]; then
  dev=$(ip -o route get "$LB_PEER" 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p')
  echo "nic=$dev"
  [ -n "$dev" ] && echo "mtu=$(cat /sys/class/net/$dev/mtu 2>/dev/null)"
fi
echo "clock=$(date +%s.%N)"
"""


def parse_facts(text: str) -> dict[str, str]:
    """key=value lines (the first `=` splits; other lines are ignored)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and re.fullmatch(r"[a-z_]+", key):
            out[key] = value.strip()
    return out


def host_facts(host: Host, peer: str | None) -> dict[str, Any]:
    """The host's facts; `peer` is the address it talks to (for the NIC and MTU on that route)."""
    before = time.time()
    script = (f"LB_PEER={shlex.quote(peer)}; " if peer else "LB_PEER=; ") + FACTS_SCRIPT
    done = host.shell(script, name=f"facts of {host.name}", timeout=60)
    after = time.time()
    facts: dict[str, Any] = parse_facts(done.output)
    with contextlib.suppress(ValueError, KeyError):
        facts["clock_offset_seconds"] = round(float(facts.pop("clock")) - (before + after) / 2, 3)
        facts["clock_uncertainty_seconds"] = round((after - before) / 2, 3)
    facts["reached_as"] = host.target
    return facts


def parse_ping(text: str) -> float | None:
    """The average round-trip time in ms from `ping -q`'s summary line, or None."""
    match = re.search(r"= [\d.]+/([\d.]+)/[\d.]+(?:/[\d.]+)? ms", text)
    return float(match.group(1)) if match else None


def round_trip_ms(client: Host, address: str) -> float | None:
    """Median-ish RTT from the client host to the server's address (ICMP, 10 probes, before any run)."""
    done = client.run(["ping", "-c", "10", "-i", "0.2", "-q", address], name=f"ping from {client.name}", timeout=60)
    return parse_ping(done.output)


def split_cpu_mark(output: str) -> tuple[str, float | None]:
    """Remove the wrapper's CPU line; its children's user+system ticks / CLK_TCK are sysbench's CPU seconds."""
    kept, seconds = [], None
    for line in output.splitlines(keepends=True):
        if line.startswith(CPU_MARK):
            parts = line.split()
            with contextlib.suppress(ValueError, IndexError, ZeroDivisionError):
                seconds = (int(parts[1]) + int(parts[2])) / int(parts[3])
            continue
        kept.append(line)
    return "".join(kept), seconds


def rewrite_paths(cmd: list[str], files: dict[str, str], folder: str) -> list[str]:
    from layerbench.hosts.client_files import rewrite

    return rewrite(cmd, files, folder)


class SSHClient:
    """sysbench on a host of the inventory: its private files in a 0700 folder named after the run's label (so a
    killed harness's leftovers can be found), its pid in a file there, everything removed after the step."""

    def __init__(self, host: Host, label: str, cpus: str | None) -> None:
        self.host, self.label, self.cpus = host, label, cpus
        self.folder = f"/tmp/{label}-client"
        self.owner = f"{label}-client@{host.name}"
        self.where = f"host {host.name} ({host.target})"
        self.cpu_seconds = 0.0

    def wrapper(self, args: list[str]) -> str:
        taskset = ["taskset", "-c", self.cpus] if self.cpus else []
        folder = shlex.quote(self.folder)
        return (f"cd {folder} || exit 97; {shlex.join([*taskset, *args])} & echo $! > {folder}/sysbench.pid; "
                f"wait $!; rc=$?; echo \"{CPU_MARK} $(cut -d' ' -f16,17 /proc/$$/stat) $(getconf CLK_TCK)\"; "
                "exit $rc")

    def run_client(self, cmd: list[str], files: dict[str, str], *, log_path: Path, timeout: float,
                   on_line: Any = None, secrets: list[Secret] | None = None) -> Completed:
        from layerbench.hosts import owners
        from layerbench.hosts.host_owners import claim_on_host

        try:
            claim_on_host(self.host, self.owner, self.folder)  # here and on the host, for `clean` after a crash
            self.host.shell(f"umask 077 && mkdir -p {shlex.quote(self.folder)}", name=f"mkdir on {self.host.name}")
            for name, text in files.items():
                self.host.write_private(f"{self.folder}/{name}", text)
            args = rewrite_paths(cmd, files, self.folder)
            name = f"sysbench on {self.host.name}"
            done = self.host.shell(self.wrapper(args), name=name, log_path=log_path, timeout=timeout,
                                   on_line=on_line, secrets=secrets or [])
        finally:
            if self.remove():
                owners.forget(self.owner)
        output, seconds = split_cpu_mark(done.output)
        self.cpu_seconds += seconds or 0.0
        return Completed(done.returncode, output)

    def remove(self) -> bool:
        """Stop a sysbench still running (after Ctrl-C) and remove the folder; True when the host confirmed it
        (a host that does not answer keeps the owner record, for `layerbench clean`). Never raises."""
        return remove_remote_folder(self.host, self.folder)


def detached_script(folder: str, command: str, log: str, pid_file: str) -> str:
    """sh text that starts `command` (shell words) from `folder` in a session of its own (setsid: a signal to its
    group reaches what it starts), without stdin, its output in `log` and its PID in `pid_file` (inside the
    folder, where remove_script finds it), and prints `PID <pid>`."""
    f = shlex.quote(folder)
    return (f"cd {f} && {{ setsid {command} > {f}/{log} 2>&1 < /dev/null & "
            f"echo $! > {f}/{pid_file}; echo PID $!; }}")


def start_detached(host: Host, script: str, *, name: str, failed: str) -> int:
    """Run a detached_script (after what `script` does first) on host; the PID it printed, or RunFailed
    `<failed>: <what the host said>`."""
    done = host.shell(script, name=name, timeout=60)
    pid = next((line[4:] for line in done.output.splitlines() if line.startswith("PID ")), "")
    if not pid.isdigit():
        raise RunFailed(f"{failed}: {done.output.strip()[:200] or 'no output'}")
    return int(pid)


def process_alive(host: Host, pid: int | None) -> bool:
    """Whether process `pid` runs on host (`kill -0` there); False for no PID."""
    if pid is None:
        return False
    return host.run(["kill", "-0", str(pid)], name=f"alive on {host.name}", timeout=30).returncode == 0


def remove_script(folder: str, record: str | None = None) -> str:
    """Stop every process whose pid file is in the folder (sysbench, a server) and whose command line names the
    folder (a reused PID is never killed), wait up to 10 s (then SIGKILL), remove the folder, then its owner record
    on the host (`record`)."""
    q = shlex.quote(folder)
    forget = f"rm -f {shlex.quote(record)}; " if record else ""
    pids = (f"for f in {q}/*.pid; do [ -f \"$f\" ] || continue; p=$(cat \"$f\"); case $p in ''|*[!0-9]*) continue;; "
            f"esac; tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | grep -qF -- {q} && echo $p; done | sort -u")
    return (f"ps=$({pids}); [ -n \"$ps\" ] && kill $ps 2>/dev/null; "
            "for i in $(seq 50); do alive=; for p in $ps; do kill -0 $p 2>/dev/null && alive=1; done; "
            "[ -z \"$alive\" ] && break; sleep 0.2; done; [ -n \"$alive\" ] && kill -9 $ps 2>/dev/null; "
            f"rm -rf {q} && {{ {forget}echo removed; }}")


def remove_remote_folder(host: Host, folder: str) -> bool:
    """Stop what runs from a run's folder on a host and remove it; True when the host confirmed it (a host that
    does not answer keeps the owner record, for `layerbench clean`). Never raises."""
    try:
        from layerbench.hosts.host_owners import host_record

        done = host.shell(remove_script(folder, host_record(host, folder)), name=f"cleanup on {host.name}",
                          timeout=60)
    except (RunFailed, OSError):
        return False
    return "removed" in done.output


def clean_remote(remote: dict[str, Any]) -> tuple[list[str], bool]:
    """`layerbench clean` for a client folder a killed harness left on a host of its inventory: what it did, and
    whether the host confirmed (an unreadable record counts as done: there is nothing to reach)."""
    from layerbench.hosts.inventory import HostEntry

    try:
        host = Host(str(remote["host"]), HostEntry(**remote["entry"]))
        folder = str(remote["folder"])
    except (KeyError, TypeError, ValueError):
        return [], True
    if remove_remote_folder(host, folder):
        return [f"removed {folder} (and stopped what ran from it) on host {host.name}"], True
    return [f"host {host.name} did not answer; {folder} may remain there (run `layerbench clean` again)"], False


# --- the campaign's hosts: preflight survey and per-run evidence -----------------------------------------------


def used_hosts(variants: list[Any]) -> set[str]:
    from layerbench.hosts.placement import placement_of

    return {name for v in variants for name in (placement_of(None, v).server_host, placement_of(None, v).client_host)}


def client_peers(variants: list[Any], hosts: dict[str, Any]) -> dict[str, str]:
    """Each host that runs sysbench for a server elsewhere -> that server's address (for its NIC and MTU)."""
    from layerbench.hosts.placement import placement_of

    places = [placement_of(hosts, v) for v in variants]
    return {p.client_host: p.listen_address for p in places if p.remote_client}


def survey_hosts(campaign: Any, hosts: Any) -> dict[str, Any]:
    """The evidence of every host the campaign places something on, gathered once after preflight (which checked
    that each answers and has sysbench where it runs it): its facts, and the round-trip time client -> server.
    Returns {"facts": {host: {...}}, "rtt_ms": {...}}."""
    from layerbench.hosts.placement import placement_of

    if not campaign.hosts:
        return {}
    peers = client_peers(campaign.variants, campaign.hosts)
    facts = {name: host_facts(hosts[name], peers.get(name)) for name in sorted(used_hosts(campaign.variants))}
    rtt = {}
    for v in campaign.variants:
        place = placement_of(campaign.hosts, v)
        if place.remote_client:
            rtt[f"{place.client_host}->{place.server_host}"] = round_trip_ms(hosts[place.client_host],
                                                                           place.listen_address)
    return {"facts": facts, "rtt_ms": rtt}


def version_warnings(survey: dict[str, Any]) -> list[str]:
    """sysbench or server versions that differ between the campaign's hosts."""
    out = []
    facts = survey.get("facts", {})
    for key in ("sysbench_version", "server_version"):
        seen = {name: f.get(key) for name, f in facts.items() if f.get(key)}
        if len(set(seen.values())) > 1:
            out.append(f"{key.replace('_', ' ')} differs between hosts: "
                       + ", ".join(f"{n}: {v}" for n, v in sorted(seen.items())))
    return out


TUNING = ("transparent_hugepage", "swappiness", "dirty_ratio", "cpu_governor", "cgroup_version")


def host_tuning(facts: dict[str, Any]) -> dict[str, Any]:
    """A host's tuning facts as its survey read them there (measure/environment.py tuning_facts' keys; None for a
    file the host does not have)."""
    return {key: facts.get(key) or None for key in TUNING}


def kernel_sharers(facts: dict[str, Any], server_host: str) -> dict[str, str]:
    """The campaign's other hosts that run the server host's kernel (the same boot id) in a network namespace of
    their own (the namespace lab's hosts) -> that namespace: the server host's /proc/stat holds their CPU too, so
    its readings name their processes `other@<host>` (a load there does not make a run busy). A host in the
    server host's own namespace (the same machine under two names) is not one."""
    server = facts.get(server_host, {})
    boot, mine = server.get("boot_id"), server.get("netns")
    return {name: str(f["netns"]) for name, f in facts.items()
            if name != server_host and boot and f.get("boot_id") == boot and f.get("netns") and f["netns"] != mine}


def placed_usage(cpu: dict[str, float], server_host: str, client: SSHClient | None,
                 same_kernel: bool) -> dict[str, float]:
    """CPU seconds per component named with its host (`server@db`, `sysbench@app`); a key already named with a
    host (`other@app`: another host's processes that the server host's reading holds) stays as it is. The server
    host's sampler knows nothing of a remote sysbench; when both hosts share one kernel (the lab's namespaces),
    the reading's `other@<client host>` (or, without it, `other@<server host>`) holds sysbench's CPU too, so it is
    taken out there."""
    out: dict[str, float] = {}
    for key, seconds in cpu.items():
        if key == "idle" or "@" in key:
            out[key] = seconds
        elif not (key == "client" and client is not None):
            out[f"{'sysbench' if key == 'client' else key}@{server_host}"] = seconds
    if client is not None:
        out[f"sysbench@{client.host.name}"] = client.cpu_seconds
        there = f"other@{client.host.name}"
        other = there if there in out else f"other@{server_host}"
        if same_kernel and other in out:
            out[other] = max(0.0, out[other] - client.cpu_seconds)
    return out
