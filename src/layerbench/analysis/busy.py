"""A busy machine: runs during which processes outside the run (the sampler's "other" CPU, which includes a
hypervisor's steal time) took more than a set share of the machine's CPUs, and what those processes were.

The share is other / (all CPU time of the window: busy + idle, every CPU); with 2 CPUs, 0.15 is 0.3 of a CPU
taken by something else for the whole run. Read from each run's stored resource record, so old campaigns and
rebuilt reports get the same warning.

What is done about a busy run is the campaign's `busy:` policy (`decide`, applied by the orchestrator right after
the run and stored with it as a BusyDecision): `rerun` replaces it by an extra run while the campaign's rerun limit
lasts, `keep` keeps it, `fail` stops the campaign. Load the campaign itself asks for (a neighbour it starts on
purpose) is never "other": whatever the sampler counts as one of the run's named components (the backend's
`components`, resources.ResourceSampler) is left out of the share, so such load must be sampled as a component
of its own, and then it neither flags nor replaces a run."""

from __future__ import annotations

from dataclasses import dataclass

from layerbench.analysis.quiet import stopped_text
from layerbench.measure.cpu import BUSY_SHARE
from layerbench.records import BusyDecision, QuietWait, RunFacts, StoredFacts, Usage


@dataclass(frozen=True)
class Busy:
    share: float  # of all CPU time in the window, used by other processes (steal included)
    steal_share: float
    top: tuple[tuple[str, float], ...]  # (process name, CPU seconds), busiest first


REPLACED_TITLE = "Replaced runs (busy machine)"
REPLACED_INTRO = (f"Processes outside these runs took more than {BUSY_SHARE * 100:.0f} % of the CPUs while they were "
                  "measured, so each was run again at the end of its round (with order: sequential, of its "
                  "variant's repetitions; busy: rerun) and the statistics use the rerun; they stay in the store "
                  "and in the run table.")  # plain text: markdown and HTML show it alike
REPLACED_COLUMNS = ("run", "variant", "point", "round", "replaced by", "why")


@dataclass(frozen=True)
class Replaced:
    """A run the campaign replaced because the machine was busy (kept in the store, left out of the analysis)."""

    run: int  # 1-based run number
    variant: str
    point: str
    round: int | None
    replaced_by: int | None  # 1-based run number of the replacement
    why: str

    def cells(self) -> list[str]:
        by = "-" if self.replaced_by is None else f"run {self.replaced_by}"
        return [f"run {self.run}", self.variant, self.point, str(self.round or "-"), by, self.why]

    def status(self) -> str:
        """The run table's status cell."""
        return f"replaced by run {self.replaced_by}: {self.why}" if self.replaced_by else f"replaced: {self.why}"


def busy_key(server_host: str | None) -> str:
    """The component whose CPU decides busy-ness: `other` of the host the server runs on (`other@<host>` with
    `hosts:`; the harness's plain `other` when the campaign has no inventory, the server then running here)."""
    return "other" if server_host is None else f"other@{server_host}"


def host_of(key: str) -> str | None:
    """The host a CPU component was read on (`server@db` -> db); None for an unplaced key (`idle`, `other`)."""
    name, at, host = key.rpartition("@")
    return host if at and name else None


def busy_run(usage: Usage, threshold: float = BUSY_SHARE, server_host: str | None = None,
             same_kernel: frozenset[str] = frozenset()) -> Busy | None:
    """The run's busy facts when processes outside the run took more than `threshold` of the server host's CPU
    time. With `hosts:` only `other@<server_host>` counts: a load on the client's host or on the harness's (when
    the server runs elsewhere) does not make a run busy. The share's whole is the server host's reading: its
    components, `idle`, and those of hosts in `same_kernel` (hosts sharing its kernel, whose CPU its /proc/stat
    holds too); the CPU of a separate machine (a remote sysbench's) is not part of it."""
    def read_there(key: str) -> bool:
        host = host_of(key)
        return server_host is None or host is None or host == server_host or host in same_kernel

    total = sum(seconds for key, seconds in usage.cpu_seconds.items() if read_there(key))
    other = usage.cpu_seconds.get(busy_key(server_host), 0.0)
    if total <= 0 or other / total <= threshold:
        return None
    return Busy(other / total, usage.steal_seconds / total, tuple((p.name, p.cpu_seconds) for p in usage.top_other))


def run_busy(facts: StoredFacts | RunFacts, threshold: float = BUSY_SHARE) -> Busy | None:
    """busy_run of a run's stored facts: its usage, read against the host its environment says the server ran
    on (and the hosts that share that host's kernel, from their boot ids)."""
    usage = facts.usage if isinstance(facts, StoredFacts) else facts.resources
    if usage is None:
        return None
    place = facts.environment.server_place() if facts.environment else (None, frozenset())
    return busy_run(usage, threshold, place[0], place[1])


def decide(busy: Busy, policy: str, used: int, allowed: int, next_idx: int, waiting: bool = True) -> BusyDecision:
    """What `busy:` does with a busy run: `rerun` replaces it by the run at `next_idx` while fewer than `allowed`
    runs of the campaign were replaced (`used` so far) and the campaign still waits for quiet (`waiting`; without
    a wait a rerun falls in the same busy spell: analysis/quiet.py), else keeps it; `keep` keeps it; `fail` stops
    the campaign."""
    if policy == "rerun" and used < allowed and waiting:
        return BusyDecision("replaced", policy, busy.share, busy.steal_share, busy.top, next_idx, used + 1, allowed)
    return BusyDecision("stopped" if policy == "fail" else "kept", policy, busy.share, busy.steal_share, busy.top,
                        None, used, allowed, waiting_stopped=policy == "rerun" and used < allowed)


def busy_reason(decision: BusyDecision | Busy) -> str:
    """Why a run counts as busy, in one phrase: the share, the steal, the busiest other processes."""
    steal = f", hypervisor steal {decision.steal_share * 100:.0f} %" if decision.steal_share >= 0.01 else ""
    names = busiest(decision.top)
    return (f"processes outside the run took {decision.share * 100:.0f} % of the CPUs{steal}"
            f"{'; busiest: ' + names if names else ''}")


def what_was_done(decided: list[tuple[str, BusyDecision | None]], waited_seconds: float = 0.0) -> str | None:
    """The end of the busy warning: what `busy:` did with the flagged runs (replaced, kept, stopped) and how long
    wait_for_quiet waited; None when no flagged run carries a decision (campaigns stored before `busy:`)."""
    if not any(d for _, d in decided):
        return None
    replaced = [d for _, d in decided if d and d.action == "replaced"]
    over = [label for label, d in decided if d and d.action == "kept" and d.policy == "rerun" and not d.waiting_stopped]
    unwaited = [label for label, d in decided if d and d.action == "kept" and d.waiting_stopped]
    kept = [label for label, d in decided if d is None or (d.action == "kept" and d.policy != "rerun")]
    stopped = [label for label, d in decided if d and d.action == "stopped"]
    limit = max(d.max_reruns for _, d in decided if d)
    said = []
    if replaced:
        said.append(f"replaced {len(replaced)} of them by reruns at the end of their rounds (busy: rerun, "
                    f"{max(d.reruns_used for d in replaced)} of {limit} reruns used); the verdicts use the clean runs")
    if over:
        said.append(f"the machine never got quiet: the limit of {limit} reruns was reached, so {len(over)} busy "
                    f"run(s) ({short_list(over)}) are kept in the analysis and their numbers may swing")
    if unwaited:
        said.append(f"{len(unwaited)} busy run(s) ({short_list(unwaited)}) are kept in the analysis, not rerun, "
                    "because the campaign had stopped waiting for quiet (a rerun would fall in the same busy spell); "
                    "their numbers may swing")
    if kept:  # busy: keep, or runs stored before busy: existed (a resumed old campaign)
        policy = "; busy: keep" if any(d and d.policy == "keep" for _, d in decided) else ""
        said.append(f"kept {len(kept)} ({short_list(kept)}{policy}): their numbers may swing")
    if stopped:
        said.append(f"the campaign stopped at {short_list(stopped)} (busy: fail)")
    if waited_seconds > 0:
        said.append(f"wait_for_quiet waited {waited_seconds:.0f} s in all before runs")
    return "; ".join(said)


def busiest(top: list[tuple[str, float]] | tuple[tuple[str, float], ...], most: int = 3) -> str:
    """The busiest other processes, CPU seconds summed by name (several workers of one program are one entry)."""
    by_name: dict[str, float] = {}
    for name, seconds in top:
        by_name[name] = by_name.get(name, 0.0) + seconds
    return ", ".join(f"{n} ({s:.1f} CPU-s)" for n, s in sorted(by_name.items(), key=lambda x: -x[1])[:most])


def short_list(labels: list[str], most: int = 8) -> str:
    return ", ".join(labels[:most]) + (" ..." if len(labels) > most else "")


def busy_warning(flagged: list[tuple[str, Busy]], total_runs: int, threshold: float = BUSY_SHARE,
                 done: str | None = None) -> str | None:
    """One warning for the report: which runs, how busy, the busiest other processes over them, and `done`: what
    the campaign did about them (what_was_done); without it, the advice of campaigns stored before `busy:`."""
    if not flagged:
        return None
    worst = max(b.share for _, b in flagged)
    steal = max(b.steal_share for _, b in flagged)
    names = busiest([p for _, b in flagged for p in b.top])
    runs = short_list([label for label, _ in flagged])
    steal_text = f"; hypervisor steal up to {steal * 100:.0f} %" if steal >= 0.01 else ""
    return (f"the machine was busy during {len(flagged)} of {total_runs} runs ({runs}): processes outside the runs "
            f"took up to {worst * 100:.0f} % of the CPUs (threshold {threshold * 100:.0f} %){steal_text}"
            f"{'; busiest: ' + names if names else ''}. "
            f"{done[0].upper() + done[1:] if done else 'Their numbers may swing; rerun them on a quiet machine'}")


def quiet_wait_warning(waits: list[tuple[int, QuietWait]]) -> str | None:
    """The waits for quiet (1-based run, wait; in the order they ran): the runs that started on a busy machine
    because the wait ran out, the time waited, and after which run the campaign stopped waiting (analysis/quiet.py)."""
    if not waits:
        return None
    total = sum(w.waited_seconds for _, w in waits)
    loud = [f"run {run}" for run, w in waits if not w.quiet]
    if not loud:
        return None
    stopped = stopped_text(waits)
    then = f"; {stopped}, so later runs did not wait" if stopped else ""
    return (f"waiting for quiet: {len(loud)} of {len(waits)} runs started on a busy machine after waiting the "
            f"longest allowed ({short_list(loud)}); {total:.0f} s waited in all{then}")
