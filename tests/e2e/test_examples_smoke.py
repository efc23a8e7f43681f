"""Every example campaign validates and runs end to end in --smoke mode (tiny data), so none of them rots."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "src/layerbench/data/examples").glob("*.yaml"))


def cli(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "layerbench", *args], capture_output=True, text=True, timeout=timeout)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 1


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.stem for e in EXAMPLES])
def test_example_validates_and_runs_in_smoke_mode(example: Path, tmp_path: Path, request: pytest.FixtureRequest,
                                                  ) -> None:
    if "backend: kubernetes" in example.read_text():
        request.getfixturevalue("k8s_cluster")  # the local cluster, started for this module when not running
    if "/run/lblab/" in example.read_text():
        request.getfixturevalue("lab_hosts")  # the two-host lab of scripts/lab-hosts, up for this session
    if "flavour: mysql" in example.read_text():  # validate refuses a MySQL that is not built: build it (cached)
        assert cli("server", "build", "mysql", "9.7").returncode == 0
    checked = cli("validate", str(example))
    assert checked.returncode == 0 and "valid;" in checked.stdout, checked.stderr
    done = cli("run", "--smoke", str(example), "--output", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    statuses = [r[0] for r in sqlite3.connect(tmp_path / "layerbench.db").execute("SELECT status FROM runs")]
    assert statuses and set(statuses) == {"ok"}
    assert list(tmp_path.glob("*/report.md"))
