"""The one reader of the files a user names (bounded_read.py): every kind refuses, in one line naming the key, a
device, a FIFO (without blocking), a folder, a link to a device, a 2 GB sparse file, a binary, a NUL byte, a file
over its bound; and each kind's content check says what the file must be. Timings: bench/hostile_validate.py."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.bounded_read import (
    CAMPAIGN_FILE,
    IDENTITY_FILE,
    INVENTORY_FILE,
    KNOWN_HOSTS,
    KUBECONFIG,
    LUA_SCRIPT,
    PASSWORD_FILE,
    FileKind,
    host_keys,
    kubeconfig_shape,
    one_line_password,
    private_key,
    read_kubeconfig,
    read_user_file,
)
from layerbench.errors import BadInput

KINDS = [CAMPAIGN_FILE, PASSWORD_FILE, KUBECONFIG, IDENTITY_FILE, KNOWN_HOSTS, LUA_SCRIPT, INVENTORY_FILE]
KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
HOST_KEY = "10.0.0.6 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n"
KUBE = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "users": [{"name": "u", "user": {}}]}


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    """The files no reader may hang on, read without bound or crash on (all made here, none left behind)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: an open() without O_NONBLOCK would wait forever
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as handle:
        handle.truncate(2 << 30)  # 2 GB that take no disk
    link = tmp_path / "link"
    link.symlink_to("/dev/zero")
    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(256)) * 4)
    nul = tmp_path / "nul"
    nul.write_text("a\0b\n")
    return {"/dev/zero": Path("/dev/zero"), "/dev/urandom": Path("/dev/urandom"), "fifo": fifo, "sparse": sparse,
            "link to /dev/zero": link, "folder": tmp_path, "binary": binary, "NUL": nul,
            "missing": tmp_path / "missing", "NUL in the name": Path(f"{tmp_path}/a\0b")}


def refusal(path: Path, kind: FileKind, where: str | None = "variants.v.key") -> str:
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(60)  # a FIFO that blocked would fail here instead of stopping the suite
    try:
        with pytest.raises(BadInput) as refused:
            read_user_file(path, kind, where)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return str(refused.value)


def _hung(signum: int, frame: object) -> None:
    raise AssertionError("the read blocked")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.what)
def test_every_kind_refuses_every_hostile_file_in_one_line(hostile: dict[str, Path], kind: FileKind) -> None:
    for case, path in hostile.items():
        said = refusal(path, kind)
        assert said.startswith("variants.v.key: ") and "\n" not in said and len(said) < 400, (case, said)


def test_a_file_named_on_the_command_line_is_named_by_its_path(tmp_path: Path) -> None:
    assert refusal(tmp_path, CAMPAIGN_FILE, None).startswith(f"'{tmp_path}': a folder, not a regular file")
    assert "no such campaign file" in refusal(tmp_path / "gone.yaml", CAMPAIGN_FILE, None)


def test_each_kind_reads_what_it_must_be(tmp_path: Path) -> None:
    files = {PASSWORD_FILE: "s3cret pass\n", IDENTITY_FILE: KEY, KNOWN_HOSTS: f"# mine\n\n{HOST_KEY}",
             LUA_SCRIPT: "function event() end\n", KUBECONFIG: yaml.safe_dump(KUBE)}
    for kind, text in files.items():
        path = tmp_path / kind.what.replace(" ", "_")
        path.write_text(text)
        assert read_user_file(path, kind, "k") == text
    assert read_kubeconfig(tmp_path / "kubeconfig", "k") == KUBE


@pytest.mark.parametrize(("kind", "text", "words"), [
    (PASSWORD_FILE, "root:x:0:0\ndaemon:x:1:1\n", "2 lines"),
    (PASSWORD_FILE, "\n", "empty"),
    (PASSWORD_FILE, "pass\tword\n", "a control character"),
    (IDENTITY_FILE, "ssh-ed25519 AAAA me@host\n", "so it is no private key"),
    (IDENTITY_FILE, KEY.replace("END OPENSSH", "END RSA"), "does not end with -----END OPENSSH PRIVATE KEY-----"),
    (KNOWN_HOSTS, f"{HOST_KEY}root:x:0:0:root:/root:/bin/bash\n", "line 2 is not a host key"),
])
def test_each_kind_says_what_its_file_is_not(tmp_path: Path, kind: FileKind, text: str, words: str) -> None:
    path = tmp_path / "f"
    path.write_text(text)
    said = refusal(path, kind)
    assert words in said and said.endswith(kind.fix), said


def test_text_that_is_not_utf_8_is_refused_at_its_byte(tmp_path: Path) -> None:
    path = tmp_path / "script.lua"
    path.write_bytes("-- café\n".encode("latin-1"))
    assert refusal(path, LUA_SCRIPT) == f"variants.v.key: '{path}': not UTF-8 text (byte 6); save it as UTF-8"


@pytest.mark.parametrize(("data", "words"), [
    ("root:x:0:0", "not a mapping"),
    ({**KUBE, "clusters": []}, "clusters: not a list of clusters"),
    ({**KUBE, "contexts": {"c": 1}}, "contexts: not a list of contexts"),
    ({**KUBE, "users": [["u"]]}, "users[0]: not a {name: ..., user: {...}} entry"),
    ({**KUBE, "clusters": [{"name": "c", "cluster": {"server": 1}}]}, "clusters[0].cluster.server: missing"),
    ({**KUBE, "current-context": ["c"]}, "current-context: not text"),
])
def test_a_kubeconfig_of_the_wrong_shape_is_one_line(tmp_path: Path, data: object, words: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(BadInput) as refused:
        read_kubeconfig(path, "variants.v.kubeconfig")
    said = str(refused.value)
    assert said.startswith(f"variants.v.kubeconfig: '{path}': {words}") and said.endswith(KUBECONFIG.fix), said


def test_a_kubeconfig_of_many_values_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("x: [" + ",".join(["1"] * 200_000) + "]\n")
    with pytest.raises(BadInput, match="more than 50,000 values"):
        read_kubeconfig(path, "k")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_a_password_is_one_line_of_printable_text(text: str) -> None:
    body = text.removesuffix("\n")
    assert (one_line_password(text) is None) == (bool(body.strip()) and body.isprintable())


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300) | st.lists(st.sampled_from([HOST_KEY.strip(), "# c", "", "@revoked " + HOST_KEY.strip(),
                                                         "host ssh-rsa", "a b c d", "\t"]), max_size=6).map("\n".join))
def test_the_content_checks_answer_or_say_why_and_never_raise(text: str) -> None:
    for check in (host_keys, private_key, one_line_password):
        result = check(text)
        assert result is None or (isinstance(result, str) and "\n" not in result)


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                           st.sampled_from(["name", "cluster", "context", "user", "server", "clusters", "contexts",
                                            "users", "current-context"]), inner, max_size=4), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(JSONISH)
def test_the_kubeconfig_shape_check_never_raises(data: object) -> None:
    result = kubeconfig_shape(data)
    assert result is None or isinstance(result, str)
