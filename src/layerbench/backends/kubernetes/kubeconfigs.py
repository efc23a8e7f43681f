"""Which kubeconfig a kubernetes variant uses and which cluster it points at, as the plan names it: no API call
and no import of the variant (variant.py's plan text and cluster.py's client both use it)."""

from __future__ import annotations

import os
from pathlib import Path

from layerbench.bounded_read import KUBECONFIG, check_file_type, read_kubeconfig
from layerbench.envvars import env_setting
from layerbench.errors import BadInput, shown


def local_kubeconfig() -> Path:
    """The kubeconfig that scripts/k8s-local writes."""
    return Path(env_setting("K8S_LOCAL_DIR") or "/var/tmp/layerbench-k8s") / "kubeconfig"  # as scripts/k8s-local


def chosen_kubeconfig(given: str | None, where: str) -> Path:
    """`given` (a variant's kubeconfig), else $KUBECONFIG, else ~/.kube/config, else the local cluster's: a regular
    file (bounded_read.py; read by read_kubeconfig, and by kubectl for a port-forward)."""
    if given:
        path = Path(given).expanduser()
        check_file_type(path, KUBECONFIG, where)
        return path
    candidates = [Path(p) for p in os.environ.get("KUBECONFIG", "").split(":") if p]
    candidates += [Path.home() / ".kube" / "config", local_kubeconfig()]
    for path in candidates:
        if path.is_file():
            return path
    raise BadInput(f"{where}: no kubeconfig found (KUBECONFIG, ~/.kube/config, {local_kubeconfig()}); start the "
                   "local cluster with `scripts/k8s-local up` or set kubeconfig")


def cluster_words(kubeconfig: str | None, context: str | None, variant: str) -> tuple[str, bool]:
    """The cluster a variant's `kubeconfig` and `context` point at, as the plan names it (the kubeconfig chosen as
    chosen_kubeconfig chooses it), and whether that is the local cluster scripts/k8s-local makes (or no kubeconfig
    is there yet)."""
    where = f"variants.{variant}.kubeconfig"
    try:
        path = chosen_kubeconfig(kubeconfig, where)
        data = read_kubeconfig(path, where)
    except BadInput:  # refused with its fix by the backend's check; the plan says what it would use
        return ("the local cluster (scripts/k8s-local)" if kubeconfig is None else
                f"the cluster of {shown(kubeconfig, 120, quote=False)}"), kubeconfig is None
    context = context or str(data.get("current-context") or "")
    server = entry(data, "cluster", str(entry(data, "context", context).get("cluster"))).get("server")
    local = kubeconfig is None and path.resolve() == local_kubeconfig().resolve()
    which = " (scripts/k8s-local)" if local else ""
    at = f" at {shown(str(server), 120, quote=False)}" if server else ""
    return (f"the cluster{which} of context {shown(context, 80, quote=False)}{at} in "
            f"{shown(str(path), 160, quote=False)}"), local


def entry(kubeconfig: dict[str, object], kind: str, name: str) -> dict[str, object]:
    """The `kind` (context, cluster) named `name` in a kubeconfig's list of them; {} when there is none."""
    items = kubeconfig.get(f"{kind}s")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("name") == name and isinstance(item.get(kind), dict):
            return dict(item[kind])
    return {}
