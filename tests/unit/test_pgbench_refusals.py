"""validate's refusals for `tool: pgbench` workloads (campaign/workload.py, run/preflight.py): pgbench on a variant
that does not run PostgreSQL, a sysbench-only key on a pgbench workload and pgbench's `scale` on a sysbench one, a
scale that is not a whole number from 1, a script pgbench does not have; each exit 2 and one line naming the field,
the value and the fix. A campaign pgbench can run is valid, and its plan says what it runs."""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_hostile_inputs import assert_one_line_bad_input, validate

from helpers import folders_postgres_enters
from layerbench.campaign.workload import Workload
from layerbench.cli.main import main
from layerbench.pgbench.command import BIN
from layerbench.server.postgresql import program

needs_postgresql = pytest.mark.skipif(not program().is_file() or not BIN.is_file(),
                                      reason="PostgreSQL 15 and pgbench are not installed (scripts/setup)")


def campaign(tmp_path: Path, workload: dict[str, Any], flavour: str | None = "postgresql") -> Path:
    variant: dict[str, Any] = {"name": "pg", "backend": "host"}
    if flavour:
        variant["server"] = {"flavour": flavour}
    data = {"name": "it-pgb-refusals", "baseline": "pg", "variants": [variant],
            "workload": {"threads": 1, "duration": 2, "warmup": 0, **workload}, "repetitions": 2,
            "estimates_only": True, "output": str(tmp_path / "out")}
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def reachable_folders() -> Iterator[Path]:
    """Work and dataset folders the server's user `postgres` can enter (pytest's own are 0700)."""
    with folders_postgres_enters("lb-test-pgb-") as base:
        yield base


@pytest.mark.parametrize(("flavour", "says"), [
    (None, "workloads.default.tool: pgbench drives PostgreSQL, and variant pg runs mariadb; give every variant "
     "server: {flavour: postgresql}, or run a sysbench test in this workload"),
    ("mysql", "variant pg runs mysql"),
])
def test_pgbench_on_a_variant_that_does_not_run_postgresql_is_refused(tmp_path: Path, flavour: str | None,
                                                                     says: str) -> None:
    code, err = validate(campaign(tmp_path, {"tool": "pgbench"}, flavour))
    assert_one_line_bad_input(code, err)
    assert says in err


@pytest.mark.parametrize(("workload", "says"), [
    ({"tool": "pgbench", "tables": 2}, "workloads.default.tables: a sysbench key (a pgbench dataset is its `scale`"),
    ({"tool": "pgbench", "table_size": 100}, "workloads.default.table_size: a sysbench key"),
    ({"tool": "pgbench", "options": {"range_size": 3}}, "workloads.default.options: a sysbench key"),
    ({"tool": "pgbench", "rand_type": "pareto"}, "workloads.default.rand_type: a sysbench key"),
    ({"tool": "pgbench", "compare_percentiles": [99]}, "workloads.default.compare_percentiles: a sysbench key (a "
     "sysbench histogram's; a pgbench run records one percentile (`percentile`))"),
    ({"tool": "pgbench", "buffer_pool": "50%"}, "workloads.default.buffer_pool: a sysbench key (InnoDB's buffer "
     "pool; set the variant's server.config.shared_buffers)"),
    ({"scale": 10}, "workloads.default.scale: pgbench's scale factor, and this workload runs sysbench (its dataset "
     "is tables x table_size); remove it, or set tool: pgbench"),
    ({"test": "select-only"}, "workloads.default.test: select-only is a pgbench script; set tool: pgbench"),
    ({"tool": "pgbench", "test": "oltp_read_write"}, "workloads.default.test: 'oltp_read_write' is not a pgbench "
     "script layerbench runs; use tpcb-like or select-only"),
    ({"tool": "pgbench", "test": "simple-update"}, "'simple-update' is not a pgbench script layerbench runs"),
    ({"tool": "pgbench", "scale": 0}, "workloads[0].scale: 0 is not a pgbench scale factor; write a whole number "
     "from 1 to 100,000"),
    ({"tool": "pgbench", "scale": -3}, "-3 is not a pgbench scale factor"),
    ({"tool": "pgbench", "scale": 2.5}, "2.5 is not a pgbench scale factor"),
    ({"tool": "pgbench", "scale": "10"}, "'10' is not a pgbench scale factor"),
    ({"tool": "pgbench", "scale": True}, "True is not a pgbench scale factor"),
    ({"tool": "pgbench", "scale": 10**6}, "1000000 is not a pgbench scale factor"),
    ({"tool": "pgbench", "scale": None, "test": "tpcb-like"}, None),  # unset: scale 1 (valid, checked below)
    ({"tool": "sysbench-2"}, "workloads[0].tool: Input should be 'sysbench' or 'pgbench'"),
])
def test_keys_of_the_other_tool_and_bad_scales_are_refused_in_one_line(tmp_path: Path, workload: dict[str, Any],
                                                                      says: str | None) -> None:
    if says is None:
        assert Workload.model_validate({k: v for k, v in workload.items() if v is not None}).pgbench_scale == 1
        return
    code, err = validate(campaign(tmp_path, workload))
    assert_one_line_bad_input(code, err)
    assert says in err


def test_a_pgbench_workload_without_a_test_runs_tpcb_like_and_stores_it() -> None:
    workload = Workload.model_validate({"tool": "pgbench", "scale": 3})
    assert workload.test == "tpcb-like" and workload.dataset_rows == 300_000
    assert workload.model_dump(exclude_none=True)["test"] == "tpcb-like"
    sysbench = Workload.model_validate({})
    assert "tool" not in sysbench.model_dump(exclude_none=True)  # stored definitions of sysbench stay as they were
    assert "scale" not in sysbench.model_dump(exclude_none=True)


@needs_postgresql
def test_a_campaign_pgbench_can_run_is_valid_and_its_plan_says_so(tmp_path: Path, reachable_folders: Path) -> None:
    path = campaign(tmp_path, {"tool": "pgbench", "test": "select-only", "scale": 2, "threads": [1, 2]})
    out = io.StringIO()
    with pytest.raises(SystemExit) as done, contextlib.redirect_stdout(out):
        main(["validate", str(path)])
    assert done.value.code == 0, out.getvalue()
    assert "workload default: select-only, pgbench scale 2 (200,000 accounts rows), threads 1, 2" in out.getvalue()


def test_a_stored_pgbench_campaign_reads_back_for_resume(tmp_path: Path) -> None:
    """The stored definition keeps no sysbench key of a pgbench workload (a default would read back as written)."""
    from layerbench.campaign.models import campaign_as_dict, parse_campaign, stored_campaign
    from layerbench.records import CampaignRecord

    data = yaml.safe_load(campaign(tmp_path, {"tool": "pgbench", "scale": 2}).read_text())
    stored = campaign_as_dict(parse_campaign(data))
    workload = stored["workloads"][0]
    assert workload["tool"] == "pgbench" and workload["scale"] == 2 and workload["test"] == "tpcb-like"
    assert not {"tables", "table_size", "rand_seed", "options"} & workload.keys()
    assert workload["percentile"] == 95  # from its per-transaction log (pgbench/command.py)
    again = stored_campaign(stored)
    assert again.workloads[0].pgbench_scale == 2 and again.workloads[0].is_pgbench
    record = CampaignRecord.from_json(stored).workloads[0]
    assert (record.tool, record.scale, record.percentile, record.tables) == ("pgbench", 2, 95, None)


def test_the_plan_names_pgbench_where_it_drives_the_runs(tmp_path: Path) -> None:
    from layerbench.campaign.models import load_campaign
    from layerbench.run.plan import client_words, variant_line

    only = load_campaign(campaign(tmp_path, {"tool": "pgbench", "scale": 1}))
    assert client_words(only) == "pgbench"
    variant = only.variants[0].model_copy(update={"cpus": "0", "client_cpus": "1"})
    line = variant_line(variant, only.hosts, client_words(only))
    assert "server and pgbench on this machine" in line and "pgbench CPUs 1" in line and "sysbench" not in line
