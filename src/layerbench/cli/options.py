"""The options and arguments several commands share (--db, the statistics options, REF, --scale), with their help
texts; the statistics defaults shown come from statistics_settings.DEFAULTS."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from layerbench.statistics_settings import DEFAULTS

DbOption = Annotated[Path | None, typer.Option(
    "--db", help="SQLite store [default: $LAYERBENCH_DB, else results/layerbench.db]")]
AlphaOption = Annotated[float | None, typer.Option("--alpha", help="significance level of the verdicts "
                                                                  f"(default {DEFAULTS.shown('alpha')})")]
MinRunsOption = Annotated[int | None, typer.Option("--min-runs", help="a floor of runs per side for a verdict, on "
                                                   f"top of what alpha needs (default {DEFAULTS.shown('min_runs')})")]
ThresholdOption = Annotated[float | None, typer.Option("--threshold", help="noise threshold as a fraction (default "
                                                       f"{DEFAULTS.shown('noise_threshold')} = "
                                                       f"{DEFAULTS.noise_threshold * 100:g} %)")]
CorrectionOption = Annotated[str | None, typer.Option("--correction", help="the family over which p is "
                                                    "Holm-corrected: point (the variants of each point) or sweep "
                                                    "(every thread count of a workload together) [default: "
                                                    f"{DEFAULTS.correction}; report: the campaign's]")]
EstimatorOption = Annotated[str | None, typer.Option("--estimator", help="paired (each variant against the "
                                                  "baseline by round, where the rounds allow it) or unpaired "
                                                  "[default: the campaign's]")]
RefArgument = Annotated[str, typer.Argument(help="campaign id, name or `latest`; or the campaign's YAML file, "
                                             "which also finds the store in its output:")]
ScaleOption = Annotated[str | None, typer.Option(
    "--scale", help="published: the size of the study in the campaign's published.size; machine: scaled to this "
    "machine's RAM, keeping the study's dataset : buffer pool : RAM (docs/studies.md) [default: the campaign's "
    "scale:, else its own workloads]")]
FailOnOption = Annotated[list[str] | None, typer.Option(
    "--fail-on", help="exit 3 when a verdict matches: slower, slower?, faster or faster?, optionally :METRIC[,...] "
    "(e.g. 'slower?:tps'; default metrics tps and lat_pct_ms); 4 when one could not be decided, else 0 "
    "(repeatable; docs/pipelines.md)")]
MinEffectOption = Annotated[float | None, typer.Option(
    "--min-effect", help="with --fail-on: count a matching verdict only when its estimate is at least this many "
    "percent from 0")]
