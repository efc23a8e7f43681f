"""The sizes of the campaign file: each field's grammar, the one reader of a size in bytes, Kubernetes quantities,
and the one formatter of bytes for people.

The grammars differ on purpose: each takes what the program that reads the size takes (or what layerbench turns
into that program's spelling), so that nothing the campaign file accepts is refused later by that program.

- `size_in_bytes` (SERVER_SIZE_RE): server.config's innodb_buffer_pool_size, as my.cnf reads it; a number (bytes),
  or 1-15 digits, up to 6 decimals, a K/M/G/T/P/E suffix in either case and an optional b. The widest: it reads the
  bytes of every grammar below but the quantity, each of which it takes whole.
- DOCKER_MEMORY_RE: a docker variant's resources.memory, as `docker run --memory` takes it: up to 12 digits, up to
  6 decimals, b/k/m/g in either case or no suffix (bytes).
- QEMU_MEMORY_RE: a vm variant's memory, as QEMU's `-m` takes it: 1-9 digits, K/M/G/T in either case or none (QEMU
  reads a bare number as MiB, size_in_bytes as bytes).
- CONTAINER_MEMORY_RE: a neighbour's resources.memory: 1-7 digits and k, m or g in lower case, since it is given
  to Docker as it is and to Kubernetes by its suffix (512m -> 512Mi).
- TOOL_SIZE_RE: a neighbour's size and block_size, and its bitrate (bits/s), as stress-ng, fio and iperf3 all
  take them: 1-7 digits and K, M or G in upper case.
- PUBLISHED_SIZE_RE: published.size's data, buffer_pool and ram, as studies print them (never given to a
  program): 1-6 digits, up to 3 decimals, K/M/G/T in upper case, then an optional i and B (45GiB); one space
  may come before the unit; not zero.
- K8S_STORAGE_RE: a kubernetes variant's storage_size, a PVC's: 1-9 digits, Ki/Mi/Gi/Ti/k/M/G/T or none.
- `quantity` (QUANTITY_RE): a kubernetes variant's requests and limits, as the API server reads them: decimals,
  exponents, every suffix and m (milli).

Hostile input, as each grammar takes it (tests/unit/test_vocabulary.py pins each line):
- digits are ASCII only ([0-9]; issue #44): `\\d` of Python's re and of pydantic's patterns (Rust's regex) is any
  Unicode decimal digit (`２g`, `٣G`), which float() and int() read but taskset, fio, iperf3 and Docker do not.
- whitespace: size_in_bytes, the Docker memory (ASCII spaces only, stripped from the value since issue #44: it
  reaches Docker as it is), the published sizes and the quantity take spaces (any Unicode whitespace) around the
  size; the others none, not even a trailing newline.
- empty or blank text: refused by all.
- huge numbers: each grammar bounds its digits, the quantity too (issue #44): at most 19 digits, 9 decimals and
  a 2-digit exponent, so Decimal reads it at once and never overflows, and a value above 2^63 - 1 (the kubelet's
  int64) is refused. size_in_bytes reads sizes below 2^63 only, given as a number or as text (issue #44:
  999999999999999E, about 2^110, was read).
- zero: a size a tool reads as "unlimited" is refused where the field is checked (refuse_zero): a Docker memory
  of 0 bytes (or one that rounds to 0), a neighbour's container memory, fio size, block size and iperf3 bitrate
  of 0; a Kubernetes limit below 1m CPU or 1 byte (backends/kubernetes/qos.py); a container's cpus below 0.01
  (vocabulary/cpus.py cpus_of_a_container).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Literal

from layerbench.errors import shown

SERVER_SIZE_RE = re.compile(r"\s*([0-9]{1,15}(?:\.[0-9]{1,6})?)\s*([kmgtpe]?)b?\s*", re.IGNORECASE)
DOCKER_MEMORY_RE = re.compile(r"[0-9]{1,12}(\.[0-9]{1,6})?[bkmgBKMG]?")  # matched against the stripped value
QEMU_MEMORY_RE = r"^[0-9]{1,9}[KMGTkmgt]?$"  # a pydantic pattern
CONTAINER_MEMORY_RE = r"^[0-9]{1,7}[kmg]$"  # a pydantic pattern
TOOL_SIZE_RE = re.compile(r"^([0-9]{1,7})([KMG])$")
PUBLISHED_SIZE_RE = re.compile(r"([0-9]{1,6}(?:\.[0-9]{1,3})?)\s?([KMGT])i?B?")  # matched against the stripped text
K8S_STORAGE_RE = r"^[0-9]{1,9}(Ki|Mi|Gi|Ti|k|M|G|T)?$"  # a pydantic pattern
# At most 19 digits before the point, 9 after, and an exponent of 2 digits: Decimal reads that in microseconds and
# it is far beyond any machine; the value itself is below 2^63 (the kubelet's int64), see quantity()
QUANTITY_RE = re.compile(
    r"\s*([0-9]{1,19}(?:\.[0-9]{1,9})?(?:[eE][+-]?[0-9]{1,2})?)\s*(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?\s*")
QUANTITY_MAX = 2**63 - 1
QUANTITY_SUFFIX = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
                   "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "m": Decimal("0.001")}
ByteUnit = Literal["B", "KiB", "MiB", "GiB", "TiB"]
BYTE_UNITS: dict[str, int] = {"B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}  # powers of 2


def size_in_bytes(value: Any) -> int | None:
    """A server-style size (a number of bytes, or with a K, M, G, T, P or E suffix, each a power of 1024, as
    my.cnf, Docker and QEMU read them) in bytes; None when it is no such size."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int | float):
        return int(value) if 0 <= value < 2**63 else None
    match = SERVER_SIZE_RE.fullmatch(value)
    if not match:
        return None
    size = int(float(match.group(1)) * 1024 ** "bkmgtpe".index(match.group(2).lower() or "b"))
    return size if size < 2**63 else None  # what my.cnf, Docker and QEMU hold (int64); 999999999999999E is 2^110


def refuse_zero(value: str | None, size: float | None, tool: str, fix: str, meaning: str = "unlimited") -> str | None:
    """`value`, unless its `size` (in bytes, CPUs or bits/s) is 0 or rounds to 0 where `tool` reads it, which the
    tool takes as "no limit" (or as its own default): then ValueError with what 0 means and `fix`. The plan never
    prints a limit that is not applied."""
    if value is not None and size is not None and size <= 0:
        raise ValueError(f"{shown(value)} comes to 0 for {tool}, and 0 means {meaning} to {tool}; {fix}")
    return value


def in_mib(size: int) -> int:
    """A size rounded up to whole MiB."""
    return -(-size // (1 << 20))


def tool_size_bytes(text: str) -> int:
    """64M as bytes (powers of 1024); the text is already checked against TOOL_SIZE_RE."""
    return size_in_bytes(text) or 0


def published_size_bytes(text: str) -> int:
    """A study's size (2.3G, 256M, 45GiB: powers of 1024) in bytes; 0 when it is none (zero is none either)."""
    match = PUBLISHED_SIZE_RE.fullmatch(text.strip())
    return (size_in_bytes(match.group(1) + match.group(2)) or 0) if match else 0


def quantity(text: str) -> Decimal:
    """A Kubernetes resource quantity ("500m", "1.5", "2Gi", "1e3") as a number of units (cores or bytes)."""
    match = QUANTITY_RE.fullmatch(str(text)) if len(str(text)) <= 64 else None
    if not match:
        raise ValueError(f"{shown(text)} is not a Kubernetes quantity (like 500m, 2, 512Mi, 4Gi), with at most "
                         "19 digits, 9 decimals and a 2-digit exponent")
    value = Decimal(match.group(1)) * Decimal(QUANTITY_SUFFIX[match.group(2) or ""])
    if value > QUANTITY_MAX:
        raise ValueError(f"{shown(text)} is more than Kubernetes holds (2^63 - 1); write a smaller quantity")
    return value


def quantity_text(value: Decimal, resource: str) -> str:
    """A quantity as Kubernetes writes it back: CPUs with up to 3 decimals (1.5), memory in whole Mi (3841Mi)."""
    return f"{value:.3f}".rstrip("0").rstrip(".") if resource == "cpu" else f"{value / 2**20:.0f}Mi"


def byte_text(size: float, unit: ByteUnit | Literal["auto"] = "GiB", spec: str = ".2f") -> str:
    """Bytes for people, in powers of 1024: `size` in `unit` (B, KiB, MiB, GiB, TiB) with the format spec `spec`
    (1.50 GiB; 512 MiB with spec .0f; 1,234 MiB with ,.0f). Unit "auto": the largest unit the size reaches,
    whole bytes below 1 KiB (512 B, 1.5 KiB, 2.3 GiB with spec .1f)."""
    shown = unit
    if unit == "auto":
        shown = next((u for u in ("TiB", "GiB", "MiB", "KiB") if size >= 2 ** BYTE_UNITS[u]), "B")
        spec = ".0f" if shown == "B" else spec
    return f"{size / 2 ** BYTE_UNITS[shown]:{spec}} {shown}"
