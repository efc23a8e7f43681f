"""server/remote_manifest.py: the manifest a host makes of the snapshot its own server prepared is the one
build_manifest makes here of the same files (run with this machine's sh, find, dd and xxhsum), and its parser
takes nothing but the script's lines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.hosts.procs import capture
from layerbench.server.manifest import PAGE, SAMPLES, build_manifest
from layerbench.server.remote_manifest import FILE_MARK, manifest_script, nanoseconds, parse_manifest


def datadir(root: Path) -> Path:
    """Files of every size class the sampling treats apart: empty, under a page, exactly SAMPLES pages, one page
    more (sampled), a large one with a partial last page; in a sub-folder too; and the excluded ones."""
    data = root / "datadir"
    (data / "sbtest").mkdir(parents=True)
    sizes = {"empty": 0, "small": 100, "edge": SAMPLES * PAGE, "over": (SAMPLES + 1) * PAGE,
             "sbtest/sbtest1.ibd": 200 * PAGE + 77, "sbtest/db.opt": 65}
    for name, size in sizes.items():
        (data / name).write_bytes(os.urandom(size))
    (data / "ib_buffer_pool").write_text("excluded")
    (data / "mysqld.pid").write_text("1")
    return data


def test_the_host_script_makes_the_manifest_build_manifest_makes(tmp_path: Path) -> None:
    data = datadir(tmp_path)
    done = capture(["sh", "-c", manifest_script(str(data))], timeout=120)
    assert done.returncode == 0, done.stderr
    assert parse_manifest(done.stdout) == build_manifest(data)


def test_a_missing_folder_fails_the_script(tmp_path: Path) -> None:
    done = capture(["sh", "-c", manifest_script(str(tmp_path / "nothing"))], timeout=60)
    assert done.returncode != 0 and FILE_MARK not in done.stdout


def test_other_lines_are_ignored_and_the_fraction_gives_nanoseconds() -> None:
    text = (f"Warning: Permanently added\n{FILE_MARK} 5 1700000000.1234567890 1700000001.5 {'a' * 32} {'b' * 16} "
            "sbtest/sbtest1.ibd\n")
    entry = parse_manifest(text).files["sbtest/sbtest1.ibd"]
    assert (entry.size, entry.mtime_ns, entry.ctime_ns) == (5, 1700000000123456789, 1700000001500000000)
    assert nanoseconds("1", "5") == 1_500_000_000


@pytest.mark.parametrize("line", [
    f"{FILE_MARK} 5 1.0 1.0 {'a' * 32} {'b' * 16} ../etc/passwd",
    f"{FILE_MARK} 5 1.0 1.0 {'a' * 32} {'b' * 16} /etc/passwd",
    f"{FILE_MARK} 5 1.0 1.0 {'A' * 32} {'b' * 16} x",
    f"{FILE_MARK} -5 1.0 1.0 {'a' * 32} {'b' * 16} x",
    f"{FILE_MARK} 5 1.0 1.0 {'a' * 31} {'b' * 16} x",
    f"{FILE_MARK} 5 1.0 1.0 {'a' * 32} {'b' * 16} a/./b",
    f"{FILE_MARK} 5 1.0 1.0 {'a' * 32} {'b' * 16} a\x1bb",
    f"{FILE_MARK} 5 1.0 1.0 {'a' * 32} {'b' * 16} x\n{FILE_MARK} 6 1.0 1.0 {'a' * 32} {'b' * 16} x",
])
def test_hostile_lines_are_refused(line: str) -> None:
    with pytest.raises(ValueError):
        parse_manifest(line)


@given(st.text(max_size=300))
def test_any_text_gives_a_manifest_or_value_error(text: str) -> None:
    try:
        manifest = parse_manifest(text)
    except ValueError:
        return
    for name, entry in manifest.files.items():
        assert not name.startswith("/") and ".." not in name.split("/") and entry.size >= 0
