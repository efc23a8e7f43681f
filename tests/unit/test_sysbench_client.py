"""sysbench on this host (sysbench/client.py HostClient): the command runs to its end with its output streamed to
the caller and to the run's log, redacted, and pinned to the variant's client CPUs when it names some."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from layerbench.secrets import REDACTED, Secret
from layerbench.sysbench.client import HostClient

SCRIPT = "import os, sys; print('tps: 5 pass s3cret'); print(sorted(os.sched_getaffinity(0))); sys.exit(3)"


def test_the_client_runs_here_streams_and_redacts(tmp_path: Path) -> None:
    lines: list[str] = []
    done = HostClient().run_client([sys.executable, "-c", SCRIPT, "run"], {}, log_path=tmp_path / "run.log",
                                   timeout=60, on_line=lines.append, secrets=[Secret("s3cret")])
    assert done.returncode == 3
    assert lines[0] == f"tps: 5 pass {REDACTED}" and "s3cret" not in done.output
    assert f"tps: 5 pass {REDACTED}" in (tmp_path / "run.log").read_text(encoding="utf-8")


def test_the_client_is_pinned_to_its_cpus(tmp_path: Path) -> None:
    cpu = max(os.sched_getaffinity(0))
    done = HostClient(str(cpu)).run_client([sys.executable, "-c", SCRIPT, "prepare"], {},
                                           log_path=tmp_path / "prepare.log", timeout=60)
    assert done.output.splitlines()[1] == f"[{cpu}]"
