"""The metrics the statistics compare, one enum with their labels, units and direction. A member is its key as
the store, the JSON export and the CSV name it (`Metric.TPS == "tps"`), so values keyed by it read the same."""

from __future__ import annotations

from enum import StrEnum


class Metric(StrEnum):
    QUERIES = "queries"
    QPS = "qps"
    TPS = "tps"
    LAT_AVG = "lat_avg_ms"
    LAT_PCT = "lat_pct_ms"  # the campaign's chosen percentile (`percentile:`, default 95)

    @property
    def label(self) -> str:
        """As the reports head its column; `{pct}` stands for the percentile (`p95 latency (ms)`)."""
        return LABELS[self]

    @property
    def unit(self) -> str:
        return UNITS[self]

    @property
    def higher_is_better(self) -> bool:
        return self in (Metric.QUERIES, Metric.QPS, Metric.TPS)

    def labelled(self, percentile: str) -> str:
        return self.label.format(pct=percentile)


LABELS = {Metric.QUERIES: "total queries", Metric.QPS: "QPS", Metric.TPS: "TPS",
          Metric.LAT_AVG: "avg latency (ms)", Metric.LAT_PCT: "p{pct} latency (ms)"}
UNITS = {Metric.QUERIES: "queries", Metric.QPS: "queries/s", Metric.TPS: "transactions/s", Metric.LAT_AVG: "ms",
         Metric.LAT_PCT: "ms"}
