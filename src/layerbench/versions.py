"""The versions of the programs layerbench drives: the one place a program is asked its `--version`, here
(version_output) or on a campaign's host (version_on), and `layerbench --version`: the package and those
versions, each 'not found' when absent (tests/unit/test_architecture.py allows no `--version` call elsewhere).

Every program is asked with a timeout; `layerbench --version` asks them in parallel, and only their client side
(no daemon, no cluster), so the answer is quick whatever state the machine is in.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

from layerbench.hosts.procs import Captured, Completed, TimedOut, capture

if TYPE_CHECKING:  # a type hint only: the host runs the command itself
    from layerbench.hosts.inventory import Host

TIMEOUT = 5.0
VERSION = ("--version",)

# name shown -> (program, arguments that print its version without contacting a server)
PROGRAMS: dict[str, tuple[str, Sequence[str]]] = {
    "sysbench": ("sysbench", VERSION),
    "server": ("mariadbd", VERSION),
    "docker client": ("docker", VERSION),
    "kubectl client": ("kubectl", ("version", "--client")),
}


def version_output(command: Sequence[str], *, timeout: float = TIMEOUT, args: Sequence[str] = VERSION) -> Captured:
    """What `command --version` printed here (`command` may be a loader, then the program); OSError when it cannot
    be started, TimedOut when it does not answer within `timeout` seconds."""
    return capture([*command, *args], timeout=timeout, name=f"{command[-1]} {' '.join(args)}")


def printed_version(command: Sequence[str], *, timeout: float = TIMEOUT) -> str:
    """`command --version`'s output, stripped; "" when it cannot be started or does not answer in time."""
    try:
        return version_output(command, timeout=timeout).stdout.strip()
    except (OSError, TimedOut):
        return ""


def version_on(host: Host, command: Sequence[str], *, name: str, timeout: float) -> Completed:
    """`command --version` on a campaign's host (over SSH for an ssh: host), its output and errors together."""
    return host.run([*command, *VERSION], name=name, timeout=timeout)


def package_version() -> str:
    try:
        return version("layerbench")
    except PackageNotFoundError:
        return "unknown (not installed as a package)"


def program_version(program: str, args: Sequence[str]) -> str:
    path = shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")
    if path is None:
        return "not found"
    try:
        done = version_output([path], args=args)
    except (OSError, TimedOut) as error:
        return f"{path}: no answer ({type(error).__name__})"
    first = next((line.strip() for line in (done.stdout or done.stderr).splitlines() if line.strip()), "")
    return first or f"{path}: printed no version (exit {done.returncode})"


def version_lines() -> list[str]:
    with ThreadPoolExecutor(max_workers=len(PROGRAMS)) as pool:
        answers = list(pool.map(lambda item: program_version(*item), PROGRAMS.values()))
    return [f"layerbench {package_version()}",
            *(f"{name}: {answer}" for name, answer in zip(PROGRAMS, answers, strict=True))]
