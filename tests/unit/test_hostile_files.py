"""Files a campaign's keys name (issue #44, kind 2), at `layerbench validate`: a device, a FIFO with no writer, a 2 GB
sparse file, a folder, a link to a device, a binary, a file of many lines or of the wrong kind is refused with
exit 2 in one line naming the key; and every such key's file is read through the one bounded reader
(bounded_read.py). Timings and memory of the same cases: bench/hostile_validate.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

from layerbench import bounded_read

HOSTS = {"db": {"local": True, "address": "127.0.0.1"}, "app": {"ssh": "bench@127.0.0.1", "port": 9}}


def campaign(key: str, value: str, out: Path) -> dict[str, Any]:
    """The hostile corpus's campaign with one file-naming key set (and what that key needs to be reached)."""
    variant: dict[str, Any] = {"name": "base", "backend": "host"}
    workload: dict[str, Any] = {"tables": 1, "table_size": 100, "threads": 1, "duration": 1, "warmup": 0}
    data: dict[str, Any] = {"name": "hostile", "baseline": "base", "output": str(out), "repetitions": 2}
    if key == "password_file":
        variant = {"name": "base", "backend": "external", "reset": "none", "password_file": value}
    elif key == "kubeconfig":
        variant = {"name": "base", "backend": "kubernetes", "kubeconfig": value}
    elif key in ("identity_file", "known_hosts"):
        variant |= {"server_host": "db", "client_host": "app"}
        data["hosts"] = {**HOSTS, "app": {**HOSTS["app"], key: value}}
    else:
        workload["test"] = value
    return {**data, "variants": [variant], "workload": workload}


WHERE = {"password_file": "variants.base.password_file", "kubeconfig": "variants.base.kubeconfig",
         "identity_file": "hosts.app.identity_file", "known_hosts": "hosts.app.known_hosts",
         "test": "workloads.default.test"}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("hostile-files")
    os.mkfifo(folder / "fifo")
    with (folder / "sparse").open("wb") as handle:
        handle.truncate(2 << 30)
    (folder / "link").symlink_to("/dev/zero")
    made = {"binary": bytes(range(256)) * 64, "lines": b"".join(b"line %d\n" % i for i in range(10_000)),
            "nul": b"a\0b\n", "yaml list": b"- a\n- b\n", "ini": b"[client]\npassword = x\n"}
    for name, data in made.items():
        (folder / name).write_bytes(data)
    shutil.copy("/etc/passwd", folder / "passwd")
    for path in folder.iterdir():
        if path.is_file() and not path.is_symlink():
            path.chmod(0o600)  # an identity file is read only when ssh would use it
    return {"/dev/zero": "/dev/zero", "/dev/urandom": "/dev/urandom", "folder": str(folder),
            **{name: str(folder / name) for name in ("fifo", "sparse", "link", "passwd", *made)}}


@pytest.mark.parametrize("key", sorted(WHERE))
def test_a_hostile_file_at_any_file_key_is_one_line_naming_the_key(tmp_path: Path, hostile: dict[str, str],
                                                                   key: str) -> None:
    refused = 0
    for case, value in hostile.items():
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(campaign(key, value, tmp_path / "out")))
        code, err = validate(path)
        assert_one_line_bad_input(code, err)
        assert err.startswith(f"error: {WHERE[key]}: "), (case, err)
        refused += 1
    assert refused == len(hostile)


def test_every_file_key_is_read_through_the_bounded_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each key's file reaches read_user_file (with its kind) before anything else reads it; validate then stops
    further on (no cluster, no sshd, no server here), which is not this test's concern."""
    good = {"password_file": "pass\n", "kubeconfig": yaml.safe_dump({
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {}}], "current-context": "c"}),
            "identity_file": "-----BEGIN OPENSSH PRIVATE KEY-----\nYQ==\n-----END OPENSSH PRIVATE KEY-----\n",
            "known_hosts": "", "test": "function event() end\n"}
    read: list[tuple[str, str | None, str]] = []
    real = bounded_read.read_user_file

    def spy(path: Any, kind: bounded_read.FileKind, where: str | None = None) -> str:
        read.append((str(path), where, kind.what))
        return real(path, kind, where)

    monkeypatch.setattr(bounded_read, "read_user_file", spy)
    for module in ("layerbench.secrets", "layerbench.hosts.inventory", "layerbench.run.preflight"):
        monkeypatch.setattr(f"{module}.read_user_file", spy)
    for key, text in good.items():
        file = tmp_path / f"{key}.lua"
        file.write_text(text)
        file.chmod(0o600)
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(campaign(key, str(file), tmp_path / "out")))
        validate(path)
        assert (str(file), WHERE[key]) in [(p, w) for p, w, _ in read], (key, read)
