"""`layerbench --version`: the package and the versions of the programs it drives, each 'not found' when absent.

Every program is asked in parallel with a short timeout, and only its client side (no daemon, no cluster), so
the answer is quick whatever state the machine is in.
"""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import PackageNotFoundError, version

TIMEOUT = 5.0

# name shown -> (program, arguments that print its version without contacting a server)
PROGRAMS: dict[str, tuple[str, list[str]]] = {
    "sysbench": ("sysbench", ["--version"]),
    "server": ("mariadbd", ["--version"]),
    "docker client": ("docker", ["--version"]),
    "kubectl client": ("kubectl", ["version", "--client"]),
}


def package_version() -> str:
    try:
        return version("layerbench")
    except PackageNotFoundError:
        return "unknown (not installed as a package)"


def program_version(program: str, args: list[str]) -> str:
    path = shutil.which(program) or shutil.which(program, path="/usr/sbin:/sbin")
    if path is None:
        return "not found"
    try:
        done = subprocess.run([path, *args], capture_output=True, text=True, timeout=TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{path}: no answer ({type(error).__name__})"
    first = next((line.strip() for line in (done.stdout or done.stderr).splitlines() if line.strip()), "")
    return first or f"{path}: printed no version (exit {done.returncode})"


def version_lines() -> list[str]:
    with ThreadPoolExecutor(max_workers=len(PROGRAMS)) as pool:
        answers = list(pool.map(lambda item: program_version(*item), PROGRAMS.values()))
    return [f"layerbench {package_version()}",
            *(f"{name}: {answer}" for name, answer in zip(PROGRAMS, answers, strict=True))]
