"""Adaptive repetitions: the stopping rule's error rate on simulated campaigns, its stop reasons, and the
`repetitions` forms a campaign file accepts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.analysis.sequential import over_budget, simulate_rounds, stop_reason
from layerbench.campaign.models import parse_campaign
from layerbench.campaign.rounds import Adaptive
from layerbench.errors import BadInput

BASE = {"name": "seq", "baseline": "a", "variants": [{"name": "a", "backend": "host"}], "workload": {}}


@pytest.mark.parametrize("cv", [0.02, 0.05, 0.10])
def test_a_true_zero_is_called_slower_or_faster_at_most_alpha_of_the_time(cv: float) -> None:
    found = simulate_rounds(0.0, campaigns=4000, cv=cv, seed=7)
    false_verdicts = found.share("slower") + found.share("faster")
    assert false_verdicts <= 0.05
    assert found.ever_rejected.mean() <= 0.05  # no look at all rejected 0, the stronger claim
    naive = simulate_rounds(0.0, campaigns=4000, cv=cv, seed=7, rounds_min=20, rounds_max=20)
    # one look: the plain paired t-test, exact at alpha for normal log ratios, so its rate scatters around 5 %: at
    # most alpha + 4 standard errors of 4,000 campaigns (as tests/unit/test_paired.py bounds its A/A cells)
    assert naive.ever_rejected.mean() <= 0.05 + 4 * (0.05 * 0.95 / 4000) ** 0.5


def test_the_looks_of_a_campaign_paired_by_round_use_the_paired_t_test() -> None:
    """Round drift (sd 30 %) that hits both runs of a round alike: the paired t-test decides a -10 % cost at CV 5 %
    in most campaigns, the unpaired test in almost none."""
    paired = simulate_rounds(-0.10, campaigns=1000, cv=0.05, round_sd=0.30)
    unpaired = simulate_rounds(-0.10, campaigns=1000, cv=0.05, round_sd=0.30, estimator="unpaired")
    assert paired.share("slower") > 0.9 and unpaired.share("slower") < 0.1


def test_naive_peeking_would_inflate_the_error_which_the_split_prevents() -> None:
    """The same looks at full alpha each (what a naive rule does) reject 0 more often than alpha."""
    peeking = simulate_rounds(0.0, campaigns=4000, cv=0.05, seed=3, alpha=0.05 * 17)
    assert peeking.ever_rejected.mean() > 0.05


def test_clear_effects_stop_early_and_say_slower() -> None:
    big = simulate_rounds(-0.30, campaigns=2000, cv=0.05)
    assert big.share("slower") == 1.0 and big.rounds.max() < 20
    ten = simulate_rounds(-0.10, campaigns=2000, cv=0.05)
    assert ten.share("slower") > 0.9 and ten.rounds.mean() < big.rounds.mean() + 10
    assert ten.share("faster") == 0.0


def test_stop_reasons() -> None:
    assert stop_reason(True, 3, 4, 20, False) is None  # below min: never stop
    assert stop_reason(True, 4, 4, 20, False) == "all decided"
    assert stop_reason(False, 7, 4, 20, False) is None
    assert stop_reason(False, 7, 4, 20, True) == "budget"
    assert stop_reason(False, 20, 4, 20, False) == "max rounds"
    assert over_budget(600, 550, 5) and not over_budget(600, 400, 5) and not over_budget(None, 1e9, 1)


def test_repetitions_forms() -> None:
    assert parse_campaign({**BASE, "repetitions": 7}).rounds == 7
    auto = parse_campaign({**BASE, "repetitions": "auto"}).repetitions
    assert isinstance(auto, Adaptive) and (auto.min, auto.max, auto.budget) == (6, 30, None)
    given = parse_campaign({**BASE, "repetitions": {"auto": True, "min": 4, "max": 12, "budget": "30m"}})
    assert given.rounds == 12 and given.repetitions.budget_seconds == 1800  # type: ignore[union-attr]


@pytest.mark.parametrize(("value", "message"), [
    ({"auto": True, "min": 8, "max": 4}, "repetitions: max 4 is below min 8; set max >= min"),
    ({"auto": True, "budget": "3 days"}, "repetitions.budget: not a wall time; write it like 90s, 30m or 2h"),
    ({"auto": True, "mx": 3}, "repetitions.mx: unknown key (use auto, min, max, budget)"),
    ({"auto": True, "max": 5000}, "repetitions.max: Input should be less than or equal to 1000"),
    ({"auto": False}, "repetitions.auto: Input should be True"),
    (0, "repetitions: 0 is not a number of rounds; give 1 to 1000, or auto"),
    (True, "repetitions: True is not a number of rounds; give 1 to 1000, or auto"),
    ("often", "repetitions: 'often' is not a number of rounds; give 1 to 1000, or auto"),
])
def test_bad_repetitions_are_one_line(value: object, message: str) -> None:
    with pytest.raises(BadInput) as caught:
        parse_campaign({**BASE, "repetitions": value})
    assert str(caught.value) == message


VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                          st.sampled_from(["auto", "min", "max", "budget", "x"]), inner, max_size=4), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_any_repetitions_value_parses_or_is_one_line(value: object) -> None:
    try:
        campaign = parse_campaign({**BASE, "repetitions": value})
    except BadInput as error:
        assert "\n" not in str(error) and str(error).startswith("repetitions")
    else:
        assert 1 <= campaign.rounds <= 1000
