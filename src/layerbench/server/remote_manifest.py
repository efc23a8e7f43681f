"""A dataset snapshot's manifest made on the host that holds the snapshot (an ssh: host whose own server prepared
it), so the harness never reads the dataset's bytes: the same Manifest (server/manifest.py) that build_manifest
makes here, each file's size, stat times, full hash (xxh3-128, `xxhsum -H2`) and sampled digest (xxh3-64 of the
same pages, `dd` + `xxhsum -H3`), computed by a shell script there with find, dd and xxhsum only.

The script prints one marked line per file; parsing it is pure and accepts nothing but what the script prints
(tests/unit/test_remote_manifest.py runs the script here against build_manifest, and feeds the parser hostile
lines)."""

from __future__ import annotations

import re
import shlex

from layerbench.server.manifest import EXCLUDED, PAGE, SAMPLES, FileEntry, Manifest, safe_name

FILE_MARK = "LB-FILE"
LINE = re.compile(r"(\d{1,20}) (\d{1,12})\.(\d{1,10}) (\d{1,12})\.(\d{1,10}) ([0-9a-f]{32}) ([0-9a-f]{16}) (.+)")


def manifest_script(datadir: str) -> str:
    """sh text printing `LB-FILE <size> <mtime> <ctime> <xxh3-128> <xxh3-64 of the sampled pages> <path>` for
    every regular file under datadir but the EXCLUDED ones. The sampled pages are manifest.sample_offsets': every
    page up to SAMPLES pages, else SAMPLES pages spread evenly, first and last included (no half-way ties: the
    rounding of (2 i (pages - 1) + 31) / 62 is floor, as Python's round is there)."""
    excluded = " ".join(f"! -name {shlex.quote(n)}" for n in sorted(EXCLUDED))
    hex16 = "tr -c '0-9a-f\\n' ' ' | tr ' ' '\\n' | grep -E '^[0-9a-f]{16}$' | tail -n 1"
    sampled = (f"pages=$(( (size + {PAGE - 1}) / {PAGE} )); [ \"$pages\" -lt 1 ] && pages=1; "
               f"if [ \"$pages\" -le {SAMPLES} ]; then cat -- \"$name\"; else i=0; "
               f"while [ $i -lt {SAMPLES} ]; do p=$(( (2 * i * (pages - 1) + {SAMPLES - 1}) / {2 * (SAMPLES - 1)} )); "
               f"dd if=\"$name\" bs={PAGE} skip=$p count=1 status=none; i=$((i + 1)); done; fi")
    return (f"set -e; cd {shlex.quote(datadir)}; find . -type f {excluded} -printf '%s %T@ %C@ %P\\n' | "
            "while read -r size mt ct name; do "
            "full=$(xxhsum -H2 < \"$name\" | cut -c1-32); "
            f"sample=$( {{ {sampled}; }} | xxhsum -H3 | {hex16}); "
            f"echo \"{FILE_MARK} $size $mt $ct $full $sample $name\"; done")


def nanoseconds(seconds: str, fraction: str) -> int:
    """find's `%T@` (seconds, a dot, up to ten fraction digits) as st_mtime_ns: the first nine digits count."""
    return int(seconds) * 1_000_000_000 + int((fraction + "0" * 9)[:9])


def parse_manifest(text: str) -> Manifest:
    """The marked lines of manifest_script's output -> the Manifest; other lines (ssh's own words) are ignored.
    A marked line that is not the script's, an unsafe path or a path given twice is ValueError."""
    files: dict[str, FileEntry] = {}
    for line in text.splitlines():
        if not line.startswith(FILE_MARK + " "):
            continue
        match = LINE.fullmatch(line[len(FILE_MARK) + 1:])
        if match is None:
            raise ValueError(f"not a manifest line: {line[:120]!r}")
        size, mt_s, mt_f, ct_s, ct_f, full, sample, name = match.groups()
        name = safe_name(name)
        if name in files:
            raise ValueError(f"file {name!r} listed twice")
        files[name] = FileEntry(int(size), full, sample, nanoseconds(mt_s, mt_f), nanoseconds(ct_s, ct_f))
    return Manifest(files)
