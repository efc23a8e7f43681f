"""A sysbench client that runs elsewhere (a container, a Kubernetes Job, another host): its private files under
one folder there, the command's paths rewritten to point at them, and its output collected as it streams in.
A leaf shared by the container and pod clients and the SSH runner."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from layerbench.secrets import Secret, redact

CLIENT_DIR = "/etc/layerbench-client"


def rewrite(cmd: list[str], files: dict[str, str], to: str = CLIENT_DIR) -> list[str]:
    """Point the command's file arguments (this host's paths) at the copies in folder `to` (where the client
    runs: the client container's mount, or a folder on another host); an option's or a variable's name before its
    `=` stays (`--config-file=`, env's `PGPASSFILE=`)."""
    out = []
    for arg in cmd:
        for name in files:
            if arg.endswith("/" + name):  # kept: an option's `--name=` or an env assignment's `NAME=` (PGPASSFILE)
                head = arg.split("=", 1)[0]
                keep = "=" in arg and (arg.startswith("--") or re.fullmatch(r"[A-Z_][A-Z0-9_]*", head) is not None)
                arg = f"{head}={to}/{name}" if keep else f"{to}/{name}"
        out.append(arg)
    return out


def collect_stream(chunks: Iterable[bytes], log_path: Path, on_line: Any, secrets: list[Secret]) -> str:
    """A client's output as it arrives in chunks (a container's or a pod's log): split into lines, redacted,
    appended to the run's log and handed to on_line (live TPS); returns the whole output."""
    lines = []
    pending = b""
    with log_path.open("a", encoding="utf-8") as log:
        for chunk in chunks:
            pending += chunk
            while b"\n" in pending:
                raw, pending = pending.split(b"\n", 1)
                line = redact(raw.decode(errors="replace"), secrets)
                lines.append(line + "\n")
                log.write(line + "\n")
                if on_line:
                    on_line(line)
    return "".join(lines) + redact(pending.decode(errors="replace"), secrets)
