"""Claims of README.md and docs/ that no other test pinned, each shown by the code itself (issue #29 item 5):
docs/statistics.md "Limits" (no fixed floor of runs: the attainable p after Holm), its speed table (an import
holds at most 20,000 runs), README's and quickstart's "4 runs per side for one comparison", quickstart's list
of studies."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.analysis.attainable import runs_needed, verdict_possible
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.importing.table import parse_csv
from layerbench.statistics_settings import DEFAULTS, Settings
from layerbench.vocabulary.limits import MAX_RUNS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("comparisons", "alpha", "runs"), [(1, 0.05, 4), (1, 0.01, 5), (3, 0.05, 5)])
def test_the_runs_a_verdict_needs_come_from_alpha_and_holm(comparisons: int, alpha: float, runs: int) -> None:
    assert runs_needed(comparisons=comparisons, alpha=alpha) == runs
    assert not verdict_possible(runs - 1, runs - 1, comparisons=comparisons, alpha=alpha)


def test_there_is_no_fixed_floor_of_runs_unless_the_campaign_sets_one() -> None:
    assert DEFAULTS.min_runs == 0 and Settings().min_runs == 0
    campaign = parse_campaign({"name": "c", "baseline": "a", "variants": [{"name": "a", "backend": "host"}],
                               "workload": {}})
    assert campaign.min_runs is None


def test_an_import_holds_at_most_20000_runs() -> None:
    assert MAX_RUNS == 20_000
    rows = "".join(f"v{i // 1000},{i % 1000 + 1},100\n" for i in range(MAX_RUNS + 1))
    with pytest.raises(BadInput, match="20,001 rows, more than the 20,000 runs a campaign may hold"):
        parse_csv("variant,iteration,tps\n" + rows)
    assert len(parse_csv("variant,iteration,tps\n" + rows.split("\n", 1)[1])) == MAX_RUNS


def test_quickstart_lists_every_study_that_init_knows(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/quickstart.md shows `layerbench init --list`: the same studies, in the same order."""
    from layerbench.cli.main import main

    with pytest.raises(SystemExit) as done:
        main(["init", "--list"])
    assert done.value.code in (0, None)
    printed = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if line.strip()]
    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    block = text.split("$ .venv/bin/layerbench init --list\n", 1)[1].split("```", 1)[0]
    assert [line.split(":")[0] for line in block.splitlines() if line.strip()] == printed


def test_report_json_has_exactly_the_keys_its_page_lists(tmp_path: Path) -> None:
    """docs/report-json.md's table of top-level keys is the JSON export's (`adaptive` only for repetitions: auto,
    `replaced_runs` only when busy runs were replaced, `published` only when the campaign gives `published:`,
    `timing` only when the store holds the campaign's estimate, `waiting` only when a run waited for quiet)."""
    import re

    from helpers import fill_store
    from layerbench.analysis.loading import analyze
    from layerbench.report.json_export import SCHEMA, document
    from layerbench.store import Store

    page = (ROOT / "docs" / "report-json.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\| `(\w+)(?:\[\])?` \|", page, re.M)
    cid = fill_store(tmp_path / "lb.db", {"host": 1.0, "docker": 0.9}, reps=4)
    with Store(tmp_path / "lb.db") as store:
        exported = document(report_model(analyze(store, cid)))
    assert exported["schema"] == SCHEMA and f"schema `{SCHEMA}`" in page
    assert set(listed) == set(exported) | {"adaptive", "replaced_runs", "published", "timing",
                                                       "waiting"}


def first_table(page: str, heading: str) -> list[list[str]]:
    """The cells of the first table under `heading`, header rows left out."""
    import re

    text = (ROOT / "docs" / page).read_text(encoding="utf-8").split(heading + "\n", 1)[1]
    rows = re.search(r"^\|.*?(?=\n\n|\n[^|])", text, re.S | re.M)
    assert rows, f"{page}: no table under {heading}"
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in rows.group(0).splitlines()[2:]]


def first_table_keys(page: str, heading: str) -> list[str]:
    """The backticked names in the first column of the first table under `heading` (`requests`, `limits` -> two)."""
    import re

    return [name.split(":")[0] for row in first_table(page, heading) for name in re.findall(r"`([^`]+)`", row[0])]


def model_class(name: str) -> type:
    """A model of the campaign file by name: the campaign's own, or a backend's variant (backends/registry.py)."""
    from layerbench.backends.registry import VARIANT_TYPES
    from layerbench.campaign.models import Campaign
    from layerbench.campaign.workload import Workload

    return {t.__name__: t for t in (*VARIANT_TYPES, Campaign, Workload)}[name]


@pytest.mark.parametrize(("page", "heading", "model"), [
    ("campaign.md", "## Top level", "Campaign"), ("campaign.md", "## Variants (all backends)", "HostVariant"),
    ("campaign.md", "### `backend: host`", "HostVariant"), ("campaign.md", "### `backend: external`",
                                                             "ExternalVariant"),
    ("campaign.md", "## Workloads", "Workload"), ("backends/docker.md", "## Options", "DockerVariant"),
    ("backends/vm.md", "## Options", "VMVariant"), ("backends/kubernetes.md", "## Options", "KubernetesVariant")])
def test_every_documented_key_is_a_key_of_the_campaign_file(page: str, heading: str, model: str) -> None:
    """Option names in the docs' tables are the models' fields (a renamed key would leave the docs wrong)."""
    fields = model_class(model).model_fields
    keys = first_table_keys(page, heading)
    assert keys
    for key in keys:
        first, _, rest = key.partition(".")
        assert first in fields or (first == "workload" and "workloads" in fields), f"{page}: {key}"
        if rest:  # resources.cpus: a key of the nested model
            nested = fields[first].annotation
            assert rest in nested.model_fields, f"{page}: {key}"


@pytest.mark.parametrize(("page", "heading", "model", "column"), [
    ("campaign.md", "## Top level", "Campaign", 1), ("campaign.md", "## Workloads", "Workload", 1),
    ("backends/docker.md", "## Options", "DockerVariant", 2), ("backends/vm.md", "## Options", "VMVariant", 1),
    ("backends/kubernetes.md", "## Options", "KubernetesVariant", 1)])
def test_every_documented_default_is_the_models(page: str, heading: str, model: str, column: int) -> None:
    """A default the docs give as one literal (`bridge`, `10`, `[md, html]`) is the model's default."""
    import re

    import yaml

    fields, checked = model_class(model).model_fields, 0
    for row in first_table(page, heading):
        key, default = re.fullmatch(r"`([a-z_]+)`", row[0]), re.fullmatch(r"`([^`]+)`", row[column])
        if key and default and key.group(1) in fields:
            field = fields[key.group(1)]
            actual = field.default_factory() if field.default_factory else field.default  # type: ignore[call-arg]
            assert yaml.safe_load(default.group(1)) == actual, f"{page}: {row[0]} default {row[column]}"
            checked += 1
    assert checked >= 3


def test_the_gate_text_docs_studies_quotes() -> None:
    """docs/studies.md quotes today's 'need more runs' text for 3 runs a side."""
    from layerbench.analysis.attainable import gate

    text = gate(3, 3, comparisons=1, alpha=0.05, min_runs=0)
    assert text == "need >= 4 runs per side (have 3 and 3: smallest attainable p = 0.1 is not below alpha 0.05)"
    assert f"`{text}`" in (ROOT / "docs" / "studies.md").read_text(encoding="utf-8")
