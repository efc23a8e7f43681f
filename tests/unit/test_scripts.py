"""The shell scripts run under `set -euo pipefail`: a reader that quits before its producer is done (`| head`,
`| grep -q`, `| grep -m`) can kill the producer with SIGPIPE, fail the pipeline and, under set -e, end the
script with exit 141 at random. That once ended a cold Kubernetes build at its last line
(`kubectl version --client | head -1`). No such pipeline may come back."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "scripts" / "setup", ROOT / "scripts" / "k8s-local", ROOT / "scripts" / "k8s-local.d" / "csi.sh",
           ROOT / "scripts" / "k8s-local.d" / "node2.sh",
           ROOT / "scripts" / "lab-hosts", ROOT / ".ci" / "run"]
EARLY_READER = re.compile(r"\|\s*(head\b|grep\s+(-\w*[qm]|--quiet|--max-count)|sed\s+(-n\s+)?'?\d*q)")


def code_lines(path: Path) -> list[tuple[int, str]]:
    return [(n, line) for n, line in enumerate(path.read_text().splitlines(), 1) if not line.lstrip().startswith("#")]


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_no_pipeline_ends_in_a_reader_that_quits_early(script: Path) -> None:
    assert "pipefail" in script.read_text() or script.name == "run"
    found = [f"{script.name}:{n}: {line.strip()}" for n, line in code_lines(script) if EARLY_READER.search(line)]
    assert found == []


def test_the_check_finds_the_pattern() -> None:
    for bad in ('x | head -1', "y 2>/dev/null | grep -q ok", "z | grep -m1 a", "w | sed 1q"):
        assert EARLY_READER.search(bad), bad
    for fine in ("x | sed -n 1p", "grep -q ok file", "y | grep ok", "z | tail -1"):
        assert not EARLY_READER.search(fine), fine
