"""The statistics defaults live in one object (statistics_settings.py DEFAULTS), and what shows them says the same:
docs/statistics.md's "Defaults" table and its prose numbers, docs/campaign.md's default column, the help of
`report`, the campaign model, the stored-campaign record and the defaults of the analysis functions."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from layerbench.analysis import blocks_simulation, paired, point_statistics, sequential, stats
from layerbench.campaign.models import parse_campaign
from layerbench.records import CampaignRecord
from layerbench.statistics_settings import DEFAULTS, Settings

ROOT = Path(__file__).resolve().parents[2]
STATISTICS = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
# a function parameter of the analysis -> the default it must take
PARAMETERS = {"alpha": DEFAULTS.alpha, "threshold": DEFAULTS.noise_threshold, "min_runs": DEFAULTS.min_runs,
              "resamples": DEFAULTS.resamples, "confidence": DEFAULTS.confidence}


def rendered_table() -> str:
    return "\n".join(f"| `{name}` | `{value}` | {meaning} |" for name, value, meaning in DEFAULTS.rows())


def test_the_docs_table_is_the_defaults_object() -> None:
    section = STATISTICS.split("## Defaults\n", 1)[1].split("\n## ", 1)[0]
    table = section.split("| name | default | meaning |\n|---|---|---|\n", 1)[1].split("\n\n", 1)[0].rstrip("\n")
    assert table == rendered_table(), "paste this table:\n" + rendered_table()


def test_the_prose_of_statistics_md_says_the_same_numbers() -> None:
    assert f"{DEFAULTS.confidence * 100:g} % percentile bootstrap interval of the mean ({DEFAULTS.resamples:,} seeded" \
        in STATISTICS
    assert f"`noise_threshold` (the band ±{DEFAULTS.noise_threshold * 100:g} %)" in STATISTICS
    assert "minimum 6" not in STATISTICS and "need >= 6 runs per side (have" not in STATISTICS


def test_the_methods_limits_in_statistics_md_are_the_codes() -> None:
    """Not defaults but fixed limits of the methods, which the page names: where the bootstrap gives way to
    Student's t, the exact distributions to the normal approximation, sorting all pairs to bisection."""
    assert f"above {stats.BOOTSTRAP_MAX_N} runs Student's t interval" in STATISTICS
    assert f"a side has more than {stats.EXACT_MAX} runs" in STATISTICS
    assert f"up to {stats.EXACT_MAX} runs per side" in STATISTICS
    assert f"Above {stats.PAIRWISE_MAX:,} pairs" in STATISTICS
    assert f"tied |d| up to {paired.EXACT_PAIRS_MAX} pairs" in STATISTICS


@pytest.mark.parametrize("key", ["seed", "noise_threshold", "alpha", "min_runs", "correction", "estimator",
                                 "unstable_ratio"])
def test_campaign_md_gives_the_same_defaults(key: str) -> None:
    page = (ROOT / "docs" / "campaign.md").read_text(encoding="utf-8")
    default = re.search(rf"^\| `{key}` \| ([^|]+) \|", page, re.M)
    assert default, f"docs/campaign.md has no row for {key}"
    assert default.group(1).strip().strip("`") == DEFAULTS.shown(key)


def test_the_campaign_model_and_the_stored_record_take_the_defaults() -> None:
    campaign = parse_campaign({"name": "c", "baseline": "a", "variants": [{"name": "a", "backend": "host"}],
                               "workload": {}})
    assert (campaign.noise_threshold, campaign.alpha, campaign.seed, campaign.correction, campaign.estimator,
            campaign.unstable_ratio) == (DEFAULTS.noise_threshold, DEFAULTS.alpha, DEFAULTS.seed,
                                         DEFAULTS.correction, DEFAULTS.estimator, DEFAULTS.unstable_ratio)
    assert campaign.min_runs is None  # not written: no floor, which the analysis reads as DEFAULTS.min_runs (0)
    stored = CampaignRecord.from_json({"name": "c", "baseline": "a"})
    assert stored.settings() == Settings() == Settings(DEFAULTS.noise_threshold, DEFAULTS.alpha, DEFAULTS.min_runs,
                                                       DEFAULTS.seed, DEFAULTS.stored_estimator)
    assert stored.correction == DEFAULTS.correction and stored.unstable_ratio == DEFAULTS.unstable_ratio


@pytest.mark.parametrize("module", [stats, paired, sequential, point_statistics, blocks_simulation])
def test_no_analysis_function_has_a_default_of_its_own(module: object) -> None:
    """Every alpha, threshold, min_runs, resamples and confidence parameter defaults to DEFAULTS (or to a
    Settings, which does), so changing a default in one place changes it everywhere."""
    checked = 0
    for name, function in inspect.getmembers(module, inspect.isfunction):
        if function.__module__ != getattr(module, "__name__", None):
            continue
        for parameter in inspect.signature(function).parameters.values():
            if parameter.name in PARAMETERS and parameter.default is not inspect.Parameter.empty:
                assert parameter.default == PARAMETERS[parameter.name], f"{name}({parameter.name}=...)"
                checked += 1
    assert checked or module in (point_statistics,)


def test_the_help_of_report_prints_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    from layerbench.cli.main import main

    with pytest.raises(SystemExit):
        main(["report", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert f"significance level of the verdicts (default {DEFAULTS.shown('alpha')})" in shown
    assert f"noise threshold as a fraction (default {DEFAULTS.shown('noise_threshold')} = " \
           f"{DEFAULTS.noise_threshold * 100:g} %)" in shown
    assert f"on top of what alpha needs (default {DEFAULTS.shown('min_runs')})" in shown
    assert f"[default: {DEFAULTS.correction}; report: the campaign's]" in shown


def test_a_verdict_has_no_fixed_floor_of_runs() -> None:
    """The one rule for "need more runs" is what alpha needs after Holm, plus min_runs when a campaign sets one:
    4 + 4 runs carry a verdict at the defaults (the code once defaulted to 6 in `verdict`)."""
    slower = stats.DeltaCI(-0.3, -0.4, -0.2)
    assert stats.verdict(slower, 0.03, 4, 4).kind == "slower"
    assert stats.verdict(slower, 0.03, 4, 4, Settings(min_runs=6)).kind == "need more runs"
