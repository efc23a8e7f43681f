"""A custom Lua workload end to end on the host backend, exactly as docs/campaign.md ("Custom workloads") writes
it: two Lua files (a main script that requires a sibling module and declares an option of its own), the
campaign, `validate`, then two runs restored from one snapshot; nothing mocked."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from layerbench.hosts.workdirs import datasets_dir
from layerbench.server.snapshot import remove_snapshot

pytestmark = pytest.mark.integration
DOC = Path(__file__).resolve().parents[2] / "docs" / "campaign.md"


def doc_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Custom workloads")
    return text[start:text.index("\n## ", start + 1)]


def doc_example(folder: Path) -> str:
    """Writes the section's Lua files (named by their `-- file:` line) under folder; returns its campaign YAML."""
    section = doc_section()
    for block in re.findall(r"```lua\n(.*?)```", section, re.DOTALL):
        name = re.match(r"-- file: (\S+)", block)
        assert name, f"a Lua block of the docs names no file: {block[:60]!r}"
        (folder / name.group(1)).parent.mkdir(parents=True, exist_ok=True)
        (folder / name.group(1)).write_text(block, encoding="utf-8")
    return re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)[0]


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "layerbench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600, env=os.environ.copy())


def our_servers(marker: Path) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "mariadbd" in cmd and str(marker) in cmd:
            found.append(cmd)
    return found


def test_the_docs_custom_workload_runs_twice_from_one_snapshot(tmp_path: Path) -> None:
    campaign = tmp_path / "kv-campaign.yaml"
    campaign.write_text(doc_example(tmp_path), encoding="utf-8")
    checked = cli(["validate", campaign.name], tmp_path)
    assert checked.returncode == 0, checked.stderr
    shown = re.search(r"^```\n(  workload default: .*)\n```", doc_section(), re.MULTILINE)
    assert shown and shown.group(1) in checked.stdout.splitlines(), checked.stdout

    done = cli(["run", campaign.name, "--output", str(tmp_path / "out")], tmp_path)
    key = None
    try:
        assert done.returncode == 0, done.stderr[-2000:]
        rows = sqlite3.connect(tmp_path / "out" / "layerbench.db").execute(
            "SELECT status, tps, details FROM runs WHERE status != 'replaced' ORDER BY idx").fetchall()
        assert [r[0] for r in rows] == ["ok", "ok"] and all(r[1] > 0 for r in rows)
        resets = [json.loads(r[2])["reset"] for r in rows]
        key = resets[0]["snapshot"]
        for reset in resets:  # both runs, the second too, restored from the one snapshot and checked
            assert reset["method"] == "snapshot" and reset["snapshot"] == key and key.startswith("lua-")
            assert reset["restore"]["problems"] == [] and reset["restore"]["files"] > 0
            assert reset["verify"] == "checksum" and reset["checksum_tables"] == 3
            assert reset["dataset"] == "a dataset of its own (prepare --tables=2 --table-size=300 --groups=7)"
        meta = json.loads((datasets_dir() / key / "meta.json").read_text())
        # rows the script's prepare wrote: the dataset flags and its own option (groups: 7) reached it
        assert meta["rows"] == {"kv1": 300, "kv2": 300, "kv_groups": 7}
        assert meta["inputs"]["dataset_flags"] == {"tables": 2, "table_size": 300}
        assert meta["inputs"]["options"] == {"groups": "7"}
        report = next((tmp_path / "out").glob("*-kv/report.md")).read_text()
        assert "sysbench kv/kv.lua, a dataset of its own (prepare --tables=2 --table-size=300 --groups=7)" in report
        assert our_servers(tmp_path) == []
    finally:
        if key:
            remove_snapshot(key)


@pytest.mark.parametrize(("script", "workload", "expected"), [
    ('sysbench.cmdline.options = {groups = {"g", 3}}\nfunction event() end\n', {"table_size": 5},
     "workloads.default.table_size: set, but the script does not get --table-size"),
    ('local m = require("kv_missing")\nfunction event() end\n', {},
     "workloads.default.test: 'w/main.lua' fails when sysbench loads it"),
])
def test_validate_refuses_a_script_in_one_line_exit_2(tmp_path: Path, script: str, workload: dict,
                                                      expected: str) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "main.lua").write_text(script)
    campaign = {"name": "bad-lua", "baseline": "b", "variants": [{"name": "b", "backend": "host"}],
                "workload": {"test": "w/main.lua", **workload}}
    (tmp_path / "c.yaml").write_text(json.dumps(campaign))
    for command in ("validate", "run"):
        done = cli([command, "c.yaml", *(["--output", str(tmp_path / "out")] if command == "run" else [])], tmp_path)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1 and expected in lines[0], done.stderr
    assert our_servers(tmp_path) == []


def test_the_docs_custom_workload_with_reset_reprepare_uses_its_own_cleanup_and_prepare(tmp_path: Path) -> None:
    """Before the run: the script's own cleanup, then its prepare, both with its folder on LUA_PATH."""
    text = doc_example(tmp_path).replace("repetitions: 2", "repetitions: 1").replace(
        "  verify: checksum", "  reset: reprepare")
    (tmp_path / "kv-campaign.yaml").write_text(text, encoding="utf-8")
    done = cli(["run", "kv-campaign.yaml", "--output", str(tmp_path / "out")], tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    (status, details), = sqlite3.connect(tmp_path / "out" / "layerbench.db").execute(
        "SELECT status, details FROM runs WHERE status != 'replaced'").fetchall()
    assert status == "ok" and json.loads(details)["reset"]["method"] == "reprepare"
    commands = next((tmp_path / "out").glob("*-kv/runs/*/commands.log")).read_text()
    folder = f"LUA_PATH={tmp_path}/kv/?.lua;{tmp_path}/kv/?/init.lua;;"
    for step in ("cleanup", "prepare", "run"):
        assert re.search(rf"env '?{re.escape(folder)}'? sysbench .*--groups=7.* {step}$", commands, re.MULTILINE), step
    assert our_servers(tmp_path) == []
