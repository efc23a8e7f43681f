"""CPUs in the campaign file: the CPU-list grammar (taskset's: 0 or 0,1 or 0-3) and its reader, and the QoS presets
with the rule they share."""

from __future__ import annotations

import re
from functools import partial
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator

from layerbench.errors import shown
from layerbench.vocabulary.limits import MAX_CPU

# The presets of a container's or pod's size (backends/docker/qos.py, backends/kubernetes/neighbours.py): the
# kubelet's QoS classes, and Guaranteed on the static CPU manager (whole, exclusive CPUs).
QosPreset = Literal["besteffort", "burstable", "guaranteed", "guaranteed-pinned"]


def cpu_list(value: Any, *, digits: int = 5, highest: int | None = MAX_CPU) -> str | None:
    """A taskset CPU list (0 or 0,1 or 0-3) without its spaces; ValueError with the fix otherwise. Each CPU number
    has at most `digits` digits and, unless `highest` is None, is at most `highest`.

    The two lists differ so far, and each is kept as it was: a variant's (`cpus`, `client_cpus`,
    `resources.cpuset`: the defaults, CPUs 0..MAX_CPU as docs/campaign.md's Limits say) and a neighbour's
    (`cpu_list(digits=4, highest=None)`: CPUs 0..9999, whose existence preflight checks). Both take ASCII
    digits only (issue #44): `\\d` took `٣`, which int() reads and taskset does not."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(f"{shown(value)} is not a CPU list; write it like 0 or 0,1 or 0-3")
    text = str(value).replace(" ", "")
    number = rf"[0-9]{{1,{digits}}}"
    if len(text) > 200 or not re.fullmatch(rf"{number}(-{number})?(,{number}(-{number})?)*", text):
        raise ValueError(f"{shown(value)} is not a CPU list; write it like 0 or 0,1 or 0-3")
    for part in text.split(","):
        low, _, high = part.partition("-")
        if (highest is not None and int(high or low) > highest) or int(high or low) < int(low):
            bound = "" if highest is None else f" with CPUs up to {highest}"
            raise ValueError(f"{shown(part)} is not a CPU range; write low-high{bound}")
    return text


CpuList = Annotated[str | None, BeforeValidator(cpu_list)]  # a variant's
NeighbourCpuList = Annotated[str | None, BeforeValidator(partial(cpu_list, digits=4, highest=None))]


def cpus_of_a_container(value: float | None) -> float | None:
    """A container's `cpus` (Docker's --cpus, a pod's CPU quantity): at least 0.01, Docker's least. Below 1e-9 it
    rounds to 0 nanoCPUs, which means unlimited to Docker; between, Docker refuses it at the run."""
    if value is not None and value < 0.01:
        raise ValueError(f"{value:g} CPUs is below 0.01, which Docker refuses (and 0 nanoCPUs, what a smaller value "
                         "rounds to, means unlimited to Docker); write at least 0.01")
    return value


def cpu_set(text: str) -> set[int]:
    """The CPUs of a taskset-style list ("0", "0,2", "1-3"); the campaign has validated its syntax."""
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        cpus |= set(range(int(low), int(high or low) + 1))
    return cpus


def whole_cpus_problem(qos: str | None, cpus: float | None) -> str | None:
    """guaranteed-pinned gives whole, exclusive CPUs: why `cpus` cannot be its size, or None."""
    if qos == "guaranteed-pinned" and cpus is not None and cpus != int(cpus):
        return f"resources.cpus: {cpus:g} is not a whole number; guaranteed-pinned needs whole CPUs"
    return None
