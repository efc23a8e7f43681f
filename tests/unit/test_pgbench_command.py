"""pgbench's command lines and passfile (pgbench/command.py), its dataset's key and rows (server/snapshot.py,
pgbench/dataset.py), and one run's record from real pgbench output (run/pgbench_run.py): no password on a command
line, the warm-up's intervals before the measured window's, a failed pgbench as its own one line."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from layerbench.campaign.workload import Workload
from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.hosts.procs import Completed
from layerbench.pgbench.command import BIN, init_argv, passfile_text, run_argv
from layerbench.pgbench.dataset import expected_rows, initialize
from layerbench.records import RunRecord
from layerbench.run.pgbench_run import PgbenchRun, record_pgbench
from layerbench.secrets import Secret
from layerbench.server.snapshot import dataset_key

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs" / "pgbench-15.18"
PASSWORD = "s3cr:et\\pw"
ENDPOINT = Endpoint("127.0.0.1", 5544, "layerbench", Secret(PASSWORD), "sbtest", driver="pgsql")


def workload(**keys: object) -> Workload:
    return Workload.model_validate({"tool": "pgbench", "threads": 2, "duration": 3, "warmup": 2, **keys})


def test_the_password_is_in_the_passfile_only_escaped_as_libpq_reads_it(tmp_path: Path) -> None:
    assert passfile_text(ENDPOINT) == "127.0.0.1:5544:sbtest:layerbench:s3cr\\:et\\\\pw\n"
    for cmd in (init_argv(workload(scale=3), ENDPOINT, tmp_path / "pgpass"),
                run_argv(workload(), ENDPOINT, tmp_path / "pgpass", 2, 3, tmp_path / "m", per_statement=True)):
        assert cmd[:2] == ["env", f"PGPASSFILE={tmp_path / 'pgpass'}"] and str(BIN) in cmd
        assert not any(PASSWORD in arg or "s3cr" in arg for arg in cmd)
        assert "--host=127.0.0.1" in cmd and "--port=5544" in cmd and cmd[-1] == "sbtest"
    assert "--scale=3" in init_argv(workload(scale=3), ENDPOINT, tmp_path / "p")


def test_the_measured_run_reports_progress_and_statements_and_never_vacuums(tmp_path: Path) -> None:
    cmd = run_argv(workload(test="select-only", report_interval=2), ENDPOINT, tmp_path / "p", 4, 9, tmp_path / "m",
                   per_statement=True)
    assert {"--no-vacuum", "--client=4", "--jobs=4", "--time=9", "--progress=2", "--builtin=select-only",
            "--report-per-command", f"--define=lb_run={tmp_path / 'm'}"} <= set(cmd)
    warm = run_argv(workload(), ENDPOINT, tmp_path / "p", 4, 2, tmp_path / "m", per_statement=False)
    assert "--report-per-command" not in warm and "--time=2" in warm


def test_a_dataset_is_keyed_by_its_scale_and_server_and_holds_pgbench_rows() -> None:
    one, inputs = dataset_key(workload(scale=1), "postgres (PostgreSQL) 15.18", None)
    assert one.startswith("pgbench-s1-") and inputs["scale"] == 1 and inputs["tool"] == "pgbench"
    assert dataset_key(workload(scale=2), "postgres (PostgreSQL) 15.18", None)[0] != one
    assert dataset_key(workload(scale=1), "postgres (PostgreSQL) 15.19", None)[0] != one
    assert dataset_key(workload(scale=1, test="select-only"), "postgres (PostgreSQL) 15.18", None)[0] == one
    assert expected_rows(workload(scale=4)) == {"pgbench_accounts": 400_000, "pgbench_branches": 4,
                                                "pgbench_history": 0, "pgbench_tellers": 40}


class FakeClient:
    """A client runner that hands back saved pgbench output and keeps what it was given."""

    where = "this host"

    def __init__(self, *outputs: Completed) -> None:
        self.outputs, self.calls = list(outputs), []

    def run_client(self, cmd, files, *, log_path, timeout, on_line=None, secrets=None):  # type: ignore[no-untyped-def]
        self.calls.append((cmd, files, log_path))
        done = self.outputs.pop(0)
        for line in done.output.splitlines():
            if on_line is not None:
                on_line(line)
        return done


def test_the_passfile_is_private_and_prepare_failure_is_one_line(tmp_path: Path) -> None:
    client = FakeClient(Completed(1, "pgbench: error: connection to server failed\nmore\n"))
    with pytest.raises(RunFailed, match=r"^pgbench -i failed \(exit 1\): pgbench: error: connection to server failed$"):
        initialize(workload(), ENDPOINT, tmp_path, tmp_path, client)
    assert stat.S_IMODE((tmp_path / "pgpass").stat().st_mode) == 0o600


def a_run(tmp_path: Path, client: FakeClient, warmup: int = 2) -> PgbenchRun:
    seen: list[tuple[float, float]] = []
    run = PgbenchRun(workload(warmup=warmup), ENDPOINT, client, tmp_path, tmp_path, 2, lambda: None,
                     lambda tps, at: seen.append((tps, at)))
    run.seen = seen  # type: ignore[attr-defined]
    run.client_started = lambda: seen.append((-1.0, -1.0))  # each pgbench's banner: the sampler looks it up
    return run


def test_a_run_stores_the_warm_up_then_the_measured_window_from_real_output(tmp_path: Path) -> None:
    text = (LOGS / "tpcb-like-c2.log").read_text()
    kept = ("pgbench (", "progress: 1.0", "progress: 2.0")
    warm = "\n".join(line for line in text.splitlines() if line.startswith(kept))
    client = FakeClient(Completed(0, warm), Completed(0, text))
    run = a_run(tmp_path, client)
    done = run()
    record = RunRecord(1, "pg", "default", 2, 1, percentile=95)
    record_pgbench(record, run, done)
    assert [i.time for i in record.intervals] == [1.0, 2.0, 3.0, 4.0, 5.0]  # the measured ones after the warm-up
    assert record.totals is not None and record.totals.transactions == 4354 and record.percentile is None
    assert record.facts.other["warmup_intervals"] == 2
    assert record.facts.other["pgbench"]["version"] == "15.18 (Debian 15.18-0+deb12u1)"
    assert record.facts.other["pgbench"]["statements"][5]["latency_ms"] == 0.159
    assert run.seen == [(-1.0, -1.0), (1447.8, 1.0), (1299.0, 2.0),  # type: ignore[attr-defined]
                        (-1.0, -1.0), (1447.8, 3.0), (1299.0, 4.0), (1602.4, 5.0)]
    assert [c[2].name for c in client.calls] == ["pgbench-warmup.log", "pgbench.log"]
    assert all(list(c[1]) == ["pgpass"] for c in client.calls)


def test_an_aborted_or_failed_pgbench_fails_the_run_with_its_own_line(tmp_path: Path) -> None:
    aborted = (LOGS / "aborted.log").read_text()
    run = a_run(tmp_path, FakeClient(Completed(2, aborted)), warmup=0)
    record = RunRecord(1, "pg", "default", 2, 1)
    with pytest.raises(RunFailed, match=r"^pgbench: error: client 0 aborted in command 6 \(SQL\) of script 0"):
        record_pgbench(record, run, run())
    assert record.totals is None and len(record.intervals) == 1
    refused = (LOGS / "refused.log").read_text()
    run = a_run(tmp_path, FakeClient(Completed(1, refused)))
    with pytest.raises(RunFailed, match=r"^pgbench: error: connection to server .* \(during the warm-up\)$"):
        record_pgbench(RunRecord(1, "pg", "default", 2, 1), run, run())
    run = a_run(tmp_path, FakeClient(Completed(-9, "")), warmup=0)
    with pytest.raises(RunFailed, match=r"^pgbench was killed by signal 9$"):
        record_pgbench(RunRecord(1, "pg", "default", 2, 1), run, run())



def test_the_measured_run_reads_its_percentile_from_pgbench_s_own_per_transaction_log(tmp_path: Path) -> None:
    """LATENCY_SCRIPT around a stand-in pgbench that writes a per-transaction log as pgbench -l does (two threads'
    files, latency in microseconds in the third field): the nearest-rank percentile, min and max, pgbench's own
    exit status, and no folder left."""
    import subprocess

    from layerbench.pgbench.command import with_latency_log
    from layerbench.pgbench.output import ParsedPgbench, with_latency
    from layerbench.records.totals import Totals

    fake = tmp_path / "pgbench"
    fake.write_text("""#!/bin/sh
for a in "$@"; do case "$a" in --log-prefix=*) prefix=${a#--log-prefix=};; esac; done
echo "tps = 10.0 (without initial connection time)"
i=1; while [ $i -le 60 ]; do echo "0 $i $((i * 1000)) 0 1700000000 0"; i=$((i + 1)); done > "$prefix.123"
i=61; while [ $i -le 100 ]; do echo "1 $i $((i * 1000)) 0 1700000000 0"; i=$((i + 1)); done > "$prefix.123.1"
echo "$prefix" > "$(dirname "$0")/prefix"
exit 3
""")
    fake.chmod(0o755)
    done = subprocess.run(with_latency_log(95, [str(fake), "sbtest"]), capture_output=True, text=True, timeout=30)
    assert done.returncode == 3, done.stderr  # pgbench's status
    assert done.stdout.splitlines()[-1] == ("layerbench latency: p95 95.000 ms min 1.000 ms max 100.000 ms of 100 "
                                            "transactions")
    assert not Path((tmp_path / "prefix").read_text().strip()).parent.exists()  # its folder is gone
    totals = Totals(duration=1.0, transactions=100, queries=100, reads=100, writes=0, other=0, tps=100.0, qps=100.0,
                    errors=0, reconnects=0, events=100)
    parsed = with_latency(ParsedPgbench(totals=totals), done.stdout)
    assert parsed.percentile == 95 and parsed.totals is not None
    assert (parsed.totals.latency_pct_ms, parsed.totals.latency_min_ms, parsed.totals.latency_max_ms) == (95, 1, 100)
    odd = subprocess.run(with_latency_log(99.9, [str(fake)]), capture_output=True, text=True, timeout=30)
    assert "p99.9 100.000 ms" in odd.stdout.splitlines()[-1]  # rank ceil(99.9) = 100
