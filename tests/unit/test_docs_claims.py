"""Claims of README.md and docs/ that no other test pinned, each shown by the code itself (issue #29 item 5):
docs/statistics.md "Limits" (no fixed floor of runs: the attainable p after Holm), its speed table (an import
holds at most 20,000 runs), README's "4 runs per side for one comparison"."""

from __future__ import annotations

import pytest

from layerbench.analysis.attainable import runs_needed, verdict_possible
from layerbench.campaign import MAX_RUNS, parse_campaign
from layerbench.errors import BadInput
from layerbench.importer import parse_csv
from layerbench.settings import MIN_RUNS, Settings


@pytest.mark.parametrize(("comparisons", "alpha", "runs"), [(1, 0.05, 4), (1, 0.01, 5), (3, 0.05, 5)])
def test_the_runs_a_verdict_needs_come_from_alpha_and_holm(comparisons: int, alpha: float, runs: int) -> None:
    assert runs_needed(comparisons=comparisons, alpha=alpha) == runs
    assert not verdict_possible(runs - 1, runs - 1, comparisons=comparisons, alpha=alpha)


def test_there_is_no_fixed_floor_of_runs_unless_the_campaign_sets_one() -> None:
    assert MIN_RUNS == 0 and Settings().min_runs == 0
    campaign = parse_campaign({"name": "c", "baseline": "a", "variants": [{"name": "a", "backend": "host"}],
                               "workload": {}})
    assert campaign.min_runs is None


def test_an_import_holds_at_most_20000_runs() -> None:
    assert MAX_RUNS == 20_000
    rows = "".join(f"v{i // 1000},{i % 1000 + 1},100\n" for i in range(MAX_RUNS + 1))
    with pytest.raises(BadInput, match="20,001 rows, more than the 20,000 runs a campaign may hold"):
        parse_csv("variant,iteration,tps\n" + rows)
    assert len(parse_csv("variant,iteration,tps\n" + rows.split("\n", 1)[1])) == MAX_RUNS
