"""Where a command runs: this machine, or a host of the campaign's inventory reached with OpenSSH.

Every command, file and probe meant for a host goes through `Host`, so callers never care whether the host is
local. Remote hosts use the system's `ssh` client (not a Python SSH library) because it honours everything the
user already set up: ~/.ssh/config aliases, ProxyJump, the agent, known_hosts and its hashing, certificates.
One ControlMaster connection per host is shared by every command of a campaign (an SSH handshake per command
would cost more than a short sysbench step), and by no other process's. BatchMode: never a prompt; host-key
checking is never turned off.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
import os
import re
import shlex
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from layerbench.bounded_read import IDENTITY_FILE, KNOWN_HOSTS, read_user_file
from layerbench.errors import BadInput, RunFailed, shown
from layerbench.hosts.procs import Completed, TimedOut, capture, run
from layerbench.secrets import Secret
from layerbench.vocabulary.base import Strict

LOCAL = "local"  # the implicit name of this machine in every campaign
SSH_TARGET_RE = r"^[A-Za-z0-9_.@:\[\]%-]{1,255}$"  # user@host, host, an ~/.ssh/config alias; no options
SSH_FAILED = 255
REMOTE_WORK_DIR = "/var/tmp/layerbench"  # an ssh: host's default work_dir (as this machine's work root)
WORK_DIR_RE = r"^/[A-Za-z0-9_./-]{1,200}$"  # absolute, no spaces or shell characters: it goes into sh scripts
PORTS_RE = r"^[0-9]{1,5}-[0-9]{1,5}$"  # a host's fixed server port range, `41400-41499`

HOST_LABEL = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?")  # RFC 1123


def is_host_address(text: str) -> bool:
    """An IP address (v4, v6) or a host name: dot-separated RFC 1123 labels, at most 253 characters, the last
    not all digits (1.2.3.999 is neither an address nor a name). It goes into sysbench's config file and the
    server's bind-address, where nothing else can be right."""
    address, percent, zone = text.partition("%")  # an IPv6 zone: an interface name (Python takes any text)
    try:
        ipaddress.ip_address(address)
        return not percent or (":" in address and re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", zone) is not None)
    except ValueError:
        pass
    labels = text.removesuffix(".").split(".")
    return len(text) <= 253 and all(HOST_LABEL.fullmatch(label) for label in labels) and not labels[-1].isdigit()


def check_host_address(value: str | None, fix: str = "give the address other hosts reach this one at") -> None:
    """ValueError (one line) unless value is None, an IP address or a host name."""
    if value is not None and not is_host_address(value):
        raise ValueError(f"{shown(value)} is not an IP address or a host name (letters, digits and inner "
                         f"hyphens, in labels separated by dots); {fix}")


def normal_folder(path: str) -> str:
    """An absolute folder as the kernel reaches it: `//tmp`, `/tmp/.` and `/tmp/./` are `/tmp` (os.path.normpath
    keeps a leading `//`, POSIX's implementation-defined root; Linux reads it as `/`)."""
    return os.path.normpath("/" + path.lstrip("/"))


class HostEntry(Strict):
    """One machine of the inventory: `local: true` (this machine) or `ssh: user@host` (or a config alias)."""

    ssh: Annotated[str, Field(pattern=SSH_TARGET_RE)] | None = None
    local: bool = False
    address: str | None = Field(default=None, description="the address other hosts reach this one at")
    identity_file: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    known_hosts: str | None = Field(default=None, description="a known_hosts file to use besides the user's")
    work_dir: Annotated[str, Field(pattern=WORK_DIR_RE)] | None = Field(
        default=None, description="an ssh: host's folder for dataset snapshots and server datadirs "
                                  f"(default {REMOTE_WORK_DIR})")
    reach: Literal["direct", "ssh"] = Field(
        default="direct", description="how the harness and the client reach a server on this ssh: host: direct "
                                      "(its address and port) or ssh (a forward over SSH)")
    bind_address: str | None = Field(default=None, description="the address a server listens on on this ssh: "
                                     "host (default: address with reach: direct, 127.0.0.1 with reach: ssh)")
    ports: Annotated[str, Field(pattern=PORTS_RE)] | None = Field(
        default=None, description="the TCP ports a server on this ssh: host may listen on, LOW-HIGH (a firewall's "
                                  "opening); default a free one in 20000-40000")

    @field_validator("address", "bind_address")
    @classmethod
    def _an_address(cls, value: str | None) -> str | None:
        check_host_address(value)
        return value

    @field_validator("ports")
    @classmethod
    def _a_range(cls, value: str | None) -> str | None:
        if value is not None:
            low, high = port_range(value)
            if not 1024 <= low <= high <= 65535:
                raise ValueError(f"{shown(value)}: give LOW-HIGH with 1024 <= LOW <= HIGH <= 65535, e.g. 41400-41499")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> HostEntry:
        if bool(self.ssh) == self.local:
            raise ValueError("give either ssh: user@host (a machine reached over SSH) or local: true (this one)")
        if self.local and (self.identity_file or self.port or self.known_hosts or self.work_dir or self.ports or
                           self.bind_address or self.reach != "direct"):
            raise ValueError("identity_file, port, known_hosts, work_dir, reach, bind_address and ports belong to an "
                             "ssh: host, not local: true")
        if self.work_dir and ("/../" in f"{self.work_dir}/" or normal_folder(self.work_dir) in ("/", "/tmp", "/var")):
            raise ValueError(f"work_dir {self.work_dir!r}: give a folder of its own, e.g. {REMOTE_WORK_DIR}")
        if self.ssh and self.ssh.startswith("-"):
            raise ValueError(f"{self.ssh!r} is not an SSH destination; write it like user@host")
        return self

    def listen_address(self) -> str:
        """Where a server on this ssh: host listens: `bind_address:`, else 127.0.0.1 with `reach: ssh` (only the
        forward reaches it), else the address others dial."""
        return self.bind_address or ("127.0.0.1" if self.reach == "ssh" else self.reach_address() or "127.0.0.1")

    def reach_address(self) -> str | None:
        """The address a client on another host connects to: `address:`, else the SSH destination's host."""
        if self.address:
            return self.address
        if self.ssh:
            return self.ssh.rsplit("@", 1)[-1]
        return None


def port_range(text: str) -> tuple[int, int]:
    """`41400-41499` -> (41400, 41499) (the pattern PORTS_RE was checked first)."""
    low, _, high = text.partition("-")
    return int(low), int(high)


def control_dir() -> Path:
    """Short (sockets have a 108-byte path limit), private, one per user."""
    path = Path(tempfile.gettempdir()) / f"lb-ssh-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def explain_ssh_failure(name: str, target: str, output: str, known_hosts: str | None) -> str:
    """One line from ssh's stderr: host key changed or unknown, key refused, host not answering."""
    text = output.strip()
    where = f"hosts.{name} ({target})"
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text or "Host key verification failed" in text:
        hostname = target.rsplit("@", 1)[-1]
        files = f"{known_hosts} or ~/.ssh/known_hosts" if known_hosts else "~/.ssh/known_hosts"
        changed = "does not match its entry" if "HAS CHANGED" in text or "mismatch" in text else \
            "is unknown or does not match its entry"
        return (f"{where}: the host key {changed} in {files}; refused (host-key checking stays on). Check the "
                f"host's key fingerprint, then replace the entry (ssh-keygen -R {hostname}; ssh {target} once)")
    if "Permission denied" in text:
        return f"{where}: the host refused our key; check identity_file, the agent (ssh-add -l) and authorized_keys"
    last = next((line for line in reversed(text.splitlines()) if line.strip()), "no output from ssh")
    return (f"{where} does not answer over SSH: {last.strip()[:200]}; check that it is up and that hosts.{name}.ssh "
            "(and port) reach its sshd")


def check_ssh_file(where: str, value: str, *, private: bool) -> None:
    """A file an inventory entry gives ssh (`-i`, UserKnownHostsFile): a readable regular file (never a device, such
    as /dev/zero, that ssh would read forever), under a path ssh opens as written; a private key that others may
    read is one ssh ignores; then its content, read within bounds (bounded_read.py): a private key, or lines of
    host keys."""
    what = "a private key" if private else "a known_hosts file"
    fix = f"give the path of {what}"
    if "%" in value or "${" in value:
        raise BadInput(f"{where}: {shown(value, keep_end=True)}: ssh expands % and ${{...}} in this path, so it "
                       "would open another file; rename the file or link it under a path without them")
    if not private and ('"' in value or "\\" in value or not value.isprintable()):
        raise BadInput(f"{where}: {shown(value, keep_end=True)}: a quote, a backslash or a control character "
                       "cannot be passed in ssh's UserKnownHostsFile; rename the file or link it under a plain path")
    path = Path(value).expanduser()
    try:
        info = path.stat()
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        cause = getattr(error, "strerror", None) or "not a path"
        raise BadInput(f"{where}: {shown(value, keep_end=True)} does not exist or cannot be read ({cause}); "
                       f"{fix}") from None
    if not stat.S_ISREG(info.st_mode) or not os.access(path, os.R_OK):
        raise BadInput(f"{where}: {shown(value, keep_end=True)} is not a readable regular file; {fix}")
    if private and info.st_uid == os.getuid() and info.st_mode & 0o077:
        raise BadInput(f"{where}: {shown(value, keep_end=True)} has mode {stat.S_IMODE(info.st_mode):04o} (open "
                       "to group or others), so ssh ignores the key; chmod 600 it")
    read_user_file(path, IDENTITY_FILE if private else KNOWN_HOSTS, where)  # what it holds, read within bounds


class Host:
    """A machine commands run on. `run` takes an argv; on an SSH host it is quoted into one remote command."""

    def __init__(self, name: str, entry: HostEntry | None = None) -> None:
        self.name = name
        self.entry = entry or HostEntry(local=True)

    @property
    def is_local(self) -> bool:
        return self.entry.local

    @property
    def target(self) -> str:
        return self.entry.ssh or "this machine"

    def ssh_command(self) -> list[str]:
        e = self.entry
        # the connection is shared only by commands with the same entry (one checked against other known_hosts
        # or another key never rides on it) and of this process: close() ends it when a command is over, and
        # another layerbench process's commands riding on it would end with ssh's 255 and no output at all
        digest = hashlib.sha256(f"{os.getpid()} {e.model_dump_json()}".encode()).hexdigest()[:10]
        cmd = ["ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o",
               f"ControlPath={control_dir()}/{digest}-%C", "-o", "ControlPersist=120", "-o", "ConnectTimeout=10",
               "-o", "ServerAliveInterval=3", "-o", "ServerAliveCountMax=3"]
        if e.identity_file:
            cmd += ["-i", str(Path(e.identity_file).expanduser()), "-o", "IdentitiesOnly=yes"]
        if e.port:
            cmd += ["-p", str(e.port)]
        if e.known_hosts:  # quoted: ssh splits this option's value at blanks into several files
            user_file = Path("~/.ssh/known_hosts").expanduser()
            cmd += ["-o", f'UserKnownHostsFile="{Path(e.known_hosts).expanduser()}" "{user_file}"',
                    "-o", "StrictHostKeyChecking=yes"]
        return [*cmd, "--", str(e.ssh)]

    @property
    def work_dir(self) -> str:
        """Where layerbench keeps snapshots and datadirs on an ssh: host."""
        return (self.entry.work_dir or REMOTE_WORK_DIR).rstrip("/")

    def rsync_to(self, source: Path, target: str, *, log_path: Path | None = None, timeout: float | None = None,
                 on_line: Callable[[str], None] | None = None) -> Completed:
        """Copy the folder `source` to `target` on this ssh: host with rsync over the same SSH options (and the
        same shared connection); rsync checks every file it sends with its own whole-file checksum."""
        shell = shlex.join(self.ssh_command()[:-2])
        cmd = ["rsync", "-a", "--delete", "--whole-file", "-e", shell,
               f"{str(source).rstrip('/')}/", f"{self.entry.ssh}:{target.rstrip('/')}/"]
        done = run("rsync", cmd, log_path=log_path, timeout=timeout, on_line=on_line)
        if done.returncode == SSH_FAILED or (done.returncode != 0 and self._ssh_said_no(done.output)):
            raise RunFailed(self.explain(done.output))
        return done

    def send_files(self, files: Sequence[Path], target: str, *, log_path: Path | None = None) -> Completed:
        """Copy files into the folder `target` on this ssh: host (rsync, as rsync_to)."""
        shell = shlex.join(self.ssh_command()[:-2])
        cmd = ["rsync", "-a", "--whole-file", "-e", shell, *map(str, files), f"{self.entry.ssh}:{target.rstrip('/')}/"]
        done = run("rsync", cmd, log_path=log_path, timeout=None)
        if done.returncode == SSH_FAILED or (done.returncode != 0 and self._ssh_said_no(done.output)):
            raise RunFailed(self.explain(done.output))
        return done

    def command(self, argv: Sequence[str]) -> list[str]:
        if self.is_local:
            return [str(a) for a in argv]
        return [*self.ssh_command(), shlex.join(str(a) for a in argv)]

    def run(self, argv: Sequence[str], *, name: str | None = None, log_path: Path | None = None,
            timeout: float | None = 60, input_text: str | None = None, secrets: Sequence[Secret] = (),
            on_line: Callable[[str], None] | None = None) -> Completed:
        """Run to the end; an SSH failure (ssh's own exit 255) raises RunFailed naming the host and the cause."""
        done = run(name or str(argv[0]), self.command(argv), log_path=log_path, timeout=timeout,
                   input_text=input_text, secrets=secrets, on_line=on_line)
        if not self.is_local and done.returncode == SSH_FAILED and self._ssh_said_no(done.output):
            raise RunFailed(self.explain(done.output))
        return done

    @staticmethod
    def _ssh_said_no(output: str) -> bool:
        markers = ("ssh:", "Host key", "HOST IDENTIFICATION", "Permission denied", "Connection", "Timeout",
                   "timed out", "port ", "Broken pipe", "client_loop", "Could not resolve")
        return any(m in output for m in markers) or not output.strip()

    def explain(self, output: str) -> str:
        return explain_ssh_failure(self.name, self.target, output, self.entry.known_hosts)

    def shell(self, script: str, **kwargs: object) -> Completed:
        """A small POSIX sh script on the host (local: sh -c as well, so both paths run the same text)."""
        return self.run(["sh", "-c", script], name=str(kwargs.pop("name", f"sh on {self.name}")), **kwargs)  # type: ignore[arg-type]

    def write_private(self, path: str, text: str) -> None:
        """A 0600 file on the host, its content sent on stdin (never on a command line)."""
        done = self.shell(f"umask 077 && cat > {shlex.quote(path)}", input_text=text, name=f"write on {self.name}")
        if done.returncode != 0:
            raise RunFailed(f"hosts.{self.name}: cannot write {path}: {done.output.strip()[:200]}")

    def check_files(self) -> None:
        """Preflight: the files the entry names are what ssh will open (one-line BadInput naming the field)."""
        for field, value in (("identity_file", self.entry.identity_file), ("known_hosts", self.entry.known_hosts)):
            if value is not None:
                check_ssh_file(f"hosts.{self.name}.{field}", value, private=field == "identity_file")

    def check(self) -> None:
        """Preflight: the host answers; a refusal or silence is a one-line BadInput naming the host."""
        if self.is_local:
            return
        try:
            done = self.run(["true"], name=f"ssh {self.name}", timeout=30)
        except RunFailed as error:
            raise BadInput(str(error)) from None
        if done.returncode != 0:
            raise BadInput(self.explain(done.output))

    def close(self) -> None:
        """End the shared connection (ControlPersist would end it two minutes later anyway)."""
        if self.is_local:
            return
        with contextlib.suppress(OSError, ValueError, TimedOut):  # ValueError: a NUL in a path
            capture([*self.ssh_command()[:-2], "-O", "exit", "--", str(self.entry.ssh)], timeout=10)


class Hosts:
    """The campaign's machines by name; `local` is always this machine."""

    def __init__(self, entries: dict[str, HostEntry] | None) -> None:
        self.by_name = {LOCAL: Host(LOCAL), **{n: Host(n, e) for n, e in (entries or {}).items()}}

    def __getitem__(self, name: str) -> Host:
        return self.by_name[name]

    def close(self) -> None:
        for host in self.by_name.values():
            host.close()
