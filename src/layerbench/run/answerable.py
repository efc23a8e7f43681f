"""Plans that can answer (issue #43 item 2): per (workload, threads) point, the fewest rounds at which each
comparison can reach a verdict under the plan's alpha, Holm family and adaptive looks, as `validate` prints it,
and the refusal of a plan that never can. The rule is analysis/attainable.py's (`point_needs`, `rounds_needed`),
the one the report's rule line states, so the plan and the report cannot disagree. A campaign that says
`estimates_only: true` wants estimates only: it is not refused, and validate says it gives no verdict."""

from __future__ import annotations

from layerbench.analysis.attainable import T_MIN_PAIRS, PointNeed, point_needs
from layerbench.campaign.models import Campaign
from layerbench.campaign.rounds import Adaptive
from layerbench.errors import BadInput

ROUNDS_LIMIT = 1000  # repetitions' own limit (campaign/models.py)


def paired(campaign: Campaign) -> bool:
    """Whether the comparisons will be paired by round (analysis/aggregate.py unpaired_reason, at plan time)."""
    return campaign.estimator == "paired" and campaign.order == "rounds"


def needs(campaign: Campaign, rounds_max: int | None = None) -> list[PointNeed]:
    """Per point, the rounds its comparisons need; `rounds_max`: an adaptive campaign's max other than its own
    (its looks, and so its alpha per look, follow max)."""
    spec = campaign.repetitions
    looks = max(1, (rounds_max or spec.max) - spec.min + 1) if isinstance(spec, Adaptive) else 1
    points = [(w.name, t) for w in campaign.workloads for t in w.threads]
    return point_needs(points, len(campaign.variants), paired=paired(campaign), alpha=campaign.alpha, looks=looks,
                       min_runs=campaign.min_runs or 0, sweep=campaign.correction == "sweep")


def method(campaign: Campaign, need: PointNeed) -> str:
    """Which rule sets the need: the paired t-test's floor, or the Mann-Whitney test's attainable p."""
    spec = campaign.repetitions
    level = (f"alpha {campaign.alpha:g} / {spec.max - spec.min + 1} looks" if isinstance(spec, Adaptive) else
             f"alpha {campaign.alpha:g}")
    floor = f", min_runs {campaign.min_runs}" if campaign.min_runs and campaign.min_runs >= need.rounds else ""
    if paired(campaign):
        return f"paired t-test, floor {T_MIN_PAIRS} pairs{floor}"
    return f"unpaired Mann-Whitney at {level} after Holm over {need.comparisons}{floor}"


def lines(campaign: Campaign) -> list[str]:
    """validate's lines: per point, the comparisons there and the round from which each can reach a verdict."""
    found = needs(campaign)
    if not found:
        return ["verdicts: none to make (one variant: no comparison with the baseline)"]
    rounds, out = campaign.rounds, []
    for need in found:
        head = (f"verdicts at {need.point}: {need.comparisons} comparison(s) in the Holm family "
                f"({method(campaign, need)}): a verdict from round {need.rounds}")
        if need.rounds <= rounds:
            out.append(f"{head}; the plan runs {rounds_text(campaign)}")
        else:
            out.append(f"{head}; estimates only (estimates_only: true): the plan's {rounds} round(s) give none")
    return out


def rounds_text(campaign: Campaign) -> str:
    spec = campaign.repetitions
    return f"up to {spec.max} rounds (from {spec.min})" if isinstance(spec, Adaptive) else f"{spec} rounds"


def check(campaign: Campaign) -> None:
    """Refuse a plan whose rounds can never give a verdict (one line: what to set), unless it wants estimates only."""
    if campaign.estimates_only:
        return
    found = needs(campaign)
    short = max(found, key=lambda n: n.rounds, default=None)
    if short is None or short.rounds <= campaign.rounds:
        return
    where = f" at {short.point}" if len({n.rounds for n in found}) > 1 else ""
    why = f" ({method(campaign, short)})"
    spec = campaign.repetitions
    if isinstance(spec, Adaptive):
        wanted = fewest_max(campaign)
        fix = f"set repetitions.max: {wanted}" if wanted else "set estimator: paired"
        raise BadInput(f"repetitions: max {spec.max} gives at most {spec.max} rounds; a verdict{where} needs >= "
                       f"{short.rounds}{why}: {fix}, or estimates_only: true")
    raise BadInput(f"repetitions: {spec} gives {spec} round{'' if spec == 1 else 's'}; a verdict{where} needs >= "
                   f"{short.rounds}{why}: set repetitions: {short.rounds}, or estimates_only: true")


def fewest_max(campaign: Campaign) -> int | None:
    """The fewest adaptive max whose rounds reach what the looks up to it ask for (more looks lower alpha per
    look, which an unpaired test pays in runs), or None within repetitions' limit."""
    return next((top for top in range(campaign.rounds + 1, ROUNDS_LIMIT + 1)
                 if max(n.rounds for n in needs(campaign, top)) <= top), None)
