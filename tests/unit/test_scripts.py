"""The shell scripts run under `set -euo pipefail`: a reader that quits before its producer is done (`| head`,
`| grep -q`, `| grep -m`) can kill the producer with SIGPIPE, fail the pipeline and, under set -e, end the
script with exit 141 at random. That once ended a cold Kubernetes build at its last line
(`kubectl version --client | head -1`). No such pipeline may come back."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = [ROOT / "scripts" / "setup", ROOT / "scripts" / "k8s-local", ROOT / "scripts" / "k8s-local.d" / "csi.sh",
           ROOT / "scripts" / "k8s-local.d" / "node2.sh", ROOT / "scripts" / "k8s-local.d" / "harness.sh",
           ROOT / "scripts" / "lab-hosts", ROOT / "scripts" / "lab.d" / "toolkit.sh",
           ROOT / "scripts" / "lab.d" / "host-boot",
           ROOT / ".ci" / "run"]
EARLY_READER = re.compile(r"\|\s*(head\b|grep\s+(-\w*[qm]|--quiet|--max-count)|sed\s+(-n\s+)?'?\d*q)")


def code_lines(path: Path) -> list[tuple[int, str]]:
    return [(n, line) for n, line in enumerate(path.read_text().splitlines(), 1) if not line.lstrip().startswith("#")]


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_no_pipeline_ends_in_a_reader_that_quits_early(script: Path) -> None:
    assert "pipefail" in script.read_text() or script.name == "run"
    found = [f"{script.name}:{n}: {line.strip()}" for n, line in code_lines(script) if EARLY_READER.search(line)]
    assert found == []


def test_the_check_finds_the_pattern() -> None:
    for bad in ('x | head -1', "y 2>/dev/null | grep -q ok", "z | grep -m1 a", "w | sed 1q"):
        assert EARLY_READER.search(bad), bad
    for fine in ("x | sed -n 1p", "grep -q ok file", "y | grep ok", "z | tail -1"):
        assert not EARLY_READER.search(fine), fine


LAB_SCRIPTS = [ROOT / "scripts" / "lab-hosts", ROOT / "scripts" / "lab.d" / "toolkit.sh",
               ROOT / "scripts" / "lab.d" / "host-boot", ROOT / "scripts" / "lab.d" / "host-init",
               ROOT / "scripts" / "k8s-local.d" / "harness.sh"]


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="no shellcheck (scripts/setup installs it)")
def test_the_lab_scripts_pass_shellcheck() -> None:
    done = subprocess.run(["shellcheck", "-S", "warning", "-x", *map(str, LAB_SCRIPTS)], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout


def toolkit(snippet: str) -> subprocess.CompletedProcess[str]:
    """Run bash code with the lab toolkit sourced (no root needed for its pure helpers)."""
    code = f'LBT_STATE=/dev/null LBT_PREFIX=lbtest; . "{ROOT}/scripts/lab.d/toolkit.sh"; {snippet}'
    return subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30)


def test_a_rootfs_is_cached_by_its_release_and_package_set() -> None:
    keys = toolkit("lbt_rootfs_key trixie b a c; lbt_rootfs_key trixie c a b a; lbt_rootfs_key bookworm a b c; "
                   "lbt_rootfs_key trixie a b").stdout.split()
    assert len(keys) == 4 and keys[0] == keys[1]
    assert len({keys[0], keys[2], keys[3]}) == 3


def test_undo_knows_the_toolkit_steps_only() -> None:
    assert toolkit("lbt_undo 'link lbtest-none-h'").returncode == 0
    assert toolkit("lbt_undo 'sshconfig-line /x'").returncode == 1


OPEN_ENV = {**os.environ, "LBLAB_PREFIX": "lbtest", "LBLAB_DIR": "/nonexistent/lbtest", "LBLAB_ISOLATED": "1"}


def open_ports(arg: str) -> subprocess.CompletedProcess[str]:
    """`lab-hosts open ARG` on a lab that is not up: it checks the argument first, then that the lab is up."""
    return subprocess.run([str(ROOT / "scripts" / "lab-hosts"), "open", arg], env=OPEN_ENV, capture_output=True,
                          text=True, timeout=30)


def a_port_or_range(arg: str) -> bool:
    found = re.fullmatch(r"([0-9]{1,5})(?:-([0-9]{1,5}))?", arg, re.ASCII)
    if not found:
        return False
    first, last = int(found.group(1)), int(found.group(2) or found.group(1))
    return 1 <= first <= last <= 65535


@pytest.mark.skipif(os.geteuid() != 0, reason="lab-hosts checks for root first")
def test_open_refuses_what_is_not_a_port() -> None:
    for bad in ("3306;reboot", "x", "1-2-3", "", "70000", "0", "3306-70000", "41210-41200", "03306 ; id"):
        done = open_ports(bad)
        assert done.returncode != 0 and "is not a TCP port" in done.stderr, (bad, done.stderr)
        assert "\n" not in done.stderr.strip()
    assert "is not up" in open_ports("41200-41210").stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="lab-hosts checks for root first")
@settings(max_examples=40, deadline=None)
@given(st.one_of(st.text(max_size=20).filter(lambda t: "\x00" not in t),
                 st.from_regex(r"\A[0-9]{1,6}(-[0-9]{1,6})?\Z")))
def test_open_takes_ports_and_ranges_only(arg: str) -> None:
    done = open_ports(arg)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert ("is not up" in done.stderr) == a_port_or_range(arg), (arg, done.stderr)


def harness_status(**settings: str) -> subprocess.CompletedProcess[str]:
    """`k8s-local harness status` with K8S_LOCAL_HARNESS_* settings (scripts/k8s-local.d/harness.sh): they are
    checked before anything else, then it says the harness is not up (a state dir where none is)."""
    env = {**os.environ, "K8S_LOCAL_DIR": "/nonexistent/lbtest-k8s", **settings}
    return subprocess.run([str(ROOT / "scripts" / "k8s-local"), "harness", "status"], env=env, capture_output=True,
                          text=True, timeout=30)


def a_slash_24(net: str) -> bool:
    found = re.fullmatch(r"(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})", net, re.ASCII)
    return net == "" or (found is not None and all(int(part) <= 255 for part in found.groups()))


def test_the_harness_refuses_a_prefix_that_cannot_name_its_links() -> None:
    for bad in ("a b", "-x", "Lbhar", "abcdefghijklm", "x;id", "1abc"):
        done = harness_status(K8S_LOCAL_HARNESS_PREFIX=bad)
        assert done.returncode == 1 and "K8S_LOCAL_HARNESS_PREFIX=" in done.stderr, (bad, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
    assert "not up" in harness_status(K8S_LOCAL_HARNESS_PREFIX="lbtest1").stdout


@settings(max_examples=30, deadline=None)
@given(st.one_of(st.text(max_size=16).filter(lambda t: "\x00" not in t),
                 st.from_regex(r"\A[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}\Z")))
def test_the_harness_takes_the_first_three_parts_of_an_ipv4_address_only(net: str) -> None:
    done = harness_status(K8S_LOCAL_HARNESS_NET=net)
    refused = "K8S_LOCAL_HARNESS_NET=" in done.stderr
    assert refused != a_slash_24(net), (net, done.stderr)
    assert not refused or (done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1)
