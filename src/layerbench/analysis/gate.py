"""A verdict a pipeline can act on (issue #43): which comparisons of a report or of `compare` count as a
regression under `--fail-on`, which could not be decided, and the exit status of the whole (docs/pipelines.md).

The grammar: `--fail-on WORD[:METRIC[,METRIC...]]`, repeatable, any rule matching makes a regression. WORD is
`slower` (a firm `slower`), `slower?` (`slower` or `slower?`: any real slowdown), `faster` or `faster?` (the
same upwards). METRIC restricts the rule to those metrics (tps, qps, queries, lat_avg_ms, lat_pct_ms, or a
compared percentile such as lat_p99_ms); without it, the answer's metrics: tps and lat_pct_ms. `--min-effect
PERCENT` counts a matching verdict only when its estimate is at least that far from 0. A comparison in a
rule's scope is:
- a regression: its verdict is one the rule names (and its estimate passes --min-effect);
- inconclusive: its verdict leaves the rule open: `~`, `need more runs`, `not compared`, and for `slower` (or
  `faster`) also `slower?` (`faster?`), a real difference whose size is not shown to exceed the threshold;
- else passed (`within noise`, the other side, or a match smaller than --min-effect).
The whole is a regression when any comparison is one, else inconclusive when any is (or when there is no
comparison at all), else passed. The verdicts themselves are the report's, unchanged (analysis/stats.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from layerbench.analysis.cross_campaign import CampaignComparison
from layerbench.analysis.latency import point_title
from layerbench.analysis.metrics import Metric
from layerbench.analysis.report_model import Report
from layerbench.analysis.stats import Comparison, Verdict
from layerbench.errors import EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, BadInput, shown

MATCHES = {"slower": ("slower",), "slower?": ("slower", "slower?"), "faster": ("faster",),
           "faster?": ("faster", "faster?")}
UNDECIDED = ("~", "need more runs", "not compared")
DEFAULT_METRICS = (Metric.TPS.value, Metric.LAT_PCT.value)
METRIC_NAME = re.compile(r"(queries|qps|tps|lat_avg_ms|lat_pct_ms|lat_(p[0-9]+(\.[0-9]+)?|max)_ms)")
PASSED, INCONCLUSIVE, REGRESSION = "passed", "inconclusive", "regression"
EXIT_CODES = {PASSED: EXIT_OK, REGRESSION: EXIT_REGRESSION, INCONCLUSIVE: EXIT_INCONCLUSIVE}


@dataclass(frozen=True)
class Rule:
    word: str  # a key of MATCHES
    metrics: tuple[str, ...] = DEFAULT_METRICS

    def text(self) -> str:
        return self.word if self.metrics == DEFAULT_METRICS else f"{self.word}:{','.join(self.metrics)}"

    def open_kinds(self) -> tuple[str, ...]:
        """The verdicts that leave this rule undecided."""
        return (*UNDECIDED, f"{self.word}?") if not self.word.endswith("?") else UNDECIDED


@dataclass(frozen=True)
class Gate:
    rules: tuple[Rule, ...]
    min_effect: float = 0.0  # a fraction: --min-effect 5 is 0.05

    def text(self) -> str:
        size = f" --min-effect {self.min_effect * 100:g}" if self.min_effect else ""
        return " ".join(f"--fail-on {shown(r.text(), quote=False)}" for r in self.rules) + size

    def metrics(self) -> set[str]:
        return {m for r in self.rules for m in r.metrics}

    def status(self, case: Case) -> tuple[str, str]:
        """A comparison's status under this gate, and why (the rule that matched or stayed open)."""
        kind = case.comparison.verdict.kind
        delta = case.comparison.delta
        size = abs(delta.delta) if delta is not None else 0.0
        covering = [r for r in self.rules if case.metric in r.metrics]
        for rule in covering:
            if kind in MATCHES[rule.word] and size >= self.min_effect:
                return REGRESSION, f"matches --fail-on {rule.text()}"
        for rule in covering:
            if kind in rule.open_kinds():
                return INCONCLUSIVE, f"leaves --fail-on {rule.text()} undecided"
        small = " (smaller than --min-effect)" if any(kind in MATCHES[r.word] for r in covering) else ""
        return PASSED, f"no regression{small}"


DEFAULT_GATE = Gate((Rule("slower"),))  # what the JUnit export fails on when no --fail-on is given


@dataclass(frozen=True)
class Case:
    """One comparison a gate looks at: a variant against the baseline (or campaign B against A) at one point,
    for one metric."""

    variant: str
    against: str  # the baseline's name, or `campaign 3` for compare
    point: str  # `oltp_read_write, 8 threads`
    metric: str
    label: str  # `TPS`, `p95 latency (ms)`
    comparison: Comparison


@dataclass(frozen=True)
class Judged:
    case: Case
    status: str
    why: str


@dataclass(frozen=True)
class Outcome:
    """Every comparison in the gate's scope with its status, and the status of the whole."""

    gate: Gate
    judged: tuple[Judged, ...]
    status: str
    empty_why: str = ""  # why there is no comparison at all (then inconclusive)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    def count(self, status: str) -> int:
        return sum(1 for j in self.judged if j.status == status)


def parse_gate(specs: Iterable[str] | None, min_effect: float | None) -> Gate | None:
    """--fail-on and --min-effect as a Gate (None when neither is given: no gate, exit 0 as before); BadInput
    (one line, exit 2) for anything else."""
    rules = tuple(parse_rule(spec) for spec in specs or ())
    if not rules:
        if min_effect is None:
            return None
        raise BadInput("--min-effect: counts only with --fail-on; add e.g. --fail-on slower")
    if min_effect is not None and not 0 <= min_effect < 100:
        raise BadInput(f"--min-effect: {min_effect:g} is not a percentage from 0 to 100; e.g. --min-effect 5")
    return Gate(rules, (min_effect or 0.0) / 100)


def parse_rule(spec: str) -> Rule:
    word, colon, metrics = spec.strip().partition(":")
    if word not in MATCHES:
        raise BadInput(f"--fail-on: {shown(spec)} does not start with a verdict; use one of "
                       f"{', '.join(MATCHES)}, optionally :METRIC (e.g. --fail-on 'slower?:tps')")
    names = tuple(m.strip() for m in metrics.split(",")) if colon else DEFAULT_METRICS
    for name in names:
        if not METRIC_NAME.fullmatch(name):
            raise BadInput(f"--fail-on: {shown(name)} in {shown(spec)} is not a metric; use tps, qps, queries, "
                           "lat_avg_ms, lat_pct_ms or a compared percentile such as lat_p99_ms")
    return Rule(word, names)


def report_cases(report: Report) -> list[Case]:
    """Every comparison of a report with the baseline, and `not compared` for a point's percentile latency when
    its runs report different percentiles."""
    analysis, out = report.analysis, []
    for point in analysis.points:
        note = analysis.not_compared(point)
        for v in point.variants:
            if v.variant == analysis.baseline:
                continue
            for metric, c in v.comparisons.items():
                out.append(Case(v.variant, analysis.baseline, point_title(point), metric,
                                analysis.metric_label(metric), c))
            if note and Metric.LAT_PCT not in v.comparisons:
                verdict = Verdict("not compared", note.removeprefix("not compared: "))
                out.append(Case(v.variant, analysis.baseline, point_title(point), Metric.LAT_PCT,
                                analysis.metric_label(Metric.LAT_PCT), Comparison(v.variant, None, None, None,
                                                                                  verdict, v.n, v.n)))
    return out


def comparison_cases(found: CampaignComparison) -> list[Case]:
    """Every row of `compare`: a variant in campaign B against itself in campaign A."""
    return [Case(r.variant, f"campaign {found.a}", r.workload if r.threads is None else
                 f"{r.workload}, {r.threads} threads", r.metric, r.metric, r.comparison) for r in found.rows]


def judge(gate: Gate, cases: list[Case], empty_why: str = "no comparison was made") -> Outcome:
    """The status of each case in the gate's scope, and of the whole. A metric a rule names that no case has
    is bad input (when there are cases at all)."""
    present = {c.metric for c in cases}
    named = {m for r in gate.rules if r.metrics != DEFAULT_METRICS for m in r.metrics}
    if cases and named - present:
        raise BadInput(f"--fail-on: no comparison of {', '.join(sorted(named - present))} here; the comparisons "
                       f"are of {', '.join(sorted(present))}")
    judged = tuple(Judged(c, *gate.status(c)) for c in cases if c.metric in gate.metrics())
    statuses = {j.status for j in judged}
    status = REGRESSION if REGRESSION in statuses else INCONCLUSIVE if INCONCLUSIVE in statuses or not judged \
        else PASSED
    if cases and not judged:
        empty_why = f"no comparison of {', '.join(sorted(gate.metrics()))}"
    return Outcome(gate, judged, status, "" if judged else empty_why)


def judge_report(gate: Gate, report: Report) -> Outcome:
    return judge(gate, report_cases(report), report.analysis.nothing_to_compare())


def case_title(case: Case) -> str:
    """`docker-bridge` vs `host`, oltp_read_write, 8 threads, tps"""
    return f"`{case.variant}` vs `{case.against}`, {case.point}, {case.metric}"


def summary_lines(outcome: Outcome) -> list[str]:
    """For the terminal: the status and its exit code, the counts, then each regression and each comparison
    left undecided with its verdict."""
    total = len(outcome.judged)
    head = (f"{outcome.gate.text()}: {outcome.status} (exit {outcome.exit_code}): "
            + (f"{outcome.count(REGRESSION)} regression(s), {outcome.count(INCONCLUSIVE)} inconclusive, "
               f"{outcome.count(PASSED)} passed of {total} comparison(s)" if total else outcome.empty_why))
    return [head, *[f"  {j.status}: {case_title(j.case)}: {verdict_text(j.case.comparison.verdict)}"
                    for j in outcome.judged if j.status != PASSED]]


def verdict_text(verdict: Verdict) -> str:
    """`slower -10.68% [-12.1, -9.9] (p=0.002 n=6)`, `~ (p=0.818 n=6)`."""
    return verdict.text if verdict.text.startswith(verdict.kind) else f"{verdict.kind} {verdict.text}"
