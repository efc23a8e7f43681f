"""The integration and e2e tests of `make test` in two lanes at once, then the few that must run alone.

Most of these tests wait more than they compute: for a server or a pod to start, a cluster to come up, a fixed-length
sysbench run, a download. One at a time they left this 2-core machine about half idle (a load average near 1.5 for
44 minutes). So:
- the `k8s` lane: every module marked `k8s` (the local clusters, the isolated harness, the registry), in its usual
  order, the one-node cluster's modules together (tests/conftest.py), then those marked `k8s_lane`: the QEMU
  guests' modules, which use no cluster, moved here from the other lane, which was the longer by 850 s (ci-22:
  1,105 s against 1,954 s). Measured after (ci-25, warm): 1,466 s against 1,919 s; the lanes end only 37 s
  sooner, as on two cores they are close to CPU-bound and the guests' emulated CPUs slow the other lane;
- the other lane at the same time: host, Docker, the SSH labs, the examples;
- then the `solo` tests, one lane: those that load the whole machine on purpose or need it unloaded to reach a
  verdict (their docstrings say which).
The two lanes share no cluster, lab, network or name: each module's own objects carry its own names, and the caches
they both may fill (the server images' and the labs' root filesystems) are built under a lock, once.

Each lane is a pytest session of its own with its own base temp folder. The other lane prints to this terminal; the
k8s lane's output goes to test-artifacts/lane-k8s.log and is printed when it ends. Ctrl-C reaches both (each
tears down what it started); the exit status is the worst of the three.

Usage: python tests/lanes.py [pytest args...] (the args go to every lane, e.g. -x)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATHS = ["tests/e2e", "tests/integration"]
NO_TESTS = 5  # pytest's exit status when a selection is empty
K8S_LANE = "(k8s or k8s_lane)"  # the marks of the k8s lane's modules


def pytest(marks: str, lane: str, extra: list[str], **kw: object) -> subprocess.Popen:
    """One lane's pytest. PYTHONFAULTHANDLER keeps Python's fault handler on after pytest's own is off, so a lane
    that dies of a signal while it shuts down (a k8s lane once died of SIGABRT after its summary, printing
    nothing) prints every thread's stack in its output first."""
    basetemp = Path("/tmp") / f"lb-lane-{lane}-{os.getuid()}"
    env = {**os.environ, "PYTHONFAULTHANDLER": "1"}
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-m", marks, f"--basetemp={basetemp}", *extra,
                             *PATHS], cwd=ROOT, env=env, **kw)  # type: ignore[call-overload]


def said(code: int) -> str:
    """A lane's exit as a person reads it: `exit 1`, or `killed by SIGABRT`."""
    if code >= 0:
        return f"exit {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


def status(code: int) -> int:
    """A lane's part of the exit status: an empty selection is not a failure; a lane killed by a signal is, even
    after its summary line (it was 128 + the signal's number in a shell; Popen gives it as minus that number)."""
    return 0 if code == NO_TESTS else 128 - code if code < 0 else code


def main(extra: list[str]) -> int:
    log = ROOT / "test-artifacts" / "lane-k8s.log"
    log.parent.mkdir(exist_ok=True)
    started = time.monotonic()
    print(f"[lanes] the k8s lane runs beside this one; its output: {log.relative_to(ROOT)}", flush=True)
    with open(log, "w", encoding="utf-8") as out:
        k8s = pytest(f"{K8S_LANE} and not solo", "k8s", extra, stdout=out, stderr=subprocess.STDOUT)
        other = pytest(f"not {K8S_LANE} and not solo", "other", extra)
        codes = {}
        try:
            codes["other"] = other.wait()
            print(f"[lanes] the other lane ended ({time.monotonic() - started:.0f} s); waiting for the k8s lane",
                  flush=True)
            codes["k8s"] = k8s.wait()
        except KeyboardInterrupt:  # both got the terminal's SIGINT too: let them tear down what they started
            codes = {"other": other.wait(), "k8s": k8s.wait()}
            print(log.read_text(encoding="utf-8", errors="replace"), flush=True)
            return 130
    print(f"[lanes] the k8s lane ({said(codes['k8s'])}, both ended at {time.monotonic() - started:.0f} s):", flush=True)
    print(log.read_text(encoding="utf-8", errors="replace"), flush=True)
    print("[lanes] the tests that run alone", flush=True)
    codes["solo"] = pytest("solo", "solo", extra).wait()
    print(f"[lanes] {', '.join(f'{k} {said(v)}' for k, v in codes.items())}; {time.monotonic() - started:.0f} s in all",
          flush=True)
    return max(status(code) for code in codes.values())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
