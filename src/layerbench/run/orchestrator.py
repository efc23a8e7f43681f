"""The orchestrator: the campaign loop. It checks and prepares the backends, stores the schedule, executes it
run by run (each run is a RunExecution, execution.py), saves each run the moment it ends, applies the campaign's
`busy:` policy to a run whose window was busy (replaces it by an extra run at the end of its round, keeps it, or
stops), stops an adaptive campaign when it is decided, resumes an interrupted campaign, and always takes down
what it started (also on errors and Ctrl-C)."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.analysis.busy import busy_reason, decide, run_busy
from layerbench.backends.base import campaign_ended
from layerbench.backends.variant_base import VariantBase
from layerbench.campaign.models import Campaign, campaign_as_dict, stored_campaign
from layerbench.campaign.rounds import Adaptive
from layerbench.campaign.workload import Workload
from layerbench.errors import Interrupted, LayerbenchError, MachineBusy, RunFailed
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.inventory import Hosts
from layerbench.hosts.procs import stop_all
from layerbench.hosts.remote import survey_hosts, version_warnings
from layerbench.measure.cpu import BUSY_SHARE
from layerbench.paths import report_folder
from layerbench.records import BusyDecision, CampaignRecord, RunRecord
from layerbench.run.execution import Progress, RunContext, RunExecution, buffer_pool_bytes
from layerbench.run.neighbour_checks import prepare_neighbours
from layerbench.run.preflight import preflight, resolve_defaults
from layerbench.run.quiet_waits import QuietWaits
from layerbench.run.schedule import RunSpec, build_schedule, execution_order, replacement
from layerbench.server.prepare import PrepareProgress, ensure_snapshot
from layerbench.server.snapshot import Snapshot
from layerbench.store import Store
from layerbench.sysbench.custom_script import dataset_label, prepare_options_text


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
    replaced: int = 0  # busy runs replaced by reruns (busy: rerun)


def page_size_of(variant: VariantBase) -> str | None:
    return variant.server.page_size()


class Orchestrator:
    def __init__(self, campaign: Campaign, store: Store, *, progress: Progress | None = None,
                 source_path: str | None = None, smoke: bool = False) -> None:
        self.campaign = campaign
        self.store = store
        self.progress: Progress = progress or SilentProgress()
        self.source_path = source_path
        self.token = secrets.token_hex(3)
        self.snapshots: dict[tuple[str | None, ...], Snapshot] = {}
        self.smoke = smoke
        self.hosts = Hosts(campaign.hosts)  # where each variant's server and sysbench run (docs/topology.md)
        self.survey: dict[str, Any] = {}
        self.quiet = QuietWaits(campaign, self.progress)  # waits for quiet until the machine stays busy

    # --- preflight -----------------------------------------------------------------------------------------

    def preflight(self) -> None:
        """Everything `validate` checks (preflight.py), then each backend's one-time work (an image build)."""
        self.campaign = resolve_defaults(self.campaign)  # stored, planned and run as checked
        for _, backend in preflight(self.campaign):
            backend.prepare(self.progress.message)
        prepare_neighbours(self.campaign, self.progress.message)
        self.survey = survey_hosts(self.campaign, self.hosts)
        for warning in version_warnings(self.survey):
            self.progress.message(f"warning: {warning}")

    # --- campaign ------------------------------------------------------------------------------------------

    def start(self) -> int:
        """The campaign, its schedule and the plan's time estimate, stored together (after preflight: what it built
        once is not in the estimate, as it is not in the campaign's wall time)."""
        from layerbench.run.plan import make_plan

        definition = CampaignRecord.from_json(campaign_as_dict(self.campaign))
        schedule = [s.as_row() for s in build_schedule(self.campaign)]
        plan = make_plan(self.campaign, self.store.path)
        with signals_deferred():  # a stored campaign always has its schedule, so `resume` can finish it
            campaign_id = self.store.create_campaign(definition, self.campaign.output, self.source_path)
            self.store.save_schedule(campaign_id, schedule)
            self.store.save_estimate(campaign_id, plan.estimate())
        self.progress.message(f"estimated {plan.estimate_text().removeprefix('about ')}: {plan.parts_text()}")
        return campaign_id

    def output_dir(self, campaign_id: int) -> Path:
        """Absolute: backends hand these paths to other programs (Docker bind mounts need absolute paths)."""
        return report_folder(Path(self.campaign.output).resolve(), campaign_id, self.campaign.name)

    def pending(self, campaign_id: int) -> tuple[list[RunSpec], int]:
        """The scheduled runs not stored yet, in execution order (replacements at the end of their round), and
        the schedule's size (replacements included). Read from the store, so `resume` continues the same way."""
        rows = self.store.schedule(campaign_id)
        specs = [RunSpec(r.idx, r.round, r.variant, r.workload, r.threads, r.repetition) for r in rows]
        done = self.store.done_indexes(campaign_id)
        return [s for s in execution_order(specs, self.campaign.order) if s.idx not in done], len(specs)

    def execute(self, campaign_id: int) -> Outcome:
        """Run every scheduled run not stored yet. Ctrl-C stops the current run and raises Interrupted."""
        todo, total = self.pending(campaign_id)
        outcome = Outcome(campaign_id, self.output_dir(campaign_id))
        seconds = max(w.warmup + w.duration for w in self.campaign.workloads) + 8
        self.progress.campaign_started(campaign_id, total, total - len(todo), seconds)
        try:
            self._run_all(outcome)
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
            campaign_ended()  # what backends kept across runs (a Kubernetes seed snapshot)
            self.hosts.close()
        status = "finished" if outcome.failed == 0 else "finished with failures"
        self.store.finish_campaign(campaign_id, status)
        return outcome

    def _run_all(self, outcome: Outcome) -> None:
        """Until no scheduled run is left (a replacement adds one), or an adaptive campaign is decided."""
        last_round: int | None = None
        quiet_first = 0.0  # after a replaced run, the next one first waits for quiet (busy.wait)
        self.quiet.recall(self.store, outcome.campaign_id)
        while True:
            todo, total = self.pending(outcome.campaign_id)
            if not todo:
                return
            spec = todo[0]
            if spec.round != last_round and self._enough_rounds(outcome.campaign_id, spec.round - 1):
                return
            last_round = spec.round
            self.progress.run_started(spec, total - len(todo) + 1, total)
            record = self.execute_run(outcome.campaign_id, spec, outcome.output_dir, self.quiet.seconds(quiet_first))
            self.quiet.learn(spec, record)
            decision = self.busy_decision(outcome.campaign_id, record)
            replaced = decision is not None and decision.action == "replaced"  # _busy_said says the wait
            quiet_first = self.campaign.busy_policy.wait_after_replaced() if replaced else 0.0
            replaced_by = decision.replaced_by if decision else None
            extra = None if replaced_by is None else replacement(spec, replaced_by).as_row()
            with signals_deferred():  # a finished run is stored whole (with its replacement), or run again
                self.store.save_run(record, extra)
            self.progress.run_finished(spec, record)
            if decision is not None:
                self._busy_said(spec, decision)
            self._count(spec, record, outcome)

    def _count(self, spec: RunSpec, record: RunRecord, outcome: Outcome) -> None:
        if record.status == "replaced":
            outcome.replaced += 1
        elif record.status == "ok":
            outcome.ok += 1
        else:
            outcome.failed += 1
            outcome.failures.append(f"run {spec.idx + 1} ({spec.label()}): {record.error}")
            limit = self.campaign.max_failures
            if limit is not None and outcome.failed > limit:
                raise RunFailed(f"{outcome.failed} runs failed, more than max_failures={limit}; last: "
                                f"{record.error}")

    # --- busy: a run whose measured window was busy --------------------------------------------------------------

    def busy_decision(self, campaign_id: int, record: RunRecord) -> BusyDecision | None:
        """The `busy:` policy on a finished run (analysis/busy.py): None for a quiet (or failed) run; else the
        decision, stored with the run; a replaced run gets status `replaced`, so the analysis leaves it out."""
        if record.status != "ok" or record.facts.resources is None:
            return None
        found = run_busy(record.facts)
        if found is None:
            return None
        policy = self.campaign.busy_policy
        decision = decide(found, policy.policy, self.store.replaced_count(campaign_id),
                          policy.reruns_allowed(self.campaign.planned_runs), self.store.next_index(campaign_id),
                          waiting=self.quiet.waiting)
        record.facts.busy = decision
        if decision.action == "replaced":
            record.status = "replaced"
        return decision

    def _busy_said(self, spec: RunSpec, decision: BusyDecision) -> None:
        """One line on what was done about a busy run; busy: fail stops the campaign here (the run is stored)."""
        wait = self.quiet.seconds(self.campaign.busy_policy.wait_after_replaced())  # as the next run will wait
        self.progress.message(said_about_busy(spec, decision, wait))

    def _enough_rounds(self, campaign_id: int, rounds: int) -> bool:
        """repetitions: auto: after each complete round from `min` on, stop when every comparison is decided or
        another round would pass the budget (analysis/sequential.py); the reason is kept with the campaign."""
        spec = self.campaign.repetitions
        if not isinstance(spec, Adaptive) or rounds < spec.min:
            return False
        from layerbench.analysis.aggregate import analyze_loaded
        from layerbench.analysis.loading import load
        from layerbench.analysis.sequential import over_budget, stop_reason  # SciPy: only an adaptive campaign

        loaded = load(self.store, campaign_id)  # its runs once: for the analysis and for the elapsed time
        state = analyze_loaded(loaded).adaptive
        starts = [r.started_at for r in loaded.runs if r.started_at is not None]
        elapsed = time.time() - min(starts) if starts else 0.0
        reason = stop_reason(bool(state and state.all_decided), rounds, spec.min, spec.max,
                             over_budget(spec.budget_seconds, elapsed, rounds))
        if reason:
            self.progress.message(f"adaptive repetitions: stopping after {rounds} rounds ({reason})")
        return reason is not None

    # --- one run -------------------------------------------------------------------------------------------

    def snapshot_for(self, workload: Workload, variant: VariantBase, log_dir: Path,
                     on_host: Callable[[], Snapshot] | None = None) -> Snapshot:
        """The dataset snapshot a run of `variant` restores, once per campaign: prepared here (by the variant's own
        server, or this machine's MariaDB), or by `on_host`, the server's own host (backends/host/dataset.py)."""
        server = variant.snapshot_server()  # a host variant's own server (MySQL's datadir is not MariaDB's)
        key = (workload.name, page_size_of(variant), str(server.server.flavour), str(server.server.version),
               str(server.mysqld), (variant.server_host or variant.name) if on_host else None)  # its keeper's
        if key not in self.snapshots:
            shape = f"of the script: prepare {prepare_options_text(workload)}," if workload.is_lua_path else \
                dataset_label(workload)
            self.progress.message(f"preparing dataset {shape} (cached for later runs)")
            if on_host is not None:
                self.snapshots[key] = on_host()
                return self.snapshots[key]
            progress = PrepareProgress(workload.tables, self.progress.message, table_size=workload.table_size)
            self.snapshots[key] = ensure_snapshot(workload, key[1], log_dir=log_dir, on_line=progress,
                                                  say=self.progress.message, server=server)
        return self.snapshots[key]

    def execute_run(self, campaign_id: int, spec: RunSpec, out: Path, quiet_first: float = 0.0) -> RunRecord:
        """One run (first waiting up to `quiet_first` s for a quiet machine); a corrupt dataset snapshot is rebuilt
        and the run tried once more."""
        context = RunContext(self.campaign, campaign_id, out, self.token, self.hosts, self.progress,
                             self.snapshot_for, self.survey)
        run = RunExecution(context, spec, quiet_first)
        record = run.execute()
        if run.snapshot_corrupt:
            self.progress.message(f"run {spec.idx + 1}: {record.error}")
            self.snapshots.clear()
            record = RunExecution(context, spec).execute()
        return record


def said_about_busy(spec: RunSpec, decision: BusyDecision, wait: float) -> str:
    """The line on what was done about a busy run (`wait`: busy.wait after a replaced one); raises MachineBusy for
    busy: fail."""
    why = f"run {spec.idx + 1} was busy ({busy_reason(decision)}; threshold {BUSY_SHARE * 100:.0f} %)"
    if decision.action == "stopped":
        raise MachineBusy(f"{why}: busy: fail stops the campaign at run {spec.idx + 1} ({spec.label()}); run it "
                          "on a quiet machine, or set busy: rerun to replace busy runs")
    if decision.action == "replaced":
        then = f"; the next run first waits up to {wait:.0f} s for quiet (busy.wait)" if wait else ""
        return (f"{why}: replaced by run {(decision.replaced_by or 0) + 1} at the end of round {spec.round} (rerun "
                f"{decision.reruns_used} of {decision.max_reruns}){then}")
    if decision.waiting_stopped:
        return f"{why}: kept, not rerun: the campaign stopped waiting for quiet, a rerun would be as busy"
    if decision.policy == "rerun":
        return (f"{why}: kept, the machine never got quiet: the limit of {decision.max_reruns} reruns (busy: "
                "max_reruns) is reached")
    return f"{why}: kept (busy: keep)"


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


__all__ = ["Orchestrator", "Outcome", "Progress", "SilentProgress", "buffer_pool_bytes", "resume_campaign",
           "run_campaign"]
