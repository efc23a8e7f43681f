from __future__ import annotations

import pytest

from layerbench.analysis.overhead import per_1000, sampled_transactions
from layerbench.analysis.runs import RunRow
from layerbench.records import StoredFacts, Usage


def test_cpu_per_transaction_uses_the_sampled_window_warmup_included() -> None:
    # 3 s of warm-up at 100 TPS, then 1,000 measured transactions; the sampler saw all of it
    series = ((1.0, 100.0, True), (2.0, 100.0, True), (3.0, 100.0, True), (4.0, 100.0, False))
    usage = Usage.from_json({"cpu_seconds": {"server": 2.6, "client": 0.26, "idle": 9.0}})
    run = RunRow(1, 0, 1, "v", "w", 2, 1, "ok", None, {}, StoredFacts(usage=usage), series=series, transactions=1000)
    assert sampled_transactions(run, 1.0) == 1300
    assert per_1000(usage, run, 1.0) == pytest.approx({"server": 2.0, "client": 0.2})
