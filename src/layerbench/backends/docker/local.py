"""The Docker backend: the same server binary and dataset as the host baseline, in a container, with the
network path (published port through docker-proxy, the container's own address, host network), the storage
path (named volume, bind mount, data-only container, the container's own layer, tmpfs) and the limits (CFS
quota, cpuset, shares, memory, QoS presets) each one line of the variant. Uses the Docker SDK against
`docker.from_env()`, so DOCKER_HOST is honoured. Everything created carries the label `layerbench=1`."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from layerbench.backends.base import BackendBase, ClientRunner, Endpoint, ServerSpec, host_client_processes
from layerbench.backends.docker.client import ContainerClient
from layerbench.backends.docker.daemon import docker_client
from layerbench.backends.docker.images import check_image, local_image
from layerbench.backends.docker.postgresql import DATADIR as PG_DATADIR
from layerbench.backends.docker.postgresql import PORT as PG_PORT
from layerbench.backends.docker.postgresql import PostgresContainer
from layerbench.backends.docker.procs import docker_components
from layerbench.backends.docker.qos import check_resources, resource_options
from layerbench.backends.docker.upstream import (
    UpstreamImage,
    inspect_image,
    upstream_facts,
    upstream_options,
)
from layerbench.backends.docker.variant import DockerVariant
from layerbench.errors import BadInput, RunFailed
from layerbench.hosts import owners
from layerbench.hosts.client_files import CLIENT_DIR
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.lease import LEASE_LABEL, local_lease
from layerbench.hosts.machine import free_port
from layerbench.hosts.owners import processes_with
from layerbench.hosts.procfs import cgroup_dirs
from layerbench.hosts.workdirs import folder_size
from layerbench.secrets import Secret, redact
from layerbench.server.bootstrap import server_files, write_server_files
from layerbench.server.datadir import wait_until_ready
from layerbench.server.flavour import MARIADB
from layerbench.server.mycnf import check_overlay
from layerbench.server.restore import FACTS_FILE, PROGRESS_EVERY, copy_tree
from layerbench.server.servers import (
    IMAGE_PROGRAMS,
    ServerProgram,
    image_server,
    rooted_image_server,
)
from layerbench.vocabulary.sizes import byte_text

START_TIMEOUT = 180.0
DATADIR = "/var/lib/mysql"
CONF = "/etc/layerbench"
LOGS = "/var/log/layerbench"
SNAPSHOT = "/snapshot"
HOST_RESTORED = ("bind", "volume", "data-container")  # restored by layerbench on the host, before the start
VOLUME_METHOD = "{method} into the host folder of a local-driver volume (type=none, o=bind)"
COPY_DONE = "copy.done"  # written into the run's folder (LOGS) by the container when its cp -a ends
IN_CONTAINER = {"container-fs": "the container's overlay layer", "tmpfs": "a tmpfs in memory"}


def labels(spec: ServerSpec, role: str, lease: str) -> dict[str, str]:
    """A container's, volume's or network's labels; `lease`: the harness's lease on the daemon's machine (clean)."""
    return {"layerbench": "1", "layerbench.campaign": spec.campaign, "layerbench.label": spec.label,
            "layerbench.role": role, "layerbench.harness": str(os.getpid()), LEASE_LABEL: lease}


def server_command(server: ServerProgram, snapshot: bool, storage: str) -> list[str]:
    """The container's command: fill the datadir (unless restored on the host: HOST_RESTORED) from the snapshot or
    with the flavour's own init, then start the server program the flavour's image runs (servers.image_server)."""
    init = server.flavour.init_command(server.command, Path(DATADIR), paths=server.path_options())
    fill = f"cp -a {SNAPSHOT}/. {DATADIR}/ && : > {LOGS}/{COPY_DONE}" if snapshot else \
        shlex.join(init) + " >/dev/null"
    steps = [f"mkdir -p {DATADIR} /run/mysqld"]
    if storage not in HOST_RESTORED or not snapshot:
        steps.append(fill)
    steps.append(f"exec {shlex.join(server.command)} --defaults-file={CONF}/my.cnf --init-file={CONF}/init.sql "
                 f"--log-error={LOGS}/server.log")
    return ["sh", "-c", " && ".join(steps)]


IMAGE_MARIADB = ServerProgram(MARIADB, (IMAGE_PROGRAMS["mariadb"],))  # what an `image:` of the user's runs


def wait_for_copy(backend: DockerBackend, spec: ServerSpec) -> None:
    """Until the container's `cp -a` of the snapshot into its layer or tmpfs ends (its COPY_DONE file), with a
    progress line every few seconds and no deadline but the container's life; then the run's restore.json says
    the method, the files and bytes copied and the time from the container's start to the copy's end."""
    assert spec.snapshot is not None
    done, last, where = spec.run_dir / COPY_DONE, time.monotonic(), IN_CONTAINER[backend.variant.storage]
    size = folder_size(spec.snapshot)
    spec.say(f"copying dataset {spec.snapshot.parent.name} ({byte_text(size)}) into {where} (cp -a)")
    while not done.exists():
        if not backend._alive():
            cause = backend.exit_cause()
            raise RunFailed(f"server container {cause or 'stopped'} while copying the dataset into {where}")
        time.sleep(0.1)
        if time.monotonic() - last >= PROGRESS_EVERY:
            last = time.monotonic()
            spec.say(f"  still copying into {where}: {last - backend.copy_started:.0f} s")
    seconds = time.monotonic() - backend.copy_started
    files = [f for f in spec.snapshot.rglob("*") if f.is_file() and not f.is_symlink()]
    facts = {"method": f"cp -a inside the container into {where}", "files": len(files), "bytes": size,
             "seconds": round(seconds, 3), "verified": "snapshot files (stat); the copy inside the container is "
             "not checked", "timed": "from the container's start to the copy's end", "problems": []}
    (spec.run_dir / FACTS_FILE).write_text(json.dumps(facts))


def wait_for_container(backend: DockerBackend, endpoint: Endpoint) -> None:
    """Until the server answers (PostgreSQL: its socket, its account, then the benchmark login:
    backends/docker/postgresql.py); a container that stopped says why (OOM-killed, its exit code)."""
    try:
        if backend.pg is not None:
            backend.pg.ready(endpoint, backend._alive, backend.server_log_tail, START_TIMEOUT)
        else:
            wait_until_ready(endpoint, alive=backend._alive, timeout=START_TIMEOUT, log_tail=backend.server_log_tail)
    except RunFailed as error:
        cause = backend.exit_cause()
        raise RunFailed(f"server container {cause}" if cause else str(error)) from None


class DockerBackend(BackendBase):
    kind = "docker"

    def __init__(self, variant: DockerVariant) -> None:
        self.docker: Any = None
        self.variant = variant
        self.facts: dict[str, Any] = {}
        self.spec: ServerSpec | None = None
        self.container: Any = None
        self.created: list[tuple[str, Any]] = []  # (kind, object) in creation order
        self.bind_dir: Path | None = None
        self.port: int | None = None
        self.image: str | None = None
        self.copy_started = 0.0
        self._server: ServerProgram | None = None
        self.upstream: UpstreamImage | None = None  # an `image:` started through its entrypoint (upstream.py)
        self.secrets: list[Secret] = []  # redacted from the container's log lines
        self.lease_of: Callable[[], str] = local_lease  # the harness's lease on the daemon's machine (labels)
        self.pg: PostgresContainer | None = None  # a postgresql variant's own parts (backends/docker/postgresql.py)
        self.datadir, self.container_port = (PG_DATADIR, PG_PORT) if variant.server.flavour == "postgresql" else \
            (DATADIR, 3306)  # in the container

    @property
    def server(self) -> ServerProgram:
        """The server the container runs: the flavour's program in the local image (an `image:`: MariaDB's)."""
        if self._server is None:
            variant = self.variant
            self._server = IMAGE_MARIADB if variant.image is not None else \
                rooted_image_server(variant) if variant.mysqld is not None else image_server(variant)
        return self._server

    # --- preflight -----------------------------------------------------------------------------------------

    def check(self) -> None:
        check_variant(docker_client(), self.variant)  # the daemon answers (a check's own client, kept nowhere)

    def prepare(self, say: Callable[[str], None]) -> None:
        if self.variant.image is None:
            local_image(docker_client(), self.variant, say)

    # --- lifecycle -----------------------------------------------------------------------------------------

    def up(self, spec: ServerSpec) -> Endpoint:
        self.docker, self.spec = docker_client(), spec
        self.image = self.variant.image or local_image(self.docker, self.variant)
        self.upstream = inspect_image(self.docker, self.image) if self.variant.image else None
        owners.record(spec.label, pid=None, marker="", paths=[spec.work_dir / "docker" / spec.label])
        endpoint = self._start(spec)
        if spec.snapshot is not None and self.variant.storage in IN_CONTAINER:
            wait_for_copy(self, spec)  # before the start timeout begins
        wait_for_container(self, endpoint)
        with contextlib.suppress(FileNotFoundError):
            (spec.private_dir / "conf" / "init.sql").unlink()
        self.facts = daemon_facts(self.docker, self.image)
        if self.pg is not None:
            self.facts |= self.server.flavour.facts()
        if self.upstream is not None:
            self.facts |= upstream_facts(spec, endpoint, self.image)
        return endpoint

    def _start(self, spec: ServerSpec) -> Endpoint:
        variant = self.variant
        network = self._network(spec)
        self.port = self._free_port(spec.listen_address) if variant.network == "host" else self.container_port
        self.pg = PostgresContainer.made(spec, variant, self.port) if self.datadir == PG_DATADIR else None
        kwargs = {**self._mounts(spec), **network, **resource_options(variant)}
        if self.pg is not None:
            kwargs |= self.pg.options(variant.storage not in HOST_RESTORED or spec.snapshot is None,
                                      LOGS, COPY_DONE, SNAPSHOT)
        elif self.upstream is None:
            self._write_config(spec)
            kwargs["command"] = server_command(self.server, spec.snapshot is not None, variant.storage)
        else:
            owned = {"port": self.port, "bind-address": spec.listen_address if variant.network == "host" else
                     "0.0.0.0"}
            options, self.secrets = upstream_options(spec, owned, kwargs["volumes"], CONF)
            kwargs |= options
        self.container = self._create("container", lambda: self.docker.containers.create(
            self.image, name=spec.label, labels=labels(spec, "server", self.lease_of()), detach=True, **kwargs))
        self.copy_started = time.monotonic()  # a copy inside the container (IN_CONTAINER) starts with it
        self.container.start()
        self.container.reload()
        return container_endpoint(self, spec)

    def _network(self, spec: ServerSpec) -> dict[str, Any]:
        variant = self.variant
        if variant.network == "host":
            return {"network_mode": "host"}
        if variant.network == "bridge" and variant.client == "host":
            address = spec.listen_address  # loopback: docker-proxy; another host's client: kernel NAT
            return {"ports": {f"{self.container_port}/tcp": (address, self._free_port(address))}}
        net = self._create("network", lambda: self.docker.networks.create(
            f"{spec.label}-net", driver="bridge", labels=labels(spec, "network", self.lease_of())))
        return {"network": net.name}

    def _free_port(self, address: str) -> int:
        """A free port on the daemon's machine (this one; backends/docker/remote.py asks its host)."""
        return free_port(address)

    def _create(self, kind: str, create: Any) -> Any:
        """Create a Docker object and note it for down() with no signal in between (a Ctrl-C while the daemon
        creates it waits until the object is noted, so down() always removes it)."""
        with signals_deferred():
            obj = create()
            self.created.append((kind, obj))
        return obj

    def _write_config(self, spec: ServerSpec) -> None:
        owned = {"datadir": DATADIR, "port": self.port, "socket": "/run/mysqld/mysqld.sock",
                 "bind-address": spec.listen_address if self.variant.network == "host" else "0.0.0.0",
                 "pid-file": "/run/mysqld/mysqld.pid", "user": "root", **self.server.paths}
        write_server_files(server_files(spec, owned, self.server.flavour), spec.private_dir / "conf")

    def _mounts(self, spec: ServerSpec) -> dict[str, Any]:
        variant = self.variant
        conf = self.pg.volumes() if self.pg is not None else {
            str((spec.private_dir / "conf").resolve()): {"bind": CONF, "mode": "ro"}}
        volumes = {**conf, str(spec.run_dir.resolve()): {"bind": LOGS, "mode": "rw"}}
        if spec.snapshot is not None and variant.storage not in HOST_RESTORED:
            volumes[str(spec.snapshot.resolve())] = {"bind": SNAPSHOT, "mode": "ro"}
        extra: dict[str, Any] = {}
        storage = variant.storage
        if storage == "bind":
            volumes[str(self._bind_dir(spec).resolve())] = {"bind": self.datadir, "mode": "rw"}
        elif storage == "volume":
            volumes[self._volume(spec, spec.label).name] = {"bind": self.datadir, "mode": "rw"}
        elif storage == "data-container":
            extra["volumes_from"] = [data_container(self, spec)]
        elif storage == "tmpfs":
            extra["tmpfs"] = {self.datadir: "rw,size=90%"}
        return {"volumes": volumes, **extra}

    def _bind_dir(self, spec: ServerSpec) -> Path:
        """The run's datadir on the host (in the run's work folder, which down() and `clean` remove), restored
        before the container starts (so outside the start timeout): restore_on_this_host."""
        self.bind_dir = spec.work_dir / "docker" / spec.label / "datadir"
        restore_on_this_host(spec, self.bind_dir)
        return self.bind_dir

    def _volume(self, spec: ServerSpec, name: str) -> Any:
        """A named volume; with a snapshot, a `local`-driver volume whose device is the host folder restored by
        _bind_dir (Docker mounts the folder, copies nothing), and restore.json names that method."""
        opts = {} if spec.snapshot is None else volume_options(str(self._bind_dir(spec).resolve()), spec.run_dir)
        tags = labels(spec, "volume", self.lease_of())
        return self._create("volume", lambda: self.docker.volumes.create(name=name, labels=tags, **opts))

    def _alive(self) -> bool:
        return container_alive(self.container)

    def down(self) -> None:
        with signals_deferred():
            self._remove_all()

    def _remove_all(self) -> None:
        for kind, obj in reversed(self.created):
            with contextlib.suppress(Exception):  # v: an image's anonymous volumes (its VOLUME) go with it
                obj.remove(force=True, v=True) if kind == "container" else obj.remove()
        self.created.clear()
        self.container = None
        if self.pg is not None:
            self.pg.remove()
        if self.spec is not None:
            shutil.rmtree(self.spec.work_dir / "docker" / self.spec.label, ignore_errors=True)
            owners.forget(self.spec.label)
            self.spec = None

    def exit_cause(self) -> str | None:
        return container_exit_cause(self.container, self.variant.resources.memory)

    # --- accounting and description ------------------------------------------------------------------------

    def server_pid(self) -> int | None:
        return container_pid(self.container)

    def components(self) -> dict[str, list[int]]:
        return docker_components(self.server_pid(), published_host_port(self.container, self.container_port))

    def client_processes(self, hook: Path) -> list[int]:
        """sysbench on this host (client: host) or in its client container (its hook under CLIENT_DIR)."""
        return host_client_processes(hook) + processes_with(f"{CLIENT_DIR}/hook.lua")

    def cgroups(self) -> list[Path]:
        pid = self.server_pid()
        return cgroup_dirs(pid) if pid else []

    def describe(self) -> dict[str, Any]:
        v = self.variant
        return {"backend": "docker", "image": self.image, "network": v.network, "storage": v.storage, "qos": v.qos,
                "limits": resource_options(v), "client": v.client, **self.facts}

    def client(self) -> ClientRunner | None:
        if self.variant.client == "host":
            return None
        assert self.spec is not None
        network = "host" if self.variant.network == "host" else f"{self.spec.label}-net"
        return ContainerClient(self.docker, self.image or "", network, self.spec, self.variant.client_cpus)

    def server_log_tail(self, lines: int = 20) -> str:
        return container_log_tail(self.spec, self.container, lines, self.secrets)


def container_endpoint(backend: DockerBackend, spec: ServerSpec) -> Endpoint:
    """Where sysbench dials the started container's server: this machine's listen address (host network, or a
    published port), else the container's own address on the run's network."""
    variant, port = backend.variant, int(backend.port or backend.container_port)
    if variant.network == "bridge" and variant.client == "host":
        address, port = spec.listen_address, published_port_or_cause(backend.container, variant, port)
    elif variant.network == "host":
        address = spec.listen_address
    else:
        address = next(iter(backend.container.attrs["NetworkSettings"]["Networks"].values()))["IPAddress"]
    return Endpoint(address, port, spec.user, spec.password, spec.database, driver=backend.server.flavour.driver)


def data_container(backend: DockerBackend, spec: ServerSpec) -> str:
    """The never-started container holding the datadir's named volume (storage: data-container)."""
    volume = backend._volume(spec, f"{spec.label}-data")
    holder = backend._create("container", lambda: backend.docker.containers.create(
        backend.image, ["true"], name=f"{spec.label}-data", labels=labels(spec, "data", backend.lease_of()),
        volumes={volume.name: {"bind": backend.datadir, "mode": "rw"}}))
    return str(holder.name)


def container_log_tail(spec: ServerSpec | None, container: Any, lines: int, secrets: list[Secret]) -> str:
    """The server's log (its file in the run's folder, else the container's output: an entrypoint image logs
    there), the run's secrets redacted."""
    path = spec.run_dir / "server.log" if spec else None
    text = path.read_text(errors="replace") if path and path.exists() else ""
    if not text and container is not None:
        with contextlib.suppress(Exception):
            text = container.logs(tail=lines).decode(errors="replace")
    return redact("\n".join(text.splitlines()[-lines:]), secrets)


def restore_on_this_host(spec: ServerSpec, folder: Path) -> None:
    """`folder` filled from the snapshot by server/restore.py (a clone where the filesystem allows, else a
    checked copy), with progress; or made empty when the run starts from a fresh datadir."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    if spec.snapshot is None:
        folder.mkdir()
        return
    spec.say(f"restoring dataset {spec.snapshot.parent.name} into {folder}")
    facts = copy_tree(spec.snapshot, folder, facts_dir=spec.run_dir, say=spec.say)
    spec.say(f"restored by {facts.method}: {byte_text(facts.bytes, 'MiB', '.0f')} in {facts.seconds:.1f} s")


def volume_options(folder: str, run_dir: Path) -> dict[str, Any]:
    """A `local`-driver volume over the restored host folder; restore.json's method now says so."""
    name_volume_method(run_dir)
    return {"driver": "local", "driver_opts": {"type": "none", "o": "bind", "device": folder}}


def name_volume_method(run_dir: Path) -> None:
    """restore.json's method says the clone or copy filled a volume's host folder (the report shows it)."""
    path = run_dir / FACTS_FILE
    facts = json.loads(path.read_text())
    facts["method"] = VOLUME_METHOD.format(method=facts["method"])
    path.write_text(json.dumps(facts))


def check_variant(client: Any, variant: DockerVariant) -> None:
    """What a docker variant asks of its daemon and of itself: limits, the overlay, a QoS preset alone, its image."""
    check_resources(variant)
    check_overlay(variant.server.config, f"variants.{variant.name}")
    if variant.qos and (variant.resources.cpu_shares or variant.resources.cpuset):
        raise BadInput(f"variants.{variant.name}.qos: a QoS preset sets shares and cpuset itself; remove "
                       "resources.cpu_shares / resources.cpuset or the preset")
    if variant.image:
        check_image(client, variant)


def daemon_facts(client: Any, image: str) -> dict[str, Any]:
    """The daemon's version, storage driver and the image's id, read once the server is up."""
    info: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        info |= {"docker_version": client.version().get("Version"), "storage_driver": client.info().get("Driver")}
        info["image_id"] = client.images.get(image).id
    return info


def container_alive(container: Any) -> bool:
    try:
        container.reload()
    except Exception:
        return False
    return bool(container.status in ("created", "running"))


EXIT_SETTLE_SECONDS = 5.0  # asked only after a failure: dockerd may not yet have seen the kill that caused it


def container_exit_cause(container: Any, memory_limit: str | None, settle: float = EXIT_SETTLE_SECONDS,
                         ) -> str | None:
    """Why the server container stopped, when it did: OOM-killed by its memory limit, or its exit code. Asked after
    a failure, so a container still running is polled for `settle` seconds: sysbench sees the lost connection of an
    OOM kill before dockerd has reaped the container (on a loaded machine the run was then failed as 'Lost
    connection to server', without its cause)."""
    deadline = time.monotonic() + settle
    while True:
        try:
            container.reload()
            state = container.attrs["State"]
        except Exception:
            return None
        if not state.get("Running") or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    if state.get("Running"):
        return None
    if state.get("OOMKilled"):
        return f"was OOM-killed (memory limit {memory_limit or 'of the container'}; raise resources.memory)"
    return f"exited with code {state.get('ExitCode')}"


def container_pid(container: Any) -> int | None:
    try:
        container.reload()
        return int(container.attrs["State"]["Pid"]) or None
    except Exception:
        return None


def published_port_or_cause(container: Any, variant: DockerVariant, inside: int = 3306) -> int:
    """The host port Docker published for the server's port `inside`, or RunFailed with why there is none: the
    container stopped before Docker bound it (its exit code, or its OOM kill)."""
    port = published_host_port(container, inside)
    if port is None:
        why = container_exit_cause(container, variant.resources.memory, settle=1.0)
        raise RunFailed(f"variants.{variant.name}: the server's container has no published port: it "
                        f"{why or 'is not running'}")
    return port


def published_host_port(container: Any, inside: int = 3306) -> int | None:
    try:
        return int(container.attrs["NetworkSettings"]["Ports"][f"{inside}/tcp"][0]["HostPort"])
    except (KeyError, TypeError, IndexError, AttributeError):
        return None
