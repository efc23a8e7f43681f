"""The process helper reaps what a process started, not only the process: a script interrupted or timed out takes
its children with it (mariadb-install-db's bootstrap server once went on writing into a build folder being
removed)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from layerbench.errors import RunFailed
from layerbench.hosts.procs import run, start


def script(out: str = "") -> list[str]:
    """A script that starts a long child, says its PID (on stdout, or `> file`), and waits for it: the shape
    of mariadb-install-db."""
    return ["sh", "-c", f"sleep 300 & echo $! {out}; wait"]


def running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan is reaped by init, or lingers as Z until then)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(pid: int) -> bool:
    """True once the process has stopped; waits for a loaded machine's scheduler, asserts no duration."""
    for _ in range(600):
        if not running(pid):
            return True
        time.sleep(0.05)
    return False


def test_an_interrupted_run_takes_the_children_of_its_process_with_it(tmp_path: Path) -> None:
    children: list[int] = []

    def interrupt(line: str) -> None:
        children.append(int(line))
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run("script", script(), log_path=tmp_path / "script.log", on_line=interrupt, timeout=None)
    assert children and gone(children[0])


def test_a_run_past_its_timeout_takes_the_children_of_its_process_with_it(tmp_path: Path) -> None:
    with pytest.raises(RunFailed, match="did not finish within 1 s"):
        run("script", script(f"> {tmp_path / 'child'}"), timeout=1)
    assert gone(int((tmp_path / "child").read_text()))


def test_stopping_a_started_process_stops_its_children(tmp_path: Path) -> None:
    proc = start("script", script(f"> {tmp_path / 'child'}"), log_path=None)
    try:
        for _ in range(600):
            if (tmp_path / "child").is_file() and (tmp_path / "child").read_text().strip():
                break
            time.sleep(0.05)
        child = int((tmp_path / "child").read_text())
        assert running(child)
    finally:
        proc.stop(timeout=10)
    assert gone(child)
