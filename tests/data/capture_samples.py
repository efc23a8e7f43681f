"""Re-capture the real sysbench outputs under tests/data (run as root on a machine with mariadbd + sysbench).

    PYTHONPATH=src python tests/data/capture_samples.py        # the samples of test_sysbench
    PYTHONPATH=src python tests/data/capture_samples.py logs   # raw 1.0.20 logs for the importer's tests
    PYTHONPATH=src python tests/data/capture_samples.py p100   # a variant's logs at the 100th percentile
    PYTHONPATH=src python tests/data/capture_samples.py other  # sysbench's non-OLTP tests (no server)
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import threading
from pathlib import Path

from layerbench.backends.base import ServerSpec
from layerbench.backends.host.local import HostBackend
from layerbench.backends.host.variant import HostVariant
from layerbench.campaign.workload import Workload
from layerbench.secrets import generate_password, redact, write_private
from layerbench.server.datadir import connect
from layerbench.sysbench.command import config_file_text, hook_script

HERE = Path(__file__).parent


def sysbench(cfg: Path, *args: str) -> str:
    done = subprocess.run(["sysbench", f"--config-file={cfg}", *args], capture_output=True, text=True)
    return done.stdout + done.stderr + f"# exit code: {done.returncode}\n"


def killer(endpoint, stop: threading.Event) -> None:
    conn = connect(endpoint)
    while not stop.wait(1.0):
        with conn.cursor() as cur:
            cur.execute("SELECT id FROM information_schema.processlist WHERE user=%s AND id<>CONNECTION_ID()",
                        (endpoint.user,))
            for (pid,) in cur.fetchall():
                with contextlib.suppress(Exception):
                    cur.execute(f"KILL {int(pid)}")
    conn.close()


def start_server(label: str):
    """A host server of our own in a fresh temporary folder: (folder, password, backend, endpoint, config)."""
    tmp = Path(tempfile.mkdtemp(prefix="lb-capture-"))
    (tmp / "run").mkdir()
    (tmp / "priv").mkdir(mode=0o700)
    password = generate_password()
    spec = ServerSpec("capture", label, tmp / "run",
                      tmp / "priv", tmp / "work", password=password)
    backend = HostBackend(HostVariant(name="h", backend="host"))
    endpoint = backend.up(spec)
    return tmp, password, backend, endpoint, write_private(tmp / "priv" / "sb.cfg", config_file_text(endpoint))


def main() -> None:
    tmp, password, backend, endpoint, cfg = start_server("lb-capture")
    hook = tmp / "hook.lua"
    hook.write_text(hook_script(Workload(test="oltp_read_write")))
    common = ["--tables=2", "--table-size=2000", "--threads=2"]
    outputs = {}
    try:
        outputs["prepare.txt"] = sysbench(cfg, "oltp_read_write", *common, "prepare")
        outputs["run_1.0_normal.txt"] = sysbench(
            cfg, "oltp_read_write", *common, "--time=5", "--report-interval=1", "run")
        outputs["run_1.0_errors.txt"] = sysbench(
            cfg, "oltp_read_write", "--tables=1", "--table-size=50", "--threads=8", "--time=4",
            "--report-interval=1", "--mysql-ignore-errors=1213,1020,1205", "run")
        outputs["run_hook.txt"] = sysbench(
            cfg, str(hook), *common, "--time=7", "--report-checkpoints=2", "--report-interval=1", "run")
        stop = threading.Event()
        thread = threading.Thread(target=killer, args=(endpoint, stop))
        thread.start()
        outputs["run_1.0_killed_connections.txt"] = sysbench(
            cfg, "oltp_read_write", *common, "--time=5", "--report-interval=1",
            "--mysql-ignore-errors=all", "run")
        stop.set()
        thread.join()
    finally:
        backend.down()
    bad = write_private(tmp / "priv" / "bad.cfg", config_file_text(endpoint))
    outputs["run_connection_failure.txt"] = sysbench(bad, "oltp_read_write", *common, "--time=2", "run")
    for name, text in outputs.items():
        text = redact(text, [password]).replace(str(tmp), "/tmp/capture")
        (HERE / name).write_text(text)
        print(name, len(text))


def capture_logs() -> None:
    """Raw 1.0.20 outputs for the importer: tests/data/logs/captured-1.0.20/{unlimited,rate40}/run-N.txt (four
    runs each, the second variant held to 40 transactions/s by sysbench's --rate: a real, separated TPS), and
    single runs with the 99th and 100th percentile."""
    tmp, password, backend, _, cfg = start_server("lb-capture-logs")
    common = ["oltp_read_write", "--tables=2", "--table-size=2000", "--threads=2"]
    outputs: dict[str, str] = {}
    folder = "logs/captured-1.0.20"
    try:
        sysbench(cfg, *common, "prepare")
        for i in range(1, 5):
            outputs[f"{folder}/unlimited/run-{i}.txt"] = sysbench(cfg, *common, "--time=3", "--report-interval=1",
                                                                  "run")
            outputs[f"{folder}/rate40/run-{i}.txt"] = sysbench(cfg, *common, "--time=3", "--report-interval=1",
                                                                "--rate=40", "run")
        for pct in (99, 100):
            outputs[f"logs/sysbench-1.0.20-p{pct}.txt"] = sysbench(cfg, *common, "--time=2", "--report-interval=1",
                                                                   f"--percentile={pct}", "run")
    finally:
        backend.down()
    for name, text in outputs.items():
        (HERE / name).parent.mkdir(parents=True, exist_ok=True)
        (HERE / name).write_text(redact(text, [password]).replace(str(tmp), "/tmp/capture"))
        print(name, len(text))


def save(outputs: dict[str, str], secrets: list[str], tmp: Path) -> None:
    for name, text in outputs.items():
        (HERE / name).parent.mkdir(parents=True, exist_ok=True)
        (HERE / name).write_text(redact(text, secrets).replace(str(tmp), "/tmp/capture"))
        print(name, len(text))


def capture_p100() -> None:
    """tests/data/logs/captured-1.0.20-p100/rate40-p100/run-N.txt: four runs as captured-1.0.20/rate40 (held to
    40 transactions/s), but reporting the 100th latency percentile (--percentile=100): the TPS of these files is
    comparable with the 95th-percentile `unlimited` runs, their percentile latency is not."""
    tmp, password, backend, _, cfg = start_server("lb-imports-capture")
    common = ["oltp_read_write", "--tables=2", "--table-size=2000", "--threads=2"]
    outputs: dict[str, str] = {}
    try:
        sysbench(cfg, *common, "prepare")
        for i in range(1, 5):
            outputs[f"logs/captured-1.0.20-p100/rate40-p100/run-{i}.txt"] = sysbench(
                cfg, *common, "--time=3", "--report-interval=1", "--rate=40", "--percentile=100", "run")
    finally:
        backend.down()
    save(outputs, [password], tmp)


def capture_other_tests() -> None:
    """tests/data/logs/other-tests/: finished runs of sysbench's tests that measure no database (cpu, memory,
    fileio, threads, mutex), which the log import refuses as exactly that."""
    tmp = Path(tempfile.mkdtemp(prefix="lb-imports-other-"))
    runs = {"cpu": ["cpu", "--time=1"], "memory": ["memory", "--time=1"], "threads": ["threads", "--time=1"],
            "mutex": ["mutex"],
            "fileio": ["fileio", "--file-total-size=8M", "--file-num=2", "--file-test-mode=rndrw", "--time=1"]}
    outputs = {}
    try:
        subprocess.run(["sysbench", *runs["fileio"][:3], "prepare"], cwd=tmp, capture_output=True, check=True)
        for name, args in runs.items():
            done = subprocess.run(["sysbench", *args, "run"], cwd=tmp, capture_output=True, text=True, check=True)
            outputs[f"logs/other-tests/sysbench-1.0.20-{name}.txt"] = done.stdout
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    save(outputs, [], tmp)


if __name__ == "__main__":
    import sys

    modes = {"logs": capture_logs, "p100": capture_p100, "other": capture_other_tests}
    modes.get(sys.argv[1] if sys.argv[1:] else "", main)()
