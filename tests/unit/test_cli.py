"""The command line as a newcomer meets it: where the store is, what read-only commands never create, usage
errors with a usage line, --version, --debug anywhere, init, and what compare/report say about odd campaigns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import fill_store, synthetic_campaign
from layerbench.campaign.models import campaign_as_dict, parse_campaign
from layerbench.cli.main import main, without_debug
from layerbench.paths import store_path
from layerbench.records import CampaignRecord
from layerbench.run.schedule import build_schedule
from layerbench.store import Store


def cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    return int(done.value.code or 0), captured.out, captured.err


@pytest.fixture
def empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LAYERBENCH_DB", raising=False)
    return tmp_path


@pytest.mark.parametrize("args", [["report", "999"], ["show"], ["compare", "1", "2"], ["resume"],
                                  ["report", "latest", "-f", "md"]])
def test_read_only_commands_never_create_a_store(empty_folder: Path, args: list[str], capsys) -> None:
    code, _, err = cli(args, capsys)
    assert code == 2 and "no store at results/layerbench.db" in err
    assert not (empty_folder / "results").exists()


def test_list_says_where_the_store_is_even_when_there_is_none(empty_folder: Path, capsys) -> None:
    code, out, _ = cli(["list"], capsys)
    assert code == 0 and "store: results/layerbench.db (default)" in out and "no campaigns yet" in out
    assert not (empty_folder / "results").exists()


def test_layerbench_db_is_used_by_list_and_import(empty_folder: Path, monkeypatch, capsys) -> None:
    db = empty_folder / "elsewhere" / "mine.db"
    monkeypatch.setenv("LAYERBENCH_DB", str(db))
    csv = empty_folder / "paper.csv"
    csv.write_text("variant,iteration,tps\n" + "".join(f"{v},{i},{t}\n" for v, t in (("a", 100), ("b", 90))
                                                        for i in range(1, 4)))
    assert cli(["import", str(csv), "--name", "paper", "--baseline", "a"], capsys)[0] == 0
    code, out, _ = cli(["list"], capsys)
    assert code == 0 and f"store: {db} (LAYERBENCH_DB)" in out and "paper" in out
    assert db.is_file() and not (empty_folder / "results").exists()
    assert store_path(Path("x.db")) == Path("x.db")  # --db wins over the variable


def test_run_stores_in_layerbench_db_when_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LAYERBENCH_DB", str(tmp_path / "env.db"))
    assert store_path(None, "somewhere") == tmp_path / "env.db"
    monkeypatch.delenv("LAYERBENCH_DB")
    assert store_path(None, "somewhere") == Path("somewhere/layerbench.db")
    assert store_path() == Path("results/layerbench.db")


def test_run_without_a_file_explains_and_prints_the_usage(empty_folder: Path, capsys) -> None:
    code, _, err = cli(["run"], capsys)
    assert code == 2 and "Usage: layerbench run" in err and "layerbench init" in err and "make demo" in err
    assert not (empty_folder / "results").exists()


@pytest.mark.parametrize("args", [["list", "--bogus"], ["compare", "1"], ["init", "--study"]])
def test_usage_errors_print_the_usage_line(empty_folder: Path, args: list[str], capsys) -> None:
    code, _, err = cli(args, capsys)
    assert code == 2 and f"Usage: layerbench {args[0]}" in err and "Error:" in err


def test_debug_is_accepted_after_the_command(empty_folder: Path, capsys) -> None:
    code, out, _ = cli(["list", "--debug"], capsys)
    assert code == 0 and "store:" in out


@given(st.lists(st.sampled_from(["--debug", "--", "list", "-x", "a b", "--db", ""]), max_size=12))
def test_without_debug_removes_it_only_before_the_separator(args: list[str]) -> None:
    kept = without_debug(args)
    cut = args.index("--") if "--" in args else len(args)
    assert "--debug" not in kept[: kept.index("--") if "--" in kept else len(kept)]
    assert kept == [a for a in args[:cut] if a != "--debug"] + args[cut:]


def test_version_names_every_program_and_says_not_found(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "layerbench", "--version"], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("layerbench ")
    for name in ("sysbench", "server", "docker client", "kubectl client"):
        assert f"{name}: not found" in lines or any(line.startswith(f"{name}: /") for line in lines), lines


def test_version_reports_the_installed_sysbench(capsys) -> None:
    code, out, _ = cli(["--version"], capsys)
    assert code == 0 and "sysbench: sysbench 1." in out


def test_init_writes_a_study_where_asked(empty_folder: Path, capsys) -> None:
    target = empty_folder / "studies" / "qos.yaml"
    code, out, _ = cli(["init", "--study", "k8s-qos", "-o", str(target)], capsys)
    assert code == 0 and target.read_text().startswith("# Kubernetes QoS") and f"validate {target}" in out
    code, _, err = cli(["init", "--study", "k8s-qos", "-o", str(target)], capsys)
    assert code == 2 and "exists already" in err
    assert cli(["init", "--study", "k8s-qos", "-o", str(target), "--force"], capsys)[0] == 0


def test_init_list_lists_and_refuses_a_study(empty_folder: Path, capsys) -> None:
    code, out, _ = cli(["init", "--list"], capsys)
    assert code == 0 and "container-overhead: Container overhead" in out
    code, _, err = cli(["init", "--list", "--study", "nope"], capsys)
    assert code == 2 and "--list lists the studies" in err and not list(empty_folder.iterdir())


def test_compare_a_campaign_with_itself_is_refused(tmp_path: Path, capsys) -> None:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "docker": 0.9}, reps=3)
    code, _, err = cli(["compare", str(cid), "latest", "--db", str(db)], capsys)
    assert code == 2 and "are the same campaign" in err


def empty_campaign(db: Path) -> int:
    """A campaign interrupted before its first run ended: scheduled, nothing stored."""
    campaign = parse_campaign({**synthetic_campaign({"a": 1.0, "b": 1.0}, reps=1), "name": "never-ran"})
    with Store(db) as store:
        cid = store.create_campaign(CampaignRecord.from_json(campaign_as_dict(campaign)), str(db.parent))
        store.save_schedule(cid, [s.as_row() for s in build_schedule(campaign)])
        store.finish_campaign(cid, "interrupted")
    return cid


def test_report_of_a_campaign_with_no_run_says_so(tmp_path: Path, capsys) -> None:
    db = tmp_path / "lb.db"
    cid = empty_campaign(db)
    code, _, err = cli(["report", str(cid), "-f", "md", "-f", "html", "-o", str(tmp_path / "r"), "--db", str(db)],
                         capsys)
    assert code == 0 and "has no stored run" in err
    text = (tmp_path / "r" / "report.md").read_text()
    assert "No run is stored for this campaign (status interrupted, 0 of 2 planned runs)" in text
    assert "Only the baseline" not in text and "No run is stored" in (tmp_path / "r" / "report.html").read_text()
    assert cli(["compare", str(cid), str(fill_store(db, {"a": 1.0, "b": 1.0}, reps=3)), "--db", str(db)],
               capsys)[0] == 2


@pytest.mark.parametrize("source", ["no-such-folder", "bad.csv"])
def test_an_import_of_bad_input_leaves_no_store_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        source: str) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LAYERBENCH_DB", raising=False)
    (tmp_path / "bad.csv").write_text("variant,iteration,tps\nhost,1,\"1,5\"\n")
    with pytest.raises(SystemExit) as done:
        main(["import", source, "--name", "x", "--baseline", "host"])
    assert done.value.code == 2
    assert not (tmp_path / "results").exists()


def test_a_campaign_file_as_ref_finds_the_store_in_its_output(empty_folder: Path, capsys) -> None:
    """A campaign with its own `output:` is reported (and resumed) by naming its file, without --db."""
    import yaml

    out = empty_folder / "elsewhere"
    cid = fill_store(out / "layerbench.db", {"host": 1.0, "docker": 0.9}, reps=3)
    path = empty_folder / "c.yaml"
    path.write_text(yaml.safe_dump({**synthetic_campaign({"host": 1.0, "docker": 0.9}, reps=3), "output": str(out)}))
    code, _, err = cli(["report", str(path), "-f", "md", "-o", str(empty_folder / "r")], capsys)
    assert code == 0, err
    assert f"# layerbench report: golden (campaign {cid})" in (empty_folder / "r" / "report.md").read_text()
    code, _, err = cli(["report", str(cid), "-f", "md"], capsys)  # by id: the default store, which is not there
    assert code == 2 and "no store at results/layerbench.db" in err


def test_the_progress_bar_redraws_per_interval_without_a_refresh_thread() -> None:
    """Rich's own 10 Hz refresh thread cost ~1.5 % of a core on the measured cores (docs/fidelity.md): the bar is
    drawn when something changes, and each sysbench interval shows up at once."""
    import io
    import threading

    from rich.console import Console

    from layerbench.cli.progress import RichProgress
    from layerbench.run.schedule import RunSpec

    screen = io.StringIO()
    spec = RunSpec(0, 1, "base", "default", 2, 1)
    with RichProgress(Console(file=screen, force_terminal=True, width=100)) as progress:
        progress.campaign_started(1, 2, 0, 10.0)
        progress.run_started(spec, 1, 2)
        assert not [t for t in threading.enumerate() if type(t).__name__ == "_RefreshThread"]
        progress.interval(spec, 1234.0, 3.0)
        assert "1,234 TPS @ 3s" in screen.getvalue()
        progress.interval(spec, 987.0, 4.0)
        assert "987 TPS @ 4s" in screen.getvalue()
