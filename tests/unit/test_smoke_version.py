from __future__ import annotations

from layerbench.campaign.models import parse_campaign, smoke_version

DATA = {
    "name": "p", "baseline": "h", "repetitions": 10,
    "variants": [{"name": "h", "backend": "host"}, {"name": "d", "backend": "docker"}],
    "workload": {"threads": [4, 8, 16], "duration": 60, "warmup": 10, "tables": 8, "table_size": 100000},
}


def test_smoke_is_tiny_but_the_same_study() -> None:
    smoke = smoke_version(parse_campaign(DATA))
    w = smoke.workloads[0]
    assert (w.tables, w.table_size, w.duration, w.warmup, w.threads, smoke.repetitions) == (1, 1000, 3, 0, [4], 1)
    assert [v.name for v in smoke.variants] == ["h", "d"] and smoke.name == "p-smoke"
    assert smoke.busy_policy.policy == "keep"  # numbers of a smoke run mean nothing: a rerun would only cost time
