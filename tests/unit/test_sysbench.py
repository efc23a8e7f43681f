from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layerbench.backends.base import Endpoint
from layerbench.campaign.workload import Workload
from layerbench.secrets import Secret
from layerbench.sysbench.command import config_file_text, hook_script, lua_string, prepare_argv, run_argv
from layerbench.sysbench.output import parse_human, parse_output

DATA = Path(__file__).resolve().parents[1] / "data"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_hook_output_gives_intervals_and_the_final_total() -> None:
    parsed = parse_output(read("run_hook.txt"))
    assert len(parsed.intervals) == 7
    t = parsed.totals
    assert t is not None
    # the checkpoint at 2 s printed a first total; the last one covers the 5 s after it
    assert 4.9 < t.duration < 5.1
    assert t.queries == t.reads + t.writes + t.other
    assert abs(t.tps - t.transactions / t.duration) < 1e-6
    assert t.latency_min_ms <= t.latency_avg_ms <= t.latency_max_ms
    assert parsed.intervals[0].tps > 100


def test_human_1_0_layout() -> None:
    parsed = parse_output(read("run_1.0_normal.txt"))
    t = parsed.totals
    assert t is not None and len(parsed.intervals) == 5
    assert t.transactions > 0 and t.queries == t.reads + t.writes + t.other
    assert t.latency_pct_ms is not None and t.latency_avg_ms is not None
    assert abs(parsed.intervals[0].qps - (parsed.intervals[0].reads_ps + parsed.intervals[0].writes_ps
                                          + parsed.intervals[0].other_ps)) < 1.0


def test_errors_are_counted() -> None:
    t = parse_output(read("run_1.0_errors.txt")).totals
    assert t is not None and t.errors == 328


def test_1_1_layout_with_reconnects() -> None:
    parsed = parse_output(read("run_1.1_layout_reconnects.txt"))
    t = parsed.totals
    assert t is not None
    assert (t.transactions, t.queries, t.reconnects, t.errors) == (2426, 48520, 3, 1)
    # tps: transactions / total time, as the importer reads every log (one parser); sysbench printed 808.19
    assert t.duration == 3.0018 and t.tps == pytest.approx(808.19, abs=0.01) and t.latency_pct_ms == 6.79
    assert [i.reconnects_ps for i in parsed.intervals] == [0.0, 2.0, 1.0]


def test_connection_failure_has_no_totals_and_names_the_cause() -> None:
    parsed = parse_output(read("run_connection_failure.txt"))
    assert parsed.totals is None and parsed.intervals == []
    assert parsed.errors[0].startswith("FATAL: unable to connect")


def test_killed_run_has_no_totals() -> None:
    parsed = parse_output(read("run_1.0_killed_connections.txt"))
    assert parsed.totals is None and len(parsed.intervals) == 1


@given(st.text(max_size=2000))
def test_parser_never_raises_on_garbage(text: str) -> None:
    parse_output(text)
    parse_human(text)


@given(st.lists(st.sampled_from(read("run_hook.txt").splitlines()), max_size=40))
def test_parser_survives_shuffled_real_lines(lines: list[str]) -> None:
    parse_output("\n".join(lines))


def test_credentials_only_in_config_file(tmp_path: Path) -> None:
    endpoint = Endpoint("127.0.0.1", 3307, "u", Secret("s3cret-pw"), "db")
    text = config_file_text(endpoint)
    assert "mysql-password=s3cret-pw" in text
    w = Workload(tables=3, table_size=100, warmup=2, options={"skip_trx": True})
    for cmd in (prepare_argv(w, tmp_path / "c", 2), run_argv(w, tmp_path / "c", tmp_path / "h.lua", 4)):
        assert not any("s3cret" in part for part in cmd)
    run = run_argv(w, tmp_path / "c", tmp_path / "h.lua", 4)
    assert "--report-checkpoints=2" in run and "--time=12" in run and "--skip-trx=on" in run and run[-1] == "run"


def test_records_of_two_threads_on_one_line() -> None:
    """A real log where the reporting thread's last interval and the main thread's total share a line."""
    text = read("run_hook_interleaved_threads.txt")
    assert any(line.count("LAYERBENCH") == 2 for line in text.splitlines())
    parsed = parse_output(text)
    assert len(parsed.intervals) == 4
    assert parsed.totals is not None and parsed.totals.transactions == 524
    assert parsed.totals.latency_min_ms is not None  # from the machine record, not the rounded human text


def test_totals_fall_back_to_the_human_summary() -> None:
    text = "\n".join(line for line in read("run_hook.txt").splitlines() if '"kind":"total"' not in line)
    parsed = parse_output(text)
    assert parsed.totals is not None and parsed.totals.transactions > 0 and len(parsed.intervals) == 7


PATH_TEXT = st.text(st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.lists(PATH_TEXT | st.sampled_from(['"); os.exit(1) --', "]]", "a]=", "]==]]=]", "\\", "%q"]),
                min_size=1, max_size=30))
def test_lua_strings_embed_any_path_as_it_is(tmp_path_factory, texts: list[str]) -> None:
    """Real LuaJIT (sysbench's) reads every literal back as the exact text: a path can never end the string
    early and run code of its own."""
    script = tmp_path_factory.mktemp("lua") / "echo.lua"
    script.write_text("".join(f'io.write({lua_string(t)}, "\\0")\n' for t in texts), encoding="utf-8")
    done = subprocess.run(["sysbench", str(script)], capture_output=True, check=False)
    printed = done.stdout.decode("utf-8").split("\n", 2)[-1]  # after sysbench's banner and blank line
    assert printed.split("\0")[:-1] == texts


def test_the_hook_quotes_the_users_script_path(tmp_path: Path) -> None:
    odd = tmp_path / 'my "test"]].lua'
    text = hook_script(Workload(test=str(odd)))
    assert f"dofile([==[{odd}]==])" in text or f"dofile([=[{odd}]=])" in text
