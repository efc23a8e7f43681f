"""Re-capture the real sysbench outputs under tests/data (run as root on a machine with mariadbd + sysbench).

    PYTHONPATH=src python tests/data/capture_samples.py
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import threading
from pathlib import Path

from layerbench.backends.base import ServerSpec
from layerbench.backends.host import HostBackend
from layerbench.campaign import HostVariant, Workload
from layerbench.secrets import generate_password, redact, write_private
from layerbench.server.datadir import connect
from layerbench.sysbench import config_file_text, hook_script

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


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="lb-capture-"))
    (tmp / "run").mkdir()
    (tmp / "priv").mkdir(mode=0o700)
    password = generate_password()
    spec = ServerSpec("capture", "lb-capture", HostVariant(name="h", backend="host"), tmp / "run",
                      tmp / "priv", tmp / "work", password=password)
    backend = HostBackend()
    endpoint = backend.up(spec)
    cfg = write_private(tmp / "priv" / "sb.cfg", config_file_text(endpoint))
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


if __name__ == "__main__":
    main()
