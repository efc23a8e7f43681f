"""`--fail-on` (issue #43, item 4): its grammar, what each verdict counts as under each rule, and the exit statuses
of `report` and `compare` on real stored campaigns (no mocks of the analysis). docs/pipelines.md is the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import fill_store
from layerbench.analysis.gate import (
    DEFAULT_METRICS,
    INCONCLUSIVE,
    PASSED,
    REGRESSION,
    Case,
    Gate,
    Rule,
    judge,
    parse_gate,
)
from layerbench.analysis.stats import Comparison, DeltaCI, Verdict
from layerbench.cli.main import STATE, main
from layerbench.errors import EXIT_BAD_INPUT, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, BadInput


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(STATE, "debug", False)


def test_the_exit_statuses_are_distinct_and_documented() -> None:
    assert len({EXIT_OK, EXIT_REGRESSION, EXIT_INCONCLUSIVE, EXIT_BAD_INPUT, 1}) == 5
    text = (Path(__file__).resolve().parents[2] / "docs" / "pipelines.md").read_text(encoding="utf-8")
    for code, meaning in ((EXIT_OK, "no regression"), (EXIT_REGRESSION, "a regression"),
                          (EXIT_INCONCLUSIVE, "inconclusive"), (EXIT_BAD_INPUT, "bad input")):
        assert f"| {code} | {meaning}" in text


# --- the grammar ---------------------------------------------------------------------------------------------


def test_the_grammar() -> None:
    assert parse_gate(None, None) is None and parse_gate([], None) is None
    gate = parse_gate(["slower", "slower?:tps", "faster:lat_p99_ms,qps"], 5)
    assert gate == Gate((Rule("slower", DEFAULT_METRICS), Rule("slower?", ("tps",)),
                         Rule("faster", ("lat_p99_ms", "qps"))), 0.05)
    assert gate.text() == "--fail-on slower --fail-on slower?:tps --fail-on faster:lat_p99_ms,qps --min-effect 5"


@pytest.mark.parametrize(("specs", "min_effect", "said"), [
    (["worse"], None, "--fail-on: 'worse' does not start with a verdict; use one of slower, slower?, faster"),
    (["slower:tpss"], None, "--fail-on: 'tpss' in 'slower:tpss' is not a metric"),
    (["slower:"], None, "--fail-on: '' in 'slower:' is not a metric"),
    (["~"], None, "--fail-on: '~' does not start with a verdict"),
    ([], 5, "--min-effect: counts only with --fail-on"),
    (["slower"], -1, "--min-effect: -1 is not a percentage from 0 to 100"),
    (["slower\x1b[31m"], None, "--fail-on: 'slower\\x1b[31m' does not start")])
def test_bad_input_is_one_line(specs: list[str], min_effect: float | None, said: str) -> None:
    with pytest.raises(BadInput) as error:
        parse_gate(specs, min_effect)
    assert str(error.value).startswith(said) and "\n" not in str(error.value)


# --- what each verdict counts as ---------------------------------------------------------------------------


def case(kind: str, delta: float = -0.1, metric: str = "tps") -> Case:
    comparison = Comparison("v", DeltaCI(delta, delta - 0.01, delta + 0.01), 0.01, 0.01, Verdict(kind, "text"), 6, 6)
    return Case("v", "host", "oltp, 8 threads", metric, metric, comparison)


@pytest.mark.parametrize(("kind", "slower", "slower_q", "faster"), [
    ("slower", REGRESSION, REGRESSION, PASSED),
    ("slower?", INCONCLUSIVE, REGRESSION, PASSED),
    ("faster", PASSED, PASSED, REGRESSION),
    ("faster?", PASSED, PASSED, INCONCLUSIVE),
    ("within noise", PASSED, PASSED, PASSED),
    ("~", INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE),
    ("need more runs", INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE),
    ("not compared", INCONCLUSIVE, INCONCLUSIVE, INCONCLUSIVE)])
def test_each_verdict_under_each_rule(kind: str, slower: str, slower_q: str, faster: str) -> None:
    for word, expected in (("slower", slower), ("slower?", slower_q), ("faster", faster)):
        assert Gate((Rule(word),)).status(case(kind))[0] == expected, word


def test_min_effect_compares_the_estimate() -> None:
    gate = Gate((Rule("slower"),), 0.05)
    assert gate.status(case("slower", -0.06))[0] == REGRESSION
    assert gate.status(case("slower", 0.05))[0] == REGRESSION  # latency: slower is up
    assert gate.status(case("slower", -0.04)) == (PASSED, "no regression (smaller than --min-effect)")


def test_the_whole_is_the_worst_and_a_metric_out_of_scope_is_left_out() -> None:
    tps_only = Gate((Rule("slower", ("tps",)),))
    assert judge(tps_only, [case("~"), case("slower", metric="lat_pct_ms")]).status == INCONCLUSIVE
    assert judge(tps_only, [case("~"), case("slower")]).status == REGRESSION
    assert judge(tps_only, [case("within noise"), case("~", metric="lat_pct_ms")]).status == PASSED
    empty = judge(tps_only, [], "No run is stored")
    assert (empty.status, empty.exit_code, empty.empty_why) == (INCONCLUSIVE, EXIT_INCONCLUSIVE, "No run is stored")
    with pytest.raises(BadInput, match="no comparison of lat_p99_ms here; the comparisons are of tps"):
        judge(Gate((Rule("slower", ("lat_p99_ms",)),)), [case("slower")])


# --- compare and report on stored campaigns ------------------------------------------------------------------


def compared(tmp_path: Path, capsys, before: dict[str, float], after: dict[str, float], reps: int,
             *options: str) -> tuple[int, str, str]:
    """`compare A B --fail-on ...` on two stored campaigns of `reps` rounds: A's variants at `before`, B's at
    `after` (TPS about 500 x the factor)."""
    db = tmp_path / "lb.db"
    first, second = fill_store(db, before, reps=reps, seed=1), fill_store(db, after, reps=reps, seed=2)
    return cli(["compare", str(first), str(second), "--db", str(db), *options], capsys)


def test_compare_exits_with_the_regression_status_when_b_is_slower(tmp_path: Path, capsys) -> None:
    before, after = {"host": 1.0, "docker": 0.9}, {"host": 1.0, "docker": 0.8}
    code, out, err = compared(tmp_path, capsys, before, after, 6, "--fail-on", "slower")
    assert code == EXIT_REGRESSION == 3 and "| `docker` | default, 2 thr | tps |" in out
    assert err.startswith("--fail-on slower: regression (exit 3): 2 regression(s), 1 inconclusive")
    assert "  regression: `docker` vs `campaign 1`, default, 2 threads, tps: slower -10.68% [" in err
    assert compared(tmp_path / "plain", capsys, before, after, 6)[0] == EXIT_OK  # no --fail-on: 0 as before
    code, _, err = compared(tmp_path / "big", capsys, before, after, 6, "--fail-on", "slower:tps", "--min-effect", "15")
    assert code == EXIT_INCONCLUSIVE and "0 regression(s), 1 inconclusive, 1 passed" in err  # -10.7 % < 15 %


def test_compare_exits_with_the_no_regression_status_when_b_is_not_slower(tmp_path: Path, capsys) -> None:
    """One variant per campaign, B faster than A: every comparison decided, none slower. (With a second variant
    whose verdict is `~` the status would be inconclusive: the data could not rule a slowdown out.)"""
    code, _, err = compared(tmp_path, capsys, {"docker": 0.9}, {"docker": 1.0}, 6, "--fail-on", "slower")
    assert code == EXIT_OK and err.startswith("--fail-on slower: passed (exit 0): 0 regression(s), 0 inconclusive, "
                                              "2 passed of 2 comparison(s)")
    code, _, _ = compared(tmp_path / "up", capsys, {"docker": 0.9}, {"docker": 1.0}, 6, "--fail-on", "faster:tps")
    assert code == EXIT_REGRESSION  # the same pair, gated the other way


def test_compare_exits_with_the_inconclusive_status_when_it_cannot_tell(tmp_path: Path, capsys) -> None:
    """3 runs a side: no comparison can reach alpha (`need more runs`), whatever the data say."""
    before, after = {"host": 1.0, "docker": 0.9}, {"host": 1.0, "docker": 0.8}
    code, _, err = compared(tmp_path, capsys, before, after, 3, "--fail-on", "slower")
    assert code == EXIT_INCONCLUSIVE == 4 and "0 regression(s), 4 inconclusive, 0 passed" in err
    assert "  inconclusive: `docker` vs `campaign 1`, default, 2 threads, tps: need more runs need >= 4" in err


def test_compare_with_a_bad_fail_on_is_bad_input_before_any_work(tmp_path: Path, capsys) -> None:
    code, out, err = cli(["compare", "1", "2", "--db", str(tmp_path / "none.db"), "--fail-on", "worse"], capsys)
    assert code == EXIT_BAD_INPUT and out == "" and "--fail-on: 'worse' does not start with a verdict" in err


def test_report_exits_with_the_gates_status(tmp_path: Path, capsys) -> None:
    """vm 20 % below host, 6 rounds paired: TPS `slower`, so is its p95 latency (up 25 %)."""
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.8}, reps=6)
    base = ["report", str(cid), "-f", "md", "-o", str(tmp_path / "r"), "--db", str(db)]
    assert cli(base, capsys)[0] == EXIT_OK
    code, out, err = cli([*base, "--fail-on", "slower"], capsys)
    assert code == EXIT_REGRESSION and "report: " in out and "2 regression(s)" in err
    assert cli([*base, "--fail-on", "slower:tps", "--min-effect", "30"], capsys)[0] == EXIT_OK
    assert cli([*base, "--fail-on", "faster"], capsys)[0] == EXIT_OK
    code, _, err = cli([*base, "--fail-on", "slower:lat_p99_ms"], capsys)
    assert code == EXIT_BAD_INPUT and "no comparison of lat_p99_ms here" in err


def test_report_of_a_campaign_with_no_run_is_inconclusive(tmp_path: Path, capsys) -> None:
    from test_cli import empty_campaign

    db = tmp_path / "lb.db"
    cid = empty_campaign(db)
    code, _, err = cli(["report", str(cid), "-f", "junit", "-o", str(tmp_path / "r"), "--db", str(db), "--fail-on",
                        "slower"], capsys)
    assert code == EXIT_INCONCLUSIVE and "inconclusive (exit 4): No run is stored for this campaign" in err
    assert '<skipped message="No run is stored for this campaign' in (tmp_path / "r" / "report.junit.xml").read_text()
