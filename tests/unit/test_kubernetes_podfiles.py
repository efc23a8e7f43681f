"""A pod neighbour's report comes back through its log (backends/kubernetes/podfiles.py): the wrapper, run here
by the same `sh` the pod runs, forwards SIGTERM, then prints the files; unpack() takes hostile logs apart without
writing outside the folder. The pod side: tests/integration/test_kubernetes_backend.py's neighbour pod."""

from __future__ import annotations

import base64
import signal
import subprocess
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.kubernetes import podfiles

TOOL = ("trap 'echo stopping; printf \"cpu: 2\\nbogo-ops: 10\\n\" > \"$0/hog.stress-ng.yaml\"; exit 3' TERM; "
        "echo started; while :; do sleep 0.05; done")


def test_the_wrapper_forwards_sigterm_and_prints_the_tools_files_after_its_output(tmp_path: Path) -> None:
    folder = tmp_path / "neighbours"
    started = subprocess.Popen(podfiles.wrapped(folder, ["sh", "-c", TOOL, str(folder)]), stdout=subprocess.PIPE)
    while not (folder.is_dir()):
        time.sleep(0.05)
    time.sleep(0.3)
    started.send_signal(signal.SIGTERM)
    log, _ = started.communicate(timeout=60)
    assert started.returncode == 3  # the tool's own exit code
    output, files = podfiles.unpack(log)
    assert output.splitlines() == ["started", "stopping"]
    assert files == {"hog.stress-ng.yaml": b"cpu: 2\nbogo-ops: 10\n"}
    here = tmp_path / "here"
    here.mkdir()
    podfiles.write_files(here, files)
    assert (here / "hog.stress-ng.yaml").read_bytes() == b"cpu: 2\nbogo-ops: 10\n"


def entry(name: str, data: bytes) -> bytes:
    return f"\n{podfiles.MARK} {name}\n".encode() + base64.b64encode(data) + b"\n"


def test_names_that_leave_the_folder_and_bodies_that_are_not_base64_are_left_out() -> None:
    log = b"out\n" + entry("../../etc/passwd", b"x") + entry("ok.json", b"{}") + entry("/abs", b"y") + \
        f"\n{podfiles.MARK} bad.json\nnot base64 !\n".encode() + entry("ok.json", b"second")
    output, files = podfiles.unpack(log)
    assert output == "out\n" and files == {"ok.json": b"{}"}


@given(st.binary(max_size=2000), st.text(max_size=40), st.binary(max_size=200))
def test_hostile_logs_give_only_names_inside_the_folder(noise: bytes, name: str, data: bytes) -> None:
    _, files = podfiles.unpack(noise + entry(name, data) + noise)
    assert all(podfiles.NAME_RE.fullmatch(n) and "/" not in n and n not in (".", "..") for n in files)


def test_a_log_past_the_limit_is_cut() -> None:
    log = b"x" * podfiles.LOG_LIMIT + entry("late.json", b"{}")
    assert podfiles.unpack(log)[1] == {}
