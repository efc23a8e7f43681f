"""Where the harness stands decides a kubernetes variant's unwritten `client:` (issue #41 item 5): job off a node,
host on one, read once by run/preflight.py's `resolve_defaults` (KubernetesVariant.where_the_harness_stands,
cluster.default_client) and seen by every later reader: the checks, the plan's line, the stored campaign.
Namespace-scoped mode reads no node, so it counts as off one without any call to the API; the on-node side runs
against the real cluster in tests/integration/test_kubernetes_rbac.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.kubernetes.variant import client_text
from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.errors import BadInput
from layerbench.run.plan import variant_line
from layerbench.run.preflight import resolve_defaults

SCOPED = {"name": "k", "backend": "kubernetes", "namespace": "offn-team", "reset": "reprepare"}
WORKLOAD = {"tables": 1, "table_size": 1000, "threads": 1, "duration": 3}


def campaign(*variants: dict[str, Any], test: str | None = None) -> Any:
    workload = {**WORKLOAD, **({"test": test} if test else {})}
    return parse_campaign({"name": "offn-default", "baseline": variants[0]["name"], "variants": list(variants),
                           "workload": workload})


def test_off_a_node_an_unwritten_client_is_a_job_and_the_plan_says_why() -> None:
    parsed = campaign(SCOPED)
    resolved = resolve_defaults(parsed)
    variant = resolved.variants[0]
    assert parsed.variants[0].client == "host" and variant.client == "job"  # the parsed one is not changed
    assert "client: job (the default off a node)" in variant_line(variant)
    assert "sysbench as a Job in the cluster" in variant.where_text("here", "here", True)
    assert "create/list/delete jobs" in variant.describe_plan()  # its rights: the Job's
    assert campaign_as_dict(resolved)["variants"][0]["client"] == "job"  # stored as it ran (resume runs the same)


def test_the_resolution_is_read_once_and_a_resolved_campaign_is_kept() -> None:
    resolved = resolve_defaults(campaign(SCOPED))
    assert resolve_defaults(resolved) is resolved
    assert resolved.variants[0].where_the_harness_stands() is resolved.variants[0]


@pytest.mark.parametrize("written", ["host", "job", "port-forward"])
def test_a_written_client_is_kept_and_the_plan_gives_no_default(written: str) -> None:
    parsed = campaign({**SCOPED, "client": written})
    resolved = resolve_defaults(parsed)
    assert resolved is parsed and resolved.variants[0].client == written
    assert f"client: {written}, QoS" in variant_line(resolved.variants[0])


def test_an_unresolved_variant_says_the_plan_has_not_read_where_it_stands() -> None:
    line = variant_line(campaign(SCOPED).variants[0])
    assert "client: host on a node of the cluster, job off one (not read yet)" in line


def test_other_backends_have_no_default_of_the_place() -> None:
    parsed = campaign({"name": "h", "backend": "host"}, SCOPED)
    resolved = resolve_defaults(parsed)
    assert resolved.variants[0] is parsed.variants[0] and resolved.variants[1].client == "job"


def test_client_cpus_with_the_job_default_is_refused_in_one_line() -> None:
    with pytest.raises(BadInput, match=r"^variants\.k\.client_cpus: pins sysbench here, but the harness runs off a "
                                       r"node of the cluster, .*; write client: host .* or remove client_cpus$"):
        resolve_defaults(campaign({**SCOPED, "client_cpus": "0"}))
    resolve_defaults(campaign({**SCOPED, "client_cpus": "0", "client": "host"}))  # written: its own checks


def test_a_lua_script_of_this_machine_with_the_job_default_is_refused_in_one_line(tmp_path) -> None:
    script = tmp_path / "offn.lua"
    script.write_text("function event() end\n")
    with pytest.raises(BadInput, match=r"^variants\.k\.client: job runs sysbench where workloads\.\w+\.test .* "
                                       r"cannot be read; use client: host written \(where the harness stands the "
                                       r"default is not\)$") as error:
        resolve_defaults(campaign(SCOPED, test=str(script)))
    assert "\n" not in str(error.value)


@given(namespace=st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True),
       written=st.sampled_from([None, "host", "job", "port-forward"]))
def test_any_scoped_variant_resolves_to_a_client_it_can_run(namespace: str, written: str | None) -> None:
    variant = {**SCOPED, "namespace": namespace, **({"client": written} if written else {})}
    resolved = resolve_defaults(campaign(variant)).variants[0]
    assert resolved.client == (written or "job")
    assert ("(the default off a node)" in client_text(resolved)) == (written is None)


def test_an_unwritten_client_on_a_cluster_that_does_not_answer_is_one_line(tmp_path) -> None:
    from test_kubernetes_neighbours import unreachable_kubeconfig

    from layerbench.errors import PrerequisiteMissing
    from layerbench.run.preflight import preflight

    parsed = campaign({"name": "k", "backend": "kubernetes", "kubeconfig": unreachable_kubeconfig(tmp_path)})
    # left unread by resolve_defaults, so that what this machine checks (a MySQL that is not built) is said first
    assert "(not read yet)" in client_text(resolve_defaults(parsed).variants[0])
    with pytest.raises(PrerequisiteMissing, match=r"^variants\.k: the Kubernetes API at https://127\.0\.0\.1:1 does "
                                                  r"not answer .*; start the cluster") as error:
        preflight(parsed)
    assert "\n" not in str(error.value)
