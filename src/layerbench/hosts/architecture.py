"""CPU architectures, named one way: the names `uname -m`, Debian, Go (Docker, containerd, Kubernetes'
`node.status.nodeInfo.architecture`) and QEMU use for one architecture (x86_64/amd64, aarch64/arm64, ...) made one,
and the one check that an image (or a VM's file) was built for the machine that will run it: a server image against
a cluster's nodes (backends/kubernetes), an image shipped to an SSH host, a VM image against this machine."""

from __future__ import annotations

import platform
from collections.abc import Iterable

from layerbench.errors import BadInput, shown

# every spelling seen for one architecture -> the Go/OCI name (what image configs and the kubelet say)
ALIASES: dict[str, str] = {
    "x86_64": "amd64", "amd64": "amd64", "x86-64": "amd64", "x64": "amd64",
    "aarch64": "arm64", "arm64": "arm64", "armv8": "arm64", "armv8l": "arm64", "arm64v8": "arm64",
    "i386": "386", "i486": "386", "i586": "386", "i686": "386", "386": "386", "x86": "386",
    "armv7l": "arm", "armv7": "arm", "armhf": "arm", "armel": "arm", "armv6l": "arm", "arm": "arm",
    "ppc64le": "ppc64le", "ppc64el": "ppc64le", "powerpc64le": "ppc64le",
    "s390x": "s390x", "riscv64": "riscv64", "mips64el": "mips64le", "mips64le": "mips64le",
    "loongarch64": "loong64", "loong64": "loong64",
}
NAME_LIMIT = 40  # longer is no architecture name


def normalise(name: str) -> str:
    """The Go/OCI name of an architecture however it is spelled (case and surrounding blanks ignored); a name
    not known here is kept, lower-cased, so two spellings of an unknown one still compare equal."""
    key = name.strip().lower()[:NAME_LIMIT].strip()  # cut, then trimmed again: idempotent
    return ALIASES.get(key, key)


def this_machine() -> str:
    """This machine's architecture (`uname -m`), normalised: what an image built here is made for."""
    return normalise(platform.machine())


def check_same(what: str, arch: str, where: str, machines: Iterable[tuple[str, str]], fix: str) -> None:
    """An image (or file) built for `arch` must run on every machine of `machines` ((name, its architecture)):
    else one line naming the field `where`, the image's architecture, the machines that differ and `fix`."""
    made_for = normalise(arch)
    if not made_for:
        raise BadInput(f"{where}: {what} names no CPU architecture, so it cannot be checked against the machines "
                       f"that run it; {fix}")
    other = sorted({(name, normalise(machine)) for name, machine in machines if normalise(machine) != made_for})
    if not other:
        return
    names = ", ".join(f"{shown(name, 40, quote=False)} ({shown(machine, 20, quote=False)})" for name, machine in
                      other[:4])
    more = f" and {len(other) - 4} more" if len(other) > 4 else ""
    raise BadInput(f"{where}: {what} is built for {shown(made_for, 20, quote=False)}, but {names}{more} "
                   f"{'is' if len(other) == 1 else 'are'} not; {fix}")
