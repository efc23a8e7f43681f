"""Every bench in bench/ runs in its quick mode (tiny sizes) and prints its table, so a bench that no longer runs
against today's code fails `make test`. Only that it runs and what it prints are checked, never a timing. A bench
that is interrupted (Ctrl-C) leaves no server and no folder behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = ROOT / ".venv" / "bin" / "python"
BENCHES = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name != "common.py")

# the first cells of the table each bench must print (a bench not named here must still print a table)
HEADERS = {
    "adaptive_rounds.py": ["true effect", "CV", "slower", "faster", "within noise"],
    "copy_rate.py": ["what", "median MiB/s", "all", "of disk write"],
    "fidelity.py": ["round", "layerbench (a) TPS", "hand (b) TPS", "a/b"],
    "hostile_validate.py": ["what", "file", "seconds", "peak MiB"],
    "neighbour_tps.py": ["variant", "quiet twin", "TPS / twin's (median)", "per round"],
    "report_speed.py": ["step", "median s"],
    "reset.py": ["what", "median s", "all"],
    "quiet_waits.py": ["setting", "runs", "replaced", "campaign s", "waited s", "waited / campaign"],
    "restore_paths.py": ["size", "path", "median s", "all", "old/new"],
    "sampler_overhead.py": ["repetition", "sampler thread CPU, % of one core", "samples"],
    "scale.py": ["what", "median s", "all"],
    "verdict_calibration.py": ["runs per side", "true effect", "slower"],
}


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Markdown tables in `text`: a header line, its |---| rule, and the lines of cells that follow."""
    lines, found = text.splitlines(), []
    for i, line in enumerate(lines[:-1]):
        if line.startswith("|") and lines[i + 1].startswith("|---"):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(cells(row))
            found.append((cells(line), rows))
    return found


def run_quick(bench: str) -> subprocess.CompletedProcess[str]:
    assert PYTHON.exists(), f"{PYTHON} is missing: run `make setup`"
    return subprocess.run([str(PYTHON), str(ROOT / "bench" / bench), "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.integration
@pytest.mark.parametrize("bench", BENCHES)
def test_quick_mode_runs_and_prints_its_table(bench: str) -> None:
    done = run_quick(bench)
    assert done.returncode == 0, f"{bench} --quick exited {done.returncode}:\n{done.stderr[-3000:]}"
    found = tables(done.stdout)
    assert found, f"{bench} --quick printed no table:\n{done.stdout[-3000:]}"
    for header, rows in found:
        assert rows, f"{bench}: a table without rows: {header}"
        assert all(len(row) == len(header) for row in rows), f"{bench}: rows do not match {header}: {rows}"
    expected = HEADERS.get(bench)
    if expected is not None:
        assert any(header[:len(expected)] == expected for header, _ in found), \
            f"{bench}: no table starts with {expected}; found {[h for h, _ in found]}"


def processes_mentioning(text: str) -> list[int]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(int(pid))
        except OSError:
            continue
    return out


def wait_for(condition, what: str, bench: subprocess.Popen, limit: float = 600) -> None:
    """Poll until `condition()`; fails if the bench ends first (a generous limit, not a timing assertion)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert bench.poll() is None, f"the bench ended before {what}:\n{bench.stderr.read() if bench.stderr else ''}"
        assert time.monotonic() < deadline, f"no {what} after {limit} s"
        time.sleep(0.2)


def default_sigint() -> None:
    """Ctrl-C as at a terminal, also when the tests themselves run in the background of a non-interactive shell
    (which starts them with SIGINT ignored, and a child inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.integration
def test_ctrl_c_leaves_no_server_and_no_folder(tmp_path: Path) -> None:
    """reset.py with many pairs, interrupted while one of its servers runs: the server is stopped, the bench's
    folders (all under its TMPDIR, here tmp_path) are removed, and it ends with one line, not a traceback."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    bench = subprocess.Popen([str(PYTHON), str(ROOT / "bench" / "reset.py"), "--quick", "--pairs", "1000"],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=default_sigint)
    try:
        wait_for(lambda: processes_mentioning(f"{tmp_path}/lb-bench-"), "server of the bench", bench)
        bench.send_signal(signal.SIGINT)
        _, stderr = bench.communicate(timeout=300)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.wait()
    assert bench.returncode == 130, stderr[-3000:]
    assert "Traceback" not in stderr and "interrupted" in stderr, stderr[-3000:]
    assert processes_mentioning(str(tmp_path)) == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("lb-bench-")] == []
