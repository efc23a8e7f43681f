"""One run: bring a server up for one variant on a freshly restored dataset, run sysbench's warm-up and
measurement against it while sampling resources, and take everything down again, whatever happens. The
campaign loop (orchestrator.py) hands each run a `RunContext` and stores the `RunRecord` it returns."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from layerbench.backends import Backend, ServerSpec, make_backend
from layerbench.backends.registry import container_engine
from layerbench.backends.variant_base import VariantBase
from layerbench.campaign.models import Campaign
from layerbench.campaign.workload import Workload
from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.hosts import owners, procfs
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.inventory import Host, Hosts
from layerbench.hosts.placement import placement_of
from layerbench.hosts.procs import Completed
from layerbench.hosts.workdirs import work_root
from layerbench.measure import environment
from layerbench.measure.cpu import LOCAL_LOAD, ResourceSampler, wait_for_quiet
from layerbench.measure.io import IoWindow, ServerStatus, WindowMarks
from layerbench.measure.remote_cpu import RemoteCpuWindow, ServerCpuWindow, host_load
from layerbench.neighbours.running import NeighboursRunning
from layerbench.paths import slug
from layerbench.records import Environment, QuietWait, Reset, RunRecord, Usage
from layerbench.run.harness import harness_cpus, pinned
from layerbench.run.pgbench_run import PgbenchRun, record_pgbench
from layerbench.run.reach import ClientPath, client_path, reach_record
from layerbench.run.schedule import RunSpec
from layerbench.secrets import generate_password, redact, write_private
from layerbench.server.datadir import connection_failure
from layerbench.server.manifest import SnapshotCorrupt
from layerbench.server.prepare import PrepareProgress, prepare_tables
from layerbench.server.settings import ConfigValue
from layerbench.server.snapshot import Snapshot
from layerbench.server.spec import DatasetRequest, HostDatasets
from layerbench.server.tables import existing_tables, table_names
from layerbench.server.verify import check_snapshot_files, restore_record, verify_by_checksum
from layerbench.sysbench.client import ClientRunner, HostClient
from layerbench.sysbench.command import config_file_text, hook_script, run_argv
from layerbench.sysbench.custom_script import dataset_label
from layerbench.sysbench.output import parse_mark_records, parse_output


class Progress(Protocol):
    """What the orchestrator tells whoever watches (the CLI draws it with Rich; tests ignore it)."""

    def message(self, text: str) -> None: ...
    def campaign_started(self, campaign_id: int, total: int, done: int, seconds_per_run: float) -> None: ...
    def run_started(self, spec: RunSpec, position: int, total: int) -> None: ...
    def interval(self, spec: RunSpec, tps: float, elapsed: float) -> None: ...
    def run_finished(self, spec: RunSpec, record: RunRecord) -> None: ...


def buffer_pool_bytes(percent: str, data_bytes: int) -> int:
    """A buffer pool as a share of the measured data size, in whole MiB, at least 8 MiB."""
    wanted = float(percent.strip().rstrip("%")) / 100.0 * data_bytes
    return max(8, round(wanted / 2**20)) * 2**20


@dataclass
class RunContext:
    """What every run of one campaign shares: the campaign, its hosts and their survey, where runs write, the
    dataset snapshots (prepared once, cached), and who watches."""

    campaign: Campaign
    campaign_id: int
    output_dir: Path
    token: str  # makes this harness's resource names unique
    hosts: Hosts
    progress: Progress
    snapshot_for: Callable[[Workload, VariantBase, Path, Callable[[], Snapshot] | None], Snapshot]
    survey: dict[str, Any] = field(default_factory=dict)


class RunExecution:
    """One scheduled run, executed once by `execute()`; `snapshot_corrupt` says whether it failed because the
    cached dataset snapshot was damaged (the campaign loop then rebuilds it and runs this spec again)."""

    def __init__(self, context: RunContext, spec: RunSpec, quiet_first: float = 0.0) -> None:
        self.ctx, self.spec = context, spec
        self.quiet_first = quiet_first  # first wait this long, at most, for quiet (the orchestrator's wait_for_run)
        self.variant = context.campaign.variant(spec.variant)
        self.workload = context.campaign.workload(spec.workload)
        self.backend: Backend = make_backend(self.variant, context.hosts)
        self.password = generate_password()
        self.private: Path | None = None
        self.snapshot_corrupt = False
        self._marks: WindowMarks | None = None  # set when sysbench starts: its totals mark the I/O window
        self.path: ClientPath | None = None  # with hosts: sysbench's path to the server (run/reach.py)
        self.work_dir = work_root() / "work"  # the variant's data_dir when it names one (set by _measure)
        self.run_dir = context.output_dir / "runs" / (
            f"{spec.idx + 1:04d}-{slug(spec.variant)}-{slug(spec.workload)}-t{spec.threads}-r{spec.repetition}")
        self.record = RunRecord(context.campaign_id, spec.variant, spec.workload, spec.threads, spec.repetition,
                                idx=spec.idx, round=spec.round, started_at=time.time(),
                                percentile=self.workload.percentile,  # a pgbench run's: set by its record
                                run_dir=str(self.run_dir),
                                warmup_seconds=float(self.workload.warmup))

    def execute(self) -> RunRecord:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        owner = f"lb{self.ctx.campaign_id}-{self.ctx.token}-{self.spec.idx + 1}-private"
        try:
            self.record.facts.quiet_wait = quiet_wait_where(self)  # before anything of this run starts
            with signals_deferred():  # holds password files: noted so that the finally below and `clean` remove it
                self.private = owners.private_folder(owner, "lb-private-")
            self._measure(self.private)
        except (RunFailed, Exception) as error:  # an unexpected error fails this run; the others go on
            self._failed(error)
        finally:
            with signals_deferred():  # a cleanup, once begun, runs to its end
                try:
                    if self.path is not None:
                        self.path.close()
                    self.backend.down()
                finally:
                    if self.private is not None:
                        shutil.rmtree(self.private, ignore_errors=True)
                    owners.forget(owner)
        self.record.finished_at = time.time()
        return self.record

    def _failed(self, error: BaseException) -> None:
        self.snapshot_corrupt = isinstance(error, SnapshotCorrupt)
        self.record.status = "failed"
        cause = str(error) if isinstance(error, RunFailed) else \
            connection_failure(error) or f"internal error: {type(error).__name__}: {error}"
        server = safe_exit_cause(self.backend)
        if server and server not in cause:
            cause += f"; the server {server}"
        self.record.error = redact(cause, [self.password])
        self.record.facts.other["server_log_tail"] = redact(safe_log_tail(self.backend), [self.password])

    # --- the measurement -----------------------------------------------------------------------------------

    def _measure(self, private: Path) -> None:
        variant, workload, record = self.variant, self.workload, self.record
        choice = self.ctx.campaign.reset_for(variant, workload)  # the variant's own, or its workload's
        label = f"lb{self.ctx.campaign_id}-{self.ctx.token}-{self.spec.idx + 1}-{slug(variant.name)}"
        keeper = self.backend.datasets_on_host()  # an ssh: host whose own server prepares the dataset
        request = dataset_request(self.ctx, variant, workload, self.run_dir, private, label,
                                  self._placed_client(f"{label}-prep")) if keeper is not None else None
        on_host = (lambda: keeper.snapshot(request)) if keeper is not None and request is not None else None
        snapshot = timed_snapshot(self.ctx, workload, variant, self.run_dir, record, on_host) \
            if choice.method == "snapshot" else None
        checked = check_snapshot(snapshot, workload, self.run_dir, keeper, request)
        self.work_dir = Path(variant.data_dir) if variant.data_dir else work_root() / "work"
        place = placement_of(self.ctx.campaign.hosts, variant)
        server_spec = ServerSpec(
            self.ctx.campaign.name, label, self.run_dir, private, self.work_dir,
            config=server_config(variant, workload, snapshot),
            password=self.password, snapshot=snapshot.path if snapshot else None,
            listen_address=place.binds, connect_address=place.listen_address, say=self.ctx.progress.message)
        started = time.monotonic()
        endpoint = self.backend.up(server_spec)
        record.facts.other["server_start_seconds"] = round(time.monotonic() - started, 3)
        record.facts.quiet_wait = record.facts.quiet_wait or quiet_wait_where(self)  # a pod off a node: now
        remote = self.backend.client() or self._placed_client(server_spec.label)  # after up()
        if self.ctx.campaign.hosts:  # sysbench's path to the server (a forward with reach: ssh)
            self.path = client_path(place, self.ctx.hosts, self.backend, endpoint, self.run_dir)
        dial = self.path.endpoint if self.path else endpoint
        method, seconds, facts = self._reset(choice.method, endpoint, snapshot, private, remote, dial)
        if snapshot is not None:
            facts |= {**restore_record(self.run_dir, self.backend.kind), **checked,
                      "buffer_pool_at_start": "cold (no dump loaded, no scan before the warm-up)"}
        record.facts.reset = Reset.of(method, seconds, facts | script_facts(workload) | {"reset_from": choice.source})
        record.facts.environment = self._environment(endpoint)
        if snapshot is not None and workload.buffer_pool:
            record.facts.buffer_pool_ratio = workload.buffer_pool
            record.facts.data_bytes = snapshot.data_bytes
        self._benchmark(endpoint, private, remote or HostClient(variant.client_cpus), dial)

    def _reset(self, wanted: str, endpoint: Endpoint, snapshot: Snapshot | None, private: Path,
               remote: ClientRunner | None, dial: Endpoint) -> tuple[str, float, dict[str, Any]]:
        """(method, seconds, the method's facts): the dataset as the variant's reset of this workload asks."""
        workload, started = self.workload, time.monotonic()
        if wanted == "none":
            return "none", time.monotonic() - started, {"tables": tables_present(endpoint, workload)}
        if snapshot is None:
            # on this host unpinned: prepare uses one thread per table, up to every CPU
            prepare_tables(workload, dial, private, self.run_dir, None, cleanup_first=True, client=remote)
            return "reprepare", time.monotonic() - started, {"prepared_by": (remote or HostClient()).where}
        prepared = snapshot.meta.get("prepared")  # where, by which binary and --version (snapshots since #42)
        return "snapshot", time.monotonic() - started, {"snapshot": snapshot.key} | (
            {"dataset_prepared": prepared} if isinstance(prepared, dict) else {})

    def _environment(self, endpoint: Endpoint) -> Environment:
        try:
            variables = environment.server_variables(endpoint, self.backend.server_sql())
        except Exception as error:  # e.g. a Job client on a cluster this host has no route to
            variables = {"_error": redact(f"{type(error).__name__}: {error}", [endpoint.password])[:300]}
        backend = self.backend.describe()  # a server on an ssh: host describes its own storage there
        storage = environment.datadir_storage(backend, self.work_dir)
        placement = run_placement(self, endpoint, backend) if self.ctx.campaign.hosts else None
        tuning = server_tuning(self.ctx, self._server_host())
        return Environment.of(environment.host_facts(), backend, variables, storage, tuning, placement)

    def _benchmark(self, endpoint: Endpoint, private: Path, client: ClientRunner, dial: Endpoint) -> None:
        workload = self.workload
        marker, launch = pgbench_launch(self, private, client, dial) if workload.is_pgbench else \
            sysbench_launch(self, private, client, dial)
        pids = lambda: self.backend.client_processes(marker)  # noqa: E731
        server_host = self.ctx.hosts[self._server_host()]
        neighbours = run_neighbours(self.ctx, self.spec, self.variant, self.run_dir, self.work_dir, self.record)
        neighbours.starters["kubernetes"] = self.backend.neighbour_pods()  # a pod beside the server (after up())
        remote_cpu, local = server_host_readers(self.ctx, self.backend, server_host, neighbours)
        sampler = ResourceSampler(local, self.backend.cgroups(), pids, interval=1.0)
        if isinstance(launch, PgbenchRun):  # two pgbench processes, each looked up as it connects
            launch.client_started = sampler.client_started
        away = harness_cpus(self.variant, os.sched_getaffinity(0), bool(self.ctx.campaign.hosts))
        with neighbours, ServerStatus(endpoint, self.backend.server_sql()) as status, pinned(away) as moved_to:
            io_window = IoWindow(sampler.components, pids, status, remote_cpu.io_reader() if remote_cpu else None)
            self._marks = WindowMarks(io_window, workload.warmup)  # counters right before and after the window
            if remote_cpu is not None:
                remote_cpu.start()
            sampler.start()
            try:
                done = launch()
            finally:
                usage = sampler.stop()
                if remote_cpu is not None:
                    remote_cpu.stop()
        usage = server_usage(replace(usage, harness_cpus=moved_to), remote_cpu, self.record.facts.other)
        if isinstance(launch, PgbenchRun):
            record_pgbench(self.record, launch, done)
        else:
            self._record_output(done.returncode, done.output)
        if self.ctx.campaign.hosts:
            usage = replace(usage, cpu_seconds=placed_cpu(usage.cpu_seconds, remote_cpu, client, self.ctx.survey,
                                                          server_host.name))
        self.record.facts.resources = usage  # CPU per 1,000 transactions: analysis/overhead.py
        self.record.facts.io = io_window.result()

    def _on_line(self, line: str) -> None:
        for rec in parse_mark_records(line):
            if rec["kind"] == "interval" and rec["interval"] > 0:
                self.ctx.progress.interval(self.spec, rec["events"] / rec["interval"], float(rec["time"]))
            elif rec["kind"] == "total" and self._marks is not None:
                self._marks.total_record()

    def _record_output(self, returncode: int, output: str) -> None:
        parsed, record = parse_output(output), self.record
        if self.variant.client_kind == "job" and record.facts.environment is not None:
            record.facts.environment = job_sysbench(record.facts.environment, output)
        record.intervals = parsed.intervals
        if returncode != 0 or parsed.totals is None:
            raise RunFailed(sysbench_failure(returncode, parsed.errors))
        record.totals = parsed.totals
        record.latency = parsed.latency
        warm = [i for i in parsed.intervals if i.time <= self.workload.warmup + 1e-6]
        record.facts.other["warmup_intervals"] = len(warm)

    # --- placement on the campaign's hosts -----------------------------------------------------------------

    def _server_host(self) -> str:
        return placement_of(self.ctx.campaign.hosts, self.variant).server_host

    def _placed_client(self, label: str) -> ClientRunner | None:
        """sysbench on the variant's client_host when that is another host than its server's; else None."""
        place = placement_of(self.ctx.campaign.hosts, self.variant)
        if not place.remote_client and self.ctx.hosts[place.client_host].is_local:
            return None
        from layerbench.hosts.remote import SSHClient

        return SSHClient(self.ctx.hosts[place.client_host], label, self.variant.client_cpus)


def run_placement(run: RunExecution, endpoint: Endpoint, backend: dict[str, Any]) -> dict[str, Any]:
    """Which host runs what, the address sysbench was given, the network path, and every host's facts."""
    dial = run.path.endpoint if run.path else endpoint  # the endpoint sysbench was given
    place = placement_of(run.ctx.campaign.hosts, run.variant)
    survey = run.ctx.survey
    facts = survey.get("facts", {})
    return {"placement": {"server_host": place.server_host, "client_host": place.client_host,
                          "endpoint": f"{dial.host}:{dial.port}", "path": run.variant.network_path(place),
                          "rtt_ms": survey.get("rtt_ms", {}).get(f"{place.client_host}->{place.server_host}"),
                          "reach": reach_record(place, backend, run.path)},
            "hosts": facts, "client_host": facts.get(place.client_host, {}),
            "server_host": facts.get(place.server_host, {})}


def sysbench_launch(run: RunExecution, private: Path, client: ClientRunner, dial: Endpoint
                    ) -> tuple[Path, Callable[[], Completed]]:
    """The measured sysbench (warm-up included) and its report hook, by which its processes are found."""
    workload, hook = run.workload, run.run_dir / "hook.lua"
    hook.write_text(hook_script(workload), encoding="utf-8")
    config = write_private(private / "sysbench.cfg", config_file_text(dial))
    cmd = run_argv(workload, config, hook, run.spec.threads)
    files = {config.name: config.read_text(encoding="utf-8"), hook.name: hook.read_text(encoding="utf-8")}
    return hook, lambda: client.run_client(cmd, files, log_path=run.run_dir / "sysbench.log",
                                           timeout=workload.warmup + workload.duration + 120, on_line=run._on_line,
                                           secrets=[dial.password])


def pgbench_launch(run: RunExecution, private: Path, client: ClientRunner, dial: Endpoint
                   ) -> tuple[Path, PgbenchRun]:
    """A pgbench workload's warm-up and measured pgbench (run/pgbench_run.py), found by its marker."""
    progress = lambda tps, elapsed: run.ctx.progress.interval(run.spec, tps, elapsed)  # noqa: E731
    launch = PgbenchRun(run.workload, dial, client, run.run_dir, private, run.spec.threads, lambda: run._marks,
                        progress)
    return launch.marker, launch


def quiet_wait_where(run: RunExecution) -> QuietWait | None:
    """Wait for quiet (wait_for_quiet, busy.wait) where the server runs: this machine, an ssh: host over its
    connection, or what the backend names (QuietLoad); None when no wait is asked, or when that machine cannot be
    read yet, so the run asks again after up() (a pod off a node: read in the pod, its idle server's own CPU not
    counted as busy)."""
    if run.quiet_first <= 0:
        return None
    load = run.backend.quiet_load()
    if load is None:
        host = run.ctx.hosts[placement_of(run.ctx.campaign.hosts, run.variant).server_host]
        load = LOCAL_LOAD if host.is_local else host_load(host)
    return None if load.read is None else wait_for_quiet(run.quiet_first, load=load)


def dataset_request(ctx: RunContext, variant: VariantBase, workload: Workload, run_dir: Path, private: Path,
                    label: str, placed: ClientRunner | None) -> DatasetRequest:
    """What the server's host needs to prepare a run's dataset: sysbench prepare runs where the run's sysbench
    does (`placed`, its client host; else this machine): the sysbench and the network path of the runs. With
    `reach: ssh` the prepare server is dialled through this machine's forward, which only this machine reaches:
    sysbench prepare then runs here (the client host's chained forward is set up per run, not for the prepare)."""
    say = ctx.progress.message
    place = placement_of(ctx.campaign.hosts, variant)
    client = placed if placed is not None and place.reach != "ssh" else HostClient()
    progress = PrepareProgress(workload.tables, say, table_size=workload.table_size)
    return DatasetRequest(workload, variant.server.page_size(), run_dir, private, label, place.listen_address,
                          client, say=say, campaign=ctx.campaign.name, on_line=progress)


def job_sysbench(env: Environment, output: str) -> Environment:
    """sysbench ran in a Job, from its image: the environment's sysbench is that one (its version line in the
    Job's log), not this machine's, which may not even be installed."""
    where = "the run's sysbench Job (its log's first line: the image's sysbench)"
    return Environment.from_json(environment.with_client_sysbench(env.to_json(), output, where))


def check_snapshot(snapshot: Snapshot | None, workload: Workload, run_dir: Path, keeper: HostDatasets | None = None,
                   request: DatasetRequest | None = None) -> dict[str, Any]:
    """Before the variant's server exists: the snapshot's files (and, with verify: checksum, its tables in a
    private server), so that nothing of the check reaches the variant's buffer pool. A snapshot kept on the
    server's host is checked there: every byte of each restore against the host's manifest, and CHECKSUM
    TABLE in a server of the variant's there."""
    if snapshot is None:
        return {}
    started = time.monotonic()
    if snapshot.host is None:
        check_snapshot_files(snapshot)
    facts: dict[str, Any] = {"verify": workload.verify}
    if workload.verify == "checksum":
        there = (lambda: keeper.checksums(snapshot, request), lambda: keeper.forget(snapshot)) \
            if keeper is not None and request is not None and snapshot.host else None
        facts |= verify_by_checksum(snapshot, workload, run_dir, there)
    return facts | {"check_seconds": round(time.monotonic() - started, 3)}


def timed_snapshot(ctx: RunContext, workload: Workload, variant: VariantBase, run_dir: Path,
                   record: RunRecord, on_host: Callable[[], Snapshot] | None = None) -> Snapshot:
    """The run's dataset snapshot (`on_host`: prepared by the server's own host); when the run waited for it (built
    now, or another build's lock), how long, for the time account (analysis/timing.py)."""
    started = time.monotonic()
    snapshot = ctx.snapshot_for(workload, variant, run_dir, on_host)
    if (waited := time.monotonic() - started) >= 1:
        record.facts.other["dataset_seconds"] = round(waited, 3)
    return snapshot


def run_neighbours(ctx: RunContext, spec: RunSpec, variant: VariantBase, run_dir: Path, work_dir: Path,
                   record: RunRecord) -> NeighboursRunning:
    """The run's neighbours (#32, docs/neighbours.md): started before the warm-up, stopped after the measured
    window, their record then written into the run's facts (records/neighbours.py)."""
    label = f"lb{ctx.campaign_id}-{ctx.token}-{spec.idx + 1}"
    neighbours = ctx.campaign.neighbours_of(variant)
    containers = container_engine("docker").start_neighbour if any(n.placement == "docker" for n in neighbours) \
        else None
    databases = None
    if any(n.kind == "database" for n in neighbours):
        from layerbench.run.neighbour_database import start_database_neighbour

        databases = start_database_neighbour
    running = NeighboursRunning(neighbours, run_dir, label, work_dir, ctx.campaign.hosts, campaign=ctx.campaign.name,
                                containers=containers, databases=databases)
    running.facts = record.facts.other
    return running


def server_host_readers(ctx: RunContext, backend: Backend, server_host: Host, neighbours: NeighboursRunning
                        ) -> tuple[ServerCpuWindow | None, Callable[[], dict[str, list[int]]]]:
    """The CPU readers of the server's host: over SSH for an ssh: host (its components: the backend's and the
    neighbours placed there), the backend's own where this machine cannot see the server (a pod off its node),
    and the components of the local sampler. On a kernel other hosts of the campaign share (the namespace lab),
    their processes are read as `other@<host>` (hosts/remote.py:kernel_sharers)."""
    from layerbench.hosts.forward import source_ports
    from layerbench.hosts.remote import kernel_sharers

    if (window := backend.server_cpu_window()) is not None:
        return window, neighbours.with_components(backend.components)
    sharers = kernel_sharers(ctx.survey.get("facts", {}), server_host.name) if ctx.campaign.hosts else {}
    if not server_host.is_local:
        on_host = lambda: {**backend.components(), **neighbours.on_host(server_host.name)}  # noqa: E731
        ports = lambda: source_ports(server_host.name)  # noqa: E731
        return RemoteCpuWindow(server_host, on_host, sharers, ports), neighbours.with_components(dict)
    placed = neighbours.with_components(backend.components)
    return None, lambda: {**placed(), **{f"other@{name}": procfs.in_net_namespace(namespace)
                                         for name, namespace in sorted(sharers.items())}}


def server_tuning(ctx: RunContext, name: str) -> dict[str, Any]:
    """The tuning facts of the server's host: read there by the survey for an ssh: host (hosts/remote.py)."""
    from layerbench.hosts.remote import host_tuning

    if ctx.hosts[name].is_local:
        return environment.tuning_facts()
    return host_tuning(ctx.survey.get("facts", {}).get(name, {})) | {"read_on": name}


def server_usage(usage: Usage, remote_cpu: ServerCpuWindow | None, other: dict[str, Any]) -> Usage:
    """The run's Usage with the figures of the server's host or node where they were read there, and in `other`
    (the run's facts) what that reader says about itself (a pod's: `server_cpu`)."""
    if remote_cpu is None:
        return usage
    if read_where := remote_cpu.facts():
        other["server_cpu"] = read_where
    return remote_cpu.usage_of(usage)


def placed_cpu(cpu: dict[str, float], remote_cpu: ServerCpuWindow | None, client: ClientRunner,
               survey: dict[str, Any], server_host: str) -> dict[str, float]:
    """CPU seconds per component named with its host: the server host's (read there when it is an ssh: host),
    and sysbench's on its own host when it ran elsewhere."""
    from layerbench.hosts.remote import SSHClient, placed_usage

    remote = client if isinstance(client, SSHClient) else None
    server_cpu = remote_cpu.result() if isinstance(remote_cpu, RemoteCpuWindow) else cpu  # a pod's: in cpu
    return placed_usage(server_cpu, server_host, remote, same_kernel(survey, remote, server_host))


def same_kernel(survey: dict[str, Any], client: Any, server_host: str) -> bool:
    """Whether a remote client's host runs the server host's kernel (the lab's namespaces): the server host's
    machine-wide `other` then holds the client's CPU too."""
    if client is None:
        return False
    facts = survey.get("facts", {})
    server_boot = facts.get(server_host, {}).get("boot_id") or \
        procfs.read("/proc/sys/kernel/random/boot_id").strip()
    return bool(facts.get(client.host.name, {}).get("boot_id") == server_boot)


def tables_present(endpoint: Endpoint, workload: Workload) -> dict[str, int]:
    """With reset: none: the server's tables of the workload (a built-in test's missing table fails the run)."""
    tables = existing_tables(endpoint, workload)
    missing = [name for name in table_names(workload) if name not in tables]
    if missing and not workload.is_lua_path:  # a script of the user's may make its own tables
        raise RunFailed(f"reset none: the server holds {len(tables)} of the workload's {len(table_names(workload))} "
                        f"tables (missing {', '.join(missing[:3])}{'...' if len(missing) > 3 else ''}); "
                        f"prepare them with {workload.tool or 'sysbench'}, or set reset: reprepare")
    return tables


def script_facts(workload: Workload) -> dict[str, Any]:
    """What defines the data a script of the user's made (its own tables), with the run's reset facts."""
    return {"dataset": dataset_label(workload)} if workload.is_lua_path else {}


def server_config(variant: VariantBase, workload: Workload, snapshot: Snapshot | None) -> dict[str, ConfigValue]:
    config: dict[str, ConfigValue] = dict(variant.server.config)
    if workload.buffer_pool and snapshot is not None:
        config["innodb_buffer_pool_size"] = buffer_pool_bytes(workload.buffer_pool, snapshot.data_bytes)
    return config


def sysbench_failure(returncode: int, errors: list[str]) -> str:
    """The cause of a failed sysbench run, in one line."""
    cause = errors[0] if errors else f"sysbench exited with code {returncode}"
    if returncode < 0:
        cause = f"sysbench was killed by signal {-returncode}" + (f" ({cause})" if errors else "")
    if "failed to initialize within" in cause:
        cause += (" (sysbench 1.0 gives all threads 30 s to connect, fixed; the server answered too slowly, "
                  "as an emulated VM does: use fewer threads)")
    return cause


def safe_exit_cause(backend: Backend) -> str | None:
    """Why the server stopped, if the backend can tell; a failure to ask is no cause."""
    try:
        return backend.exit_cause()
    except Exception:
        return None


def safe_log_tail(backend: Backend) -> str:
    try:
        return backend.server_log_tail(15)
    except Exception as error:
        return f"(no server log: {type(error).__name__})"
