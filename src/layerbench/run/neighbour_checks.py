"""Before anything starts (preflight, so `validate` says it too): a campaign's neighbours against this machine
and its inventory. Each problem is one BadInput line naming the field, the value and the fix: more workers than
this machine's CPUs x WORKERS_PER_CPU (one neighbour's, and those of all of a variant's neighbours on this machine
together, its campaign's included), memory beyond this machine's (a variant's neighbours here together, with its
server when that runs here too), a CPU list naming a CPU that is not here, a disk neighbour whose file does
not fit in its filesystem's free space, a network neighbour sent to a host the inventory does not have (or to
this machine's loopback from a container or an ssh: host), a database neighbour's port that the variant, another
database neighbour or something on this machine already uses, a neighbour on this machine (`host`, `docker`) of a
variant whose server runs on an ssh: host, a name given twice to one variant's neighbours, a `placement: docker`
with no Docker daemon answering, a `placement: kubernetes` beside a server that is not a pod or on a cluster that
cannot hold it (the variant's backend checks its cluster), a `placement: ssh` (or a network neighbour's `to`) on a
host that is not in `hosts:`, is this machine, does not answer or lacks the tool. `prepare_neighbours` builds the
containers' image once, after every check passed."""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from layerbench.backends.registry import container_engine
from layerbench.backends.variant_base import VariantBase
from layerbench.campaign.models import Campaign
from layerbench.errors import BadInput, PrerequisiteMissing, shown
from layerbench.hosts.inventory import Host
from layerbench.hosts.machine import check_cpus, total_memory
from layerbench.hosts.placement import placement_of
from layerbench.hosts.workdirs import work_root
from layerbench.neighbours.model import WORKERS_PER_CPU, Neighbour
from layerbench.neighbours.network import listening
from layerbench.run.neighbour_database import CONFIG as NEIGHBOUR_SERVER_CONFIG
from layerbench.server.settings import DEFAULT_BUFFER_POOL, SERVER_MEMORY_OVERHEAD
from layerbench.vocabulary.sizes import byte_text, size_in_bytes, tool_size_bytes


def check_neighbours(campaign: Campaign) -> None:
    for variant in campaign.variants:
        neighbours = campaign.neighbours_of(variant)
        names = [n.name for n in neighbours]
        for neighbour in neighbours:
            where = f"variants.{variant.name}.neighbours.{neighbour.name}"
            if names.count(neighbour.name) > 1:
                raise BadInput(f"{where}: the campaign's and the variant's neighbours both use this name; "
                               "rename one")
            check_beside_a_remote_server(campaign, variant, neighbour, where)
            check_neighbour(campaign, variant, neighbour, where)
        check_database_ports(variant, neighbours)
        check_pod_neighbours(variant, [n for n in neighbours if n.placement == "kubernetes"])
        here = [n for n in neighbours if n.placement != "ssh"]  # on this machine, beside a server here or sysbench
        check_workers_here(variant, here)
        check_memory_here(campaign, variant, here)


def load_workers(neighbour: Neighbour) -> tuple[int, str]:
    """The processes or threads a neighbour keeps busy: a cpu or memory neighbour's stress-ng workers, a database
    neighbour's sysbench threads (0 for a disk or network neighbour: one fio job, one iperf3)."""
    if neighbour.kind in ("cpu", "memory"):
        return neighbour.worker_count, f"{neighbour.name} {neighbour.worker_count} worker(s)"
    if neighbour.kind == "database":
        return neighbour.database_threads, f"{neighbour.name} {neighbour.database_threads} thread(s)"
    return 0, ""


def check_workers_here(variant: VariantBase, here: list[Neighbour]) -> None:
    """The load workers of a variant's neighbours on this machine, its campaign's included, in all: at most
    WORKERS_PER_CPU per CPU, as each neighbour alone (more swamp the CPUs the run measures)."""
    counted = [load_workers(n) for n in here]
    total, cpus = sum(count for count, _ in counted), len(os.sched_getaffinity(0))
    if total > cpus * WORKERS_PER_CPU:
        parts = " + ".join(words for count, words in counted if count)
        raise BadInput(f"variants.{variant.name}.neighbours: {parts} = {total} load workers on this machine's {cpus} "
                       f"CPUs, the campaign's neighbours included; at most {cpus * WORKERS_PER_CPU} "
                       f"({WORKERS_PER_CPU} per CPU) in all: use fewer workers or threads")


def neighbour_memory(neighbour: Neighbour) -> tuple[int, str]:
    """The memory a neighbour takes: a memory neighbour's workers x size, a database neighbour's own server (its
    buffer pool + the server's overhead); a cpu, disk or network neighbour next to nothing."""
    if neighbour.kind == "memory":
        size = neighbour.worker_count * tool_size_bytes(neighbour.file_size)
        return size, f"{neighbour.name} {neighbour.worker_count} x {neighbour.file_size}"
    if neighbour.kind == "database":
        pool = size_in_bytes(NEIGHBOUR_SERVER_CONFIG["innodb_buffer_pool_size"]) or 0
        return pool + SERVER_MEMORY_OVERHEAD, f"{neighbour.name}'s server {byte_text(pool + SERVER_MEMORY_OVERHEAD)}"
    return 0, ""


def check_memory_here(campaign: Campaign, variant: VariantBase, here: list[Neighbour]) -> None:
    """The memory of a variant's neighbours on this machine, its campaign's included, and of its server when that
    runs here too (its memory limit, else its buffer pool + the server's overhead), in all: within this machine's
    memory (more and a run swaps, or the kernel kills a process of it)."""
    counted = [neighbour_memory(n) for n in here]
    if not any(size for size, _ in counted):
        return
    entry = (campaign.hosts or {}).get(placement_of(campaign.hosts, variant).server_host)
    server = 0
    if variant.owns_server and (entry is None or entry.local):
        pool = variant.server.buffer_pool_bytes() or DEFAULT_BUFFER_POOL
        server = variant.memory_limit_bytes() or pool + SERVER_MEMORY_OVERHEAD + variant.guest_memory
    total, machine = sum(size for size, _ in counted) + server, total_memory()
    if machine and total > machine:
        server_words = [f"the server {byte_text(server)}"] if server else []
        parts = " + ".join([words for size, words in counted if size] + server_words)
        raise BadInput(f"variants.{variant.name}.neighbours: {parts} = {byte_text(total)} of memory, more than "
                       f"this machine's {byte_text(machine)}, the campaign's neighbours included; use smaller sizes "
                       "or fewer workers")


def check_beside_a_remote_server(campaign: Campaign, variant: VariantBase, neighbour: Neighbour, where: str) -> None:
    """A server on an ssh: host has its neighbours there: `placement: ssh` on that host. `host` (this machine) or
    `docker` (this machine's daemon) would not be beside it, so they are refused with what to write instead."""
    server = placement_of(campaign.hosts, variant).server_host
    entry = (campaign.hosts or {}).get(server)
    if entry is None or entry.local or neighbour.placement == "ssh":
        return
    raise BadInput(f"{where}.placement: {neighbour.placement}: the server of {variant.name} runs on the ssh: host "
                   f"{server}, and this would run on this machine, not beside it; write placement: ssh, host: "
                   f"{server}")


def check_database_ports(variant: VariantBase, neighbours: list[Neighbour]) -> None:
    """A database neighbour's `port` is not the variant's own (an external server's), not another database
    neighbour's, and not in use on this machine now."""
    taken = {variant.fixed_port(): "the variant's server"}
    for neighbour in (n for n in neighbours if n.kind == "database" and n.port):
        where = f"variants.{variant.name}.neighbours.{neighbour.name}.port"
        if neighbour.port in taken:
            raise BadInput(f"{where}: {neighbour.port} is already {taken[neighbour.port]}'s port; choose another or "
                           "remove port (a free one is taken)")
        if listening(int(neighbour.port)):
            raise BadInput(f"{where}: {neighbour.port} is in use on this machine; choose another or remove port "
                           "(a free one is taken)")
        taken[neighbour.port] = f"neighbour {neighbour.name}"


def check_neighbour(campaign: Campaign, variant: VariantBase, neighbour: Neighbour, where: str) -> None:
    cpus = len(os.sched_getaffinity(0))
    if neighbour.workers and neighbour.workers > cpus * WORKERS_PER_CPU:
        raise BadInput(f"{where}.workers: {neighbour.workers} workers on a machine of {cpus} CPUs; use at most "
                       f"{cpus * WORKERS_PER_CPU} ({WORKERS_PER_CPU} per CPU)")
    if neighbour.placement == "ssh":
        check_ssh_placement(campaign, neighbour, where)
        if neighbour.kind == "network":
            check_target(campaign, neighbour, where)
        return  # its CPUs, room and tool are the ssh: host's
    check_cpus(neighbour.cpus, f"{where}.cpus")
    if neighbour.placement == "docker":
        check_docker_placement(where)
    if neighbour.kind == "disk":
        check_disk_room(variant, neighbour, where)
    if neighbour.kind == "network":
        check_target(campaign, neighbour, where)
    if neighbour.kind == "database":
        check_database_programs(where)


def check_disk_room(variant: VariantBase, neighbour: Neighbour, where: str) -> None:
    folder = Path(neighbour.folder or variant.data_dir or work_root())
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if neighbour.folder and not folder.is_dir():
        raise BadInput(f"{where}.folder: {shown(str(folder))} is not a folder here; create it or name another")
    free, wanted = shutil.disk_usage(existing).free, tool_size_bytes(neighbour.file_size)
    if wanted > free:
        raise BadInput(f"{where}.size: {neighbour.file_size} does not fit in the {byte_text(free, 'MiB', ',.0f')} "
                       f"free on {existing}; use a smaller size or another folder")


def check_target(campaign: Campaign, neighbour: Neighbour, where: str) -> None:
    """`to`: loopback, or a host of `hosts:`: this machine at an address its client can reach (not loopback for a
    client in a container or on an ssh: host), or an ssh: host that answers and has iperf3 (its peer runs there)."""
    to = neighbour.to or "loopback"
    hosts = campaign.hosts or {}
    if to == "loopback":
        return
    if to not in hosts:
        known = ", ".join(["loopback", *sorted(hosts)])
        raise BadInput(f"{where}.to: {shown(to)} is not a host of `hosts:`; use one of: {known}")
    entry = hosts[to]
    if entry.local:
        if neighbour.placement != "host" and (entry.address or "127.0.0.1").startswith("127."):
            raise BadInput(f"{where}.to: {to} is this machine at a loopback address, which a client in "
                           f"{'a container' if neighbour.placement == 'docker' else 'another host'} cannot reach; "
                           f"give hosts.{to}.address (this machine's address on a network it reaches)")
        return
    if to == neighbour.host:
        return  # its own host, checked (iperf3 there) by check_ssh_placement
    check_remote_tool(to, Host(to, entry), "iperf3", f"{where}.to")


def check_remote_tool(name: str, host: Host, tool: str, where: str, taskset: bool = False) -> None:
    """The ssh: host answers and has `tool` (and taskset when asked) on its PATH."""
    host.check_files()
    host.check()
    needs = " && ".join(f"command -v {t} >/dev/null" for t in (tool, *(["taskset"] if taskset else [])))
    if host.shell(needs, name=f"tools on {name}", timeout=30).returncode != 0:
        raise BadInput(f"{where}: {name} has no {tool}{' or taskset' if taskset else ''} on its PATH; "
                       f"install it there (apt-get install {tool})")


def check_database_programs(where: str) -> None:
    """A database neighbour runs this machine's server and sysbench."""
    from layerbench.server.servers import ServerChoice, resolve_server

    if shutil.which("sysbench") is None:
        raise BadInput(f"{where}.kind: database: sysbench is not installed here; install it (scripts/setup does it)")
    try:
        resolve_server(ServerChoice("neighbour"))
    except (BadInput, PrerequisiteMissing) as error:
        raise BadInput(f"{where}.kind: database: {error}") from None


def check_docker_placement(where: str) -> None:
    """A container needs a Docker daemon that answers (`validate` asks it, creating nothing)."""
    try:
        container_engine("docker").check()
    except PrerequisiteMissing as error:
        raise BadInput(f"{where}.placement: docker: {error}; or use placement: host") from None


TOOLS = {"cpu": "stress-ng", "memory": "stress-ng", "disk": "fio", "network": "iperf3", "database": "sysbench"}


def check_ssh_placement(campaign: Campaign, neighbour: Neighbour, where: str) -> None:
    """The named host is an ssh: host of the inventory, answers, and has the neighbour's tool (and taskset)."""
    hosts = campaign.hosts or {}
    name = neighbour.host or ""
    remote = sorted(n for n, e in hosts.items() if not e.local)
    if name not in hosts:
        raise BadInput(f"{where}.host: {shown(name)} is not a host of `hosts:`; use one of: "
                       f"{', '.join(remote) or 'none (add the ssh: host to hosts:)'}")
    if hosts[name].local:
        raise BadInput(f"{where}.host: {shown(name)} is this machine; use placement: host for it")
    check_remote_tool(name, Host(name, hosts[name]), TOOLS[neighbour.kind], f"{where}.host", bool(neighbour.cpus))


def prepare_neighbours(campaign: Campaign, say: Callable[[str], None]) -> None:
    """Once per campaign, after every check: the containers' image, when a neighbour runs in Docker, and on the
    nodes of each variant whose neighbours run in pods (its backend imports it there)."""
    if any(n.placement == "docker" for v in campaign.variants for n in campaign.neighbours_of(v)):
        container_engine("docker").prepare_neighbours(say)
    for variant in campaign.variants:
        if variant.pod_neighbours and any(n.placement == "kubernetes" and n.image is None  # image: pulled by nodes
                                          for n in campaign.neighbours_of(variant)):
            importlib.import_module(variant.pod_neighbours).ensure_neighbour_image_on_nodes(variant, say)


def check_pod_neighbours(variant: VariantBase, pods: list[Neighbour]) -> None:
    """Pods beside the server need a server in a pod; its backend checks its cluster (answers, node, room)."""
    if not pods:
        return
    if variant.pod_neighbours is None:
        raise BadInput(f"variants.{variant.name}.neighbours.{pods[0].name}.placement: kubernetes puts a pod on the "
                       f"server pod's node, and the server of {variant.name} is not a pod (backend "
                       f"{variant.backend}); use placement: host or docker, or a kubernetes variant")
    importlib.import_module(variant.pod_neighbours).check_neighbour_pods(variant, pods)
