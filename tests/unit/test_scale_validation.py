"""Issue #44, kind 7: a workload derived by `--scale` or `scale:` (campaign/scaling.py) goes through the same models
as a written one (campaign/models.py with_scale). Each scale of each bundled example validates, or is refused in
one line when the example has no study size; a derived workload past a limit is refused through `validate` with
exit 2 and one line naming the key and the scale."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

from layerbench.campaign.models import Campaign, load_campaign, parse_campaign, with_scale
from layerbench.campaign.workload import Workload
from layerbench.errors import BadInput
from layerbench.vocabulary.limits import MAX_TABLE_ROWS

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "src" / "layerbench" / "data" / "examples").glob("*.yaml"))
GIB = 2**30


@pytest.mark.parametrize("mode", ["published", "machine"])
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_each_scale_of_each_example_validates(path: Path, mode: str) -> None:
    campaign = load_campaign(path)
    size = campaign.published.size if campaign.published else None
    if size is None or (mode == "machine" and size.ram is None):  # the example says no study size: one line
        with pytest.raises(ValueError, match=rf"^scale: {mode} needs published\.size"):
            with_scale(campaign, mode, ram_here=16 * GIB)  # type: ignore[arg-type]
        return
    scaled = with_scale(campaign, mode, ram_here=16 * GIB)  # type: ignore[arg-type]
    assert scaled.scale == mode
    for workload in scaled.workloads:  # each derived workload is one the model takes as written
        assert Workload.model_validate(workload.model_dump(round_trip=True, exclude_unset=True)) == workload
    written = Campaign.model_validate({**scaled.model_dump(round_trip=True, exclude_unset=True), "scale": None})
    assert written.workloads == scaled.workloads


def campaign(size: dict[str, Any], **workload: Any) -> dict[str, Any]:
    return {"name": "scaled", "baseline": "base",
            "variants": [{"name": "base", "backend": "host"}, {"name": "other", "backend": "host"}],
            "workloads": [{"name": "oltp", "tables": 1, "table_size": 100, "threads": 1, "duration": 30,
                           "warmup": 0, **workload}],
            "published": {"source": "a study", "baseline": "base", "size": size,
                          "numbers": [{"variant": "other", "delta": "-10%"}]}}


PAST_A_LIMIT = [  # (the study's size, the workload's keys, the key refused, what is said)
    ({"data": "999999T", "ram": "16G"}, {}, "workloads[0].table_size", f"less than or equal to {MAX_TABLE_ROWS}"),
    ({"data": "1K", "buffer_pool": "999999T", "ram": "1K"}, {}, "workloads[0].buffer_pool", "not a percentage"),
    ({"data": "1G", "duration": 5}, {"report_interval": 20}, "workloads[0]", "report_interval: 20 s is longer"),
]


@pytest.mark.parametrize(("size", "keys", "key", "said"), PAST_A_LIMIT, ids=["rows", "buffer-pool", "duration"])
@pytest.mark.parametrize("how", ["option published", "option machine", "file published", "file machine"])
def test_a_derived_workload_past_a_limit_is_refused_with_its_scale(tmp_path: Path, size: dict[str, Any],
                                                                   keys: dict[str, Any], key: str, said: str,
                                                                   how: str) -> None:
    where, mode = how.split()
    if mode == "machine" and "ram" not in size:
        size = {**size, "ram": "1T"}  # machine keeps the study's size on a machine with less RAM than this
    doc = campaign(size, **keys)
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(doc if where == "option" else {**doc, "scale": mode}))
    code, err = validate(path, "--scale", mode) if where == "option" else validate(path)
    assert_one_line_bad_input(code, err)
    scale = f"--scale {mode}" if where == "option" else f"scale: {mode}"
    assert f"{key}" in err and f"(from {scale})" in err and said in err, err


def test_a_written_workload_is_not_refused_for_the_scale_it_does_not_use(tmp_path: Path) -> None:
    """Without a scale, the study's size is only said: the same file is valid."""
    doc = campaign({"data": "999999T", "ram": "16G"})
    path = tmp_path / "c.yaml"
    path.write_text(json.dumps(doc))
    _, err = validate(path)
    assert "table_size" not in err, err
    with pytest.raises(BadInput, match=r"workloads\[0\]\.table_size \(from scale: published\): "):
        parse_campaign({**doc, "scale": "published"})


def study_sized(path: Path) -> bool:
    published = load_campaign(path).published
    return published is not None and published.size is not None


@pytest.mark.parametrize("path", [p for p in EXAMPLES if study_sized(p)], ids=lambda p: p.stem)
def test_each_example_with_a_study_size_validates_at_machine_scale_given_the_studys_ram(path: Path) -> None:
    """No bundled example gives the study's RAM; with one, the machine scale is a campaign the models take."""
    campaign = load_campaign(path)
    assert campaign.published is not None and campaign.published.size is not None
    size = campaign.published.size.model_copy(update={"ram": "64G"})
    published = campaign.published.model_copy(update={"size": size})
    scaled = with_scale(campaign.model_copy(update={"published": published}), "machine", ram_here=16 * GIB)
    assert scaled.scale == "machine"
    for mine, study in zip(scaled.workloads, with_scale(campaign, "published").workloads, strict=True):
        assert mine.table_size == round(study.table_size / 4) and mine.buffer_pool == study.buffer_pool
