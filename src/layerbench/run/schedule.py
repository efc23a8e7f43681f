"""The schedule: a campaign becomes an ordered list of runs (pure; seeded, so it is reproducible).

`rounds` (default): repetition r of every (workload, threads) point runs every variant once, so machine drift lands
on all variants alike (randomised multiple interleaved trials; Abedi & Brecht, "Conducting Repeatable Experiments in
Highly Variable Cloud Computing Environments", ICPE 2017). The orders within rounds are not drawn independently: a
run's place in its round matters on a real machine (the first run of a round follows another point or a pause, the
last one a long stretch of load), and six independent shuffles of four variants put one of them first in four rounds
of six. Each block of k rounds (2k when k is odd) is a Williams design (Williams, "Experimental designs balanced for
the estimation of residual effects of treatments", 1949): every variant holds every place equally often and follows
every other variant equally often; the variants' labels and the rounds within a block are shuffled with the seeded
RNG, so the plan stays random and reproducible, and a campaign stopped inside a block (adaptive) is off balance by
at most that block. `sequential`: all repetitions of a variant, then the next variant.

A run replaced because the machine was busy (`busy: rerun`, orchestrator.py) gets an extra schedule position: the
next free index, with the round, variant, point and repetition of the run it replaces. `execution_order` runs it
at the end of that group (its round; with `sequential`, its variant's repetitions at that point), so a round
stays a block of every variant measured close together in time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from layerbench.analysis.design import balanced_orders
from layerbench.campaign.models import Campaign


@dataclass(frozen=True)
class RunSpec:
    idx: int  # position in the schedule, 0-based
    round: int  # 1-based round (repetition number in `rounds` order)
    variant: str
    workload: str
    threads: int
    repetition: int  # 1-based repetition of this (variant, workload, threads)

    def as_row(self) -> tuple[int, int, str, str, int, int]:
        return (self.idx, self.round, self.variant, self.workload, self.threads, self.repetition)

    def label(self) -> str:
        return f"{self.variant} / {self.workload} / {self.threads} thr / rep {self.repetition}"


def points(campaign: Campaign) -> list[tuple[str, int]]:
    return [(w.name, t) for w in campaign.workloads for t in w.threads]


def build_schedule(campaign: Campaign, repetitions: int | None = None) -> list[RunSpec]:
    reps = repetitions if repetitions is not None else campaign.rounds
    names = [v.name for v in campaign.variants]
    order: list[tuple[int, str, str, int]] = []
    if campaign.order == "sequential":
        for name in names:
            for workload, threads in points(campaign):
                order += [(r, name, workload, threads) for r in range(1, reps + 1)]
    else:
        rng = random.Random(campaign.seed)
        orders = {point: balanced_orders(names, reps, rng) for point in points(campaign)}
        for r in range(1, reps + 1):
            for workload, threads in points(campaign):
                order += [(r, name, workload, threads) for name in orders[(workload, threads)][r - 1]]
    return [RunSpec(i, r, name, w, t, r) for i, (r, name, w, t) in enumerate(order)]


def replacement(spec: RunSpec, idx: int) -> RunSpec:
    """The extra position that replaces `spec`: the same round, variant, point and repetition, at index `idx`."""
    return RunSpec(idx, spec.round, spec.variant, spec.workload, spec.threads, spec.repetition)


def execution_order(specs: list[RunSpec], order: str) -> list[RunSpec]:
    """The order runs execute in: the schedule's, each group (a round, or with `sequential` a variant's repetitions
    at one point) where its first run is, and a replacement (a higher index) at the end of its group."""
    def group(s: RunSpec) -> tuple[object, ...]:
        return (s.variant, s.workload, s.threads) if order == "sequential" else (s.round,)

    first: dict[tuple[object, ...], int] = {}
    for s in sorted(specs, key=lambda s: s.idx):
        first.setdefault(group(s), s.idx)
    return sorted(specs, key=lambda s: (first[group(s)], s.idx))
