"""What a campaign would do, before it does it: per variant what is created, per workload the runs, where the
results go, the first-time costs, and a time estimate calibrated on this machine's past runs when the store has
them ("estimate from N past runs"), else from fixed per-backend overheads ("rough estimate").

The estimate has parts (records/estimate.py), each modelled on what it depends on:
- runs: warm-up + duration + its backend's overhead (start, stop, the harness). A past run's cost is the time
  from the previous run's end to its own end in the same campaign; minus its warm-up and duration, and minus what
  it spent on its data and its wait (restore + checks, re-prepare, a snapshot built, a quiet wait), that leaves
  the overhead of its backend, of which the median is used;
- restores: each restoring run's datadir (the variant's own snapshot: a MySQL datadir is larger) at the restore
  rate its backend's past copies reached (bytes per second), else DEFAULT_RESTORE_RATE: a copy grows with the
  data, which a fixed overhead calibrated on small datasets did not; a restore that will be a reflink clone (its
  folder clones from the snapshots', run/diskspace.py) costs CLONE_RESTORE_SECONDS whatever the size;
- prepare: snapshots not cached yet and every re-prepare, at this machine's prepare rate;
- waits: the share of past runs replaced by busy reruns (busy: rerun) times the runs' cost, and with
  wait_for_quiet the median of past quiet waits per run, at most what a machine that stays busy costs before the
  campaign stops waiting (analysis/quiet.py).
The store is opened read-only and never created here.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.analysis.quiet import STOP_IN_A_ROW, WAIT_SHARE, learning
from layerbench.analysis.timing import data_and_wait_seconds, minutes, restore_seconds_of, time_account
from layerbench.backends.variant_base import VariantBase
from layerbench.campaign.models import Campaign
from layerbench.campaign.rounds import BusyPolicy, seconds_of
from layerbench.campaign.workload import Workload
from layerbench.envvars import env_setting
from layerbench.hosts.inventory import LOCAL, HostEntry
from layerbench.hosts.placement import placement_of
from layerbench.measure.cpu import QUIET_STEP
from layerbench.records import StoredFacts
from layerbench.records.estimate import TimeEstimate
from layerbench.run import answerable
from layerbench.run.neighbour_plan import neighbour_lines
from layerbench.run.schedule import build_schedule
from layerbench.server.mycnf import render_value
from layerbench.server.postgresql import conf_value
from layerbench.server.settings import ConfigValue
from layerbench.store import Store, past_finishes
from layerbench.sysbench.custom_script import dataset_label

# rows/s of a prepare before this machine has prepared any (then its own median): measured here 159,000-194,000
# on a quiet machine (2.4 to 45 GiB), about 70,000 busy; 40,000 made a 45 GiB study's first estimate 3.5x too long
PREPARE_ROWS_PER_SECOND = 100_000
DEFAULT_RESTORE_RATE = 500 << 20  # bytes/s of a checked copy with no past restore: 585 MiB/s median of 324 here
CLONE_RESTORE_SECONDS = 1.0  # a clone + its checks: 0.10 s at 8 GiB, 0.16 s at 0.1 GiB here (docs/datasets.md)
MIN_SAMPLES = 3  # past runs of a backend needed before its median replaces its fixed overhead (variant.run_overhead)


@dataclass(frozen=True)
class Plan:
    runs: int
    seconds: float
    lines: list[str]
    past_runs: int = 0  # past runs the estimate is calibrated on; 0: a rough estimate
    rough_backends: list[str] = field(default_factory=list)
    parts: dict[str, float] = field(default_factory=dict)  # prepare, restores, runs, waits, first time: seconds

    def estimate_text(self) -> str:
        minutes = f"about {max(1, round(self.seconds / 60))} min"
        if not self.past_runs:
            return f"{minutes} (rough estimate: no past runs of these backends in the store)"
        rough = f"; rough for {', '.join(self.rough_backends)}" if self.rough_backends else ""
        return f"{minutes} (estimate from {self.past_runs} past runs on this machine{rough})"

    def estimate(self) -> TimeEstimate:
        """What the store keeps when the campaign starts (report and validate compare it with the wall time)."""
        basis = self.estimate_text().split(" (", 1)[1].rstrip(")")
        return TimeEstimate({k: v for k, v in self.parts.items() if v > 0 or k in ("runs", "restores")},
                            self.past_runs, basis)

    def parts_text(self) -> str:
        return ", ".join(f"{k} {minutes(v)}" for k, v in self.parts.items() if v > 0)


# --- what each variant creates ---------------------------------------------------------------------------------


def host_words(hosts: dict[str, HostEntry] | None, name: str) -> str:
    """A host as the plan names it: this machine (by `local` or a `local: true` name) or one reached over SSH."""
    entry = (hosts or {}).get(name)
    if entry is None or name == LOCAL:
        return "this machine"
    return f"host {name} (this machine, no SSH)" if entry.local else f"host {name} ({entry.ssh}, over SSH)"


def path_text(hosts: dict[str, HostEntry] | None, variant: VariantBase, client: str = "sysbench") -> str:
    """Which host runs the server, which runs sysbench (over SSH or not), and the network path between them: the
    same placement and words each run records (placement.py), so the preview cannot say another path. `client`:
    the load generator's name when the campaign runs pgbench (client_words)."""
    place = placement_of(hosts, variant)
    where = variant.where_text(host_words(hosts, place.server_host), host_words(hosts, place.client_host),
                               place.server_host == place.client_host)
    if client != "sysbench":
        where = where.replace("sysbench", client)
    return f"{where}: {variant.network_path(place)}"


def client_words(campaign: Campaign) -> str:
    """What drives the runs: sysbench, pgbench, or both (a campaign with workloads of each)."""
    tools = {"pgbench" if w.is_pgbench else "sysbench" for w in campaign.workloads}
    return "sysbench or pgbench" if len(tools) > 1 else tools.pop()


def cpus_text(variant: VariantBase, client: str = "sysbench") -> str:
    parts = [f"server CPUs {variant.cpus}" if variant.cpus else "",
             f"{client} CPUs {variant.client_cpus}" if variant.client_cpus else ""]
    return "; ".join(p for p in parts if p)


def config_text(key: str, value: ConfigValue, postgresql: bool) -> str:
    """One setting as the server's file says it (my.cnf, or postgresql.conf: server/postgresql.py)."""
    if postgresql:
        return f"{key}={conf_value(value)}"
    shown_value = render_value(value)
    return key if shown_value is None else f"{key}={shown_value}"


def variant_line(variant: VariantBase, hosts: dict[str, HostEntry] | None = None, client: str = "sysbench") -> str:
    """What the variant creates (its backend's words), then where each part runs and the path (its placement)."""
    kind, text = variant.backend, variant.describe_plan()
    postgresql = variant.server.flavour == "postgresql"
    config = ", ".join(config_text(k, val, postgresql) for k, val in variant.server.config.items())
    where = f"datadir in {variant.data_dir}" if variant.data_dir else ""
    extra = "; ".join(p for p in (path_text(hosts, variant, client), cpus_text(variant, client), where,
                                  f"{'postgresql.conf' if postgresql else 'my.cnf'}: {config}" if config else "")
                      if p)
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
            f"{workload.warmup} s warm-up + {workload.duration} s; {resets_text(campaign, workload)}")


def resets_text(campaign: Campaign, workload: Workload) -> str:
    """`reset snapshot`, then each variant whose reset of this workload is its own, and why."""
    own = [f"variant {name}: reset {choice.method} ({choice.source})"
           for name, choice in campaign.resets_of(workload).items() if choice.own and choice.method != workload.reset]
    return "; ".join([f"reset {workload.reset}", *own])


# --- calibration on past runs -----------------------------------------------------------------------------------


@dataclass
class Past:
    """What the store's past runs say about this machine, per backend (run/plan.py's model)."""

    overheads: dict[str, list[float]] = field(default_factory=dict)  # beyond warm-up, duration, data and waits
    restore_rates: dict[str, list[float]] = field(default_factory=dict)  # bytes/s of a restore and its checks
    quiet_waits: list[float] = field(default_factory=list)  # seconds waited for quiet, per run that waited
    runs: int = 0
    replaced: int = 0  # runs replaced by busy reruns


def past_costs(store: Path) -> Past:
    """The past runs in `store` (read-only; a missing store has none)."""
    campaigns, rows = past_finishes(store)
    past, previous = Past(), None
    for row in rows:
        past.runs += 1
        past.replaced += row[4] == "replaced"
        backend = backend_of(campaigns[row[0]].to_json(), row[1]) if row[0] in campaigns else None
        learn_from_facts(past, backend, row[5])
        if previous is not None and previous[0] == row[0] and row[4] == "ok" and backend is not None:
            gap = row[3] - previous[3] - data_and_wait_seconds(row[5])
            found, overhead = run_overhead(campaigns[row[0]].to_json(), row[1], row[2], gap)
            if found is not None:
                past.overheads.setdefault(found, []).append(overhead)
        previous = row
    return past


def past_overheads(store: Path) -> dict[str, list[float]]:
    """Per backend, the overheads of the past runs in `store` (read-only; a missing store has none)."""
    return past_costs(store).overheads


def backend_of(definition: dict[str, Any], variant: str) -> str | None:
    found = next((v.get("backend") for v in definition.get("variants", []) if v.get("name") == variant), None)
    return None if found is None else str(found)


def learn_from_facts(past: Past, backend: str | None, facts: StoredFacts) -> None:
    """A past run's restore rate (per backend) and quiet wait."""
    reset, seconds = facts.reset, restore_seconds_of(facts)
    restore = reset.restore if reset is not None else None
    size = restore.bytes if restore is not None and "clone" not in restore.method else None
    if backend is not None and size and seconds > 0.05:  # a copy's rate: a clone's time does not grow with size
        past.restore_rates.setdefault(backend, []).append(size / seconds)
    if facts.quiet_wait is not None:
        past.quiet_waits.append(facts.quiet_wait.waited_seconds)


def run_overhead(definition: dict[str, Any], variant: str, workload: str, gap: float) -> tuple[str | None, float]:
    backend = backend_of(definition, variant)
    work = next((w for w in definition.get("workloads", []) if w.get("name") == workload), None)
    if backend is None or work is None:
        return None, 0.0
    measured = float(work.get("warmup", 0)) + float(work.get("duration", 0))
    if not 0 <= gap - measured < 10 * measured + 600:  # a resume or a pause between runs, not a run's cost
        return None, 0.0
    return str(backend), gap - measured


# --- first-time costs -------------------------------------------------------------------------------------------


def first_time_costs(campaign: Campaign) -> list[tuple[str, float]]:
    """(what, seconds) of what is built once and cached (each variant's backend says what it needs), for what is
    not cached yet on this machine."""
    needed = {cost.what: cost for v in campaign.variants for cost in v.first_time_costs()}
    return [(cost.what, cost.seconds) for cost in sorted(needed.values(), key=lambda c: c.rank) if not cost.cached()]


def prepare_rate() -> tuple[float, str]:
    """Rows per second of a prepare here: the median of the snapshots this machine prepared, else a default."""
    from layerbench.server.snapshot import prepare_rates

    rates = prepare_rates()
    if not rates:
        return PREPARE_ROWS_PER_SECOND, "a rough default"
    return statistics.median(rates), f"measured on {len(rates)} cached dataset{'s' * (len(rates) > 1)}"


def dataset_lines(campaign: Campaign) -> tuple[list[str], float]:
    """Per dataset: cached, or prepared once (and its time), for the variants that restore it; re-prepared
    variants cost every one of their runs; untouched ones are said."""
    rate, basis = prepare_rate()
    lines, seconds = [], 0.0
    for w in campaign.workloads:
        by_method: dict[str, list[VariantBase]] = {}
        for v in campaign.variants:
            by_method.setdefault(campaign.reset_for(v, w).method, []).append(v)
        every = len(by_method) == 1
        if "snapshot" in by_method:
            line, cost = snapshot_line(w, by_method["snapshot"], rate, basis, every)
            lines.append(line)
            seconds += cost
        if "reprepare" in by_method:
            line, cost = reprepare_line(campaign, w, by_method["reprepare"], rate, every)
            lines.append(line)
            seconds += cost
        if "none" in by_method:
            lines.append(f"dataset {w.name}: not touched (reset: none){of_variants(by_method['none'], every)}; the "
                         "server's own tables are used")
    return lines, seconds


def of_variants(variants: list[VariantBase], every: bool) -> str:
    """`` when every variant does it, else ` for variant(s) a, b`."""
    if every:
        return ""
    return f" for variant{'s' * (len(variants) > 1)} {', '.join(v.name for v in variants)}"


def reprepare_line(campaign: Campaign, w: Workload, variants: list[VariantBase], rate: float,
                   every: bool) -> tuple[str, float]:
    """Prepared again before each run of these variants: the line, and the time of all of their prepares."""
    who = "every run" if every else f"each run of {', '.join(v.name for v in variants)}"
    if w.is_lua_path:
        return (f"dataset {w.name}: prepared again by the script before {who} (reset: reprepare; time not "
                "estimated)"), 0.0
    prepare = w.dataset_rows / rate
    runs = len(w.threads) * campaign.rounds * len(variants)
    return f"dataset {w.name}: prepared again before {who} (reset: reprepare), ~{prepare:.0f} s each", prepare * runs


def snapshot_line(w: Workload, variants: list[VariantBase], rate: float, basis: str,
                  every: bool) -> tuple[str, float]:
    """The snapshot these variants restore: cached, or prepared once (the line, and the prepare's time)."""
    from layerbench.run.diskspace import snapshot_key
    from layerbench.server.snapshot import find_snapshot

    prepare, who = w.dataset_rows / rate, of_variants(variants, every)
    # each variant's own key (its page size, and the server that makes it: MariaDB, MySQL or PostgreSQL)
    if all(find_snapshot(snapshot_key(v, w)) is not None for v in variants):
        return f"dataset {w.name}: {dataset_label(w)}, cached (layerbench cache list){who}", 0.0
    if w.is_lua_path:
        return (f"dataset {w.name}: {dataset_label(w)}, prepared once by the script (time not estimated), then "
                f"cached{who}"), 0.0
    return (f"dataset {w.name}: {dataset_label(w)}, prepared once (~{max(1, round(prepare))} s at "
            f"{rate:,.0f} rows/s, {basis}), then cached{who}"), prepare


# --- the plan -----------------------------------------------------------------------------------------------------


def quiet_lines(campaign: Campaign, learns: bool) -> list[str]:
    """wait_for_quiet: how long each run waits, and until when (analysis/quiet.py); none without the key."""
    if not campaign.wait_for_quiet:
        return []
    until = ("until waits end at their limit (two in a row, or more than a tenth of the campaign: then no run waits "
             "and busy runs are kept)") if learns else "every time (LAYERBENCH_WAIT_FOR_QUIET=always)"
    return [f"waiting for quiet: up to {seconds_of(campaign.wait_for_quiet):g} s before each run, {until}"]


def busy_line(campaign: Campaign) -> str:
    """What happens to a run measured while the machine was busy (campaign `busy:`, analysis/busy.py)."""
    policy = campaign.busy_policy
    source = "" if campaign.busy is not None or policy == BusyPolicy() else ", from LAYERBENCH_BUSY"
    if policy.policy == "rerun":
        wait = policy.wait_after_replaced()
        then = f", the next run first waiting up to {wait:.0f} s for quiet" if wait else ""
        return (f"busy runs: replaced by reruns at the end of their round, at most "
                f"{policy.reruns_allowed(campaign.planned_runs)}{then} (busy: rerun{source}; the time above counts "
                "them at the share of past runs they replaced)")
    return f"busy runs: kept and flagged (busy: keep{source})" if policy.policy == "keep" else \
        f"busy runs: the first one stops the campaign (busy: fail{source})"


def published_lines(campaign: Campaign) -> list[str]:
    """Which size runs (the example's, the study's, or scaled to this machine) and the numbers the report puts
    beside ours (campaign/published.py, campaign/scaling.py)."""
    published = campaign.published
    if published is None:
        return []
    count = len(published.numbers)
    lines = [f"published: {count} number{'s' if count > 1 else ''} of {published.source}, shown beside ours in "
             "the report (Published vs measured)"]
    sizes = "; ".join(f"{w.name} {w.tables} x {w.table_size:,} rows"
                      + (f", buffer pool {w.buffer_pool} of the data" if w.buffer_pool else "")
                      + f", {w.duration} s runs" for w in campaign.workloads)
    if campaign.scale == "published":
        lines.append(f"size: the study's (scale: published): {sizes}")
    elif campaign.scale == "machine":
        lines.append(f"size: scaled to this machine, keeping the study's dataset : buffer pool : RAM "
                     f"(scale: machine): {sizes}")
    elif published.size is not None:
        lines.append("size: the example's, not the study's (--scale published or --scale machine runs the study's)")
    return lines


def make_plan(campaign: Campaign, store: Path | None = None) -> Plan:
    schedule = build_schedule(campaign)
    past = past_costs(store) if store is not None else Past()
    used = sorted({v.backend for v in campaign.variants})
    calibrated = {k: statistics.median(past.overheads[k]) for k in used
                  if len(past.overheads.get(k, [])) >= MIN_SAMPLES}
    run_seconds, restore_seconds = run_parts(campaign, schedule, calibrated, past)
    data_lines, prepare_seconds = dataset_lines(campaign)
    costs = first_time_costs(campaign)
    parts = {"prepare": prepare_seconds, "restores": restore_seconds, "runs": run_seconds,
             "waits": wait_seconds(campaign, run_seconds + restore_seconds, past),
             "first time": sum(cost for _, cost in costs)}
    lines = [variant_line(v, campaign.hosts, client_words(campaign)) for v in campaign.variants]
    lines += neighbour_lines(campaign)  # run/neighbour_plan.py (#32)
    lines += [workload_line(campaign, w) for w in campaign.workloads] + data_lines
    lines += [f"first time: {what} (~{cost / 60:.0f} min)" for what, cost in costs]
    lines += published_lines(campaign)
    lines += answerable.lines(campaign)  # per point, the round from which a verdict can be reached (#43)
    lines.append(busy_line(campaign))
    lines += quiet_lines(campaign, learning(env_setting("LAYERBENCH_WAIT_FOR_QUIET")))  # bad setting: one line
    lines.append(f"output: reports in {Path(campaign.output) / '<id>-'}{campaign.name}/, runs stored in "
                 f"{store if store is not None else Path(campaign.output) / 'layerbench.db'}")
    past_runs = sum(len(past.overheads[k]) for k in calibrated)
    rough = [k for k in used if k not in calibrated] if calibrated else []
    plan = Plan(len(schedule), sum(parts.values()), lines, past_runs, rough, parts)
    lines.insert(0, f"time: {plan.parts_text()}")
    return plan


def run_parts(campaign: Campaign, schedule: list[Any], calibrated: dict[str, float], past: Past) -> tuple[float, float]:
    """(runs, restores): each run's warm-up + duration + its backend's overhead; each restoring run's datadir at
    its backend's past copy rate (else DEFAULT_RESTORE_RATE), or CLONE_RESTORE_SECONDS where it will clone."""
    from layerbench.run.diskspace import variant_dataset_bytes, will_clone

    variants = {v.name: v for v in campaign.variants}
    rates = {k: statistics.median(v) for k, v in past.restore_rates.items() if v}
    costs: dict[tuple[str, str], float] = {}  # seconds of one restore, per variant and workload
    runs = restores = 0.0
    for spec in schedule:
        variant, workload = variants[spec.variant], campaign.workload(spec.workload)
        runs += workload.warmup + workload.duration + calibrated.get(variant.backend, variant.run_overhead)
        if campaign.reset_for(variant, workload).method == "snapshot" and variant.owns_server:
            key = (variant.name, workload.name)
            if key not in costs:
                rate = rates.get(variant.backend, DEFAULT_RESTORE_RATE)
                costs[key] = CLONE_RESTORE_SECONDS if will_clone(variant) else variant_dataset_bytes(variant,
                                                                                                     workload) / rate
            restores += costs[key]
    return runs, restores


def wait_seconds(campaign: Campaign, run_cost: float, past: Past) -> float:
    """Busy reruns (at the share of past runs they replaced, within the campaign's limit), each with the wait for
    quiet of the run after it (busy.wait, at most the past median quiet wait), and wait_for_quiet's waits."""
    policy, waits = campaign.busy_policy, 0.0
    if policy.policy == "rerun" and past.runs and campaign.planned_runs:
        reruns = min(past.replaced / past.runs * campaign.planned_runs, policy.reruns_allowed(campaign.planned_runs))
        quiet = min(policy.wait_after_replaced(), statistics.median(past.quiet_waits) if past.quiet_waits else
                    policy.wait_after_replaced())
        waits += reruns * (run_cost / campaign.planned_runs + quiet)
    if campaign.wait_for_quiet and past.quiet_waits:
        waits += quiet_wait_seconds(seconds_of(campaign.wait_for_quiet), statistics.median(past.quiet_waits),
                                    campaign.planned_runs, run_cost)
    return waits


def quiet_wait_seconds(limit: float, median: float, runs: int, run_cost: float) -> float:
    """wait_for_quiet's waits: the past median per run; unless $LAYERBENCH_WAIT_FOR_QUIET is `always`, at most
    what analysis/quiet.py's rule lets a machine that stays busy cost (two waits of at most `limit`, each cut to
    what is left of a tenth of the campaign)."""
    waits = median * runs
    if not learning(env_setting("LAYERBENCH_WAIT_FOR_QUIET")):
        return waits
    return min(waits, STOP_IN_A_ROW * limit, WAIT_SHARE * run_cost + QUIET_STEP)


def last_estimate_line(store: Path, name: str) -> str | None:
    """How far the estimate of the last finished campaign of this name was off (read-only; None: none stored)."""
    found = Store.read_only(store)
    if found is None:
        return None
    with found:
        row = found.last_estimated(name)
        account = None if row is None else time_account(row, found.estimate(row.id), found.runs(row.id))
    return None if account is None else f"last run of {name} (campaign {account.campaign_id}): {account.text()}"
