"""The analysis without a store (issue #45): a LoadedCampaign built in memory, as analysis/loading.py would load
it, and the pure functions over it: analyze_loaded, the thread sweep, price-performance and the CPU overhead."""

from __future__ import annotations

import subprocess
import sys

import pytest

from layerbench.analysis.aggregate import Analysis, LoadedCampaign, analyze_loaded
from layerbench.analysis.metrics import Metric
from layerbench.analysis.overhead import overhead_rows
from layerbench.analysis.price import price_performance
from layerbench.analysis.sweeps import sweeps
from layerbench.records import (
    CampaignRecord,
    RunMetrics,
    ScheduledRun,
    StoredCampaign,
    StoredFacts,
    StoredInterval,
    StoredRun,
    Usage,
)
from layerbench.records.estimate import TimeEstimate

SPEED = {"host": 1.0, "vm": 0.9}  # the vm's TPS is 10 % lower
THREADS = (2, 4)
ROUNDS = 6
START = 1_700_000_000.0


def definition(**extra: object) -> CampaignRecord:
    return CampaignRecord.from_json({
        "name": "pure", "baseline": "host", "repetitions": ROUNDS, "order": "rounds", "estimator": "paired",
        "variants": [{"name": "host", "backend": "host", "cost_per_month": 200.0},
                     {"name": "vm", "backend": "vm", "vcpus": 2, "memory": "2G", "cost_per_month": 120.0}],
        "workloads": [{"name": "oltp", "test": "oltp_read_write", "threads": list(THREADS), "duration": 10,
                       "percentile": 95}], **extra})


def schedule() -> tuple[ScheduledRun, ...]:
    """Each round: every (variant, threads) once, in a fixed order."""
    rows = [(rnd, variant, threads) for rnd in range(1, ROUNDS + 1) for threads in THREADS for variant in SPEED]
    return tuple(ScheduledRun(i, rnd, variant, "oltp", threads, rnd) for i, (rnd, variant, threads) in enumerate(rows))


def stored_run(spec: ScheduledRun) -> StoredRun:
    """A run of 12 one-second intervals (2 of warm-up) whose TPS is 100 per thread times its variant's speed,
    with a little round-to-round wobble; the sampler saw 2.4 CPU seconds of server per 1,000 transactions."""
    tps = 100.0 * spec.threads * SPEED[spec.variant] * (1 + 0.004 * ((spec.round * 7 + spec.threads) % 5 - 2))
    intervals = tuple(StoredInterval(float(s), tps * (0.5 if s <= 2 else 1.0), tps * 20, s <= 2) for s in range(1, 13))
    transactions = round(tps * 10)
    warm = 2 * tps * 0.5
    usage = Usage.from_json({"cpu_seconds": {"server": 2.4 * (transactions + warm) / 1000, "idle": 5.0},
                             "throttling": {"/sys/fs/cgroup/x": {"nr_periods": 100, "nr_throttled": 10,
                                                                 "throttled_seconds": 0.5}}})
    metrics = RunMetrics(10.0, transactions, transactions * 20.0, tps, tps * 20, 1000 / tps, 1500 / tps)
    started = START + spec.idx * 20
    return StoredRun(spec.idx + 1, spec.idx, spec.round, spec.variant, spec.workload, spec.threads, spec.repetition,
                     "ok", None, started, metrics, 95.0, StoredFacts(usage=usage), intervals, {}, started + 15)


def loaded(estimate: TimeEstimate | None = None, **extra: object) -> LoadedCampaign:
    plan = schedule()
    runs = tuple(stored_run(spec) for spec in plan)
    record = definition(**extra)
    campaign = StoredCampaign(1, "pure", "finished", START, START + 20 * len(plan), record, None, "results", "host",
                              None)
    return LoadedCampaign(campaign, runs, plan, estimate)


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    return analyze_loaded(loaded())


def test_a_loaded_campaign_is_analysed_without_a_store(analysis: Analysis) -> None:
    assert (analysis.campaign_id, analysis.name, analysis.baseline, analysis.status) == (1, "pure", "host", "finished")
    assert len(analysis.runs) == analysis.planned_runs == ROUNDS * len(SPEED) * len(THREADS)
    assert [(p.workload, p.threads) for p in analysis.points] == [("oltp", t) for t in THREADS]
    assert analysis.unpaired_why is None  # interleaved in rounds, estimator: paired
    for point in analysis.points:
        vm = next(v for v in point.variants if v.variant == "vm")
        found = vm.verdict(Metric.TPS)
        assert found is not None and found.verdict.kind == "slower"
        deltas = {d.metric: d.deviation_pct for d in vm.deltas}
        assert deltas[Metric.TPS] == pytest.approx(-10.0, abs=0.5)
    assert analysis.warnings == [] and analysis.timing is None  # no estimate loaded


def test_overrides_reanalyse_the_same_loaded_campaign() -> None:
    once = loaded()
    assert analyze_loaded(once, {"alpha": 0.01}).settings.alpha == 0.01
    assert analyze_loaded(once).settings.alpha == 0.05  # the loaded definition keeps its own


def test_the_vm_size_is_compared_with_the_baseline_from_the_stored_definition(analysis: Analysis) -> None:
    """The vm variant was stored with `vcpus` (a guest's own size): against an unpinned baseline without an
    environment, nothing is known to compare; against a pinned one, 2 vCPUs vs 1 CPU is a difference."""
    assert analysis.differences == []
    pinned = definition().document
    pinned["variants"][0]["cpus"] = "0"
    found = analyze_loaded(loaded(variants=pinned["variants"])).differences
    assert [(d.variant, d.baseline_value, d.variant_value) for d in found] == [("vm", "1", "2")]


def test_the_thread_sweep_has_a_row_per_thread_count(analysis: Analysis) -> None:
    rows = sweeps(analysis)[("oltp", "vm")]
    assert [r.threads for r in rows] == list(THREADS)
    assert all(r.verdict == "slower" and r.tps_delta_pct == pytest.approx(-10.0, abs=0.5) for r in rows)
    assert rows[1].baseline_tps == pytest.approx(2 * rows[0].baseline_tps, rel=0.02)


def test_price_performance_puts_the_baseline_throughput_at_each_variant_cost(analysis: Analysis) -> None:
    by_name = {p.variant: p for p in price_performance(analysis)}
    host, vm = by_name["host"], by_name["vm"]
    assert host.tps_per_cost == pytest.approx(host.mean_tps / 200.0)
    assert vm.cost_for_baseline_tps == pytest.approx(120.0 / 0.9, rel=0.01)


def test_overhead_is_cpu_per_1000_transactions_and_throttling(analysis: Analysis) -> None:
    rows = overhead_rows(analysis)
    assert [(r.variant, r.point, r.runs) for r in rows] == [
        (v, f"oltp, {t} threads", ROUNDS) for t in THREADS for v in SPEED]
    assert all(r.cpu_per_1000_tx == {"server": pytest.approx(2.4, rel=1e-3)} for r in rows)
    assert all(r.throttled_share == pytest.approx(0.1) and r.throttled_seconds == 0.5 for r in rows)


def test_the_estimate_is_put_beside_the_wall_time() -> None:
    took = 20 * len(schedule())
    timing = analyze_loaded(loaded(TimeEstimate({"runs": took / 2}, 3, "estimate from 3 past runs"))).timing
    assert timing is not None and timing.took == took and timing.off == pytest.approx(1.0)


def test_the_pure_analysis_loads_neither_the_store_nor_sqlite3() -> None:
    """Only analysis/loading.py reads the store; every other module of the analysis imports without it."""
    code = ("import sys; import layerbench.analysis.aggregate, layerbench.analysis.report_model, "
            "layerbench.analysis.cross_campaign, layerbench.analysis.sweeps, layerbench.analysis.price, "
            "layerbench.analysis.overhead; "
            "print(sorted(m for m in sys.modules if m in ('sqlite3', 'layerbench.store')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_a_variant_whose_server_cpu_was_not_read_says_why_in_where_the_overhead_went() -> None:
    """analysis/overhead.py overhead_notes, report/markdown.py and report/html.py: one line per variant and reason."""
    from dataclasses import replace

    from layerbench.analysis.report_model import report_model
    from layerbench.report import html, markdown

    why = "the server's CPU was not read in its pod on node n1 (ApiException: (403)); this machine is not a node"
    base = loaded()
    runs = tuple(replace(r, facts=StoredFacts(usage=Usage.from_json({"cpu_seconds": {}, "notes": [why]})))
                 if r.variant == "vm" else r for r in base.runs)
    report = report_model(analyze_loaded(replace(base, runs=runs)))
    [note] = report.overhead_notes
    assert note.startswith(f"`vm`: {why} (run ") and note.endswith(" ...)")
    text = markdown.render(report)
    assert f"- {note}" in text.split("## Where the overhead went")[1].split("## ")[0]
    assert "was not read in its pod on node n1" in html.render(report).split("Where the overhead went")[1]
