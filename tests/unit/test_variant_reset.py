"""`reset:` per variant: a variant's own reset wins over its workloads', is inherited through `extends:`, a variant
that cannot restore a snapshot re-prepares alone (or, for a server layerbench does not own, is refused with the
fix), and the plan says which reset each variant uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.backends.external.variant import ExternalVariant
from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.errors import BadInput
from layerbench.run.plan import PREPARE_ROWS_PER_SECOND, make_plan

BASE: dict[str, Any] = {
    "name": "resets", "baseline": "host", "repetitions": 3,
    "variants": [
        {"name": "host", "backend": "host"},
        {"name": "slow", "extends": "host", "reset": "reprepare"},
        {"name": "slower", "extends": "slow", "server": {"config": {"innodb_buffer_pool_size": "64M"}}},
        {"name": "box", "backend": "docker"},
    ],
    "workload": {"tables": 2, "table_size": 10_000, "threads": [1, 2]},
}
EXTERNAL = {"name": "ext", "backend": "external", "password_env": "X"}


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "cache" / "datasets"))
    return tmp_path


def test_a_variants_own_reset_wins_and_is_inherited_through_extends() -> None:
    c = parse_campaign(BASE)
    w = c.workloads[0]
    methods = {name: choice.method for name, choice in c.resets_of(w).items()}
    assert methods == {"host": "snapshot", "slow": "reprepare", "slower": "reprepare", "box": "snapshot"}
    assert c.reset_for(c.variant("slower"), w).source == "variants.slower.reset"
    assert c.reset_for(c.variant("host"), w).source == "workloads.default.reset"
    assert not c.reset_for(c.variant("host"), w).own and c.reset_for(c.variant("slow"), w).own


def test_a_variants_reset_applies_to_every_workload_and_is_stored() -> None:
    data = {k: v for k, v in BASE.items() if k != "workload"}
    c = parse_campaign({**data, "workloads": [{"name": "a"}, {"name": "b", "reset": "none"}]})
    assert {c.reset_for(c.variant("slow"), w).method for w in c.workloads} == {"reprepare"}
    assert c.reset_for(c.variant("host"), c.workload("b")).method == "none"
    again = parse_campaign(campaign_as_dict(c))  # a stored definition reads back the same
    assert again.variant("slower").reset == "reprepare" and again.variant("host").reset is None
    assert "reset" not in campaign_as_dict(c)["variants"][0]  # unset: not stored (old definitions stay as they were)


def test_an_external_variant_with_its_own_reset_leaves_the_others_on_the_snapshot() -> None:
    for reset in ("none", "reprepare"):
        c = parse_campaign({**BASE, "variants": [*BASE["variants"], {**EXTERNAL, "reset": reset}]})
        choices = c.resets_of(c.workloads[0])
        assert choices["ext"].method == reset and choices["host"].method == "snapshot"


@pytest.mark.parametrize(("ext", "message"), [
    (EXTERNAL, "workloads.default.reset: 'snapshot' cannot be restored into variant 'ext' (backend external: a "
               "server layerbench does not own); set variants.ext.reset: none"),
    ({**EXTERNAL, "reset": "snapshot"}, "variants.ext.reset: 'snapshot' cannot be restored into this variant "
                                        "(backend external: a server layerbench does not own); set reset: none"),
])
def test_a_snapshot_for_a_server_layerbench_does_not_own_is_refused_in_one_line(ext: dict, message: str) -> None:
    with pytest.raises(BadInput) as error:
        parse_campaign({**BASE, "variants": [*BASE["variants"], ext]})
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


class Unrestorable(ExternalVariant):
    """A server layerbench owns but cannot restore into (as a backend or storage may say): for the planner only."""

    owns_server = True

    def restore_problem(self) -> str | None:
        return "storage that no snapshot reaches"


def test_a_variant_that_cannot_restore_reprepares_alone(empty_cache: Path) -> None:
    c = parse_campaign(BASE)
    odd = Unrestorable(name="odd", backend="external")
    c = c.model_copy(update={"variants": [*c.variants, odd]})
    w = c.workloads[0]
    assert c.reset_for(odd, w).method == "reprepare" and c.reset_for(c.variant("box"), w).method == "snapshot"
    assert c.reset_for(odd, w).source == "this variant cannot restore a snapshot: storage that no snapshot reaches"
    text = "\n".join(make_plan(c).lines)
    assert "variant odd: reset reprepare (this variant cannot restore a snapshot: storage that no snapshot" in text


def test_the_plan_says_each_variants_reset_and_costs_only_its_prepares(empty_cache: Path) -> None:
    plan = make_plan(parse_campaign(BASE))
    text = "\n".join(plan.lines)
    assert "reset snapshot; variant slow: reset reprepare (variants.slow.reset); variant slower: reset reprepare " \
           "(variants.slower.reset)" in text
    assert "prepared again before each run of slow, slower (reset: reprepare)" in text
    assert "prepared once" in text and "then cached for variants host, box" in text
    everyone = make_plan(parse_campaign({**BASE, "workload": {**BASE["workload"], "reset": "reprepare"}}))
    # 4 variants re-prepare 6 runs each, against 2 variants re-preparing and one snapshot prepared once
    prepare = 2 * 10_000 / PREPARE_ROWS_PER_SECOND
    assert everyone.parts["prepare"] - plan.parts["prepare"] == pytest.approx(2 * 6 * prepare - prepare, abs=1e-6)
    assert everyone.parts["restores"] == 0 < plan.parts["restores"]  # who re-prepares restores nothing


def test_the_plan_keeps_its_words_when_every_variant_resets_alike(empty_cache: Path) -> None:
    data = {**BASE, "variants": [{"name": "host", "backend": "host", "reset": "none"}]}
    text = "\n".join(make_plan(parse_campaign(data)).lines)
    assert "dataset default: not touched (reset: none); the server's own tables are used" in text


@settings(max_examples=150, deadline=None)
@given(st.one_of(
    st.sampled_from(["[/x]", "[bold]snapshot[/]", "snapshot\nnone", "", " ", "SNAPSHOT", "re-prepare", "None"]),
    st.integers(min_value=-(10**400), max_value=10**400), st.floats(allow_nan=True), st.booleans(),
    st.lists(st.sampled_from(["snapshot", "none"]), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2), st.text(max_size=20)))
def test_a_hostile_variant_reset_is_one_line_naming_the_field(value: Any) -> None:
    data = yaml.safe_load(yaml.safe_dump({**BASE, "variants": [{"name": "host", "backend": "host", "reset": value}]},
                                         allow_unicode=True))
    try:
        c = parse_campaign(data)
    except BadInput as error:
        text = str(error)
        assert "\n" not in text and text.startswith("variants[0].reset: "), text
        return
    assert c.variants[0].reset == value  # only the three words get through
