"""What a campaign would do, before it does it: per variant what is created, per workload the runs, where the
results go, the first-time costs, and a time estimate calibrated on this machine's past runs when the store has
them ("estimate from N past runs"), else from fixed per-backend overheads ("rough estimate").

A past run's cost is the time from the previous run's end to its own end in the same campaign (start, restore,
warm-up, measurement, checks, stop); minus its warm-up and duration that leaves the overhead of its backend, of
which the median is used. The store is opened read-only and never created here.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from layerbench.campaign.models import (
    BusyPolicy,
    Campaign,
    DockerVariant,
    ExternalVariant,
    HostVariant,
    KubernetesVariant,
    VariantBase,
    VMVariant,
    Workload,
)
from layerbench.hosts.inventory import LOCAL, HostEntry
from layerbench.hosts.placement import network_path, placement_of
from layerbench.neighbours.plan import neighbour_lines
from layerbench.run.schedule import build_schedule
from layerbench.sysbench.custom_script import dataset_label

# Seconds a run costs beyond warm-up and duration (start, restore, checks, stop), per backend, measured here.
RUN_OVERHEAD = {"host": 4, "external": 2, "docker": 8, "vm": 20, "kubernetes": 8}
PREPARE_ROWS_PER_SECOND = 40_000
MIN_SAMPLES = 3  # past runs of a backend needed before its median replaces the fixed overhead
# First-time costs, measured on this project's 2-core machine (docs/backends/*.md give the details).
IMAGE_BUILD_SECONDS = 120  # 106 s measured here (debootstrap, packages, docker import)
VM_BOOT_FILES_SECONDS = 60
K8S_COLD_BUILD_SECONDS = 310

DOCKER_NETWORK = {  # where the packets go is said by the variant's path (placement.network_path)
    "bridge": "bridge network, port published",
    "bridge-direct": "a bridge network of its own",
    "host": "the host's network",
}
DOCKER_STORAGE = {
    "volume": "datadir on a named volume", "bind": "datadir on a bind-mounted host folder",
    "data-container": "datadir on a volume of a data-only container", "container-fs": "datadir in the overlay layer",
    "tmpfs": "datadir in memory (tmpfs)",
}
VM_NETWORK = {"user": "QEMU user networking", "tap": "a tap device on a bridge"}


@dataclass(frozen=True)
class Plan:
    runs: int
    seconds: float
    lines: list[str]
    past_runs: int = 0  # past runs the estimate is calibrated on; 0: a rough estimate
    rough_backends: list[str] = field(default_factory=list)

    def estimate_text(self) -> str:
        minutes = f"about {max(1, round(self.seconds / 60))} min"
        if not self.past_runs:
            return f"{minutes} (rough estimate: no past runs of these backends in the store)"
        rough = f"; rough for {', '.join(self.rough_backends)}" if self.rough_backends else ""
        return f"{minutes} (estimate from {self.past_runs} past runs on this machine{rough})"


# --- what each variant creates ---------------------------------------------------------------------------------


def host_words(hosts: dict[str, HostEntry] | None, name: str) -> str:
    """A host as the plan names it: this machine (by `local` or a `local: true` name) or one reached over SSH."""
    entry = (hosts or {}).get(name)
    if entry is None or name == LOCAL:
        return "this machine"
    return f"host {name} (this machine, no SSH)" if entry.local else f"host {name} ({entry.ssh}, over SSH)"


def client_words(variant: VariantBase) -> str | None:
    """Where sysbench runs when that is not simply a host: a container or a Job; None otherwise."""
    client = getattr(variant, "client", "host")
    if client == "container":
        return "sysbench in a container of its own on the server's Docker daemon"
    if client == "job":
        return "sysbench as a Job in the cluster"
    return None


def path_text(hosts: dict[str, HostEntry] | None, variant: VariantBase) -> str:
    """Which host runs the server, which runs sysbench (over SSH or not), and the network path between them: the
    same placement and words each run records (placement.py), so the preview cannot say another path."""
    place = placement_of(hosts, variant)
    path = network_path(variant, place)
    client = client_words(variant)
    server = host_words(hosts, place.server_host)
    if isinstance(variant, ExternalVariant):
        return f"sysbench on {host_words(hosts, place.client_host)}: {path}"
    if isinstance(variant, KubernetesVariant):
        where = f"server in the cluster, {client or 'sysbench on ' + host_words(hosts, place.client_host)}"
    elif client is not None:
        where = f"server on {server}, {client}"
    elif place.server_host == place.client_host:
        where = f"server and sysbench on {server}"
    else:
        where = f"server on {server}, sysbench on {host_words(hosts, place.client_host)}"
    return f"{where}: {path}"


def cpus_text(variant: VariantBase) -> str:
    parts = [f"server CPUs {variant.cpus}" if variant.cpus else "",
             f"sysbench CPUs {variant.client_cpus}" if variant.client_cpus else ""]
    return "; ".join(p for p in parts if p)


def host_line(v: HostVariant) -> str:
    if v.server.flavour == "mysql":
        return (f"a private MySQL {v.server.version or '9.7'} (mysqld of the cached rootfs, a plain host process; "
                "free port), its own datadir copy")
    return f"a private {v.mysqld or 'mariadbd'} (free port), its own datadir copy"


def external_line(v: ExternalVariant) -> str:
    return f"nothing: uses the server at {v.host}:{v.port}, database {v.database} as {v.user}"


def docker_line(v: DockerVariant) -> str:
    limits = [f"{k}={val}" for k, val in v.resources.model_dump(exclude_none=True).items()]
    limits += [f"qos preset {v.qos}"] if v.qos else []
    return (f"a container of {v.image or 'the local layerbench image'}; {DOCKER_NETWORK[v.network]}; "
            f"{DOCKER_STORAGE[v.storage]}; limits: {', '.join(limits) or 'none'}")


def vm_line(v: VMVariant) -> str:
    accel = {"auto": "KVM if it works, else TCG (emulated, marked)", "kvm": "KVM", "tcg": "TCG (emulated)"}[v.accel]
    return (f"a QEMU VM, {v.vcpus} vCPU(s), {v.memory} memory, {accel}; disk cache {v.disk_cache}; "
            f"{VM_NETWORK[v.network]}")


def kubernetes_line(v: KubernetesVariant) -> str:
    resources = ", ".join(f"{kind} {k}={val}" for kind, values in (("requests", v.requests), ("limits", v.limits))
                          for k, val in values.items())
    where = v.context or ("the local cluster (scripts/k8s-local)" if v.kubeconfig is None else v.kubeconfig)
    kind = "a StatefulSet's pod" if v.kind == "statefulset" else "a bare pod"
    return (f"a namespace on {where} with {kind}, QoS {v.qos}{'; ' + resources if resources else ''}; "
            f"storage {v.storage}")


DESCRIBE: dict[type, Callable[[Any], str]] = {
    HostVariant: host_line, ExternalVariant: external_line, DockerVariant: docker_line, VMVariant: vm_line,
    KubernetesVariant: kubernetes_line,
}


def variant_line(variant: VariantBase, hosts: dict[str, HostEntry] | None = None) -> str:
    """What the variant creates (its backend's words), then where each part runs and the path (its placement)."""
    kind = getattr(variant, "backend", "?")
    describe = DESCRIBE.get(type(variant))
    text = describe(variant) if describe else kind
    config = ", ".join(f"{k}={val}" for k, val in variant.server.config.items())
    where = f"datadir in {variant.data_dir}" if variant.data_dir else ""
    extra = "; ".join(p for p in (path_text(hosts, variant), cpus_text(variant), where,
                                  f"my.cnf: {config}" if config else "") if p)
    return f"variant {variant.name} ({kind}): {text}; {extra}"


def rounds_text(campaign: Campaign) -> str:
    """`10 repetitions`, or for repetitions: auto the most it may run."""
    spec = campaign.repetitions
    if isinstance(spec, int):
        return f"{spec} repetitions"
    budget = f", budget {spec.budget}" if spec.budget else ""
    return f"up to {spec.max} repetitions (auto: from {spec.min}, stops when all are decided{budget})"


def workload_line(campaign: Campaign, workload: Workload) -> str:
    threads = ", ".join(str(t) for t in workload.threads)
    runs = len(workload.threads) * campaign.rounds * len(campaign.variants)
    return (f"workload {workload.name}: {workload.test}, {dataset_label(workload)}, threads "
            f"{threads} x {rounds_text(campaign)} x {len(campaign.variants)} variants = {runs} runs of "
            f"{workload.warmup} s warm-up + {workload.duration} s; reset {workload.reset}")


# --- calibration on past runs -----------------------------------------------------------------------------------


def past_overheads(store: Path) -> dict[str, list[float]]:
    """Per backend, the overheads of the past runs in `store` (read-only; a missing store has none)."""
    if not store.is_file():
        return {}
    try:
        db = sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True)
        try:
            campaigns = dict(db.execute("SELECT id, definition FROM campaigns").fetchall())
            rows = db.execute("SELECT campaign_id, variant, workload, finished_at FROM runs WHERE status='ok' AND "
                              "finished_at IS NOT NULL ORDER BY campaign_id, finished_at").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return {}
    found: dict[str, list[float]] = {}
    for previous, row in pairwise(rows):
        if previous[0] == row[0]:
            backend, overhead = run_overhead(json.loads(campaigns[row[0]]), row[1], row[2], row[3] - previous[3])
            if backend is not None:
                found.setdefault(backend, []).append(overhead)
    return found


def run_overhead(definition: dict[str, Any], variant: str, workload: str, gap: float) -> tuple[str | None, float]:
    backend = next((v.get("backend") for v in definition.get("variants", []) if v.get("name") == variant), None)
    work = next((w for w in definition.get("workloads", []) if w.get("name") == workload), None)
    if backend is None or work is None:
        return None, 0.0
    measured = float(work.get("warmup", 0)) + float(work.get("duration", 0))
    if not 0 <= gap - measured < 10 * measured + 600:  # a resume or a pause between runs, not a run's cost
        return None, 0.0
    return str(backend), gap - measured


# --- first-time costs -------------------------------------------------------------------------------------------


def first_time_costs(campaign: Campaign) -> list[tuple[str, float]]:
    """(what, seconds) of what is built once and cached, for what is not cached yet on this machine."""
    from layerbench.server.image import rootfs_path

    kinds = {getattr(v, "backend", "") for v in campaign.variants}
    costs: list[tuple[str, float]] = []
    needs_image = any(isinstance(v, DockerVariant | KubernetesVariant) and v.image is None
                      for v in campaign.variants) or "vm" in kinds
    if needs_image and not rootfs_path().exists():
        costs.append(("the server image, built once from Debian packages (debootstrap + MariaDB; "
                      "`layerbench image build`)", IMAGE_BUILD_SECONDS))
    if "vm" in kinds and not vm_boot_files_cached():
        costs.append(("the VM's kernel and initramfs, built once from Debian packages", VM_BOOT_FILES_SECONDS))
    if any(isinstance(v, KubernetesVariant) and v.kubeconfig is None and v.context is None
           for v in campaign.variants) and not local_cluster_built():
        costs.append(("the local Kubernetes cluster, built once: run `scripts/k8s-local up` before `run` "
                      "(docs/backends/kubernetes-local.md)", K8S_COLD_BUILD_SECONDS))
    return costs


def vm_boot_files_cached() -> bool:
    from layerbench.server.vmimage import vm_cache

    folder = vm_cache()
    return folder.is_dir() and any(folder.iterdir())


def local_cluster_built() -> bool:
    from layerbench.hosts.workdirs import cache_dir

    folder = cache_dir() / "k8s"
    return folder.is_dir() and any(folder.iterdir())


def prepare_rate() -> tuple[float, str]:
    """Rows per second of a prepare here: the median of the snapshots this machine prepared, else a default."""
    from layerbench.server.snapshot import prepare_rates

    rates = prepare_rates()
    if not rates:
        return PREPARE_ROWS_PER_SECOND, "a rough default"
    return statistics.median(rates), f"measured on {len(rates)} cached dataset{'s' * (len(rates) > 1)}"


def dataset_lines(campaign: Campaign) -> tuple[list[str], float]:
    """One line per dataset: cached, or prepared once (and its time); re-prepared workloads cost every run."""
    from layerbench.run.orchestrator import page_size_of
    from layerbench.server.snapshot import dataset_key, find_snapshot, server_version

    version = server_version()
    page_sizes = sorted({page_size_of(v) for v in campaign.variants}, key=str)
    rate, basis = prepare_rate()
    lines, seconds = [], 0.0
    for w in campaign.workloads:
        prepare = w.tables * w.table_size / rate
        if w.reset == "reprepare" and w.is_lua_path:
            lines.append(f"dataset {w.name}: prepared again by the script before every run (reset: reprepare; "
                         "time not estimated)")
        elif w.reset == "reprepare":
            runs = len(w.threads) * campaign.rounds * len(campaign.variants)
            lines.append(f"dataset {w.name}: prepared again before every run (reset: reprepare), ~{prepare:.0f} s each")
            seconds += prepare * runs
        elif w.reset == "none":
            lines.append(f"dataset {w.name}: not touched (reset: none); the server's own tables are used")
        elif all(find_snapshot(dataset_key(w, version, size)[0]) is not None for size in page_sizes):
            lines.append(f"dataset {w.name}: {dataset_label(w)}, cached (layerbench cache list)")
        elif w.is_lua_path:
            lines.append(f"dataset {w.name}: {dataset_label(w)}, prepared once by the script (time not "
                         "estimated), then cached")
        else:
            lines.append(f"dataset {w.name}: {w.tables} x {w.table_size:,} rows, prepared once "
                         f"(~{max(1, round(prepare))} s at {rate:,.0f} rows/s, {basis}), then cached")
            seconds += prepare
    return lines, seconds


# --- the plan -----------------------------------------------------------------------------------------------------


def busy_line(campaign: Campaign) -> str:
    """What happens to a run measured while the machine was busy (campaign `busy:`, analysis/busy.py)."""
    policy = campaign.busy_policy
    source = "" if campaign.busy is not None or policy == BusyPolicy() else ", from LAYERBENCH_BUSY"
    if policy.policy == "rerun":
        return (f"busy runs: replaced by reruns at the end of their round, at most "
                f"{policy.reruns_allowed(campaign.planned_runs)} (busy: rerun{source}; not in the time above)")
    return f"busy runs: kept and flagged (busy: keep{source})" if policy.policy == "keep" else \
        f"busy runs: the first one stops the campaign (busy: fail{source})"


def make_plan(campaign: Campaign, store: Path | None = None) -> Plan:
    schedule = build_schedule(campaign)
    kinds = {v.name: getattr(v, "backend", "host") for v in campaign.variants}
    past = past_overheads(store) if store is not None else {}
    used = sorted(set(kinds.values()))
    calibrated = {k: statistics.median(past[k]) for k in used if len(past.get(k, [])) >= MIN_SAMPLES}
    seconds = sum(campaign.workload(s.workload).warmup + campaign.workload(s.workload).duration
                  + calibrated.get(kinds[s.variant], RUN_OVERHEAD.get(kinds[s.variant], 5)) for s in schedule)
    data_lines, prepare_seconds = dataset_lines(campaign)
    costs = first_time_costs(campaign)
    lines = [variant_line(v, campaign.hosts) for v in campaign.variants]
    lines += neighbour_lines(campaign)  # neighbours/plan.py (#32)
    lines += [workload_line(campaign, w) for w in campaign.workloads] + data_lines
    lines += [f"first time: {what} (~{cost / 60:.0f} min)" for what, cost in costs]
    lines.append(busy_line(campaign))
    lines.append(f"output: reports in {Path(campaign.output) / '<id>-'}{campaign.name}/, runs stored in "
                 f"{store if store is not None else Path(campaign.output) / 'layerbench.db'}")
    past_runs = sum(len(past[k]) for k in calibrated)
    rough = [k for k in used if k not in calibrated] if calibrated else []
    total = seconds + prepare_seconds + sum(cost for _, cost in costs)
    return Plan(len(schedule), total, lines, past_runs, rough)
