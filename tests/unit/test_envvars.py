"""An empty setting is unset: every LAYERBENCH_* variable the code reads, set to "", behaves as if it were not
set (the shell's `${VAR:-default}`), and is read through the one helper (layerbench/envvars.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from layerbench import paths
from layerbench.cli.main import main
from layerbench.envvars import env_setting
from layerbench.hosts import workdirs

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "layerbench"
VARIABLES = ("LAYERBENCH_BUSY", "LAYERBENCH_CACHE_DIR", "LAYERBENCH_DATA_DIR", "LAYERBENCH_DATASET_DIR",
             "LAYERBENCH_DB", "LAYERBENCH_WAIT_FOR_QUIET", "LAYERBENCH_WORK_DIR")


def read_by_the_code() -> set[str]:
    """Every LAYERBENCH_* name in the source, docstrings included (a superset of what it reads)."""
    return {name for path in SRC.rglob("*.py") for name in re.findall(r"LAYERBENCH_[A-Z_]+", path.read_text())}


def test_the_list_is_every_variable_the_code_names() -> None:
    assert read_by_the_code() == set(VARIABLES)


def test_the_code_reads_them_only_through_the_helper() -> None:
    readers = [f"{path.relative_to(ROOT)}:{number}" for path in SRC.rglob("*.py")
               for number, line in enumerate(path.read_text().splitlines(), 1)
               if re.search(r"os\.environ|getenv", line) and ("LAYERBENCH_" in line or "DB_ENV" in line)]
    assert readers == []


def resolved() -> tuple[Path, Path | None, Path, Path, Path]:
    return (workdirs.cache_dir(), workdirs.data_dir(), workdirs.datasets_dir(), workdirs.work_root(),
            paths.store_path(None, "out"))


@pytest.mark.parametrize("name", VARIABLES)
def test_an_empty_variable_is_unset(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for other in VARIABLES:
        monkeypatch.delenv(other, raising=False)
    unset = resolved()
    monkeypatch.setenv(name, "")
    assert env_setting(name) is None
    assert resolved() == unset


def test_an_empty_cache_dir_is_the_default_cache_not_the_current_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reported bug: LAYERBENCH_CACHE_DIR= made datasets/ in the current folder and every run failed."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", "")
    assert workdirs.cache_dir() == Path(workdirs.DEFAULT_CACHE)
    assert workdirs.datasets_dir() == Path(workdirs.DEFAULT_CACHE) / "datasets"
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", "/srv/lb-cache")
    assert workdirs.datasets_dir() == Path("/srv/lb-cache/datasets")


def test_an_empty_layerbench_db_is_the_default_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LAYERBENCH_DB", "")
    with pytest.raises(SystemExit) as done:
        main(["list"])
    out = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0 and "results/layerbench.db (default)" in out, out
    assert list(tmp_path.iterdir()) == []  # and nothing was created


def test_scripts_treat_an_empty_variable_as_unset() -> None:
    """Every LAYERBENCH_* a script expands has a default for unset *and* empty: ${VAR:-default}."""
    scripts = [p for p in (ROOT / "scripts").iterdir() if p.is_file()] + [ROOT / "Makefile"]
    uses = [(script.name, use) for script in scripts
            for use in re.findall(r"\$\{?LAYERBENCH_[A-Z_]+[^}\s]{0,2}", script.read_text())]
    assert uses  # scripts/k8s-local reads LAYERBENCH_CACHE_DIR
    assert [(name, use) for name, use in uses if not re.match(r"\$\{LAYERBENCH_[A-Z_]+:-", use)] == []


def test_cache_list_with_an_empty_cache_dir_looks_in_the_default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command line: before, `cache list` looked in `datasets` of the current folder."""
    monkeypatch.chdir(tmp_path)
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", "")
    with pytest.raises(SystemExit) as done:
        main(["cache", "list"])
    assert done.value.code in (0, None)
    assert capsys.readouterr().out.split("\n", 1)[0].strip() == f"{workdirs.DEFAULT_CACHE}/datasets"
    assert list(tmp_path.iterdir()) == []
