"""MySQL 9.7 of the cached rootfs, what is not a campaign: its option names checked against the rootfs's mysqld,
and a rootfs build stopped by a signal. The rootfs is built here when missing (about 80 s, cached after). The
campaign that runs it on the host beside MariaDB and PostgreSQL (its snapshot, its restores checked, the
binary-log difference in the fairness section) is examples/database-families.yaml, run by
test_postgresql_host.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from layerbench.campaign.models import parse_campaign
from layerbench.server.mysql_rootfs import ensure_rootfs

pytestmark = pytest.mark.integration


def our_processes(marker: str) -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd:
                found.append(cmd)
    return found


def test_option_names_are_checked_against_the_rootfs_mysqld(tmp_path: Path) -> None:
    """A MariaDB-only option on a MySQL variant is refused by validate, naming mysqld; MySQL's own are accepted."""
    from layerbench.errors import BadInput
    from layerbench.run.preflight import check_option_names

    ensure_rootfs("9.7")
    data = {"name": "opts", "baseline": "m", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "m", "backend": "host", "server": {"flavour": "mysql", "version": "9.7", "config": {
                "skip-log-bin": True, "innodb_redo_log_capacity": "1G"}}}]}
    check_option_names(parse_campaign(data).variant("m"))
    data["variants"][0]["server"]["config"] = {"aria_pagecache_buffer_size": "1M"}
    with pytest.raises(BadInput, match=r"server \(mysqld\) has no such option; check its spelling \(mysqld --verbose"):
        check_option_names(parse_campaign(data).variant("m"))


def test_a_build_stopped_by_a_signal_leaves_nothing_half_built(tmp_path: Path) -> None:
    """SIGTERM during a rebuild from the kept packages (offline): no rootfs, no build folder, no process left."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    from layerbench.server.mysql_rootfs import RELEASES, debs_folder

    ensure_rootfs("9.7")
    kept = debs_folder(RELEASES["9.7"])
    cache = tmp_path / "cache"
    shutil.copytree(kept, cache / "servers" / kept.name)
    env = {**os.environ, "LAYERBENCH_CACHE_DIR": str(cache)}
    build = subprocess.Popen([sys.executable, "-m", "layerbench", "server", "build", "mysql", "9.7"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while not any((cache / "servers").glob(".build-*/rootfs/usr")) and time.monotonic() < deadline:
        time.sleep(0.2)  # debootstrap is unpacking into the build folder
    build.send_signal(signal.SIGTERM)
    output, _ = build.communicate(timeout=120)
    assert build.returncode != 0, output
    assert sorted(p.name for p in (cache / "servers").iterdir()) == [".locks", ".logs", kept.name], output
    logs = sorted(p.name for p in (cache / "servers" / ".logs").iterdir())  # the stopped build's, kept for the user
    assert logs == ["build-mysql-9.7.4-2.log", "commands.log"], logs
    assert our_processes(str(cache)) == []
