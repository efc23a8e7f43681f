"""`validate` checks every host the plan uses as `run` will reach it, also a host that only runs sysbench: the files
its entry names (a missing key, a device as known_hosts), and that it answers over SSH. Each refusal is one line,
exit 2, naming the entry, the field and the value. (With the lab: tests/integration/test_remote_hosts.py.)"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
import yaml
from tests.unit.test_hostile_inputs import validate as run_validate

from layerbench.hosts.inventory import Host, HostEntry


def validate(tmp_path: Path, app: dict, hosts: dict | None = None,
             **variant: object) -> tuple[int, str]:
    """`layerbench validate` of a campaign whose server is this machine and whose sysbench runs on host app."""
    data = {"name": "vh", "baseline": "far", "output": str(tmp_path / "out"),
            "hosts": hosts or {"db": {"local": True, "address": "127.0.0.1"}, "app": app},
            "variants": [{"name": "far", "backend": "host", "server_host": "db", "client_host": "app", **variant}],
            "workload": {"tables": 1, "table_size": 1000, "threads": 2, "duration": 3, "warmup": 1}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    return run_validate(path)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


FAKE_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nbm90IGEga2V5\n-----END OPENSSH PRIVATE KEY-----\n"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    key, known = tmp_path / "id key", tmp_path / "known hosts"  # blanks: ssh is given them whole
    key.write_text(FAKE_KEY)  # the shape of a private key (validate reads it), no key ssh could use
    key.chmod(0o600)
    known.write_text("")
    open_key = tmp_path / "open_key"
    open_key.write_text("x\n")
    open_key.chmod(0o644)
    return {"key": str(key), "known": str(known), "open_key": str(open_key), "folder": str(tmp_path)}


@pytest.mark.parametrize(("field", "value", "words"), [
    ("identity_file", "{folder}/no-such-key", "does not exist or cannot be read (No such file or directory); "
                                              "give the path of a private key"),
    ("identity_file", "{folder}", "is not a readable regular file; give the path of a private key"),
    ("identity_file", "{open_key}", "has mode 0644 (open to group or others), so ssh ignores the key; chmod 600"),
    ("identity_file", "{folder}/k%d", "ssh expands % and ${...} in this path"),
    ("identity_file", "{folder}/a\x00b", "does not exist or cannot be read (not a path)"),
    ("known_hosts", "/dev/zero", "is not a readable regular file; give the path of a known_hosts file"),
    ("known_hosts", "{folder}/kh${{HOME}}", "ssh expands % and ${...} in this path"),
    ("known_hosts", "{folder}/a\nb", "a quote, a backslash or a control character cannot be passed"),
    ("known_hosts", '{folder}/"x', "a quote, a backslash or a control character cannot be passed"),
])
def test_a_client_only_hosts_files_are_checked(tmp_path: Path, files: dict[str, str], field: str,
                                               value: str, words: str) -> None:
    app = {"ssh": "root@127.0.0.1", "port": closed_port(), "identity_file": files["key"],
           "known_hosts": files["known"], field: value.format(**files)}
    code, text = validate(tmp_path, app)
    line = text.strip()
    assert code == 2 and "\n" not in line, text
    assert line.startswith(f"error: hosts.app.{field}: ") and words in line, line


def test_a_client_only_host_that_does_not_answer_is_refused(tmp_path: Path, files: dict[str, str]) -> None:
    port = closed_port()
    app = {"ssh": "root@127.0.0.1", "port": port, "identity_file": files["key"], "known_hosts": files["known"]}
    code, text = validate(tmp_path, app)
    line = text.strip()
    assert code == 2 and "\n" not in line, text
    assert line.startswith("error: hosts.app (root@127.0.0.1) does not answer over SSH: ") and "refused" in line
    assert line.endswith("check that it is up and that hosts.app.ssh (and port) reach its sshd")


def test_a_server_here_must_be_able_to_listen_on_the_address_other_hosts_reach(tmp_path: Path, files) -> None:
    app = {"ssh": "root@127.0.0.1", "port": closed_port(), "identity_file": files["key"]}
    data_hosts = {"db": {"local": True, "address": "192.0.2.1"}, "app": app}  # TEST-NET-1: no machine has it
    code, text = validate(tmp_path, app, hosts=data_hosts)
    assert code == 2 and text.strip() == (
        "error: hosts.db.address: '192.0.2.1' is not an address of this machine, so the server of variant far cannot "
        "listen there (Cannot assign requested address); give one of this machine's addresses (ip -brief address)")


def test_known_hosts_with_a_blank_reaches_ssh_as_one_file() -> None:
    cmd = Host("app", HostEntry(ssh="a@b", known_hosts="/k h/known")).ssh_command()
    option = next(part for part in cmd if part.startswith("UserKnownHostsFile="))
    assert option == f'UserKnownHostsFile="/k h/known" "{os.path.expanduser("~/.ssh/known_hosts")}"'
