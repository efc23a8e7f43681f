"""Typed, versioned records: the contract between a run, the store and the report (see records/run.py for the
format history). The store writes and returns these types; the analysis never indexes a raw row or dict."""

from layerbench.records.campaign import (
    CAMPAIGN_FORMAT,
    AdaptiveRepetitions,
    CampaignRecord,
    VariantRecord,
    WorkloadRecord,
)
from layerbench.records.cpu import QuietWait, Throttling, TopProcess, Usage
from layerbench.records.io import IoCounters
from layerbench.records.run import (
    FORMAT,
    BackendFacts,
    BusyDecision,
    Environment,
    HostFacts,
    Reset,
    RunFacts,
    StoredFacts,
)
from layerbench.records.stored import (
    CampaignListing,
    RunHeader,
    RunMetrics,
    RunRecord,
    ScheduledRun,
    StoredCampaign,
    StoredInterval,
    StoredRun,
)
from layerbench.records.totals import Interval, Totals

__all__ = [
    "CAMPAIGN_FORMAT",
    "FORMAT",
    "AdaptiveRepetitions",
    "BackendFacts",
    "BusyDecision",
    "CampaignListing",
    "CampaignRecord",
    "Environment",
    "HostFacts",
    "Interval",
    "IoCounters",
    "QuietWait",
    "Reset",
    "RunFacts",
    "RunHeader",
    "RunMetrics",
    "RunRecord",
    "ScheduledRun",
    "StoredCampaign",
    "StoredFacts",
    "StoredInterval",
    "StoredRun",
    "Throttling",
    "TopProcess",
    "Totals",
    "Usage",
    "VariantRecord",
    "WorkloadRecord",
]
