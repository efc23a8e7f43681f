"""The places `layerbench clean` sweeps (run/cleanup.py: `load_inventory`, `places`): an inventory file read
within bounds and checked as a campaign's hosts are, every problem one line naming the field and the fix, exit 2
from the command line before anything is swept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.errors import BadInput
from layerbench.run.cleanup import load_inventory, places


def written(tmp_path: Path, data: object, name: str = "inv.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_an_inventory_gives_its_ssh_hosts_once_each(tmp_path: Path) -> None:
    hosts = {"db": {"local": True, "address": "10.0.0.1"}, "app": {"ssh": "root@10.0.0.2"},
             "alias": {"ssh": "lab-db", "work_dir": "/var/tmp/lb"}}
    inventory = written(tmp_path, {"hosts": hosts})
    campaign = written(tmp_path, {"name": "c", "baseline": "v", "workload": {"tables": 1},
                                  "variants": [{"name": "v", "backend": "host"}],
                                  "hosts": {"app2": {"ssh": "root@10.0.0.2"}, "x": {"ssh": "x"}}}, "c.yaml")
    where = places(str(inventory), str(campaign))
    found = where.hosts
    assert [v.name for v in where.variants] == ["v"]
    assert [(h.name, h.entry.ssh) for h in found] == [("alias", "lab-db"), ("app", "root@10.0.0.2"), ("x", "x")]
    assert found[0].work_dir == "/var/tmp/lb"


@pytest.mark.parametrize(("data", "said"), [
    ({"hosts": {"a": {"ssh": "-oProxyCommand=x"}}}, "hosts.a"),
    ({"hosts": {"a": {"ssh": "a", "work_dir": "/"}}}, "work_dir"),
    ({"hosts": {"a b": {"ssh": "a"}}}, "hosts"),
    ({"hosts": {"a": {"ssh": "a", "rogue": 1}}}, "rogue"),
    ({"variants": []}, "hosts: required"),
    ("hosts: [", "--inventory"),
    ([1, 2], "--inventory"),
])
def test_a_bad_inventory_is_one_line_naming_the_field(tmp_path: Path, data: object, said: str) -> None:
    with pytest.raises(BadInput) as error:
        load_inventory(written(tmp_path, data))
    assert said in str(error.value) and "\n" not in str(error.value), str(error.value)


def test_a_missing_identity_file_is_refused_before_anything_is_swept(tmp_path: Path) -> None:
    inventory = written(tmp_path, {"hosts": {"a": {"ssh": "a", "identity_file": str(tmp_path / "none")}}})
    with pytest.raises(BadInput) as error:
        places(str(inventory), None)
    assert str(error.value).startswith("hosts.a.identity_file: ")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300))
def test_any_text_as_an_inventory_is_hosts_or_one_line(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="sweep-") as folder:
        path = Path(folder) / "inv.yaml"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            load_inventory(path)
        except BadInput as error:
            assert "\n" not in str(error)


def test_the_command_line_exits_2_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "layerbench", "clean", "--inventory", str(tmp_path / "none.yaml")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len((done.stdout + done.stderr).strip().splitlines()) == 1, done.stdout + done.stderr
