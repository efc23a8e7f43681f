"""I/O explained on real runs: a real mariadbd with its buffer pool at 10 % of the data reads pages from disk for
its transactions; the same data with the pool at 150 % reads (almost) none. Direction only: no magnitude that
depends on the machine's speed is asserted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_host_campaign import our_servers

from layerbench.analysis.io import io_rows, run_figures
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.campaign.models import parse_campaign
from layerbench.measure.io import NOT_COUNTED
from layerbench.report import csv_export, html, json_export, markdown
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = pytest.mark.integration

DATA = {"tables": 2, "table_size": 100_000, "threads": 2, "duration": 4, "warmup": 2, "test": "oltp_read_only"}


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAYERBENCH_DATASET_DIR", str(tmp_path / "datasets"))
    return tmp_path / "datasets"


def campaign(tmp_path: Path) -> dict:
    return {
        "name": f"it-io-{os.getpid()}",
        "baseline": "base",
        "variants": [{"name": "base", "backend": "host", "cpus": "0", "client_cpus": "1"}],
        "workloads": [{"name": "io-bound", **DATA, "buffer_pool": "10%"},
                      {"name": "in-memory", **DATA, "buffer_pool": "150%"}],
        "repetitions": 1,
        "output": str(tmp_path / "out"),
        "busy": "keep",  # counts its runs; busy runs replaced by reruns: test_busy_rerun.py
    }


def test_an_io_bound_buffer_pool_reads_from_disk_an_in_memory_one_does_not(tmp_path: Path, own_cache: Path) -> None:
    parsed = parse_campaign(campaign(tmp_path))
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parsed, store)
        stored = {r.workload: r.facts.io for r in store.runs(outcome.campaign_id)}
        analysis = analyze(store, outcome.campaign_id)
    assert outcome.failed == 0, outcome.failures
    assert our_servers(tmp_path) == []
    for io in stored.values():
        assert io is not None and io.errors == () and io.window_seconds > 0
        assert io.server_status["Innodb_buffer_pool_read_requests"] > 0  # the server answered over the window
        assert "server" in io.processes and "client" in io.processes
    figures = {r.workload: run_figures(r) for r in analysis.runs}
    bound, memory = figures["io-bound"], figures["in-memory"]
    assert bound is not None and memory is not None
    assert bound.server["pages_from_disk"] > 2 * memory.server["pages_from_disk"]
    assert bound.hit_ratio is not None and memory.hit_ratio is not None and bound.hit_ratio < memory.hit_ratio
    assert bound.components["server"]["read_kib"] > 2 * memory.components["server"]["read_kib"]
    assert {r.point for r in io_rows(analysis)} == {"io-bound, 2 threads", "in-memory, 2 threads"}
    check_every_format(analysis)


def check_every_format(analysis) -> None:
    text = markdown.render(report_model(analysis))
    assert "## Where the I/O went" in text and "| `base` | io-bound, 2 threads |" in text
    assert text.index("## Where the overhead went") < text.index("## Where the I/O went")
    assert "<h2>Where the I/O went</h2>" in html.render(report_model(analysis))
    doc = json_export.document(report_model(analysis))
    assert len(doc["io"]) == 2 and all(run["io"]["server_status"] for run in doc["runs"])
    header, *rows = csv_export.render(report_model(analysis)).splitlines()
    at = header.split(",").index("io_pages_from_disk_per_1000_tx")
    assert all(row.split(",")[at] != "" for row in rows)


@pytest.mark.docker
def test_a_container_s_io_is_split_by_component(tmp_path: Path, own_cache: Path) -> None:
    """A Docker variant behind a published port: the server, its containerd shim, the docker-proxy and sysbench
    each have their own counters; the container's cgroup either counts block I/O or the run says why not."""
    from test_docker_backend import labelled

    name = f"it-io-docker-{os.getpid()}"
    data = campaign(tmp_path) | {"name": name, "variants": [{"name": "box", "backend": "docker", "network": "bridge"}],
                                 "baseline": "box", "workloads": [{"name": "small", **DATA, "table_size": 20_000}]}
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(parse_campaign(data), store)
        (run,) = store.runs(outcome.campaign_id)
        text = markdown.render(report_model(analyze(store, outcome.campaign_id)))
    assert outcome.failed == 0, outcome.failures
    assert labelled(name) == []
    io = run.facts.io
    assert io is not None and io.errors == ()
    assert {"server", "containerd-shim", "docker-proxy", "client"} <= set(io.processes)
    assert io.cgroups or io.notes == (NOT_COUNTED,)
    assert io.server_status["Innodb_buffer_pool_read_requests"] > 0
    assert "| `box` | small, 2 threads | containerd-shim |" in text
