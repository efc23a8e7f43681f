"""The analysis' one door to the store: load a campaign's record, runs, schedule and estimate at once into a
LoadedCampaign, which every other module of analysis/ reads without a store (tests/unit/test_architecture.py:
this is the only module of analysis/ that imports the store or sqlite3)."""

from __future__ import annotations

from collections.abc import Mapping

from layerbench.analysis.aggregate import Analysis, LoadedCampaign, analyze_loaded
from layerbench.statistics_settings import Overrides
from layerbench.store import Store


def load(store: Store, ref: str | int) -> LoadedCampaign:
    """A campaign by id, `latest` or name (Store.campaign), with all the analysis reads of it."""
    row = store.campaign(ref)
    return LoadedCampaign(row, tuple(store.runs(row.id)), tuple(store.schedule(row.id)), store.estimate(row.id))


def analyze(store: Store, ref: str | int, overrides: Overrides | Mapping[str, float] | None = None) -> Analysis:
    """A stored campaign loaded, then analysed (aggregate.analyze_loaded): what the commands, the orchestrator and
    the tests that fill a store call."""
    return analyze_loaded(load(store, ref), overrides)
