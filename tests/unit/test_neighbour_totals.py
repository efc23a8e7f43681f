"""Totals beyond the machine (issue #44, kind 4): a variant's neighbours together, its campaign's included, may not
exceed the documented count, this machine's CPUs x 4 load workers, or this machine's memory (with the variant's
server when it runs here). Each list alone and each neighbour alone keep their own limits; every refusal is exit 2,
one line naming the variant's neighbours, with the total."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.machine import total_memory
from layerbench.neighbours.model import MAX_NEIGHBOURS, WORKERS_PER_CPU
from layerbench.run.neighbour_checks import check_neighbours, load_workers
from layerbench.vocabulary.sizes import tool_size_bytes

CPUS = len(os.sched_getaffinity(0))
WORKLOAD = {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0}


def campaign(tmp_path: Path, shared: list[dict], own: list[dict], **variant: Any) -> dict[str, Any]:
    return {"name": "totals", "baseline": "base", "output": str(tmp_path / "out"), "workload": WORKLOAD,
            "neighbours": shared, "variants": [{"name": "base", "backend": "host", "neighbours": own, **variant}]}


def refused(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    return err


def cpu(name: str, workers: int = 1) -> dict[str, Any]:
    return {"name": name, "kind": "cpu", "workers": workers}


def test_more_neighbours_than_a_variant_may_have_counting_the_campaign_s(tmp_path: Path) -> None:
    half = MAX_NEIGHBOURS // 2 + 1  # each list is within its own limit
    shared, own = [cpu(f"c{i}") for i in range(half)], [cpu(f"v{i}") for i in range(half)]
    err = refused(tmp_path, campaign(tmp_path, shared, own))
    assert err.startswith(f"error: {tmp_path / 'c.yaml'}: variants.base.neighbours: {half} of its own + {half} of the "
                          f"campaign's = {2 * half} neighbours; a variant has at most {MAX_NEIGHBOURS}"), err


def test_a_variant_inherits_neighbours_that_then_count(tmp_path: Path) -> None:
    data = campaign(tmp_path, [cpu(f"c{i}") for i in range(9)], [cpu(f"v{i}") for i in range(8)])
    data["variants"].append({"name": "child", "extends": "base"})
    assert "variants.base.neighbours: 8 of its own + 9 of the campaign's = 17" in refused(tmp_path, data)


def test_load_workers_that_swamp_the_cpus_together(tmp_path: Path) -> None:
    cap = CPUS * WORKERS_PER_CPU  # each neighbour alone at the cap: allowed; together: not
    err = refused(tmp_path, campaign(tmp_path, [cpu("a", cap)], [
        {"name": "db", "kind": "database", "threads": 1, "tables": 1, "table_size": 100}]))
    assert f"variants.base.neighbours: a {cap} worker(s) + db 1 thread(s) = {cap + 1} load workers on this " \
           f"machine's {CPUS} CPUs, the campaign's neighbours included; at most {cap}" in err, err


def test_memory_that_adds_up_to_more_than_the_machine(tmp_path: Path) -> None:
    machine = total_memory()
    gib = math.ceil(machine * 0.6 / 2**30)  # each below the machine, the two together above it
    workers = max(1, math.ceil(gib / 64))
    size = f"{math.ceil(gib / workers)}G"
    memory = {"kind": "memory", "workers": workers, "size": size}
    err = refused(tmp_path, campaign(tmp_path, [{"name": "m1", **memory}], [{"name": "m2", **memory}]))
    assert err.startswith(f"error: variants.base.neighbours: m1 {workers} x {size} + m2 {workers} x {size} + the "
                          "server "), err
    assert f"of memory, more than this machine's {machine / 2**30:.2f} GiB" in err


def test_memory_of_the_server_here_counts_beside_the_neighbours(tmp_path: Path) -> None:
    machine_gib = total_memory() / 2**30
    limit = math.floor(machine_gib * 0.7)
    size = f"{max(1, math.ceil(machine_gib * 0.4))}G"
    data = campaign(tmp_path, [], [{"name": "m", "kind": "memory", "size": size}], backend="docker",
                    resources={"memory": f"{limit}g"})
    assert f"m 1 x {size} + the server {limit:.2f} GiB = " in refused(tmp_path, data)


NEIGHBOURS = st.lists(st.one_of(
    st.builds(lambda w: {"kind": "cpu", "workers": w}, st.integers(1, CPUS * WORKERS_PER_CPU)),
    st.builds(lambda w, g: {"kind": "memory", "workers": w, "size": f"{g}G"}, st.integers(1, 3), st.integers(1, 12)),
    st.builds(lambda t: {"kind": "database", "threads": t, "tables": 1, "table_size": 100}, st.integers(1, 4)),
    st.just({"kind": "disk", "size": "1M"})), max_size=6)


@settings(max_examples=60, deadline=None)
@given(NEIGHBOURS, NEIGHBOURS)
def test_the_totals_are_refused_exactly_when_they_exceed_the_machine(shared: list[dict], own: list[dict]) -> None:
    named = [{**n, "name": f"c{i}"} for i, n in enumerate(shared)], [{**n, "name": f"v{i}"} for i, n in enumerate(own)]
    data = {"name": "t", "baseline": "b", "workload": WORKLOAD, "neighbours": named[0],
            "variants": [{"name": "b", "backend": "external", "reset": "none", "neighbours": named[1]}]}
    items = parse_campaign(data).neighbours_of(parse_campaign(data).variants[0])
    workers = sum(load_workers(n)[0] for n in items)
    memory = sum(n.worker_count * tool_size_bytes(n.file_size) for n in items if n.kind == "memory")
    memory += sum((64 << 20) + (512 << 20) for n in items if n.kind == "database")
    try:
        check_neighbours(parse_campaign(data))
    except BadInput as error:
        said = str(error)
        assert "\n" not in said and said.startswith("variants.b.neighbours")
        if workers > CPUS * WORKERS_PER_CPU:
            assert f"= {workers} load workers" in said
        else:
            assert memory > total_memory() and f"= {memory / 2**30:.2f} GiB of memory" in said
        return
    assert workers <= CPUS * WORKERS_PER_CPU and memory <= total_memory()


def test_each_list_and_each_neighbour_keep_their_own_limits() -> None:
    with pytest.raises(BadInput, match=f"at most {MAX_NEIGHBOURS}"):
        parse_campaign({"name": "t", "baseline": "b", "workload": WORKLOAD,
                        "neighbours": [cpu(f"c{i}") for i in range(MAX_NEIGHBOURS + 1)],
                        "variants": [{"name": "b", "backend": "host"}]})
    data = {"name": "t", "baseline": "b", "workload": WORKLOAD, "neighbours": [cpu("a", CPUS * WORKERS_PER_CPU + 1)],
            "variants": [{"name": "b", "backend": "host"}]}
    with pytest.raises(BadInput, match=r"variants\.b\.neighbours\.a\.workers: .* use at most"):
        check_neighbours(parse_campaign(data))
