"""Typed, versioned records: the contract between a run, the store and the report (see records/run.py for the
format history). The store writes and returns these types; the analysis never indexes a raw row or dict."""

from layerbench.records.campaign import AdaptiveRepetitions, CampaignRecord, VariantRecord, WorkloadRecord
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
    RunMetrics,
    ScheduledRun,
    StoredCampaign,
    StoredInterval,
    StoredRun,
)

__all__ = ["FORMAT", "AdaptiveRepetitions", "BackendFacts", "BusyDecision", "CampaignListing", "CampaignRecord",
           "Environment", "HostFacts", "IoCounters", "QuietWait", "Reset", "RunFacts", "RunMetrics", "ScheduledRun",
           "StoredCampaign", "StoredFacts", "StoredInterval", "StoredRun", "Throttling", "TopProcess", "Usage",
           "VariantRecord",
           "WorkloadRecord"]
