"""hosts/architecture.py: every spelling of an architecture made one, and the one check of an image against the
machines that run it, as its users call it: a cluster's nodes (backends/kubernetes/cluster.py, in
test_kubernetes_mysql.py and tests/integration/test_registry_k8s.py), the image shipped to an SSH host's Docker daemon
(backends/docker/remote.py) and a VM's guest disk and KVM (backends/vm/qemu.py)."""

from __future__ import annotations

import platform

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.errors import BadInput
from layerbench.hosts.architecture import ALIASES, check_same, normalise, this_machine


@pytest.mark.parametrize(("spelling", "name"), [("x86_64", "amd64"), ("AMD64", "amd64"), (" amd64\n", "amd64"),
                                                 ("aarch64", "arm64"), ("arm64", "arm64"), ("armv7l", "arm"),
                                                 ("i686", "386"), ("ppc64el", "ppc64le"), ("s390x", "s390x")])
def test_spellings_of_one_architecture_are_one_name(spelling: str, name: str) -> None:
    assert normalise(spelling) == name


def test_this_machine_is_unames_name_normalised() -> None:
    assert this_machine() == ALIASES.get(platform.machine().lower(), platform.machine().lower())
    assert this_machine() in set(ALIASES.values())


def test_same_architecture_passes_whatever_the_spelling() -> None:
    check_same("image x", "x86_64", "variants.a.image", [("node-1", "amd64"), ("node-2", "AMD64")], "fix it")


def test_a_node_of_another_architecture_is_one_line_naming_the_field_the_node_and_the_fix() -> None:
    with pytest.raises(BadInput) as caught:
        check_same("image r/x:1", "aarch64", "variants.a.image",
                   [("node-1", "arm64"), ("node-2", "x86_64")], "push an amd64 image")
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith("variants.a.image: image r/x:1 is built for arm64, but node-2 (amd64) is not")
    assert text.endswith("push an amd64 image") and "node-1" not in text


def test_an_image_that_names_no_architecture_is_refused() -> None:
    with pytest.raises(BadInput, match="names no CPU architecture"):
        check_same("image x", "  ", "variants.a.image", [("n", "amd64")], "fix")


def test_many_machines_are_summed_up() -> None:
    with pytest.raises(BadInput, match=r"and 6 more are not"):
        check_same("x", "amd64", "w", [(f"n{i}", "arm64") for i in range(10)], "fix")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300), st.lists(st.tuples(st.text(max_size=80),
                                                                        st.text(max_size=80)), max_size=6))
def test_hostile_names_give_one_printable_line_or_pass(arch: str, node: str, machines: list[tuple[str, str]]) -> None:
    assert normalise(normalise(arch)) == normalise(arch)  # idempotent
    assert len(normalise(arch)) <= 40
    try:
        check_same("image x", arch, "variants.a.image", [(node, arch), *machines], "fix")
    except BadInput as error:
        text = str(error)
        assert text.isprintable() and len(text) < 700
        assert text.startswith("variants.a.image: ") and text.endswith("fix")
    else:
        assert all(normalise(m) == normalise(arch) for _n, m in machines) and normalise(arch)


def test_an_image_shipped_to_a_daemon_of_another_architecture_is_refused_before_the_first_run() -> None:
    from layerbench.backends.docker.remote import check_shipped_architecture

    check_shipped_architecture("db", platform.machine(), "variants.d.server_host")  # docker info's spelling
    other = "aarch64" if this_machine() != "arm64" else "x86_64"
    with pytest.raises(BadInput, match=rf"^variants.d.server_host: the image built here from this machine's packages "
                                       rf"\(sent by save and load\) is built for {this_machine()}, but the Docker "
                                       rf"daemon of host db \({normalise(other)}\) is not; run this docker variant"):
        check_shipped_architecture("db", other, "variants.d.server_host")


def test_a_vm_guest_is_x86_64_and_kvm_needs_an_x86_64_host() -> None:
    from layerbench.backends.vm.qemu import check_guest_architecture

    if this_machine() != "amd64":
        with pytest.raises(BadInput, match="run the vm backend from an x86_64 machine"):
            check_guest_architecture("variants.v", "this machine", None, "auto")
        return
    check_guest_architecture("variants.v", "this machine", None, "kvm")
    check_guest_architecture("variants.v", "app", "x86_64", "kvm")
    check_guest_architecture("variants.v", "app", "aarch64", "tcg")  # emulation runs anywhere
    with pytest.raises(BadInput, match=r"^variants.v.accel: the x86_64 guest under KVM is built for amd64, but app "
                                       r"\(arm64\) is not; use accel: tcg there"):
        check_guest_architecture("variants.v", "app", "aarch64", "kvm")
    check_guest_architecture("variants.v", "app", None, "kvm")  # uname -m failed there: KVM's own check says more
