from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from layerbench.campaign.models import parse_campaign
from layerbench.run.schedule import build_schedule


def campaign(n_variants: int = 3, reps: int = 4, order: str = "rounds", seed: int = 1, threads=(2,)):
    return parse_campaign({
        "name": "s", "baseline": "v0", "repetitions": reps, "order": order, "seed": seed,
        "variants": [{"name": f"v{i}", "backend": "host"} for i in range(n_variants)],
        "workload": {"threads": list(threads)},
    })


def test_rounds_hold_every_variant_once_and_are_seeded() -> None:
    runs = build_schedule(campaign())
    assert len(runs) == 12 and [r.idx for r in runs] == list(range(12))
    for rnd in range(1, 5):
        assert sorted(r.variant for r in runs if r.round == rnd) == ["v0", "v1", "v2"]
    assert build_schedule(campaign()) == runs
    orders = {tuple(r.variant for r in build_schedule(campaign(seed=s))) for s in range(10)}
    assert len(orders) > 1


def test_sequential_keeps_variants_together() -> None:
    runs = build_schedule(campaign(order="sequential"))
    assert [r.variant for r in runs] == ["v0"] * 4 + ["v1"] * 4 + ["v2"] * 4
    assert [r.repetition for r in runs[:4]] == [1, 2, 3, 4]


@given(st.integers(1, 5), st.integers(1, 6), st.sampled_from(["rounds", "sequential"]), st.integers(0, 99),
       st.lists(st.integers(1, 64), min_size=1, max_size=3, unique=True))
def test_every_point_gets_each_repetition_once(n: int, reps: int, order: str, seed: int, threads: list[int]) -> None:
    runs = build_schedule(campaign(n, reps, order, seed, tuple(threads)))
    counts = Counter((r.variant, r.threads, r.repetition) for r in runs)
    assert len(runs) == n * reps * len(threads)
    assert set(counts.values()) == {1}


@given(st.integers(1, 7), st.integers(1, 4), st.integers(0, 2**32))
def test_whole_blocks_give_every_variant_every_place_equally_often(n: int, blocks: int, seed: int) -> None:
    block = n if n % 2 == 0 else 2 * n
    runs = build_schedule(campaign(n, block * blocks, seed=seed))
    places = Counter((r.variant, r.idx % n) for r in runs)
    assert set(places.values()) == {blocks * block // n}


@given(st.sampled_from([2, 4, 6]), st.integers(0, 2**32))
def test_in_a_block_of_an_even_count_each_variant_follows_every_other_once(n: int, seed: int) -> None:
    runs = build_schedule(campaign(n, n, seed=seed))
    rounds = [[r.variant for r in runs if r.round == rnd] for rnd in range(1, n + 1)]
    pairs = Counter((a, b) for order in rounds for a, b in itertools.pairwise(order))
    assert len(pairs) == n * (n - 1) and set(pairs.values()) == {1}


@given(st.integers(1, 6), st.integers(1, 9), st.integers(1, 9), st.integers(0, 99))
def test_more_rounds_keep_the_first_ones(n: int, reps: int, more: int, seed: int) -> None:
    """An adaptive campaign's later rounds extend its plan: the rounds it already ran stay as they were."""
    short, longer = build_schedule(campaign(n, reps, seed=seed)), build_schedule(campaign(n, reps + more, seed=seed))
    assert longer[:len(short)] == short


def test_six_rounds_of_four_put_no_variant_first_more_than_twice() -> None:
    """The A/A campaign of the answers issue: independent shuffles (seed 1) put h4 first in four rounds of six."""
    for seed in range(50):
        runs = build_schedule(campaign(4, 6, seed=seed))
        firsts = Counter(r.variant for r in runs if r.idx % 4 == 0)
        assert max(firsts.values()) <= 2
