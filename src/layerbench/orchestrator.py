"""The orchestrator: executes a campaign's schedule run by run, saves each run the moment it ends, resumes
an interrupted campaign, and always takes down what it started (also on errors and Ctrl-C)."""

from __future__ import annotations

import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from layerbench import cleanup, environment
from layerbench.analysis.sequential import over_budget, stop_reason
from layerbench.backends import Backend, ServerSpec, make_backend
from layerbench.backends.base import ClientRunner, Endpoint, HostClient
from layerbench.campaign import (
    Adaptive,
    Campaign,
    ConfigValue,
    VariantBase,
    Workload,
    campaign_as_dict,
    seconds_of,
    stored_campaign,
)
from layerbench.critical import signals_deferred
from layerbench.errors import Interrupted, LayerbenchError, RunFailed
from layerbench.hosts import Hosts
from layerbench.io_counters import IoWindow, WindowMarks, server_status_of
from layerbench.placement import network_path, placement_of
from layerbench.preflight import preflight
from layerbench.procs import stop_all
from layerbench.records import CampaignRecord
from layerbench.resources import ResourceSampler, wait_for_quiet
from layerbench.schedule import RunSpec, build_schedule
from layerbench.secrets import Secret, generate_password, redact, write_private
from layerbench.server.dataset import (
    PrepareProgress,
    Snapshot,
    SnapshotCorrupt,
    ensure_snapshot,
    existing_tables,
    prepare_tables,
    verify_data,
    work_root,
)
from layerbench.store import RunRecord, Store
from layerbench.sysbench import (
    config_file_text,
    hook_script,
    parse_mark_records,
    parse_output,
    run_command,
)


class Progress(Protocol):
    """What the orchestrator tells whoever watches (the CLI draws it with Rich; tests ignore it)."""

    def message(self, text: str) -> None: ...
    def campaign_started(self, campaign_id: int, total: int, done: int, seconds_per_run: float) -> None: ...
    def run_started(self, spec: RunSpec, position: int, total: int) -> None: ...
    def interval(self, spec: RunSpec, tps: float, elapsed: float) -> None: ...
    def run_finished(self, spec: RunSpec, record: RunRecord) -> None: ...


class SilentProgress:
    def message(self, text: str) -> None:
        pass

    def campaign_started(self, campaign_id: int, total: int, done: int, seconds_per_run: float) -> None:
        pass

    def run_started(self, spec: RunSpec, position: int, total: int) -> None:
        pass

    def interval(self, spec: RunSpec, tps: float, elapsed: float) -> None:
        pass

    def run_finished(self, spec: RunSpec, record: RunRecord) -> None:
        pass


@dataclass
class Outcome:
    campaign_id: int
    output_dir: Path
    ok: int = 0
    failed: int = 0
    failures: list[str] = field(default_factory=list)


def buffer_pool_bytes(percent: str, data_bytes: int) -> int:
    """A buffer pool as a share of the measured data size, in whole MiB, at least 8 MiB."""
    wanted = float(percent.strip().rstrip("%")) / 100.0 * data_bytes
    return max(8, round(wanted / 2**20)) * 2**20


def page_size_of(variant: VariantBase) -> str | None:
    for key, value in variant.server.config.items():
        if key.replace("-", "_").lower() == "innodb_page_size":
            return str(value)
    return None


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")[:60]


class Orchestrator:
    def __init__(self, campaign: Campaign, store: Store, *, progress: Progress | None = None,
                 source_path: str | None = None, smoke: bool = False) -> None:
        self.campaign = campaign
        self.store = store
        self.progress: Progress = progress or SilentProgress()
        self.source_path = source_path
        self.token = secrets.token_hex(3)
        self.snapshots: dict[tuple[str, str | None], Snapshot] = {}
        self.smoke = smoke
        self.hosts = Hosts(campaign.hosts)  # where each variant's server and sysbench run (docs/topology.md)
        self.survey: dict[str, Any] = {}

    # --- preflight -----------------------------------------------------------------------------------------

    def preflight(self) -> None:
        """Everything `validate` checks (preflight.py), then each backend's one-time work (an image build)."""
        for variant, backend in preflight(self.campaign):
            backend.prepare(variant, self.progress.message)
        from layerbench.remote import survey_hosts, version_warnings

        self.survey = survey_hosts(self.campaign, self.hosts)
        for warning in version_warnings(self.survey):
            self.progress.message(f"warning: {warning}")

    # --- campaign ------------------------------------------------------------------------------------------

    def start(self) -> int:
        definition = CampaignRecord.from_json(campaign_as_dict(self.campaign))
        schedule = [s.as_row() for s in build_schedule(self.campaign)]
        with signals_deferred():  # a stored campaign always has its schedule, so `resume` can finish it
            campaign_id = self.store.create_campaign(definition, self.campaign.output, self.source_path)
            self.store.save_schedule(campaign_id, schedule)
        return campaign_id

    def output_dir(self, campaign_id: int) -> Path:
        """Absolute: backends hand these paths to other programs (Docker bind mounts need absolute paths)."""
        return Path(self.campaign.output).resolve() / f"{campaign_id}-{slug(self.campaign.name)}"

    def execute(self, campaign_id: int) -> Outcome:
        """Run every scheduled run not stored yet. Ctrl-C stops the current run and raises Interrupted."""
        rows = self.store.schedule(campaign_id)
        specs = [RunSpec(r.idx, r.round, r.variant, r.workload, r.threads, r.repetition) for r in rows]
        done = self.store.done_indexes(campaign_id)
        todo = [s for s in specs if s.idx not in done]
        outcome = Outcome(campaign_id, self.output_dir(campaign_id))
        seconds = max(w.warmup + w.duration for w in self.campaign.workloads) + 8
        self.progress.campaign_started(campaign_id, len(specs), len(done), seconds)
        try:
            self._run_all(todo, len(specs), len(done), outcome)
        except KeyboardInterrupt:
            with signals_deferred():  # a second signal does not cut the cleanup short
                stop_all()
                self.store.finish_campaign(campaign_id, "interrupted", "interrupted by the user")
            raise Interrupted(f"interrupted; {outcome.ok} runs stored. Continue with "
                              f"`layerbench resume {campaign_id}`") from None
        except LayerbenchError as error:
            with signals_deferred():
                stop_all()
                self.store.finish_campaign(campaign_id, "failed", str(error))
            raise
        finally:
            self.hosts.close()
        status = "finished" if outcome.failed == 0 else "finished with failures"
        self.store.finish_campaign(campaign_id, status)
        return outcome

    def _run_all(self, todo: list[RunSpec], total: int, done: int, outcome: Outcome) -> None:
        last_round: int | None = None
        for position, spec in enumerate(todo, start=done + 1):
            if spec.round != last_round and self._enough_rounds(outcome.campaign_id, spec.round - 1):
                return
            last_round = spec.round
            self.progress.run_started(spec, position, total)
            record = self.execute_run(outcome.campaign_id, spec, outcome.output_dir)
            with signals_deferred():  # a finished run is stored whole, or (interrupted before) run again
                self.store.save_run(record)
            self.progress.run_finished(spec, record)
            if record.status == "ok":
                outcome.ok += 1
            else:
                outcome.failed += 1
                outcome.failures.append(f"run {spec.idx + 1} ({spec.label()}): {record.error}")
                limit = self.campaign.max_failures
                if limit is not None and outcome.failed > limit:
                    raise RunFailed(f"{outcome.failed} runs failed, more than max_failures={limit}; last: "
                                    f"{record.error}")

    def _enough_rounds(self, campaign_id: int, rounds: int) -> bool:
        """repetitions: auto: after each complete round from `min` on, stop when every comparison is decided or
        another round would pass the budget (analysis/sequential.py); the reason is kept with the campaign."""
        spec = self.campaign.repetitions
        if not isinstance(spec, Adaptive) or rounds < spec.min:
            return False
        from layerbench.analysis.aggregate import analyze

        state = analyze(self.store, campaign_id).adaptive
        starts = [r.started_at for r in self.store.runs(campaign_id) if r.started_at is not None]
        elapsed = time.time() - min(starts) if starts else 0.0
        reason = stop_reason(bool(state and state.all_decided), rounds, spec.min, spec.max,
                             over_budget(spec.budget_seconds, elapsed, rounds))
        if reason:
            self.progress.message(f"adaptive repetitions: stopping after {rounds} rounds ({reason})")
        return reason is not None

    # --- one run -------------------------------------------------------------------------------------------

    def snapshot_for(self, workload: Workload, variant: VariantBase, log_dir: Path) -> Snapshot:
        key = (workload.name, page_size_of(variant))
        if key not in self.snapshots:
            self.progress.message(f"preparing dataset {workload.tables} x {workload.table_size} rows "
                                  f"(cached for later runs)")
            self.snapshots[key] = ensure_snapshot(workload, key[1], log_dir=log_dir,
                                                  on_line=PrepareProgress(workload.tables, self.progress.message))
        return self.snapshots[key]

    def server_config(self, variant: VariantBase, workload: Workload,
                      snapshot: Snapshot | None) -> dict[str, ConfigValue]:
        config: dict[str, ConfigValue] = dict(variant.server.config)
        if workload.buffer_pool and snapshot is not None:
            config["innodb_buffer_pool_size"] = buffer_pool_bytes(workload.buffer_pool, snapshot.data_bytes)
        return config

    def execute_run(self, campaign_id: int, spec: RunSpec, out: Path) -> RunRecord:
        """One run; a corrupt dataset snapshot is rebuilt and the run tried once more."""
        record = self._execute_run(campaign_id, spec, out)
        if record.facts.other.pop("snapshot_corrupt", False):
            self.progress.message(f"run {spec.idx + 1}: {record.error}")
            self.snapshots.clear()
            record = self._execute_run(campaign_id, spec, out)
        return record

    def _execute_run(self, campaign_id: int, spec: RunSpec, out: Path) -> RunRecord:
        variant = self.campaign.variant(spec.variant)
        workload = self.campaign.workload(spec.workload)
        name = f"{spec.idx + 1:04d}-{slug(spec.variant)}-{slug(spec.workload)}-t{spec.threads}-r{spec.repetition}"
        run_dir = out / "runs" / name
        run_dir.mkdir(parents=True, exist_ok=True)
        record = RunRecord(campaign_id, spec.variant, spec.workload, spec.threads, spec.repetition, idx=spec.idx,
                           round=spec.round, started_at=time.time(), percentile=workload.percentile,
                           run_dir=str(run_dir), warmup_seconds=float(workload.warmup))
        if self.campaign.wait_for_quiet:  # before anything of this run starts, so only others' work is seen
            record.facts.quiet_wait = wait_for_quiet(seconds_of(self.campaign.wait_for_quiet))
        backend = make_backend(variant)
        owner = f"lb{campaign_id}-{self.token}-{spec.idx + 1}-private"
        password = generate_password()
        private: Path | None = None
        try:
            with signals_deferred():  # holds password files: noted so that the finally below and `clean` remove it
                private = Path(tempfile.mkdtemp(prefix="lb-private-"))
                cleanup.record(owner, pid=None, marker="", paths=[private])
            self._measure(backend, spec, variant, workload, run_dir, private, password, record)
        except (RunFailed, Exception) as error:  # an unexpected error fails this run; the others go on
            record.facts.other["snapshot_corrupt"] = isinstance(error, SnapshotCorrupt)
            record.status = "failed"
            cause = str(error) if isinstance(error, RunFailed) else f"internal error: {type(error).__name__}: {error}"
            server = exit_cause(backend)
            if server and server not in cause:
                cause += f"; the server {server}"
            record.error = redact(cause, [password])
            record.facts.other["server_log_tail"] = redact(safe_log_tail(backend), [password])
        finally:
            with signals_deferred():  # a cleanup, once begun, runs to its end
                try:
                    backend.down()
                finally:
                    if private is not None:
                        shutil.rmtree(private, ignore_errors=True)
                    cleanup.forget(owner)
        record.finished_at = time.time()
        return record

    def _measure(self, backend: Backend, spec: RunSpec, variant: VariantBase, workload: Workload, run_dir: Path,
                 private: Path, password: Secret, record: RunRecord) -> None:
        snapshot = self.snapshot_for(workload, variant, run_dir) if workload.reset == "snapshot" else None
        server_spec = ServerSpec(
            self.campaign.name, f"lb{record.campaign_id}-{self.token}-{spec.idx + 1}-{slug(variant.name)}",
            variant, run_dir, private, work_root() / "work", config=self.server_config(variant, workload, snapshot),
            password=password, snapshot=snapshot.path if snapshot else None,
            listen_address=placement_of(self.campaign.hosts, variant).listen_address,
        )
        started = time.monotonic()
        endpoint = backend.up(server_spec)
        record.facts.other["server_start_seconds"] = round(time.monotonic() - started, 3)
        remote = backend.client() or self._placed_client(variant, server_spec.label)  # after up()
        record.facts.reset = self._reset(workload, endpoint, snapshot, private, run_dir, remote)
        record.facts.environment = self._environment(backend, endpoint)
        if self.campaign.hosts:
            record.facts.environment |= self._placement(variant, endpoint)
        if snapshot is not None and workload.buffer_pool:
            record.facts.buffer_pool_ratio = workload.buffer_pool
            record.facts.data_bytes = snapshot.data_bytes
        self._benchmark(backend, spec, workload, endpoint, run_dir, private, record,
                        remote or HostClient(variant.client_cpus))

    def _reset(self, workload: Workload, endpoint: Endpoint, snapshot: Snapshot | None, private: Path,
               run_dir: Path, remote: ClientRunner | None) -> dict[str, Any]:
        started = time.monotonic()
        if workload.reset == "none":
            tables = existing_tables(endpoint, workload)
            missing = [f"sbtest{i}" for i in range(1, workload.tables + 1) if f"sbtest{i}" not in tables]
            if missing and not workload.is_lua_path:  # a script of the user's may make its own tables
                raise RunFailed(f"reset none: the server holds {len(tables)} of the workload's {workload.tables} "
                                f"tables (missing {', '.join(missing[:3])}{'...' if len(missing) > 3 else ''}); "
                                "prepare them with sysbench, or set reset: reprepare")
            return {"method": "none", "tables": tables, "seconds": round(time.monotonic() - started, 3)}
        if snapshot is None:
            # on this host unpinned: prepare uses one thread per table, up to every CPU
            prepare_tables(workload, endpoint, private, run_dir, None, cleanup_first=True, client=remote)
            seconds = round(time.monotonic() - started, 3)
            return {"method": "reprepare", "prepared_by": (remote or HostClient()).where, "seconds": seconds}
        check = verify_data(endpoint, snapshot, workload)
        return {"method": "snapshot", "snapshot": snapshot.key, "seconds": round(time.monotonic() - started, 3),
                **check}

    def _environment(self, backend: Backend, endpoint: Endpoint) -> dict[str, Any]:
        try:
            variables = environment.server_variables(endpoint)
        except Exception as error:  # e.g. a Job client on a cluster this host has no route to
            variables = {"_error": redact(f"{type(error).__name__}: {error}", [endpoint.password])[:300]}
        return {"host": environment.host_facts(), "backend": backend.describe(), "server_variables": variables,
                "storage": environment.storage_facts(str(work_root())), "tuning": environment.tuning_facts()}

    def _benchmark(self, backend: Backend, spec: RunSpec, workload: Workload, endpoint: Endpoint, run_dir: Path,
                   private: Path, record: RunRecord, client: ClientRunner) -> None:
        hook = run_dir / "hook.lua"
        hook.write_text(hook_script(workload), encoding="utf-8")
        config = write_private(private / "sysbench.cfg", config_file_text(endpoint))
        cmd = run_command(workload, config, hook, spec.threads)
        timeout = workload.warmup + workload.duration + 120
        pids = client_pids(hook, on_host=isinstance(client, HostClient))
        io_window = IoWindow(backend.components, pids, server_status_of(endpoint))
        marks = WindowMarks(io_window, workload.warmup)  # counters read right before and after the measured window

        def on_line(line: str) -> None:
            for rec in parse_mark_records(line):
                if rec["kind"] == "interval" and rec["interval"] > 0:
                    self.progress.interval(spec, rec["events"] / rec["interval"], float(rec["time"]))
                elif rec["kind"] == "total":
                    marks.total_record()

        log_path = run_dir / "sysbench.log"
        files = {config.name: config.read_text(encoding="utf-8"), hook.name: hook.read_text(encoding="utf-8")}
        sampler = ResourceSampler(backend.components, backend.cgroups(), pids, interval=1.0)
        sampler.start()
        try:
            done = client.run_client(cmd, files, log_path=log_path, timeout=timeout, on_line=on_line,
                                     secrets=[endpoint.password])
        finally:
            usage = sampler.stop()
        self._record_output(done.returncode, done.output, workload, record)
        warm_tx = sum(i.tps for i in record.intervals if i.time <= workload.warmup + 1e-6) * workload.report_interval
        measured = record.totals.transactions if record.totals else 0
        if self.campaign.hosts:
            from layerbench.remote import SSHClient, placed_usage

            remote = client if isinstance(client, SSHClient) else None
            usage.cpu_seconds = placed_usage(usage.cpu_seconds, spec_host(self.campaign, spec), remote,
                                             self._same_kernel(remote))
        usage.per_1000_transactions = usage.per_1000(int(measured + warm_tx))  # the sampler covers the warm-up too
        record.facts.resources = usage.as_dict()
        if (io := io_window.result()) is not None:
            record.facts.io = io

    def _placed_client(self, variant: VariantBase, label: str) -> ClientRunner | None:
        """sysbench on the variant's client_host when that is another host than its server's; else None."""
        place = placement_of(self.campaign.hosts, variant)
        if not place.remote_client:
            return None
        from layerbench.remote import SSHClient

        return SSHClient(self.hosts[place.client_host], label, variant.client_cpus)

    def _placement(self, variant: VariantBase, endpoint: Endpoint) -> dict[str, Any]:
        """Which host runs what, the address sysbench was given, the network path, and every host's facts."""
        place = placement_of(self.campaign.hosts, variant)
        facts = self.survey.get("facts", {})
        return {"placement": {"server_host": place.server_host, "client_host": place.client_host,
                              "endpoint": f"{endpoint.host}:{endpoint.port}", "path": network_path(variant, place),
                              "rtt_ms": self.survey.get("rtt_ms", {}).get(f"{place.client_host}->{place.server_host}")},
                "hosts": facts, "client_host": facts.get(place.client_host, {})}

    def _same_kernel(self, client: Any) -> bool:
        facts = self.survey.get("facts", {})
        if client is None:
            return False
        mine = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return bool(facts.get(client.host.name, {}).get("boot_id") == mine)

    def _record_output(self, returncode: int, output: str, workload: Workload, record: RunRecord) -> None:
        parsed = parse_output(output)
        record.intervals = parsed.intervals
        if returncode != 0 or parsed.totals is None:
            cause = parsed.errors[0] if parsed.errors else f"sysbench exited with code {returncode}"
            if returncode < 0:
                cause = f"sysbench was killed by signal {-returncode}" + (f" ({cause})" if parsed.errors else "")
            if "failed to initialize within" in cause:
                cause += (" (sysbench 1.0 gives all threads 30 s to connect, fixed; the server answered too slowly, "
                          "as an emulated VM does: use fewer threads)")
            raise RunFailed(cause)
        record.totals = parsed.totals
        record.latency = parsed.latency
        warm = [i for i in parsed.intervals if i.time <= workload.warmup + 1e-6]
        record.facts.other["warmup_intervals"] = len(warm)


def spec_host(campaign: Campaign, spec: RunSpec) -> str:
    return placement_of(campaign.hosts, campaign.variant(spec.variant)).server_host


def client_pids(hook: Path, on_host: bool = False) -> Callable[[], list[int]]:
    """sysbench of this run: on the host its command line names this run's hook; in a container, the client's
    (the same path in every client container: when sysbench runs on this host, those of others are not ours)."""
    from layerbench.backends.docker_client import CLIENT_DIR
    from layerbench.cleanup import processes_with

    if on_host:
        return lambda: processes_with(str(hook))
    return lambda: processes_with(str(hook)) + processes_with(f"{CLIENT_DIR}/hook.lua")


def exit_cause(backend: Backend) -> str | None:
    """A backend that can tell why its server stopped (a container OOM-killed, say) adds that to a failure."""
    probe = getattr(backend, "exit_cause", None)
    try:
        return probe() if probe else None
    except Exception:
        return None


def safe_log_tail(backend: Backend) -> str:
    try:
        return backend.server_log_tail(15)
    except Exception as error:
        return f"(no server log: {type(error).__name__})"


def run_campaign(campaign: Campaign, store: Store, *, progress: Progress | None = None,
                 source_path: str | None = None) -> Outcome:
    """Validate everything, then start a new campaign and execute it."""
    orchestrator = Orchestrator(campaign, store, progress=progress, source_path=source_path)
    orchestrator.preflight()
    campaign_id = orchestrator.start()
    return orchestrator.execute(campaign_id)


def resume_campaign(store: Store, ref: str | int, *, progress: Progress | None = None) -> Outcome:
    """Continue a stored campaign from the runs it has; a run that was in flight was never stored."""
    row = store.campaign(ref)
    campaign = stored_campaign(row.definition.to_json())
    orchestrator = Orchestrator(campaign, store, progress=progress, source_path=row.source_path)
    orchestrator.preflight()
    store.set_campaign_status(row.id, "running")
    return orchestrator.execute(row.id)
