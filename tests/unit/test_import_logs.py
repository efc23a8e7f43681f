"""Importing raw sysbench output: a folder (variants as sub-folders), a glob, a mapping file; every refusal
names the file (and the line, for its content)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from layerbench.analysis.aggregate import analyze
from layerbench.errors import BadInput
from layerbench.imports import import_results
from layerbench.settings import Overrides
from layerbench.store import Store

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"
CAPTURED = LOGS / "captured-1.0.20"


def imported(tmp_path: Path, source: str, baseline: str = "unlimited") -> tuple[int, Store]:
    store = Store(tmp_path / "lb.db")
    return import_results(store, source, "logs", baseline, Overrides()), store


def test_a_folder_with_a_sub_folder_per_variant(tmp_path: Path) -> None:
    cid, store = imported(tmp_path, str(CAPTURED))
    with store:
        runs = store.runs(cid)
        analysis = analyze(store, cid)
        row = store.campaign(cid)
    assert sorted((r.variant, r.repetition) for r in runs) == sorted(
        (v, i) for v in ("rate40", "unlimited") for i in range(1, 5))
    assert {r.percentile for r in runs} == {95} and {r.threads for r in runs} == {2}
    assert all(len(r.intervals) == 3 for r in runs)
    assert row.source_path == str(CAPTURED.resolve()) and row.output_dir == str(CAPTURED.resolve())
    assert analysis.definition.imported_layouts == ("1.0",)
    assert analysis.metric_label("lat_pct_ms") == "p95 latency (ms)"


def test_a_glob_and_names_that_carry_variant_and_iteration(tmp_path: Path) -> None:
    flat = tmp_path / "flat"
    flat.mkdir()
    for variant in ("unlimited", "rate40"):
        for i in (1, 2):
            shutil.copy(CAPTURED / variant / f"run-{i}.txt", flat / f"{variant}-{i}.log")
    cid, store = imported(tmp_path, str(flat / "*.log"))
    with store:
        assert len(store.runs(cid)) == 4
    nested, store = imported(tmp_path, str(CAPTURED / "*" / "run-[12].txt"))
    with store:
        assert {r.variant for r in store.runs(nested)} == {"unlimited", "rate40"}


def test_a_mapping_file(tmp_path: Path) -> None:
    mapping = tmp_path / "runs.yaml"
    mapping.write_text(f"""runs:
  - {{file: {LOGS}/sysbench-0.5-oltp-intervals.txt, variant: old, iteration: 1}}
  - {{file: {LOGS}/sysbench-1.1-p99-err-no-colon.txt, variant: new, iteration: 1, threads: 4}}
""")
    cid, store = imported(tmp_path, str(mapping), baseline="old")
    with store:
        runs = store.runs(cid)
    assert [(r.variant, r.threads, r.percentile) for r in runs] == [("old", 4, 99), ("new", 4, 99)]


@pytest.mark.parametrize(("mapping", "expected"), [
    ("runs: []\n", "a mapping file is `runs:`"),
    ("runs:\n  - {file: a.txt, variant: x}\n", r"runs\[0\]: needs file, variant and iteration"),
    ("runs:\n  - {file: a.txt, variant: x, iteration: 1, colour: red}\n", r"runs\[0\].colour: unknown key"),
    ("runs:\n  - {file: a.txt, variant: x, iteration: 0}\n", r"runs\[0\].iteration: '0' must be a whole number"),
    ("runs:\n  - {file: nope.txt, variant: x, iteration: 1}\n", r"runs\[0\].file: 'nope.txt' does not exist"),
    ("runs:\n  - {file: a.txt, variant: x, iteration: 1, threads: 3}\n", "the mapping says 3 threads, the file says 2"),
    ("runs: [", "m.yaml: malformed YAML at line 1"),
])
def test_bad_mapping_files(tmp_path: Path, mapping: str, expected: str) -> None:
    shutil.copy(LOGS / "sysbench-1.0.20-p99.txt", tmp_path / "a.txt")
    (tmp_path / "m.yaml").write_text(mapping)
    with pytest.raises(BadInput, match=expected):
        imported(tmp_path, str(tmp_path / "m.yaml"), baseline="x")


def folder_of(folder: Path, files: dict[str, str]) -> Path:
    """`folder` holding copies of fixtures: {new name: fixture name}."""
    folder.mkdir()
    for name, fixture in files.items():
        shutil.copy(LOGS / fixture, folder / name)
    return folder


def test_percentiles_are_never_mixed(tmp_path: Path) -> None:
    folder = folder_of(tmp_path / "mixed", {"a-1.txt": "sysbench-1.0.20-p99.txt",
                                            "b-1.txt": "sysbench-1.0.20-p100.txt"})
    with pytest.raises(BadInput, match=r"reports the 100th latency percentile, .*a-1.txt the 99th; a comparison never"):
        imported(tmp_path, str(folder), baseline="a")


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("notes-1.txt", "my benchmark notes\n", r"notes-1.txt, line 1: not sysbench output"),
    ("a-1.txt", "\ufeffsysbench 1.0.20\n\nThreads started!\n", r"a-1.txt, line 1: sysbench output without"),
    ("README", "x\n", "README: cannot tell the variant and iteration from the name"),
])
def test_a_file_that_is_not_a_run_is_refused_by_name(tmp_path: Path, name: str, content: str, expected: str) -> None:
    folder = tmp_path / "logs"
    shutil.copytree(CAPTURED, folder)
    (folder / name).write_text(content)
    with pytest.raises(BadInput, match=expected):
        imported(tmp_path, str(folder))


def test_missing_sources_and_duplicates(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="no such file or folder"):
        imported(tmp_path, str(tmp_path / "none"))
    with pytest.raises(BadInput, match="matches no file"):
        imported(tmp_path, str(tmp_path / "*.log"))
    folder = folder_of(tmp_path / "dup", {"a-1.txt": "sysbench-1.0.20-p99.txt", "a_1.log": "sysbench-1.0.20-p99.txt"})
    with pytest.raises(BadInput, match=r"iteration 1 .* is also"):
        imported(tmp_path, str(folder), baseline="a")
    with pytest.raises(BadInput, match="--baseline: 'zzz' is not a variant"):
        imported(tmp_path, str(CAPTURED), baseline="zzz")
