"""One helper to start every external process: its command recorded (secrets redacted), its output
logged to the run's folder, and always reaped (terminate, then kill on a deadline). The only module that imports
subprocess (tests/unit/test_architecture.py): a long-lived process (start), one run to its end with its output
streamed and logged (run), a short probe whose output and errors are kept apart (capture), two processes piped
(pipe), and a process held open for the length of a block (held). Every call but start's gives a timeout."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layerbench.errors import PrerequisiteMissing, RunFailed, shown
from layerbench.hosts.critical import signals_deferred
from layerbench.secrets import Secret, redact
from layerbench.vocabulary.base import TERMINAL_CONTROL


class TimedOut(RunFailed):
    """A process did not finish within its timeout and was killed."""


_live: set[ManagedProcess] = set()
_live_lock = threading.Lock()


def require_program(name: str, hint: str) -> str:
    """The absolute path of a program, or a PrerequisiteMissing error that says how to get it."""
    found = shutil.which(name) or (shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin"))
    if not found:
        raise PrerequisiteMissing(f"{name} not found on PATH; {hint}")
    return found


def command_text(cmd: Sequence[str], secrets: Sequence[Secret] = ()) -> str:
    return redact(shlex.join(str(c) for c in cmd), secrets)


def record_command(log_dir: Path | None, cmd: Sequence[str], secrets: Sequence[Secret] = ()) -> None:
    if log_dir is None:
        return
    log_dir.mkdir(parents=True, exist_ok=True)
    with (log_dir / "commands.log").open("a", encoding="utf-8") as handle:
        handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {command_text(cmd, secrets)}\n")


def argv(cmd: Sequence[Any]) -> list[str]:
    """The command's arguments as strings; RunFailed when one holds a control character a terminal or a tool's
    parser acts on (ESC, DEL, C1: vocabulary/base.py TERMINAL_CONTROL). The campaign's models refuse them where
    they are written (issue #44); this is the last guard, for every process started here. Tab and newline pass
    (a script given to sh -c); NUL is left to subprocess, whose ValueError ("embedded null byte") callers read
    as "not a path"."""
    args = [str(c) for c in cmd]
    for arg in args:
        found = TERMINAL_CONTROL.search(arg.replace("\0", ""))
        if found:
            raise RunFailed(f"{args[0]}: an argument holds the control character {found.group()!r} "
                            f"({shown(arg)}); not started")
    return args


def with_cpus(cmd: Sequence[str], cpus: str | None) -> list[str]:
    """Prefix a command with taskset when a CPU list is given."""
    if not cpus:
        return [str(c) for c in cmd]
    return [require_program("taskset", "install util-linux"), "-c", cpus, *map(str, cmd)]


@dataclass(eq=False)
class ManagedProcess:
    """A started process whose output goes to a log file; stop() always reaps it."""

    name: str
    cmd: list[str]
    popen: subprocess.Popen[bytes]
    log_path: Path | None
    secrets: list[Secret] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 30.0, sig: int = signal.SIGTERM) -> int | None:
        """Signal the process and its group, wait up to timeout, then SIGKILL them; returns its exit code."""
        if self.alive():
            signal_group(self.popen, sig)
            try:
                self.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                signal_group(self.popen, signal.SIGKILL)
                self.popen.wait(timeout=10)
        with _live_lock:
            _live.discard(self)
        return self.popen.returncode

    def tail(self, lines: int = 20) -> str:
        return log_tail(self.log_path, lines, self.secrets)


def signal_group(popen: subprocess.Popen[bytes], sig: int) -> None:
    """Signal a process started here and every process it started in its group (start_new_session makes the
    group the leader's PID): a script's children (mariadb-install-db's bootstrap server) must not outlive it,
    writing into a folder that is being removed. Only while the leader is not reaped, so the group is ours."""
    if popen.returncode is not None:
        return
    try:
        os.killpg(popen.pid, sig)
    except (ProcessLookupError, PermissionError):  # the leader left its group, or a member is not ours to signal
        with contextlib.suppress(ProcessLookupError):
            popen.send_signal(sig)


def log_tail(path: Path | None, lines: int = 20, secrets: Sequence[Secret] = ()) -> str:
    if path is None or not path.exists():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
    return redact("\n".join(text), secrets)


def start(
    name: str,
    cmd: Sequence[str],
    *,
    log_path: Path | None,
    secrets: Sequence[Secret] = (),
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> ManagedProcess:
    """Start a long-lived process (a server), output to log_path, in its own process group."""
    cmd = [str(c) for c in cmd]
    record_command(log_path.parent if log_path else None, cmd, secrets)
    out = log_path.open("ab") if log_path else subprocess.DEVNULL
    try:
        return _spawn(name, cmd, log_path, secrets, stdout=out, stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    finally:
        if log_path:
            out.close()  # type: ignore[union-attr]


def _spawn(name: str, cmd: list[str], log_path: Path | None, secrets: Sequence[Secret], *, stdout: Any,
           stdin: Any, env: dict[str, str] | None, cwd: Path | None) -> ManagedProcess:
    """Popen in a process group of its own, known to stop_all() from the moment it exists."""
    cmd = argv(cmd)
    try:
        with signals_deferred():  # started and known to stop_all() together
            popen = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.STDOUT, stdin=stdin, env=env, cwd=cwd,
                                     start_new_session=True)
            proc = ManagedProcess(name, cmd, popen, log_path, list(secrets))
            with _live_lock:
                _live.add(proc)
    except OSError as error:
        raise RunFailed(f"{name}: cannot start {cmd[0]} ({error.strerror})") from None
    return proc


@dataclass
class Completed:
    returncode: int
    output: str


def run(
    name: str,
    cmd: Sequence[str],
    *,
    log_path: Path | None = None,
    secrets: Sequence[Secret] = (),
    timeout: float | None,
    input_text: str | None = None,
    on_line: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> Completed:
    """Run a process to its end, streaming its output lines to on_line and to the log (redacted).

    The process is killed when the timeout passes (TimedOut) or when the caller is interrupted (KeyboardInterrupt);
    a timeout of None is given on purpose, by a copy whose length grows with the data it copies.
    """
    cmd = [str(c) for c in cmd]
    record_command(log_path.parent if log_path else None, cmd, secrets)
    proc = _spawn(name, cmd, log_path, secrets, stdout=subprocess.PIPE,
                  stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL, env=env, cwd=cwd)
    try:
        return _collect(proc, timeout, input_text, on_line)
    finally:
        proc.stop(timeout=5, sig=signal.SIGKILL)


def _collect(
    proc: ManagedProcess, timeout: float | None, input_text: str | None,
    on_line: Callable[[str], None] | None,
) -> Completed:
    popen = proc.popen
    if input_text is not None and popen.stdin:
        with contextlib.suppress(BrokenPipeError):
            popen.stdin.write(input_text.encode())
        popen.stdin.close()
    timer = threading.Timer(timeout, signal_group, (popen, signal.SIGKILL)) if timeout else None
    if timer:
        timer.daemon = True
        timer.start()
    lines: list[str] = []
    log = proc.log_path.open("a", encoding="utf-8") if proc.log_path else None
    try:
        assert popen.stdout is not None
        for raw in popen.stdout:
            line = redact(raw.decode("utf-8", errors="replace"), proc.secrets)
            lines.append(line)
            if log:
                log.write(line)
            if on_line:
                on_line(line.rstrip("\n"))
        popen.wait()
    finally:
        if timer:
            timer.cancel()
        if log:
            log.close()
    if timer and not timer.is_alive() and popen.returncode == -signal.SIGKILL and timeout:
        raise TimedOut(f"{proc.name}: did not finish within {timeout:.0f} s and was killed")
    return Completed(popen.returncode, "".join(lines))


@dataclass(frozen=True)
class Captured:
    """What a short process printed, its output and its errors apart."""

    returncode: int
    stdout: str
    stderr: str


def capture(cmd: Sequence[str], *, timeout: float, input_text: str | None = None, env: dict[str, str] | None = None,
            name: str | None = None) -> Captured:
    """Run a short command (a version, a listing, `ip`, a probe) to its end and keep what it printed; OSError when
    it cannot be started, TimedOut (it is killed) when it does not end within `timeout` seconds."""
    cmd = argv(cmd)
    try:
        done = subprocess.run(cmd, input=input_text, capture_output=True, text=True, errors="replace", env=env,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TimedOut(f"{name or cmd[0]}: did not finish within {timeout:.0f} s and was killed") from None
    return Captured(done.returncode, done.stdout, done.stderr)


def pipe(first: Sequence[str], second: Sequence[str], *, timeout: float) -> tuple[int, Captured]:
    """`first | second`, streamed (nothing written between them): first's exit code (its errors discarded) and
    what second printed; TimedOut when second does not end within `timeout` seconds (first then ends on its
    closed pipe)."""
    second = argv(second)
    feeder = subprocess.Popen(argv(first), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        done = subprocess.run(second, stdin=feeder.stdout, capture_output=True, text=True, errors="replace",
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise TimedOut(f"{second[0]}: did not finish within {timeout:.0f} s and was killed") from None
    finally:
        assert feeder.stdout is not None
        feeder.stdout.close()
        feeder.wait()
    return feeder.returncode, Captured(done.returncode, done.stdout, done.stderr)


@contextlib.contextmanager
def held(cmd: Sequence[str], *, timeout: float) -> Iterator[subprocess.Popen[str]]:
    """A process that lives as long as the block (an SSH session holding a lock on a host): the caller reads its
    output (errors included) line by line; when the block ends its stdin closes, and it is killed when it has
    not ended `timeout` seconds later."""
    popen = subprocess.Popen(argv(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    try:
        yield popen
    finally:
        if popen.stdin is not None:
            popen.stdin.close()
        try:
            popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()


def stop_all() -> None:
    """Reap every process this module started and that is still alive (used on errors and Ctrl-C)."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        proc.stop(timeout=10)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
