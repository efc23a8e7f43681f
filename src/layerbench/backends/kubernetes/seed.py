"""Datasets made in the cluster (issue #41, item 3): when the dataset snapshot of this machine cannot reach the
server's node through a hostPath (the harness is not that node, or namespace-scoped mode, which cannot read the
nodes), the dataset is prepared in the cluster, the way a user's own cluster would make it:

1. a seed PVC in the variant's storage class (its `storage_class`, else the cluster's default);
2. a seed server pod of the variant's own image and flavour on it (the flavour's own datadir init), with a
   ConfigMap (my.cnf: a 256 MiB buffer pool, no buffer pool dump at shutdown: runs start cold; PostgreSQL's
   postgresql.conf and pg_hba.conf) and a Secret (the account, a fresh password);
3. `sysbench prepare` as a Job (the image `client: job` runs, manifests.client_image), to the pod's IP, in the
   flavour's driver;
4. a clean shutdown: a Job runs `mariadb-admin shutdown` (MySQL: `SHUTDOWN`; PostgreSQL: an exec in the server
   container, pgseed.py), and the server pod must end with exit code 0;
5. a pod that hashes every file of the PVC (sha256, the format volsnap compares) and their sizes;
6. one VolumeSnapshot of the PVC, waited for readyToUse.

That is the `HostDatasets` of server/spec.py for the cluster (`ClusterSeeds`): made once per campaign, dataset
key and place (kubeconfig, context, namespace, storage and snapshot class) by this process, and reused by every
run of every variant there. The hashes go into the snapshot's meta (`sha256`) and the seeding run's folder
(`dataset-seed.json`); each run's PVC is made from the VolumeSnapshot (through a pre-provisioned content in its
own namespace, volsnap.SeedSnapshots.for_run; in namespace-scoped mode straight from the seed's VolumeSnapshot,
which is in the same namespace) and its init container's hashes are compared with them before its server starts.

Everything the seed creates carries the campaign's labels (role `seed`): a namespace of its own, deleted at the
campaign's end, on error and on Ctrl-C (backends.base.at_campaign_end) and by `layerbench clean` after a crash; in
namespace-scoped mode its objects in the shared namespace, deleted by their label the same way."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from layerbench.backends.kubernetes import cluster, heartbeat, manifests, scoped, volsnap
from layerbench.backends.kubernetes.job import JobClient
from layerbench.backends.kubernetes.pgseed import PostgresqlSeed
from layerbench.backends.kubernetes.variant import KubernetesVariant
from layerbench.endpoint import Endpoint
from layerbench.errors import RunFailed
from layerbench.secrets import generate_password, write_private
from layerbench.server.manifest import EXCLUDED
from layerbench.server.prepare import prepare_tables
from layerbench.server.servers import ServerProgram
from layerbench.server.snapshot import Snapshot, dataset_key
from layerbench.server.spec import DatasetRequest, ServerSpec

ROLE = "seed"
SEEDED = "seeded in the cluster by Jobs"  # the run's record: which path made its data (else volsnap.COPIED)
PREPARE_CONFIG: dict[str, Any] = {"innodb_buffer_pool_size": "256M", "innodb_flush_log_at_trx_commit": 2,
                                  "innodb_buffer_pool_dump_at_shutdown": "OFF"}
SIZE_PREFIX = "layerbench-size"
HASH_SCRIPT = (volsnap.HASH_SCRIPT.format(dir=manifests.DATADIR)
               + f" && find . -type f -printf '{SIZE_PREFIX} %s %P\\n'")
FACTS_FILE = "dataset-seed.json"
SHUTDOWN_FILE = "seed-client.cnf"
_MADE: dict[tuple[str, ...], Snapshot] = {}  # (campaign, dataset key, place) -> the seed, this process


def seed_prefix(campaign: str, key: str, place: str) -> str:
    """The seed's name: `seed-<hash>` of the campaign, dataset key and place; a valid DNS label whatever they
    hold."""
    digest = hashlib.sha256(f"{campaign}\0{key}\0{place}".encode()).hexdigest()[:12]
    return f"seed-{digest}"


def seed_namespace(campaign: str, prefix: str) -> str:
    """The seed's own namespace (per-run namespaces): `lb-seed-<campaign>-<hash>`, a DNS label."""
    return manifests.dns_name(f"lb-seed-{manifests.dns_name(campaign)[:30]}-{prefix.removeprefix('seed-')}")


def place_of(variant: KubernetesVariant, klass: str | None) -> str:
    """Where a seed can be shared: the same cluster account, namespace mode, storage and snapshot class."""
    return json.dumps([variant.kubeconfig, variant.context, variant.namespace, variant.storage_class, klass])


def parse_sizes(text: str) -> dict[str, int]:
    """`layerbench-size <bytes> <name>` lines as {name: bytes}; other lines are ignored."""
    found = {}
    for line in text.splitlines():
        head, _, rest = line.partition(" ")
        size, _, name = rest.partition(" ")
        if head == SIZE_PREFIX and size.isdigit() and size.isascii() and name:
            found[name] = int(size)
    return found


def seed_server_pod(name: str, ns: str, image: str, server: ServerProgram, prefix: str,
                    meta_labels: dict[str, str]) -> dict[str, Any]:
    """The seed's server: the flavour's own init on the empty PVC, then the server (exit 0 after a clean
    shutdown: restartPolicy Never, so the pod ends Succeeded). Deleted only once it ended, or to drop a half-made
    seed: a grace period of 1 s (the shell of MariaDB's init step, PID 1, ignores SIGTERM; a grace of 60 s cost a
    minute on each interrupted seed)."""
    container = {"name": manifests.SERVER, "image": image, "imagePullPolicy": "IfNotPresent",
                 "command": manifests.server_command(server, False, False),
                 "ports": [{"containerPort": manifests.port_of(server), "name": manifests.port_name(server)}],
                 "volumeMounts": [{"name": "conf", "mountPath": manifests.CONF, "readOnly": True},
                                  {"name": "init", "mountPath": manifests.SECRET_DIR, "readOnly": True},
                                  {"name": "data", "mountPath": manifests.datadir_of(server)}],
                 "readinessProbe": {"exec": {"command": manifests.ready_command(server)},
                                    "periodSeconds": 1, "timeoutSeconds": 5, "failureThreshold": 3}}
    volumes = [{"name": "conf", "configMap": {"name": f"{prefix}-{manifests.conf_map(server)}"}},
               {"name": "init", "secret": {"secretName": f"{prefix}-init", "defaultMode": 0o400}},
               {"name": "data", "persistentVolumeClaim": {"claimName": prefix}}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": meta_labels},
            "spec": {"containers": [container], "volumes": volumes, "restartPolicy": "Never",
                     "terminationGracePeriodSeconds": 1, "enableServiceLinks": False,
                     "automountServiceAccountToken": False}}


def hash_pod(name: str, ns: str, image: str, prefix: str, meta_labels: dict[str, str]) -> dict[str, Any]:
    """A pod that prints the sha256 and the size of every file of the seed PVC (mounted read-only)."""
    container = {"name": "sha256", "image": image, "imagePullPolicy": "IfNotPresent",
                 "command": ["sh", "-c", HASH_SCRIPT],
                 "volumeMounts": [{"name": "data", "mountPath": manifests.DATADIR, "readOnly": True}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": meta_labels},
            "spec": {"containers": [container], "restartPolicy": "Never", "enableServiceLinks": False,
                     "automountServiceAccountToken": False, "terminationGracePeriodSeconds": 1,
                     "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": prefix, "readOnly": True}}]}}


def seed_claim(variant: KubernetesVariant, name: str, ns: str, meta_labels: dict[str, str]) -> dict[str, Any]:
    """The seed PVC: the variant's size and class (the cluster's default class when it names none)."""
    spec = manifests.claim_spec(variant)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns, "labels": meta_labels}, "spec": spec}


def client_cnf(endpoint: Endpoint) -> str:
    """A [client] file for the shutdown Job's client (a Secret: it holds the password)."""
    return (f"[client]\nhost={endpoint.host}\nport={endpoint.port}\nuser={endpoint.user}\n"
            f"password={endpoint.password.reveal()}\n")


def shutdown_command(is_mariadb: bool, cnf: Path) -> list[str]:
    """The Job's command that stops the seed's server cleanly, with the client image's MariaDB clients: MariaDB's
    `mariadb-admin shutdown` (COM_SHUTDOWN); MySQL's SQL `SHUTDOWN` statement, since MySQL 8.0 answers COM_SHUTDOWN
    with 'Unknown command'."""
    if is_mariadb:
        return ["mariadb-admin", f"--defaults-extra-file={cnf}", "shutdown"]
    return ["mariadb", f"--defaults-extra-file={cnf}", "-e", "SHUTDOWN"]


class MysqlSeed:
    """What a MariaDB or MySQL seed does its own way (pgseed.PostgresqlSeed is PostgreSQL's)."""

    def __init__(self, server: ServerProgram) -> None:
        self.server = server

    def config(self, page_size: str | None) -> dict[str, Any]:
        return PREPARE_CONFIG | ({"innodb_page_size": page_size} if page_size else {})

    def stop(self, seeding: Seeding, job: JobClient, endpoint: Endpoint) -> None:
        """A clean shutdown from a Job (shutdown_command); the server pod must then end Succeeded (exit 0)."""
        cnf = write_private(seeding.request.private_dir / SHUTDOWN_FILE, client_cnf(endpoint))
        done = job.run_client(shutdown_command(self.server.flavour.is_mariadb, cnf),
                              {SHUTDOWN_FILE: cnf.read_text(encoding="utf-8")},
                              log_path=seeding.log_dir / "shutdown.log", timeout=seeding.timeout,
                              secrets=[endpoint.password])
        if done.returncode != 0:
            raise RunFailed(f"the seed's server in {seeding.ns} did not take the shutdown (exit {done.returncode}); "
                            "see seed/shutdown.log")
        seeding.finished(f"{seeding.prefix}-db", "the seed's server (a clean shutdown)")

    def table_bytes(self, sizes: dict[str, int], database: str) -> int:
        """The bytes of the benchmark's InnoDB tables (<database>/*.ibd)."""
        return sum(size for name, size in sizes.items() if name.startswith(f"{database}/")
                   and name.endswith(".ibd") and name.count("/") == 1)


def seed_endpoint(server: ServerProgram, pod_ip: str, spec: ServerSpec) -> Endpoint:
    """The seed server's address from the prepare Job: the pod's IP, the flavour's port and driver."""
    return Endpoint(pod_ip, manifests.port_of(server), spec.user, spec.password, spec.database,
                    driver=server.flavour.driver)


def seed_kind(server: ServerProgram) -> MysqlSeed | PostgresqlSeed:
    return PostgresqlSeed(server) if server.flavour.is_postgresql else MysqlSeed(server)


def recorded_hashes(hashes: dict[str, str]) -> dict[str, str]:
    """The files a restore must hold: all but those no snapshot carries (a pid file, a buffer pool dump)."""
    return {name: digest for name, digest in hashes.items() if Path(name).name not in EXCLUDED}


class ClusterSeeds:
    """The dataset snapshots of a kubernetes variant made in its cluster (the HostDatasets of server/spec.py)."""

    def __init__(self, api: Any, core: Any, variant: KubernetesVariant, server: ServerProgram, image: str) -> None:
        self.api, self.core, self.variant, self.server, self.image = api, core, variant, server, image
        self.klass: str | None = variant.snapshot_class
        self.campaign = ""
        self.host = f"the cluster ({variant.context or 'current context'})"

    def key(self, request: DatasetRequest) -> tuple[str, dict[str, Any]]:
        """The dataset's key: its inputs and the image that prepares it (its server's identity)."""
        return dataset_key(request.workload, f"image {self.image} ({self.server.flavour})", request.page_size)

    def snapshot(self, request: DatasetRequest) -> Snapshot:
        from layerbench.backends.kubernetes.access import readable_403

        self.campaign = request.campaign
        with readable_403(f"variants.{self.variant.name}"):
            self.klass = self.klass or cluster.seed_snapshot_class(self.api, self.variant, RunFailed)
            return self.made(request)

    def made(self, request: DatasetRequest) -> Snapshot:
        """The seed of the request's dataset: made now unless this process made it already."""
        key, inputs = self.key(request)
        place = place_of(self.variant, self.klass)
        found = _MADE.get((self.campaign, key, place))
        if found is not None:
            return found
        prefix = seed_prefix(self.campaign, key, place)
        ns = self.variant.namespace or seed_namespace(self.campaign, prefix)
        from layerbench.backends.base import at_campaign_end

        request.say(f"preparing dataset {key} in the cluster (namespace {ns}): a seed PVC, a server pod, "
                    "sysbench prepare as a Job, then one VolumeSnapshot")
        at_campaign_end(lambda: self.remove(ns, prefix, key, place))  # before it exists: a half-made one goes too
        try:
            made = Seeding(self, ns, prefix, request).make()
        except BaseException:
            self.remove(ns, prefix, key, place)
            raise
        meta = made | {"key": key, "inputs": inputs}
        (request.log_dir / FACTS_FILE).write_text(json.dumps(meta, indent=2), encoding="utf-8")
        _MADE[(self.campaign, key, place)] = Snapshot(key, Path("/") / ns / prefix, meta, host=self.host)
        return _MADE[(self.campaign, key, place)]

    def remove(self, ns: str, prefix: str, key: str, place: str) -> None:
        """The seed's objects: its namespace, or in namespace-scoped mode its labelled objects and snapshot."""
        from layerbench.backends.kubernetes.pod import delete_namespace

        _MADE.pop((self.campaign, key, place), None)
        with contextlib.suppress(Exception):
            if self.variant.namespace is None:
                delete_namespace(self.core, ns)
                return
            delete_snapshot(self.api, ns, prefix)
            scoped.remove_labelled(self.api, ns, f"layerbench.label={prefix}")

    def checksums(self, snapshot: Snapshot, request: DatasetRequest) -> dict[str, int]:
        raise RunFailed(f"variants.{self.variant.name}: verify: checksum of a dataset made in the cluster is not "
                        "done yet (each run's files are checked by sha256 in its pod); set the workload's verify: "
                        "files")

    def forget(self, snapshot: Snapshot) -> None:
        seed = snapshot.meta.get("seed", {})
        self.remove(str(seed.get("namespace")), str(seed.get("snapshot")), snapshot.key,
                    place_of(self.variant, self.klass))


def delete_snapshot(api: Any, ns: str, name: str) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        volsnap.snapshot_api(api).delete_namespaced_custom_object(volsnap.GROUP, volsnap.VERSION, ns,
                                                                  "volumesnapshots", name,
                                                                  _request_timeout=cluster.TIMEOUT)
    except ApiException as error:
        if error.status != 404:
            raise


class Seeding:
    """One seed being made: the steps of the module's docstring, in order."""

    def __init__(self, seeds: ClusterSeeds, ns: str, prefix: str, request: DatasetRequest) -> None:
        self.seeds, self.ns, self.prefix, self.request = seeds, ns, prefix, request
        self.kind = seed_kind(seeds.server)
        self.labels = manifests.labels(seeds.campaign, prefix, ROLE)
        self.timeout = seeds.variant.ready_timeout
        self.log_dir = request.log_dir / "seed"
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def make(self) -> dict[str, Any]:
        started = time.monotonic()
        endpoint, spec = self.server_up()
        job = JobClient(self.seeds.api, self.ns, self.seeds.image, spec, self.seeds.variant,
                        server=(endpoint.host, endpoint.port))
        prepare_tables(self.request.workload, endpoint, self.request.private_dir, self.log_dir, self.request.on_line,
                       client=job)
        self.kind.stop(self, job, endpoint)
        hashes, sizes = self.hashed()
        handle, driver = self.snapshotted()
        if self.seeds.variant.namespace is not None:  # the shared namespace keeps only the seed's VolumeSnapshot
            scoped.remove_labelled(self.seeds.api, self.ns, f"layerbench.label={self.prefix}")
        kept = recorded_hashes(hashes)
        data = self.kind.table_bytes(sizes, endpoint.database)
        prepared = {"where": f"{SEEDED} in namespace {self.ns} of {self.seeds.host}", "path": SEEDED,
                    "image": self.seeds.image, "binary": self.seeds.server.program,
                    "version": f"image {self.seeds.image}"}
        return {"prepared": prepared, "sha256": kept, "bytes": sum(sizes.get(n, 0) for n in kept),
                "data_bytes": data, "created_at": time.time(), "prepare_seconds": round(time.monotonic() - started, 2),
                "seed": {"namespace": self.ns, "snapshot": self.prefix, "handle": handle, "driver": driver,
                         "snapshot_class": self.seeds.klass}}

    def create(self, body: dict[str, Any]) -> None:
        from layerbench.backends.kubernetes.pod import create_object

        create_object(self.seeds.api, self.seeds.core, body)

    def server_up(self) -> tuple[Endpoint, ServerSpec]:
        """The namespace (per-run mode), PVC, my.cnf, account and server pod, until the server is Ready."""
        seeds, ns, prefix = self.seeds, self.ns, self.prefix
        if seeds.variant.namespace is None:
            from layerbench.backends.kubernetes.pod import delete_namespace

            delete_namespace(seeds.core, ns)  # one a killed harness left: made again, not trusted
            seeds.core.create_namespace(manifests.namespace(ns, self.labels))
        heartbeat.beat(seeds.api, ns, self.labels, own_namespace=seeds.variant.namespace is None)
        spec = ServerSpec(seeds.campaign, prefix, self.log_dir, self.request.private_dir, self.log_dir,
                          config=self.kind.config(self.request.page_size), password=generate_password())
        conf, secret = manifests.config_files(seeds.server, spec)
        claim = seed_claim(seeds.variant, prefix, ns, self.labels)
        self.create(claim)
        volsnap.bound_claim(seeds.api, seeds.core, ns, seeds.variant, claim)
        self.create(manifests.config_map(f"{prefix}-{manifests.conf_map(seeds.server)}", ns, conf, self.labels))
        self.create(manifests.secret(f"{prefix}-init", ns, secret, self.labels))
        self.create(seed_server_pod(f"{prefix}-db", ns, seeds.image, seeds.server, prefix, self.labels))
        ready = volsnap.wait_for(f"the seed's server pod {ns}/{prefix}-db", self.timeout, self.server_ready)
        return seed_endpoint(seeds.server, str(ready.status.pod_ip), spec), spec

    def server_ready(self) -> Any:
        found = self.seeds.core.read_namespaced_pod(f"{self.prefix}-db", self.ns, _request_timeout=cluster.TIMEOUT)
        if any(c.type == "Ready" and c.status == "True" for c in found.status.conditions or []):
            return found
        trouble = cluster.pod_trouble(self.seeds.core, self.ns, found)
        if trouble:
            raise RunFailed(f"the seed's server pod {self.ns}/{self.prefix}-db: {trouble}; "
                            f"{cluster.recent_events(self.seeds.core, self.ns)}".rstrip("; "))
        return None

    def finished(self, name: str, what: str) -> Any:
        """Wait until pod `name` ends; RunFailed with its last log lines unless it Succeeded."""
        core = self.seeds.core

        def ended() -> Any:
            found = core.read_namespaced_pod(name, self.ns, _request_timeout=cluster.TIMEOUT)
            if found.status.phase == "Failed":
                log = core.read_namespaced_pod_log(name, self.ns, tail_lines=5, _request_timeout=cluster.TIMEOUT)
                raise RunFailed(f"{what} in {self.ns} failed: {str(log).strip()[-300:]}")
            return found if found.status.phase == "Succeeded" else None

        return volsnap.wait_for(f"{what} in {self.ns}", self.timeout, ended)

    def hashed(self) -> tuple[dict[str, str], dict[str, int]]:
        """sha256 and size of every file of the seed PVC, from a pod in the cluster."""
        core, name = self.seeds.core, f"{self.prefix}-sha256"
        core.delete_namespaced_pod(f"{self.prefix}-db", self.ns, grace_period_seconds=0)
        image = manifests.client_image(self.seeds.variant, self.seeds.image)  # has find, sort, xargs, sha256sum
        self.create(hash_pod(name, self.ns, image, self.prefix, self.labels))
        self.finished(name, "the pod hashing the seed PVC")
        log = str(core.read_namespaced_pod_log(name, self.ns, _request_timeout=cluster.TIMEOUT))
        (self.log_dir / "sha256.log").write_text(log, encoding="utf-8")
        core.delete_namespaced_pod(name, self.ns, grace_period_seconds=0)
        hashes = volsnap.parse_hashes(log)
        if not hashes:
            raise RunFailed(f"the pod hashing the seed PVC in {self.ns} printed no file; see seed/sha256.log")
        return hashes, parse_sizes(log)

    def snapshotted(self) -> tuple[str | None, str | None]:
        """The seed's VolumeSnapshot, ready; its handle and driver (per-run namespaces: each run's content names
        them; namespace-scoped mode reads no cluster-scoped content, and needs neither)."""
        seeds, custom = self.seeds, volsnap.snapshot_api(self.seeds.api)
        custom.create_namespaced_custom_object(volsnap.GROUP, volsnap.VERSION, self.ns, "volumesnapshots",
                                               volsnap.volume_snapshot(self.prefix, self.ns, seeds.klass, {
                                                   "persistentVolumeClaimName": self.prefix}, self.labels))
        body = volsnap.wait_for(f"VolumeSnapshot {self.ns}/{self.prefix}", self.timeout,
                                lambda: volsnap.snapshot_ready(custom, self.ns, self.prefix))
        if seeds.variant.namespace is not None:
            return None, None
        content = custom.get_cluster_custom_object(volsnap.GROUP, volsnap.VERSION, "volumesnapshotcontents",
                                                   body["status"]["boundVolumeSnapshotContentName"],
                                                   _request_timeout=cluster.TIMEOUT)
        return str(content["status"]["snapshotHandle"]), str(content["spec"]["driver"])


def cluster_seeds(variant: KubernetesVariant, server: ServerProgram) -> ClusterSeeds | None:
    """The keeper of datasets made in the variant's cluster when a hostPath of this machine cannot reach the
    server's node (cluster.dataset_made_here is false); else None."""
    from layerbench.backends.kubernetes.pod import connect, local_image_tag

    api, core, nodes = connect(variant)
    if cluster.dataset_made_here(variant, nodes):
        return None
    return ClusterSeeds(api, core, variant, server, variant.image or local_image_tag(variant))


def made_meta(path: Path | None) -> dict[str, Any] | None:
    """The meta of the dataset made in the cluster whose snapshot path is `path` (this process made it), or None."""
    found = next((s for s in _MADE.values() if s.path == path), None) if path is not None else None
    return None if found is None else found.meta


def data_words(seeded: dict[str, Any] | None, storage: str) -> str:
    """The run record's `data`: which path made the restored bytes (`storage`: the variant's datadir)."""
    if seeded is None:
        return f"{volsnap.DATA_WORDS} ({volsnap.COPIED})"
    into = "copied by the init container from a read-only PVC made from it into the emptydir datadir" \
        if storage == "emptydir" else "the datadir a PVC made from it"
    return f"{SEEDED}, one VolumeSnapshot per campaign and dataset; {into}; checked by sha256 in the pod"
