"""Real campaigns on the host: real mariadbd, real sysbench, real SQLite; nothing mocked."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from helpers import stored_rows
from layerbench.campaign.models import parse_campaign
from layerbench.cli.main import main
from layerbench.errors import BadInput
from layerbench.run import execution, orchestrator
from layerbench.secrets import Secret
from layerbench.store import Store

pytestmark = pytest.mark.integration


def campaign_file(tmp_path: Path, **changes) -> Path:
    data = {
        "name": "it-host",
        "baseline": "base",
        "variants": [
            {"name": "base", "backend": "host", "cpus": "0", "client_cpus": "1"},
            {"name": "tiny-bp", "extends": "base", "server": {"config": {"innodb_buffer_pool_size": "6M"}}},
        ],
        "workload": {"tables": 2, "table_size": 2000, "threads": 2, "duration": 3, "warmup": 1},
        "repetitions": 2,
        "output": str(tmp_path / "out"),
        "busy": "keep",  # these tests count their runs; busy runs replaced by reruns: test_busy_rerun.py
    }
    data.update(changes)
    if isinstance(data["repetitions"], int) and data["repetitions"] < 3:  # a tiny plan: estimates, not verdicts
        data.setdefault("estimates_only", True)  # (run/answerable.py refuses fewer than 3 rounds otherwise)
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def our_servers(marker: Path) -> list[str]:
    """Command lines of live mariadbd processes started for this test (their my.cnf is under marker)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if "mariadbd" in cmd and str(marker) in cmd:
                found.append(cmd)
    return found


def all_cmdlines() -> str:
    parts = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                parts.append((proc / "cmdline").read_bytes().decode(errors="replace"))
    return "\n".join(parts)


class SpyProgress(orchestrator.SilentProgress):
    """Looks at every process's command line during each run, for the run's password."""

    def __init__(self, passwords: list[Secret]) -> None:
        self.passwords = passwords
        self.seen_in_ps: list[str] = []
        self.intervals = 0

    def interval(self, spec, tps: float, elapsed: float) -> None:
        self.intervals += 1
        text = all_cmdlines()
        self.seen_in_ps += [p.reveal() for p in self.passwords if p.reveal() in text]


def test_two_variant_campaign_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    passwords: list[Secret] = []
    real = execution.generate_password

    def recording() -> Secret:
        secret = real()
        passwords.append(secret)
        return secret

    monkeypatch.setattr(execution, "generate_password", recording)
    # tiny-bp re-prepares alone (its own reset:, through extends:); base still restores the snapshot
    path = campaign_file(tmp_path, variants=[
        {"name": "base", "backend": "host", "cpus": "0", "client_cpus": "1"},
        {"name": "tiny-bp", "extends": "base", "reset": "reprepare",
         "server": {"config": {"innodb_buffer_pool_size": "6M"}}}])
    campaign = parse_campaign(yaml.safe_load(path.read_text()))
    spy = SpyProgress(passwords)
    db = tmp_path / "out" / "layerbench.db"
    with Store(db) as store:
        outcome = orchestrator.run_campaign(campaign, store, progress=spy, source_path=str(path))
    assert (outcome.ok, outcome.failed) == (4, 0)
    assert spy.intervals >= 8 and spy.seen_in_ps == []

    with pytest.raises(SystemExit) as done:
        main(["report", str(outcome.campaign_id), "--db", str(db)])
    assert done.value.code == 0
    report = (outcome.output_dir / "report.md").read_text()
    assert "`tiny-bp` vs `base`" in report and report.count("| ok |") == 4
    assert "| `tiny-bp` | reprepare (variants.tiny-bp.reset) x2 |" in report
    reset_line = next(x for x in report.splitlines() if "in how each run's data was reset" in x)  # #33
    assert reset_line.startswith("- `tiny-bp` differs from `base` in how each run's data was reset: reprepare (")
    assert "asked by the campaign" in reset_line
    assert next(x for x in report.splitlines() if x.startswith("- Time: estimated ")).count(", took ") == 1
    with Store(db) as store:
        resets = {(r.variant, r.facts.reset.method, r.facts.reset.document["reset_from"])
                  for r in store.runs(outcome.campaign_id) if r.facts.reset}
    assert resets == {("base", "snapshot", "workloads.default.reset"),
                      ("tiny-bp", "reprepare", "variants.tiny-bp.reset")}

    rows = sqlite3.connect(db).execute(
        "SELECT variant, status, tps, queries, lat_pct_ms, (SELECT COUNT(*) FROM intervals i WHERE i.run_id=r.id)"
        " FROM runs r").fetchall()
    assert sorted(r[0] for r in rows) == ["base", "base", "tiny-bp", "tiny-bp"]
    for variant, status, tps, queries, lat, n_intervals in rows:
        assert status == "ok" and tps > 10 and queries > tps and lat > 0 and n_intervals >= 3, variant
    assert our_servers(tmp_path) == []
    assert not any((Path(os.environ["LAYERBENCH_WORK_DIR"]) / "work" / "datadirs").glob("lb*"))

    assert len(passwords) == 4
    for file in (tmp_path / "out").rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            for secret in passwords:
                assert secret.reveal().encode() not in data, f"password found in {file}"


def test_server_that_does_not_come_up_fails_the_run_cleanly(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=1, variants=[
        {"name": "base", "backend": "host"},
        # a real option with a value the server refuses only when it starts (an unknown option name is refused by
        # validate/run's preflight already)
        {"name": "broken", "backend": "host", "server": {"config": {"character_set_server": "no_such_charset"}}},
    ])
    with pytest.raises(SystemExit) as done:
        main(["run", str(path)])
    assert done.value.code == 1
    with Store(tmp_path / "out" / "layerbench.db") as store:
        runs = {r["variant"]: r for r in stored_rows(store, 1)}
    assert runs["base"]["status"] == "ok"
    assert runs["broken"]["status"] == "failed"
    assert "server exited during start-up" in runs["broken"]["error"]
    assert our_servers(tmp_path) == []


def run_cli(args: list[str], env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "layerbench", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"baseline": "ghost"}, "baseline 'ghost' names no variant"),
        ({"workload": {"threads": 0}}, "threads must be whole numbers from 1 to"),
        ({"variants": [{"name": "base", "backend": "host", "server": {"config": {"no_such_option": 1}}}]},
         "variants.base.server.config.no_such_option: the server (mariadbd) has no such option"),
        ({"variants": [{"name": "base", "backend": "host", "cpus": "63"}]}, "CPU 63 does not exist"),
        ({"workload": {"test": "oltp_nonsense"}}, "is not a sysbench test"),
        ({"variants": [{"name": "base", "backend": "host", "server": {"config": {"port": 1}}}]}, "set by layerbench"),
        ({"variants": [{"name": "base", "backend": "external", "password_env": "LB_NOT_SET"}],
          "workload": {"tables": 1, "reset": "none"}}, "LB_NOT_SET is not set"),
        ({"variants": [{"name": "base", "backend": "external", "password_env": "LB_NOT_SET"}]},
         "workloads.default.reset: 'snapshot' cannot be restored into variant 'base'"),
        ({"variants": [{"name": "base", "backend": "docker", "resources": {"memory": "64m"},
                        "server": {"config": {"innodb_buffer_pool_size": "128M"}}}]},
         "variants.base.resources.memory: 64m is below the buffer pool this variant asks for"),
        ({"variants": [{"name": "base", "backend": "docker", "client": "container"}],
          "workload": {"test": "/usr/share/sysbench/oltp_read_only.lua"}},
         "variants.base.client: container runs sysbench where workloads.default.test"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, changes: dict, expected: str) -> None:
    done = run_cli(["run", str(campaign_file(tmp_path, **changes))])
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in done.stderr
    assert our_servers(tmp_path) == []


def test_missing_sysbench_is_bad_input(tmp_path: Path) -> None:
    done = run_cli(["run", str(campaign_file(tmp_path))], env={"PATH": str(tmp_path)})
    assert done.returncode == 2 and "sysbench not found" in done.stderr


def test_malformed_yaml_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: [unclosed\n")
    done = run_cli(["run", str(path)])
    assert done.returncode == 2 and "malformed YAML" in done.stderr


def test_ctrl_c_keeps_stored_runs_then_resume_completes(tmp_path: Path) -> None:
    path = campaign_file(tmp_path, repetitions=2,
                         workload={"tables": 1, "table_size": 1000, "threads": 1, "duration": 4, "warmup": 0})
    db = tmp_path / "out" / "layerbench.db"
    proc = subprocess.Popen([sys.executable, "-m", "layerbench", "run", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with contextlib.suppress(sqlite3.OperationalError):  # the store may be being created
            if db.exists() and sqlite3.connect(db).execute("SELECT COUNT(*) FROM runs").fetchone()[0] >= 1:
                break
        time.sleep(0.3)
    time.sleep(1.5)  # inside the second run
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "layerbench resume" in err
    stored = sqlite3.connect(db).execute("SELECT COUNT(*), MIN(status) FROM runs").fetchone()
    assert 1 <= stored[0] < 4 and stored[1] == "ok"
    assert sqlite3.connect(db).execute("SELECT status FROM campaigns").fetchone()[0] == "interrupted"
    assert our_servers(tmp_path) == []

    done = run_cli(["resume", "latest", "--db", str(db)])
    assert done.returncode == 0, done.stderr
    rows = sqlite3.connect(db).execute("SELECT idx FROM runs ORDER BY idx").fetchall()
    assert [r[0] for r in rows] == [0, 1, 2, 3]
    assert our_servers(tmp_path) == []


def test_external_backend_against_a_server_we_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from layerbench.backends.base import ServerSpec
    from layerbench.backends.host.local import HostBackend
    from layerbench.backends.host.variant import HostVariant
    from layerbench.secrets import generate_password

    (tmp_path / "run").mkdir()
    (tmp_path / "priv").mkdir(mode=0o700)
    password = generate_password()
    variant = HostVariant(name="x", backend="host")
    host = HostBackend(variant)
    spec = ServerSpec("ext", "lb-ext-test", tmp_path / "run",
                      tmp_path / "priv", tmp_path / "work", password=password, user="sbtest")
    endpoint = host.up(spec)
    try:
        monkeypatch.setenv("LB_EXT_PW", password.reveal())
        ext = [{"name": "ext", "backend": "external", "port": endpoint.port, "user": "sbtest",
                "password_env": "LB_EXT_PW"}]
        small = {"tables": 1, "table_size": 500, "threads": 1, "duration": 2, "warmup": 0}
        # reprepare twice on a server that keeps its tables: cleanup + prepare each time, as studies do
        runs = run_external(tmp_path, ext, {**small, "reset": "reprepare"}, repetitions=2)
        assert [(r["status"], r["reset"]["method"]) for r in runs] == [("ok", "reprepare")] * 2
        # reset none: the tables the server holds are used as they are, and recorded
        runs = run_external(tmp_path, ext, {**small, "reset": "none"}, repetitions=1)
        assert runs[0]["status"] == "ok" and runs[0]["reset"]["method"] == "none"
        assert set(runs[0]["reset"]["tables"]) == {"sbtest1"}
        # ... and a workload asking for tables the server does not hold fails with the fix
        runs = run_external(tmp_path, ext, {**small, "tables": 3, "reset": "none"}, repetitions=1, code=1)
        assert runs[0]["status"] == "failed" and "holds 1 of the workload's 3 tables" in runs[0]["error"]
        for file in (tmp_path / "out").rglob("*"):
            if file.is_file():
                assert password.reveal().encode() not in file.read_bytes(), file
    finally:
        host.down()


def run_external(tmp_path: Path, variants: list[dict], workload: dict, repetitions: int, code: int = 0) -> list[dict]:
    path = campaign_file(tmp_path, repetitions=repetitions, baseline="ext", variants=variants, workload=workload)
    with pytest.raises(SystemExit) as done:
        main(["run", str(path), "--db", str(tmp_path / "ext.db")])
    assert done.value.code == code
    with Store(tmp_path / "ext.db") as store:
        latest = store.campaign("latest")
        return [{"status": r["status"], "error": r["error"], "reset": json.loads(r["details"]).get("reset") or {}}
                for r in stored_rows(store, latest.id)]


def test_unknown_campaign_reference(tmp_path: Path) -> None:
    with Store(tmp_path / "x.db") as store, pytest.raises(BadInput, match="not in"):
        store.campaign("nope")


def test_a_private_folder_too_deep_for_a_socket_still_starts_and_leaves_nothing(tmp_path: Path) -> None:
    """A socket path longer than sun_path's 107 bytes stops mariadbd at start: the backend puts the socket in a
    short folder of its own (CI's pytest folders crossed the limit at pytest-290) and removes it at down()."""
    from layerbench.backends.base import ServerSpec
    from layerbench.backends.host.local import HostBackend
    from layerbench.backends.host.variant import HostVariant
    from layerbench.secrets import generate_password
    from layerbench.server.private import SOCKET_PATH_MAX

    deep = tmp_path / ("d" * 60) / ("e" * 60)
    (deep / "run").mkdir(parents=True)
    (deep / "priv").mkdir(mode=0o700)
    assert len(str(deep / "priv" / "mysqld.sock")) > SOCKET_PATH_MAX
    host = HostBackend(HostVariant(name="x", backend="host"))
    spec = ServerSpec("deep", "lb-deep-test", deep / "run", deep / "priv", deep / "work",
                      password=generate_password())
    try:
        endpoint = host.up(spec)
        assert endpoint.socket is not None and len(endpoint.socket) <= SOCKET_PATH_MAX
        assert Path(endpoint.socket).is_socket()
        socket_dir = Path(endpoint.socket).parent
    finally:
        host.down()
    assert not socket_dir.exists()
