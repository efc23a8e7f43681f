"""server/image_registry.py: a registry's address (checked before anything is built or pushed), the registry an
image names, which registries may speak plain HTTP, and skopeo's errors as one line. The push itself and a node
pulling the image are tests/integration/test_registry_k8s.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.cli.main import main
from layerbench.errors import BadInput
from layerbench.server.image_registry import _skopeo_failure, plain_http, registry_address, registry_of
from layerbench.vocabulary.base import IMAGE_RE


@pytest.mark.parametrize("address", ["10.250.0.1:15000", "localhost", "localhost:5000", "registry.example.com",
                                     "r.example.com:443", "my-registry.local:1"])
def test_good_addresses_are_kept(address: str) -> None:
    assert registry_address(address) == address


@pytest.mark.parametrize(("address", "says"), [
    ("", "is not a registry address"), ("http://10.0.0.1:5000", "no scheme, no path"),
    ("10.0.0.1:5000/team", "no scheme, no path"), ("10.0.0.1:0", "no TCP port"), ("10.0.0.1:65536", "no TCP port"),
    ("10.0.0.1:", "no TCP port"), ("10.0.0.1:５０", "is not a registry address"), ("myreg", "Docker Hub user"),
    ("[::1]:5000", "IPv6"), ("a_b.example.com", "IPv6 and names"), ("-a.example.com", "IPv6 and names"),
    (" 10.0.0.1:5000", "is not a registry address"), ("10.0.0.1:5000\x1b[2J", "is not a registry address")])
def test_bad_addresses_are_one_line_naming_the_fix(address: str, says: str) -> None:
    with pytest.raises(BadInput, match="registry: ") as caught:
        registry_address(address)
    assert says in str(caught.value) and "give host:port" in str(caught.value) and "\n" not in str(caught.value)


def test_a_bad_address_exits_2_before_anything_is_built(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["image", "push", "http://10.250.0.1:15000"])
    assert done.value.code == 2
    assert "registry: 'http://10.250.0.1:15000' is not a registry address" in capsys.readouterr().err


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=300), st.from_regex(r"[a-z0-9.:-]{1,30}", fullmatch=True)))
def test_hostile_addresses_are_refused_in_one_line_or_make_an_image_reference(text: str) -> None:
    import re

    try:
        address = registry_address(text)
    except BadInput as error:
        assert str(error).startswith("registry: ") and str(error).isprintable() and len(str(error)) < 600
    else:  # what is accepted names the registry of the pushed images, as a variant's image: reads it back
        reference = f"{address}/layerbench/mariadb:abc"
        assert re.fullmatch(IMAGE_RE, reference) and registry_of(reference) == address


def test_the_registry_of_an_image_follows_dockers_rule() -> None:
    assert registry_of("10.250.0.1:15000/layerbench/mysql:9.7") == "10.250.0.1:15000"
    assert registry_of("localhost/x") == "localhost"
    assert registry_of("registry.example.com/a/b:1") == "registry.example.com"
    assert registry_of("layerbench/mariadb:abc") is None and registry_of("mariadb") is None


@pytest.mark.parametrize(("registry", "http"), [("10.250.0.1:15000", True), ("127.0.0.1:5000", True),
                                                ("localhost:5000", True), ("192.168.1.2", True),
                                                ("8.8.8.8:5000", False), ("registry.example.com", False)])
def test_only_private_and_loopback_registries_may_speak_plain_http(registry: str, http: bool) -> None:
    assert plain_http(registry) is http


def test_skopeos_error_is_its_message_without_the_logfmt_frame() -> None:
    stderr = ('Getting image source signatures\ntime="2026-11-28T18:36:01Z" level=fatal msg="pinging container '
              'registry 10.250.0.1:41399: Get \\"http://10.250.0.1:41399/v2/\\": connect: connection refused"\n')
    assert _skopeo_failure(stderr) == ('pinging container registry 10.250.0.1:41399: Get "http://10.250.0.1:41399'
                                       '/v2/": connect: connection refused')
    assert _skopeo_failure("") == "no message"
    assert _skopeo_failure("plain\x1b[31m error\n").isprintable()
