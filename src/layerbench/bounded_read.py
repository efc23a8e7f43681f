"""Bounded reading of the files a user names: the campaign file and the files `import` reads (named on the command
line, and `clean --inventory`'s hosts: file), and the files a campaign's keys name (an external variant's
`password_file`, a kubernetes variant's `kubeconfig`, a host's `identity_file` and `known_hosts`, a workload's
Lua script as `test`). One reader for all, so that no file can make layerbench hang, read without bound or stop
with a traceback: each refusal is one BadInput line naming the key (or the file), what is wrong and the fix.

Every read (`read_user_file`):
1. the path's type before anything is opened (os.stat, links followed): a regular file, never a directory, a
   device (/dev/zero, /dev/urandom), a FIFO (whose open would wait for a writer) or a socket;
2. opened with O_NONBLOCK and O_NOCTTY (a FIFO put in its place after the stat cannot block) and checked again on
   the open descriptor: still a regular file, not larger than its kind's bound (a 2 GB sparse file is refused from
   its size, unread);
3. at most bound + 1 bytes read (a file that grows meanwhile, a /proc file that says it has 0 bytes);
4. decoded strictly (UTF-8 unless its kind says otherwise), no NUL byte;
5. its kind's content check (`FileKind.check`): a password is one line of printable text, a kubeconfig a YAML
   mapping with clusters, contexts and users of the right shapes, an identity file a private key, a known_hosts
   file lines of host keys.

`read_kubeconfig` is the one way a kubeconfig is read (a variant's own and one found in KUBECONFIG or
~/.kube/config alike): it returns the parsed mapping, which the Kubernetes client is then given.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from layerbench.boundedyaml import load_text
from layerbench.errors import BadInput, shown


def any_text(text: str) -> str | None:
    """The content check of a kind whose text is checked by what reads it next (YAML, CSV, a log's parser)."""
    return None


@dataclass(frozen=True)
class FileKind:
    """A kind of file a user names: its name in messages, its size bound, the fix a refusal ends with, the check
    of its text (the problem, or None when it is what it must be) and its encoding."""

    what: str
    limit: int
    fix: str
    check: Callable[[str], str | None] = any_text
    encoding: str = "utf-8"


def check_file_type(path: str | os.PathLike[str], kind: FileKind, where: str | None = None) -> os.stat_result:
    """The path is a regular file (links followed), found by stat alone: nothing is opened, so a FIFO cannot block.
    For a file another program reads too (sysbench a Lua script, ssh a key), and as the first step of a read."""
    head = _head(path, where)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise BadInput(f"{head}: no such {kind.what}; {kind.fix}") from None
    except (OSError, ValueError) as error:  # ValueError: a NUL in the path
        raise BadInput(f"{head}: cannot be read ({getattr(error, 'strerror', None) or 'not a path'}); "
                       f"{kind.fix}") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{head}: {_type_words(info.st_mode)}, not a regular file; give the path of a {kind.what}")
    if info.st_size > kind.limit:
        raise BadInput(f"{head}: {info.st_size:,} bytes; a {kind.what} is at most {kind.limit:,} bytes")
    return info


def read_user_file(path: str | os.PathLike[str], kind: FileKind, where: str | None = None) -> str:
    """The file's text, read within its kind's bounds and checked; `where` is the campaign key that names it (the
    message then reads `key: 'path': ...`), None for a file named on the command line (`'path': ...`)."""
    head = _head(path, where)
    check_file_type(path, kind, where)
    data = _read_regular(path, kind, head)
    try:
        text = data.decode(kind.encoding)
    except UnicodeDecodeError as error:
        raise BadInput(f"{head}: not UTF-8 text (byte {error.start}); save it as UTF-8") from None
    if "\0" in text:
        raise BadInput(f"{head}: holds a NUL byte (byte {data.index(0)}), so it is no text file; give the path of "
                       f"a {kind.what}")
    problem = kind.check(text)
    if problem is not None:
        raise BadInput(f"{head}: {problem}; {kind.fix}")
    return text


def _read_regular(path: str | os.PathLike[str], kind: FileKind, head: str) -> bytes:
    """At most kind.limit bytes of a file that is still a regular file once open (never blocks on a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as error:
        raise BadInput(f"{head}: cannot be opened ({getattr(error, 'strerror', None) or 'not a path'}); check "
                       "the path and its permissions") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadInput(f"{head}: {_type_words(info.st_mode)}, not a regular file; give the path of a "
                           f"{kind.what}")
        if info.st_size > kind.limit:
            raise BadInput(f"{head}: {info.st_size:,} bytes; a {kind.what} is at most {kind.limit:,} bytes")
        try:
            data = handle.read(kind.limit + 1)
        except OSError as error:
            raise BadInput(f"{head}: cannot be read ({error.strerror}); check the file") from None
    if len(data) > kind.limit:
        raise BadInput(f"{head}: larger than {kind.limit:,} bytes; a {kind.what} is smaller")
    return data


def _head(path: str | os.PathLike[str], where: str | None) -> str:
    value = shown(str(path), 100, keep_end=True)
    return f"{where}: {value}" if where else value


def _type_words(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))
    return next((words for test, words in kinds if test(mode)), "a special file")


# --- the kinds of file, each with its content check -----------------------------------------------------------


def one_line_password(text: str) -> str | None:
    """A password file: one line of printable text (a newline ends it, or not); it goes into sysbench's config
    file, where a second line would be a second option."""
    body = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith("\n") else text
    if "\n" in body or "\r" in body:
        return f"{len(body.splitlines())} lines"
    if not body.strip():
        return "empty"
    if not body.isprintable():
        return "a control character (a tab, an escape, ...) in the password"
    return None


PRIVATE_KEY_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----")


def private_key(text: str) -> str | None:
    """An identity file: a private key as ssh-keygen and openssl write it (`-----BEGIN ... PRIVATE KEY-----` to
    the matching END line), in printable ASCII."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    begin = PRIVATE_KEY_BEGIN.fullmatch(lines[0]) if lines else None
    if begin is None:
        return "does not begin with a -----BEGIN ... PRIVATE KEY----- line, so it is no private key"
    if lines[-1] != f"-----END {begin.group(1)}PRIVATE KEY-----":
        return f"a private key that does not end with -----END {begin.group(1)}PRIVATE KEY-----"
    if not text.isascii() or not all(line.isprintable() for line in lines):
        return "a private key holds only printable ASCII"
    return None


KEY_TYPE = re.compile(r"[a-z0-9][a-z0-9@.+-]{0,80}")
KEY_BLOB = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")


def host_keys(text: str) -> str | None:
    """A known_hosts file: each line a host key (`[@cert-authority|@revoked] hosts keytype base64 [comment]`),
    a comment or blank, as sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT" says."""
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if fields[0] in ("@cert-authority", "@revoked"):
            fields = fields[1:]
        if len(fields) < 3 or not KEY_TYPE.fullmatch(fields[1]) or not KEY_BLOB.fullmatch(fields[2]):
            return f"line {number} is not a host key (hosts, key type, base64 key), so it is no known_hosts file"
    return None


KUBECONFIG_LISTS = {"clusters": ("cluster", "server"), "contexts": ("context", "cluster"), "users": ("user", None)}


def kubeconfig_shape(data: Any) -> str | None:
    """A kubeconfig's shape, as the Kubernetes client reads it: a mapping whose `clusters` and `contexts` are
    non-empty lists (and `users` a list) of entries `{name: text, <kind>: mapping}`; a cluster has a `server`, a
    context its `cluster`; `current-context` is text when given."""
    if not isinstance(data, dict):
        return "not a mapping, so it is no kubeconfig"
    for key, (field, required) in KUBECONFIG_LISTS.items():
        entries = data.get(key, [] if key == "users" else None)
        if not isinstance(entries, list) or (key != "users" and not entries):
            return f"{key}: not a list of {field}s, so it is no kubeconfig"
        for index, entry in enumerate(entries):
            body = entry.get(field) if isinstance(entry, dict) else None
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not ((body is None and field == "user") or isinstance(body, dict)):
                return f"{key}[{index}]: not a {{name: ..., {field}: {{...}}}} entry"
            if required and not isinstance(body.get(required), str):  # type: ignore[union-attr]
                return f"{key}[{index}].{field}.{required}: missing or not text"
    if not isinstance(data.get("current-context", ""), str):
        return "current-context: not text"
    return None


MAX_KUBECONFIG_VALUE = 256 << 10  # an embedded certificate bundle or token, base64

CAMPAIGN_FILE = FileKind("campaign file", 1 << 20, "check the path or run `layerbench init`")  # examples: ~3 KB
PASSWORD_FILE = FileKind("password file", 4 << 10, "give a file holding the password alone, on one line of "
                         "printable text (a user without a password: remove password_file)", one_line_password)
KUBECONFIG = FileKind("kubeconfig", 1 << 20, "give the path of a kubeconfig (kubectl config view --raw writes one)")
IDENTITY_FILE = FileKind("private key", 64 << 10, "give the path of a private key (ssh-keygen writes one)",
                         private_key)
KNOWN_HOSTS = FileKind("known_hosts file", 16 << 20, "give the path of a known_hosts file (ssh-keyscan writes "
                       "one)", host_keys)
LUA_SCRIPT = FileKind("Lua script", 1 << 20, "give the path of a sysbench Lua script (text, under 1 MiB)")
INVENTORY_FILE = FileKind("inventory file", 1 << 20, "give a YAML file with a hosts: mapping, as a campaign's "
                          "(scripts/lab-hosts inventory writes one)")


def read_yaml_file(path: str | os.PathLike[str], kind: FileKind, where: str | None = None,
                   max_scalar: int | None = None) -> Any:
    """A YAML file read within its kind's bounds and parsed by the bounded loader (boundedyaml.py)."""
    text = read_user_file(path, kind, where)
    name = _head(path, where) if where else shown(str(path), 100, quote=False, keep_end=True)
    return load_text(text, name) if max_scalar is None else load_text(text, name, max_scalar)


def read_kubeconfig(path: str | os.PathLike[str], where: str) -> dict[str, Any]:
    """A kubeconfig, read within bounds, parsed by the bounded YAML loader and checked for its shape (one line
    naming `where`, the key that chose it, otherwise)."""
    data = read_yaml_file(path, KUBECONFIG, where, MAX_KUBECONFIG_VALUE)
    problem = kubeconfig_shape(data)
    if problem is not None:
        raise BadInput(f"{_head(path, where)}: {problem}; {KUBECONFIG.fix}")
    return dict(data)
