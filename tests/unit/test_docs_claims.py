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


def claimed(path: Path, pattern: str) -> list[int]:
    """Every number a page (or an example's comments) states where `pattern` (one group: the number) matches,
    its lines joined so that a claim may wrap."""
    import re

    text = " ".join(line.lstrip("# ").strip() for line in path.read_text(encoding="utf-8").splitlines())
    found = [int(m.group(1)) for m in re.finditer(pattern, text)]
    assert found, f"{path.name} no longer says {pattern!r}"
    return found


def test_the_round_counts_the_pages_and_the_examples_state_come_from_the_code() -> None:
    """Issue #43: the rounds a verdict needs, as docs/statistics.md, docs/studies.md, docs/campaign.md,
    docs/validate.md and the storage example state them, computed by the one rule (analysis/attainable.py
    point_needs, which validate prints and the report's rule line states), and the signed-rank test's old
    counts the pages still quote by paired.pairs_needed."""
    from layerbench.analysis.attainable import T_MIN_PAIRS, point_needs
    from layerbench.analysis.paired import pairs_needed
    from layerbench.campaign.models import load_campaign
    from layerbench.run import answerable

    storage = ROOT / "src" / "layerbench" / "data" / "examples" / "docker-storage-network.yaml"
    plan = load_campaign(storage)
    assert len(plan.variants) - 1 == 6 and plan.rounds == 6
    needed = {n.rounds for n in answerable.needs(plan)}
    assert needed == {T_MIN_PAIRS} and claimed(storage, r"a verdict needs >= (\d+) rounds") == [T_MIN_PAIRS]
    paired = {k: point_needs([("w", 1)], k + 1, paired=True, alpha=0.05)[0].rounds for k in (1, 2, 3, 6)}
    assert set(paired.values()) == {T_MIN_PAIRS}
    docs = ROOT / "docs"
    assert set(claimed(docs / "studies.md", r"which a verdict needs >= (\d+) rounds for")) == {T_MIN_PAIRS}
    assert set(claimed(docs / "studies.md", r"can, from (\d+) rounds on")) == {T_MIN_PAIRS}
    assert claimed(docs / "studies.md", r"the signed-rank test needed (\d+) rounds") == [
        pairs_needed(comparisons=6, alpha=0.05)] == [8]
    assert set(claimed(docs / "statistics.md", r"a verdict needs (\d+) rounds holding both runs")) == {T_MIN_PAIRS}
    assert claimed(docs / "statistics.md", r"it needed (\d+) pairs for one comparison") == [
        pairs_needed(comparisons=1, alpha=0.05)]
    old = pairs_needed(comparisons=2, alpha=0.05), pairs_needed(comparisons=6, alpha=0.05)
    assert claimed(docs / "statistics.md", r"(\d+) for 2-3 and \d+ for 6\.") == [old[0]]
    assert claimed(docs / "statistics.md", r"for 2-3 and (\d+) for 6\.") == [old[1]]
    assert claimed(docs / "campaign.md", r"the paired t-test needs (\d+) rounds holding both runs") == [T_MIN_PAIRS]
    unpaired = [point_needs([("w", 1)], k + 1, paired=False, alpha=0.05)[0].rounds for k in (1, 2, 6)]
    assert unpaired == [4, 5, 5]
    assert claimed(docs / "validate.md", r"alpha after Holm over the family, at alpha / looks for `repetitions: auto`: "
                                         r"(\d+) for one comparison") == [unpaired[0]]


DEMO_LINES = {"quiet: no drift, sd 8 %": (0.0, 0.08), "issue #30's demo: rounds 38 %, within 16 %": (0.38, 0.16),
              "a loaded demo: rounds 27 %, within 18 %": (0.27, 0.18)}


@pytest.mark.parametrize("machine", DEMO_LINES)
def test_the_demos_six_rounds_and_their_table_come_from_the_simulation(machine: str) -> None:
    """docs/statistics.md "The demo": the demo's 6 rounds can decide (3 needed), and each line of its table is
    simulate_rules at that shape (seed 6, 10,000 campaigns), as the page says."""
    import re

    from layerbench.analysis.attainable import T_MIN_PAIRS
    from layerbench.analysis.blocks_simulation import Scenario, simulate_rules
    from layerbench.campaign.models import load_campaign
    from layerbench.run import answerable

    demo = ROOT / "src" / "layerbench" / "data" / "default-campaign.yaml"
    plan = load_campaign(demo)
    assert plan.repetitions == 6 and {n.rounds for n in answerable.needs(plan)} == {T_MIN_PAIRS}
    assert claimed(demo, r"a verdict needs >= (\d+) rounds here") == [T_MIN_PAIRS]
    round_sd, cv = DEMO_LINES[machine]
    found = simulate_rules(Scenario(machine, round_sd=round_sd, cv=cv), (-0.27, 0.0), rounds=6, campaigns=10_000,
                           rules=("t-test",), min_pairs=T_MIN_PAIRS, seed=6)["t-test"]
    row = re.escape(f"| {machine} | 6 | {found.share({'slower'}) * 100:.1f} % | "
                    f"{found.any_different(slice(1, 2)) * 100:.1f} % |")
    assert re.search(row, (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")), row
