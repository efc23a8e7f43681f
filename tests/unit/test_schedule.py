from __future__ import annotations

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
