"""Settings that do not apply where they are written (issue #44, kind 9): a key a backend's variant accepts but
would not apply, which the plan would print as if it did, is refused in one line naming the key, the backend and
what to use instead; and a wait shorter than the quiet check's one sample is refused as a wait the check cannot do.
Each through `layerbench validate`: exit 2, one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

from layerbench.campaign.models import checked_wait, parse_campaign
from layerbench.errors import BadInput
from layerbench.measure.cpu import QUIET_STEP

WORKLOAD = {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0}
EXTERNAL = {"backend": "external", "reset": "none", "password_env": "PW"}
K8S = {"backend": "kubernetes", "kubeconfig": "/nonexistent/kubeconfig"}


def refusal(tmp_path: Path, variant: dict[str, Any], **top: Any) -> str:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "apply", "baseline": "v", "output": str(tmp_path / "out"),
                                    "workload": WORKLOAD, "variants": [{"name": "v", **variant}], **top}))
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    return err.removeprefix(f"error: {path}: ").removeprefix("error: ")


@pytest.mark.parametrize(("variant", "words"), [
    ({**EXTERNAL, "cpus": "0"}, "variants.v.cpus: backend external: the server runs where it is and layerbench does "
                                "not pin it; pin it on its own machine and remove cpus"),
    ({**EXTERNAL, "server": {"flavour": "mariadb", "version": "10.11"}},
     "variants.v.server.flavour: backend external: the server is whatever answers at 127.0.0.1:3306"),
    ({**K8S, "cpus": "0"}, "variants.v.cpus: backend kubernetes: the kubelet chooses a pod's CPUs; for CPUs of its "
                           "own use qos: guaranteed with a whole limits.cpu and cpu_manager_static: true"),
    ({**K8S, "client": "job", "client_cpus": "0"},
     "variants.v.client_cpus: backend kubernetes, client: job: the kubelet chooses the Job pod's CPUs"),
    ({**K8S, "storage_size": "10Gi"}, "variants.v.storage_size: backend kubernetes: only a PVC has it, and storage "
                                      "is 'emptydir' without snapshot_class; set storage: pvc (or emptydir with "
                                      "snapshot_class) or remove storage_size"),
    ({**K8S, "storage": "hostpath", "storage_class": "fast"}, "variants.v.storage_class: backend kubernetes: only a "
                                                              "PVC has it, and storage is 'hostpath'"),
    ({"backend": "docker", "cpus": "0", "resources": {"cpuset": "1"}},
     "variants.v.cpus: backend docker pins the container to resources.cpuset (1), so cpus (0) would not apply"),
])
def test_a_key_its_backend_would_not_apply_is_refused(tmp_path: Path, variant: dict[str, Any], words: str) -> None:
    assert refusal(tmp_path, variant).startswith(words)


@pytest.mark.parametrize("variant", [
    {**EXTERNAL, "client_cpus": "0"},  # sysbench here: pinned
    {**K8S, "client": "port-forward", "client_cpus": "0"},  # sysbench here
    {**K8S, "storage": "pvc", "storage_size": "10Gi", "storage_class": "fast"},
    {"backend": "docker", "cpus": "0", "resources": {"cpuset": "0"}},  # the same list twice: nothing is lost
    {"backend": "vm", "cpus": "0"},  # QEMU's process is pinned
])
def test_the_same_keys_where_they_apply_are_taken(variant: dict[str, Any]) -> None:
    parse_campaign({"name": "apply", "baseline": "v", "workload": WORKLOAD, "variants": [{"name": "v", **variant}]})


@pytest.mark.parametrize(("top", "words"), [
    ({"wait_for_quiet": "0.5s"}, "wait_for_quiet: '0.5s' is not a wait from 1 s to 1 h; write it like 30s or 5m "
                                 "(at least 1 s, the quiet check's one sample)"),
    ({"wait_for_quiet": "0s"}, "wait_for_quiet: '0s' is not a wait from 1 s to 1 h"),
    ({"busy": {"policy": "rerun", "wait": "0.2s"}}, "busy.wait: '0.2s' is not a wait from 0 s to 1 h; write it like "
                                                    "30s or 5m (0s: no wait; else at least 1 s"),
])
def test_a_wait_shorter_than_the_quiet_check_s_sample_is_refused(tmp_path: Path, top: dict, words: str) -> None:
    assert refusal(tmp_path, {"backend": "host"}, **top).startswith(words)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,3})? ?[smh]", fullmatch=True), st.booleans())
def test_a_wait_is_taken_exactly_from_one_sample_to_an_hour(text: str, no_wait: bool) -> None:
    seconds = float(text.strip()[:-1]) * {"s": 1, "m": 60, "h": 3600}[text.strip()[-1]]
    fits = QUIET_STEP <= seconds <= 3600 or (no_wait and seconds == 0)
    try:
        assert checked_wait(text, no_wait) == text and fits
    except ValueError as error:
        assert not fits and "\n" not in str(error)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=12), st.booleans())
def test_any_wait_text_is_taken_or_refused_in_one_line(text: str, no_wait: bool) -> None:
    try:
        checked_wait(text, no_wait)
    except ValueError as error:
        assert "is not a wait from" in str(error) and "\n" not in str(error)


def test_the_refusals_name_the_key_at_the_model_too() -> None:
    with pytest.raises(BadInput, match=r"^variants\.v\.cpus: backend external"):
        parse_campaign({"name": "a", "baseline": "v", "workload": WORKLOAD,
                        "variants": [{"name": "v", **EXTERNAL, "cpus": "0"}]})
