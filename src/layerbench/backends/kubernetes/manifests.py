"""The Kubernetes objects of one run as plain dicts (pure: no API calls): a labelled namespace, a Secret with the
server's init SQL (the password), a ConfigMap with the my.cnf, the server as a bare Pod or a one-replica
StatefulSet, a Service, and the sysbench Job.

QoS classes follow the kubelet's own rule (kubernetes.io/docs/concepts/workloads/pods/pod-qos): BestEffort has no
requests or limits; Guaranteed has cpu and memory limits equal to its requests; anything else is Burstable.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
from pathlib import Path
from typing import Any

from layerbench.backends.kubernetes import pgpod
from layerbench.backends.kubernetes.qos import (  # noqa: F401 - part of this module's vocabulary
    BURSTABLE_DEFAULT,
    GUARANTEED_DEFAULT,
    exclusive_cpus,
    resources_for,
)
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.hosts.client_files import CLIENT_DIR
from layerbench.server.bootstrap import server_files
from layerbench.server.servers import ServerProgram
from layerbench.server.spec import ServerSpec

DATADIR = "/var/lib/mysql"
CONF = "/etc/layerbench"
SECRET_DIR = "/etc/layerbench-secret"
SNAPSHOT = "/snapshot"
SOCKET = "/run/mysqld/mysqld.sock"
PORT = 3306
SERVER = "db"  # the server pod, its container, Service and StatefulSet: any flavour (a MySQL pod was "mariadb")

QOS_CLASS = {"besteffort": "BestEffort", "burstable": "Burstable", "guaranteed": "Guaranteed"}

def dns_name(text: str) -> str:
    """A DNS-1123 label (namespaces, object names): lower case, digits and '-', at most 63 characters."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:63].rstrip("-")
    return name or "layerbench"


def labels(campaign: str, label: str, role: str) -> dict[str, str]:
    """What every object of a run carries: `clean` finds it by these. The harness's PID and host tell a `clean` on
    this machine whether its harness lives; `layerbench.owner` (the process's random token) names the Lease a
    `clean` on any other machine reads for that (heartbeat.py)."""
    from layerbench.backends.kubernetes.heartbeat import OWNER_LABEL
    from layerbench.hosts.lease import harness_id

    value = label_value(campaign) or "campaign"
    return {"layerbench": "1", "layerbench.campaign": value, "layerbench.label": dns_name(label),
            "layerbench.role": role, "layerbench.harness": str(os.getpid()), "layerbench.host": host_label(),
            OWNER_LABEL: harness_id()}


def host_label() -> str:
    """This machine, so that `clean` never takes another machine's harness PID for a dead one of ours."""
    return label_value(socket.gethostname()) or "host"


def label_value(text: str) -> str:
    """A label value: at most 63 of A-Z, a-z, 0-9, '-', '_', '.', beginning and ending with a letter or digit (cut
    after the strip, then stripped again: a cut can end on a '-'); "" when nothing is left."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.")[:63].rstrip("-_.")


def namespace(name: str, meta_labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": meta_labels}}


def secret(name: str, ns: str, files: dict[str, str], meta_labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": name, "namespace": ns,
            "labels": meta_labels}, "stringData": files}


def config_map(name: str, ns: str, files: dict[str, str], meta_labels: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns,
            "labels": meta_labels}, "data": files}


def conf_map(server: ServerProgram) -> str:
    """The name of the ConfigMap of the server's configuration files."""
    return pgpod.CONF_MAP if server.flavour.is_postgresql else "mycnf"


def config_files(server: ServerProgram, spec: ServerSpec) -> tuple[dict[str, str], dict[str, str]]:
    """The ConfigMap's files (my.cnf, or postgresql.conf and pg_hba.conf) and the Secret's (the account's SQL: it
    holds the password) for a server of the flavour (a run's, a dataset's seed); the configuration is also kept in
    the spec's run folder."""
    if server.flavour.is_postgresql:
        return pgpod.server_files(spec, CONF)
    files = server_files(spec, server_settings(server), server.flavour)
    return {"my.cnf": files.mycnf}, {"init.sql": files.init_sql}


def secret_file(server: ServerProgram) -> str:
    """The Secret's file of the account's SQL: PostgreSQL's psql script, or MariaDB's and MySQL's init file."""
    return pgpod.ACCOUNT_FILE if server.flavour.is_postgresql else "init.sql"


def port_name(server: ServerProgram) -> str:
    return "postgresql" if server.flavour.is_postgresql else "mysql"


def ready_command(server: ServerProgram) -> list[str]:
    return pgpod.ready_command() if server.flavour.is_postgresql else server.flavour.ready_command(SOCKET)


def server_command(server: ServerProgram, fill_from_snapshot: bool, data_in_place: bool) -> list[str]:
    """Fill the datadir (from the snapshot, or with the flavour's own init; nothing when a hostPath already holds
    the copy), then run the flavour's program of the image (servers.image_server) in the foreground, logging to
    stderr (the pod's log); PostgreSQL's: pgpod.server_command."""
    if server.flavour.is_postgresql:
        return pgpod.server_command(fill_from_snapshot, data_in_place, SNAPSHOT, CONF, SECRET_DIR)
    steps = [f"mkdir -p {DATADIR} /run/mysqld"]
    if fill_from_snapshot and not data_in_place:
        steps.append(f"cp -a {SNAPSHOT}/. {DATADIR}/")
    elif not fill_from_snapshot:
        steps.append(shlex.join(server.flavour.init_command(server.command, Path(DATADIR))) + " >/dev/null")
    steps.append(f"exec {shlex.join(server.command)} --defaults-file={CONF}/my.cnf "
                 f"--init-file={SECRET_DIR}/init.sql")
    return ["sh", "-c", " && ".join(steps)]


def _data_volume(variant: KubernetesVariant, host_datadir: str | None) -> dict[str, Any] | None:
    if variant.storage == "emptydir":
        return {"name": "data", "emptyDir": {}}
    if variant.storage == "hostpath":
        return {"name": "data", "hostPath": {"path": host_datadir, "type": "Directory"}}
    if variant.kind == "pod":
        return {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    return None  # a StatefulSet's volumeClaimTemplate provides it


RESTORED_SNAPSHOT = "data"  # the run's VolumeSnapshot (volsnap.RUN_SNAPSHOT) a restored PVC is made from
VERIFY_SCRIPT = "cd {datadir} && find . -type f -print0 | sort -z | xargs -0 -r sha256sum"


def datadir_of(server: ServerProgram) -> str:
    """Where the flavour's datadir is in its pod: PostgreSQL's (pgpod.py), or MariaDB's and MySQL's."""
    return pgpod.DATADIR if server.flavour.is_postgresql else DATADIR


def port_of(server: ServerProgram) -> int:
    """The port the flavour's server listens on in its pod, and its Service's port."""
    return pgpod.PORT if server.flavour.is_postgresql else PORT


def claim_spec(variant: KubernetesVariant, *, restored: bool = False,
               source: str = RESTORED_SNAPSHOT) -> dict[str, Any]:
    """A PVC's spec: the variant's size and class; `restored`: made from the VolumeSnapshot `source` (the run's,
    or in namespace-scoped mode the seed's)."""
    origin = {"dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                             "name": source}} if restored else {}
    return {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": variant.storage_size}},
            **({"storageClassName": variant.storage_class} if variant.storage_class else {}), **origin}


def verify_container(image: str, fill: bool = False, datadir: str = DATADIR) -> dict[str, Any]:
    """Before the server: sha256 of every file of the restored datadir, in its log (the backend compares);
    `fill`: first copied into the (emptyDir) datadir from the read-only PVC made from the snapshot."""
    script = VERIFY_SCRIPT.format(datadir=datadir)
    if fill:
        return {"name": "verify", "image": image, "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", f"cp -a {SNAPSHOT}/. {datadir}/ && {script}"],
                "volumeMounts": [{"name": "data", "mountPath": datadir},
                                 {"name": "snapshot", "mountPath": SNAPSHOT, "readOnly": True}]}
    return {"name": "verify", "image": image, "imagePullPolicy": "IfNotPresent", "command": ["sh", "-c", script],
            "volumeMounts": [{"name": "data", "mountPath": datadir, "readOnly": True}]}


SOURCE_CLAIM = "snapshot"  # an emptydir variant's read-only PVC made from the snapshot, copied by its init container


def source_claim(variant: KubernetesVariant, ns: str, meta_labels: dict[str, str], source: str) -> dict[str, Any]:
    """An `emptydir` variant's restore from a VolumeSnapshot: a PVC of its class (or the cluster's default) made
    from the VolumeSnapshot `source`, mounted read-only by the init container that copies it into the emptyDir."""
    spec = claim_spec(variant, restored=True, source=source)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": SOURCE_CLAIM, "namespace": ns, "labels": meta_labels}, "spec": spec}


def pod_template(variant: KubernetesVariant, server: ServerProgram, image: str, meta_labels: dict[str, str], *,
                 snapshot_path: str | None, host_datadir: str | None, restart: str,
                 restored: bool = False) -> dict[str, Any]:
    """The server pod: my.cnf from the ConfigMap, init SQL from the Secret, the datadir on the chosen volume,
    the snapshot (when restored by copy) from a read-only hostPath; a PVC `restored` from a VolumeSnapshot is
    checked by an init container and used as it is. Its command and readiness probe are the flavour's."""
    datadir = datadir_of(server)
    mounts = [{"name": "conf", "mountPath": CONF, "readOnly": True},
              {"name": "init", "mountPath": SECRET_DIR, "readOnly": True},
              {"name": "data", "mountPath": datadir}]
    volumes = [{"name": "conf", "configMap": {"name": conf_map(server)}},
               {"name": "init", "secret": {"secretName": "server-init", "defaultMode": 0o400}}]
    data = _data_volume(variant, host_datadir)
    volumes += [data] if data else []
    in_place = variant.storage == "hostpath"
    if snapshot_path and not in_place:
        mounts.append({"name": "snapshot", "mountPath": SNAPSHOT, "readOnly": True})
        volumes.append({"name": "snapshot", "hostPath": {"path": snapshot_path, "type": "Directory"}})
    fill = restored and variant.storage == "emptydir"
    if fill:
        volumes.append({"name": "snapshot", "persistentVolumeClaim": {"claimName": SOURCE_CLAIM, "readOnly": True}})
    container = {
        "name": SERVER, "image": image, "imagePullPolicy": "IfNotPresent",
        "command": server_command(server, snapshot_path is not None or restored, in_place or restored),
        "ports": [{"containerPort": port_of(server), "name": port_name(server)}], "volumeMounts": mounts,
        "resources": resources_for(variant),
        "readinessProbe": {"exec": {"command": ready_command(server)},
                           "periodSeconds": 1, "timeoutSeconds": 5, "failureThreshold": 3},
    }
    spec = {"containers": [container], "volumes": volumes, "restartPolicy": restart,
            **({"initContainers": [verify_container(image, fill, datadir)]} if restored else {}),
            "terminationGracePeriodSeconds": 20, "enableServiceLinks": False,
            "automountServiceAccountToken": False, **({"nodeSelector": variant.node_selector}
                                                      if variant.node_selector else {})}
    return {"metadata": {"labels": meta_labels}, "spec": spec}


def server_objects(variant: KubernetesVariant, server: ServerProgram, image: str, ns: str,
                   meta_labels: dict[str, str], *, snapshot_path: str | None, host_datadir: str | None,
                   restored: bool = False, source: str = RESTORED_SNAPSHOT) -> list[dict[str, Any]]:
    """The server as a bare Pod (with a PVC when storage is pvc) or a one-replica StatefulSet, and its Service;
    `restored`: the PVC is made from the VolumeSnapshot `source` (no hostPath snapshot then), or for an emptydir
    the read-only PVC its init container copies from."""
    selector = {"layerbench.label": meta_labels["layerbench.label"], "layerbench.role": "server"}
    objects: list[dict[str, Any]] = []
    claim = claim_spec(variant, restored=restored, source=source)
    if restored and variant.storage == "emptydir":
        objects.append(source_claim(variant, ns, meta_labels, source))
    snapshot_path = None if restored else snapshot_path
    if variant.kind == "pod":
        template = pod_template(variant, server, image, meta_labels, snapshot_path=snapshot_path,
                                host_datadir=host_datadir, restart="Never", restored=restored)
        if variant.storage == "pvc":
            objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                            "metadata": {"name": "data", "namespace": ns, "labels": meta_labels}, "spec": claim})
        objects.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": SERVER, "namespace": ns,
                        "labels": meta_labels}, "spec": template["spec"]})
    else:
        template = pod_template(variant, server, image, meta_labels, snapshot_path=snapshot_path,
                                host_datadir=host_datadir, restart="Always", restored=restored)
        spec: dict[str, Any] = {"replicas": 1, "serviceName": SERVER, "selector": {"matchLabels": selector},
                                "template": template}
        if variant.storage == "pvc":
            spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": claim}]
        if restored and variant.storage == "pvc":  # made before the set (which adopts it by name): Bound first
            objects.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
                "name": f"data-{SERVER}-0", "namespace": ns, "labels": meta_labels}, "spec": claim})
        objects.append({"apiVersion": "apps/v1", "kind": "StatefulSet",
                        "metadata": {"name": SERVER, "namespace": ns, "labels": meta_labels}, "spec": spec})
    objects.append({"apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVER, "namespace": ns,
                    "labels": meta_labels}, "spec": {"selector": selector, "ports": [{"port": port_of(server),
                    "targetPort": port_of(server), "name": port_name(server)}]}})
    return objects


def client_placement(variant: KubernetesVariant, server_labels: dict[str, str]) -> dict[str, Any]:
    """Where the scheduler may put a sysbench Job's pod: `client_node_selector` (default: the server's
    `node_selector`) and, with `client_anti_affinity`, a required anti-affinity to the run's server pod per node
    (topology key kubernetes.io/hostname), so client and server never share a node."""
    selector = variant.node_selector if variant.client_node_selector is None else variant.client_node_selector
    placement: dict[str, Any] = {"nodeSelector": dict(selector)} if selector else {}
    if variant.client_anti_affinity:
        server = {"layerbench.label": server_labels["layerbench.label"], "layerbench.role": "server"}
        term = {"labelSelector": {"matchLabels": server}, "topologyKey": "kubernetes.io/hostname"}
        placement["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return placement


def server_settings(server: ServerProgram) -> dict[str, Any]:
    """What layerbench sets in the pod's my.cnf: where the datadir, socket and pid file are, the port, every address,
    and the server's own files where its image has them (a `mysqld:` root's basedir, messages, plugins)."""
    return {"datadir": DATADIR, "port": PORT, "socket": SOCKET, "bind-address": "0.0.0.0",
            "pid-file": "/run/mysqld/mysqld.pid", "user": "root", **server.paths}


def client_image(variant: KubernetesVariant, server_image: str) -> str:
    """The image a sysbench Job runs: the server's own, which has sysbench (layerbench's MariaDB image), except
    beside MySQL, whose image is the rootfs's server only: then layerbench's MariaDB image, the same sysbench 1.0.20
    (libmariadb) that runs on the host; it logs in to MySQL's caching_sha2_password accounts over TCP. Beside a
    MySQL image: of a registry, that MariaDB image in the same registry (`layerbench image push` pushes both), its tag
    derived from this machine's MariaDB; `client_image` when the variant names one (off a node, where that MariaDB
    need not be installed)."""
    if variant.client_image is not None:
        return variant.client_image
    if variant.server.flavour == "mysql" or variant.mysqld is not None:
        from layerbench.server.image import image_tag
        from layerbench.server.image_registry import registry_of

        registry = registry_of(variant.image) if variant.image is not None else None
        if variant.image is None or registry is not None:
            return f"{registry}/{image_tag()}" if registry else image_tag()
    return server_image


def client_job(image: str, ns: str, args: list[str], meta_labels: dict[str, str], *, name: str = "sysbench",
               secret: str = "sysbench-client", placement: dict[str, Any] | None = None) -> dict[str, Any]:
    """sysbench as a Job (no retries: a failed benchmark is a failed run), its files from the Secret `secret`,
    placed as `placement` (from client_placement) says."""
    container = {"name": "sysbench", "image": image, "imagePullPolicy": "IfNotPresent", "command": args,
                 "volumeMounts": [{"name": "client", "mountPath": CLIENT_DIR, "readOnly": True}]}
    spec = {"restartPolicy": "Never", "containers": [container], "enableServiceLinks": False,
            "automountServiceAccountToken": False,
            "volumes": [{"name": "client", "secret": {"secretName": secret, "defaultMode": 0o400}}],
            **(placement or {})}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns,
            "labels": meta_labels}, "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": meta_labels},
                                                                               "spec": spec}}}
