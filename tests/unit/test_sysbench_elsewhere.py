"""Issue #41: a harness that is not a node and runs every sysbench as a Job needs no sysbench of its own
(run/preflight.py sysbench_here_for; a built-in test checked by name against the Job image's sysbench), and a
run's environment records the Job's sysbench, read from the Job's log, not this machine's (measure/environment.py
with_client_sysbench); the plan names the cluster a variant's kubeconfig and context point at."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.kubernetes.kubeconfigs import cluster_words
from layerbench.backends.kubernetes.variant import LOCAL_CLUSTER_COST, KubernetesVariant
from layerbench.campaign.models import Workload, parse_campaign
from layerbench.errors import BadInput
from layerbench.hosts.inventory import Hosts
from layerbench.measure.environment import client_sysbench, with_client_sysbench
from layerbench.run import preflight
from layerbench.run.preflight import JOB_TESTS, check_test, sysbench_here_for

BANNER = "sysbench 1.0.20 (using bundled LuaJIT 2.1.0-beta3)\n\nRunning the test with following options:\n"


def needs(tmp_path: Path, workload: dict[str, Any] | None = None, **variant: Any) -> str | None:
    campaign = parse_campaign({
        "name": "har2", "baseline": "k", "output": str(tmp_path / "out"),
        "variants": [{"name": "k", "backend": "kubernetes", **variant}],
        "workload": {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0, **(workload or {})}})
    return sysbench_here_for(campaign, Hosts(campaign.hosts))


def test_only_jobs_need_no_sysbench_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert needs(tmp_path, client="job", reset="reprepare") is None
    assert needs(tmp_path, client="job", reset="none") is None
    # reset: snapshot made in the cluster by Jobs with the image's sysbench (seed.py): off a node, or namespace-scoped
    assert needs(tmp_path, client="job", reset="snapshot", namespace="lbtest", snapshot_class="snaps",
                 storage="pvc", storage_class="csi") is None
    nodes_at(monkeypatch, "192.0.2.7")  # a node that is another machine (TEST-NET-1: never an address here)
    assert needs(tmp_path, client="job", reset="snapshot") is None


def nodes_at(monkeypatch: pytest.MonkeyPatch, address: str) -> None:
    """The variant's cluster answers with one node at `address` (what a real API's list_node gives, shaped)."""
    from types import SimpleNamespace

    from layerbench.backends.kubernetes import cluster

    node = SimpleNamespace(status=SimpleNamespace(addresses=[SimpleNamespace(type="InternalIP", address=address)]))
    monkeypatch.setattr(cluster, "api_client", lambda variant: object())
    monkeypatch.setattr(cluster, "nodes_for", lambda core, variant: [node])


def test_what_needs_sysbench_here_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert needs(tmp_path, client="host", reset="reprepare") == "variants.k (its sysbench)"
    nodes_at(monkeypatch, "127.0.0.1")  # the node is this machine: the snapshot is prepared here, a hostPath reaches it
    assert needs(tmp_path, client="job", reset="snapshot") == \
        "variants.k.reset (its dataset snapshot is prepared here)"
    script = tmp_path / "t.lua"
    script.write_text("function event() end\n")
    assert needs(tmp_path, {"test": str(script)}, client="host", reset="reprepare") == \
        f"workloads.{Workload().name}.test (a Lua script, compiled here by validate)"


@pytest.mark.skipif(shutil.which("sysbench") is None, reason="needs sysbench")
def test_job_tests_are_the_bundled_ones() -> None:
    """JOB_TESTS is the list of the same sysbench (Debian's 1.0.20) as it is installed here."""
    assert sorted(JOB_TESTS) == sorted(preflight.builtin_tests())


def test_without_sysbench_here_a_test_is_checked_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "SYSBENCH_SHARE", tmp_path / "absent")
    check_test(Workload(test="oltp_point_select"))
    with pytest.raises(BadInput, match=r"^workloads\.\S+\.test: 'oltp_common' is not a test of the sysbench Job"):
        check_test(Workload(test="oltp_common"))


def test_sysbench_s_tests_folder_without_its_program_on_the_path_is_no_sysbench_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Debian's package with its program moved off the PATH (the isolated harness's /opt/client-tools/bin): a
    built-in test is checked by name, not loaded by a sysbench that cannot be started."""
    share = tmp_path / "share"
    share.mkdir()
    (share / "oltp_point_select.lua").write_text("function event() end\n")
    monkeypatch.setattr(preflight, "SYSBENCH_SHARE", share)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert not preflight.sysbench_here()
    check_test(Workload(test="oltp_read_write"))  # in JOB_TESTS, though not in this folder
    with pytest.raises(BadInput, match=r"is not a test of the sysbench Job"):
        check_test(Workload(test="oltp_common"))


@given(st.text(max_size=80))
def test_hostile_test_names_without_sysbench_here(name: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(preflight, "SYSBENCH_SHARE", Path("/nonexistent/lbhar2"))
        try:
            workload = Workload(test=name)
        except ValueError:
            return  # the model's own refusal
        if workload.is_lua_path:
            return
        try:
            check_test(workload)
        except BadInput as error:
            assert "\n" not in str(error) and name not in JOB_TESTS
        else:
            assert name in JOB_TESTS


def test_the_jobs_version_line() -> None:
    assert client_sysbench(BANNER) == "sysbench 1.0.20"
    assert client_sysbench("layerbench-rtt-us: 120 130\n" + BANNER) == "sysbench 1.0.20"
    assert client_sysbench("FATAL: no such test\n") is None


def test_the_environment_names_the_jobs_sysbench() -> None:
    env = {"host": {"hostname": "harness", "sysbench_version": "sysbench 1.0.18"}, "backend": {}}
    changed = with_client_sysbench(env, BANNER, "the Job")
    assert changed["host"] == {"hostname": "harness", "sysbench_version": "sysbench 1.0.20",
                               "sysbench_version_from": "the Job"}
    assert env["host"]["sysbench_version"] == "sysbench 1.0.18"  # not changed in place
    missing = with_client_sysbench(env, "nothing\n", "the Job")["host"]
    assert missing["sysbench_version"] is None and missing["sysbench_version_from"] == "none in the Job"


@given(st.text(max_size=300))
def test_hostile_job_output(output: str) -> None:
    version = client_sysbench(output)
    assert version is None or (version.startswith("sysbench ") and "\n" not in version and len(version) < 200)


def kubeconfig(path: Path, server: str = "https://10.0.0.9:6443", context: str = "ci") -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": context,
        "clusters": [{"name": "ci", "cluster": {"server": server}}],
        "contexts": [{"name": context, "context": {"cluster": "ci", "user": "ci"}}],
        "users": [{"name": "ci", "user": {"token": "lbhar2-secret-token"}}]}))
    return path


def test_the_plan_names_the_cluster_kubeconfig_points_at(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No kubeconfig: in the variant: $KUBECONFIG's cluster (what kubeconfigs.chosen_kubeconfig uses), not "the local
    cluster", and no first-time cost of building the local one."""
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "ci.yaml")))
    variant = KubernetesVariant.model_validate({"name": "k", "backend": "kubernetes"})
    words, local = cluster_words(variant.kubeconfig, variant.context, variant.name)
    assert (words, local) == (f"the cluster of context ci at https://10.0.0.9:6443 in {tmp_path / 'ci.yaml'}", False)
    assert words in variant.describe_plan() and "lbhar2-secret-token" not in variant.describe_plan()
    assert LOCAL_CLUSTER_COST not in variant.first_time_costs()


def test_the_local_cluster_is_named_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("K8S_LOCAL_DIR", str(tmp_path / "k8s"))
    variant = KubernetesVariant.model_validate({"name": "k", "backend": "kubernetes"})
    assert cluster_words(None, None, "k") == ("the local cluster (scripts/k8s-local)", True)  # not up yet
    (tmp_path / "k8s").mkdir()
    kubeconfig(tmp_path / "k8s" / "kubeconfig", context="layerbench-k8s-local")
    words, local = cluster_words(variant.kubeconfig, variant.context, variant.name)
    assert local and words.startswith("the cluster (scripts/k8s-local) of context layerbench-k8s-local at ")
    assert LOCAL_CLUSTER_COST in variant.first_time_costs()


@given(st.text(max_size=60), st.text(max_size=60))
def test_hostile_kubeconfig_values_in_the_plan(server: str, context: str) -> None:
    with tempfile.TemporaryDirectory(prefix="lbhar2-") as folder, pytest.MonkeyPatch.context() as patch:
        path = Path(folder) / "k.yaml"
        try:
            kubeconfig(path, server, context)
        except yaml.YAMLError:
            return
        patch.setenv("KUBECONFIG", str(path))
        words, local = cluster_words(None, None, "k")
        assert not local and "\n" not in words and len(words) < 600
