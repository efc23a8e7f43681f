"""Files a pod's tool writes, brought back through the pod's log (read by the API), not a hostPath: the tool runs
under a small `sh` wrapper that writes into an emptyDir mounted at the folder's own path, forwards SIGTERM to
the tool, waits for it, then prints each regular file of the folder as a marker line and its base64 text, and
exits with the tool's code. `unpack()` splits such a log into the tool's own output and the files (names
checked, sizes bounded), so a pod neighbour's report reaches the run's folder wherever its node is."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path

MARK = "==layerbench-file=="
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
LOG_LIMIT = 32 * 2**20  # bytes of a pod's log read back: a report is kilobytes, the tool's chatter is cut

WRAPPER = (
    'folder=$1; shift; mkdir -p "$folder"; "$@" & child=$!; trap \'kill -TERM $child 2>/dev/null\' TERM INT; '
    'wait $child; code=$?; if kill -0 $child 2>/dev/null; then wait $child; code=$?; fi; '
    'for f in "$folder"/*; do if [ -f "$f" ]; then printf "\\n%s %s\\n" "' + MARK + '" "${f##*/}"; '
    'base64 -w0 "$f"; echo; fi; done; exit $code')


def wrapped(folder: Path, command: list[str]) -> list[str]:
    """The command as the pod runs it: the tool, then the files it left in `folder`, in its log."""
    return ["sh", "-c", WRAPPER, "layerbench-files", str(folder), *command]


def unpack(log: bytes) -> tuple[str, dict[str, bytes]]:
    """(the tool's own output, {file name: its bytes}) of such a log; a file whose name or text is not what the
    wrapper writes is left out, as is anything past LOG_LIMIT."""
    text = log[:LOG_LIMIT].decode("utf-8", "replace")
    head, _, rest = text.partition(f"\n{MARK} ")
    files: dict[str, bytes] = {}
    for part in rest.split(f"\n{MARK} ") if rest else []:
        name, _, body = part.partition("\n")
        if not NAME_RE.fullmatch(name) or name in files:
            continue
        try:
            files[name] = base64.b64decode(body.strip(), validate=True)
        except (binascii.Error, ValueError):
            continue
    return head, files


def write_files(folder: Path, files: dict[str, bytes]) -> None:
    """The unpacked files into `folder` (names are single path components: NAME_RE)."""
    for name, data in files.items():
        (folder / name).write_bytes(data)
