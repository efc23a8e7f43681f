"""The vm backend on real QEMU (here under TCG: the nested KVM of these machines hangs in early boot): the VM
boots from the locally built disks, sysbench runs against it through both network modes, the report marks the
variant as emulated, and nothing is left (QEMU, disks, taps, bridges) after a normal end or a SIGINT."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from test_host_campaign import campaign_file

from helpers import interrupt_campaign, stored_rows
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.backends.vm.net import leftover_devices
from layerbench.campaign.models import campaign_as_dict, load_campaign, parse_campaign, smoke_version
from layerbench.hosts.owners import cmdline
from layerbench.hosts.workdirs import work_root
from layerbench.report.markdown import render
from layerbench.run import orchestrator
from layerbench.store import Store

pytestmark = [pytest.mark.integration, pytest.mark.vm, pytest.mark.slow, pytest.mark.k8s_lane]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TINY = {"tables": 1, "table_size": 1000, "threads": 2, "duration": 3, "warmup": 1}


def qemus(tag: str) -> list[int]:
    """This test's QEMU processes: their command line names the run's folder, whose label carries the tag."""
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and
            cmdline(int(p.name)).startswith("qemu-system-x86_64") and tag in cmdline(int(p.name))]


def leftovers(tmp_path: Path, tag: str) -> list[str]:
    """What this test's variants (names carrying `tag`) left: QEMU, VM folders; and any lab tap device (only
    this module's tests make taps, one at a time)."""
    found = [f"qemu {pid}" for pid in qemus(tag)] + [f"device {d}" for d in leftover_devices(include_live=True)]
    vm_dirs = [d for d in [*tmp_path.rglob("work/vm/*"), *(work_root() / "work" / "vm").glob("*")] if tag in d.name]
    return found + [f"folder {d}" for d in vm_dirs]


def test_vm_runs_through_both_network_modes_and_is_marked_emulated(tmp_path: Path) -> None:
    """examples/vm-thread-sweep.yaml in smoke mode (so the examples' smoke test leaves it to this test): the host
    baseline and its VM on QEMU's user network, plus a VM on a tap device with 2 vCPUs added here."""
    tag = secrets.token_hex(3)
    data = campaign_as_dict(smoke_version(load_campaign(EXAMPLES / "vm-thread-sweep.yaml")))
    (vm,) = [v for v in data["variants"] if v["name"] == "vm"]
    vm["name"] = f"vm-user-{tag}"  # named with this test's tag, so leftovers() finds only its own
    data.pop("published")  # the study's published numbers, which name the variant `vm`
    data["variants"].append({"name": f"vm-tap-{tag}", "backend": "vm", "network": "tap", "disk_cache": "writeback",
                             "client_cpus": "0", "vcpus": 2})
    data |= {"name": f"it-vm-{tag}", "output": str(tmp_path / "out")}
    campaign = parse_campaign(data)
    with Store(tmp_path / "out" / "layerbench.db") as store:
        outcome = orchestrator.run_campaign(campaign, store)
        runs = {r["variant"].replace(f"-{tag}", ""): {**r, "details": json.loads(r["details"])}
                for r in stored_rows(store, outcome.campaign_id)}
        report = render(report_model(analyze(store, outcome.campaign_id)))
    assert {v: r["status"] for v, r in runs.items()} == dict.fromkeys(runs, "ok"), [r["error"] for r in runs.values()]
    for name in ("vm-user", "vm-tap"):
        facts = runs[name]["details"]["environment"]["backend"]
        assert runs[name]["tps"] > 1 and runs[name]["details"]["reset"]["method"] == "snapshot"
        assert facts["accel"] in ("kvm", "tcg") and facts["boot_seconds"] > 0
        assert runs[name]["details"]["resources"]["cpu_seconds"].get("qemu", 0) > 0
        if facts["accel"] == "tcg":
            assert "emulated" in facts["warnings"][0]
            assert f"`{name}-{tag}`: emulated" in report
    assert "tap lbvt" in runs["vm-tap"]["details"]["environment"]["backend"]["network_path"]
    assert "differs from `host` in CPUs" in report  # vm-tap has 2 vCPUs, the host baseline 1 CPU
    assert (Path(runs["vm-user"]["run_dir"]) / "console.log").exists()
    assert leftovers(tmp_path, tag) == []


def test_sigint_while_a_vm_runs_leaves_nothing(tmp_path: Path) -> None:
    tag = secrets.token_hex(3)
    path = campaign_file(tmp_path, repetitions=2, baseline=f"vm-{tag}", variants=[
        {"name": f"vm-{tag}", "backend": "vm", "network": "tap"}], workload={**TINY, "duration": 60})
    code, out = interrupt_campaign(path, lambda: bool(qemus(tag)), settle=5)
    assert code == 130, out[-2000:]
    assert leftovers(tmp_path, tag) == []
