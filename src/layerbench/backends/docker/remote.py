"""The docker backend on an ssh: host of the inventory: the same container as backends/docker/local.py (network and
storage modes, limits, QoS presets, my.cnf overlay, generated password), on that host's Docker daemon, reached
with the Docker SDK's own `ssh://` support shelling out to OpenSSH (`use_ssh_client=True`).

The SDK runs plain `ssh [-l user] [-p port] HOST docker system dial-stdio`: it reads ~/.ssh/config, the agent and
known_hosts, but takes no other option. So such a host is named by what plain `ssh` reaches (an alias of
~/.ssh/config carrying its key and known_hosts file), and an inventory entry with identity_file or known_hosts is
refused in one line rather than connected some other way. Paths given to the daemon are paths on that host: the
run's folder `<work_dir>/runs/<label>/` (0700: my.cnf and init SQL written over SSH, the server's log), the
dataset snapshot. A MariaDB variant on a host whose own system has mariadbd runs an image built there from that
system (host_image.py), on a dataset that host's own server prepares and keeps (backends/host/dataset.py); otherwise
the image built on this machine is sent to that daemon when it lacks it (the SDK's save and load) with a snapshot
shipped from here (server/remote_files.py). CPU: the container's PIDs on that host (remote_cpu.py reads them there)."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from layerbench.backends.base import ServerSpec
from layerbench.backends.docker.host_image import ensure_host_image, host_facts, image_facts
from layerbench.backends.docker.local import (
    CONF,
    DATADIR,
    HOST_RESTORED,
    LOGS,
    SNAPSHOT,
    DockerBackend,
    check_variant,
    daemon_facts,
    wait_for_container,
)
from layerbench.backends.docker.upstream import inspect_image
from layerbench.backends.docker.variant import DockerVariant
from layerbench.backends.host.dataset import SnapshotsOnHost, read_host_manifest
from layerbench.backends.host.remote import RemoteHostBackend, pick_port
from layerbench.backends.host.variant import HostVariant
from layerbench.endpoint import Endpoint
from layerbench.errors import BadInput, PrerequisiteMissing, RunFailed
from layerbench.hosts.architecture import check_same, this_machine
from layerbench.hosts.critical import signals_deferred
from layerbench.hosts.forward import Forward, dial_address, local_forward, reach_facts
from layerbench.hosts.inventory import Host, HostEntry
from layerbench.hosts.lease import host_lease
from layerbench.server.bootstrap import server_files
from layerbench.server.flavour import detect_flavour, parse_version
from layerbench.server.mycnf import HELP_ARGS, check_names_known, parse_server_options
from layerbench.server.remote_files import (
    check_tools,
    claim_run_folder,
    release_run_folder,
    remote_snapshot,
    restore_on_host,
    runs_root,
    ship_snapshot,
    storage_on_host,
)
from layerbench.server.servers import version_matches


def sdk_url(host: Host) -> str:
    return f"ssh://{host.entry.ssh}"


def remote_docker_client(host: Host) -> Any:
    """A Docker SDK client for the daemon of an ssh: host, or a one-line error naming the host."""
    import docker
    import docker.errors

    try:
        client = docker.DockerClient(base_url=sdk_url(host), use_ssh_client=True, timeout=120)
        client.ping()
    except (docker.errors.DockerException, OSError) as error:
        raise PrerequisiteMissing(f"hosts.{host.name}: no Docker daemon answers through the SDK's "
                                  f"{sdk_url(host)} ({type(error).__name__}); check `ssh {host.entry.ssh} docker "
                                  "info` works without a prompt") from None
    return client


def parse_components(text: str, server_pid: int, host_port: int | None) -> dict[str, list[int]]:
    """`SHIM <pid> <cmdline>` and `PROXY <pid> <cmdline>` lines -> the container's components on its host."""
    out: dict[str, list[int]] = {"server": [server_pid]}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        pid, _, args = rest.partition(" ")
        if not pid.isdigit():
            continue
        if kind == "SHIM" and "containerd-shim" in args.split(" ", 1)[0]:
            out["containerd-shim"] = [int(pid)]
        elif kind == "PROXY" and host_port and str(host_port) in args.split():
            out.setdefault("docker-proxy", []).append(int(pid))
    return out


def components_script(server_pid: int) -> str:
    return (f"p=$(awk '{{print $4}}' /proc/{server_pid}/stat 2>/dev/null); "
            "[ -n \"$p\" ] && echo \"SHIM $p $(tr '\\0' ' ' < /proc/$p/cmdline)\"; "
            "for q in $(pgrep -x docker-proxy); do echo \"PROXY $q $(tr '\\0' ' ' < /proc/$q/cmdline)\"; done; true")


def image_stream(local: Any, tag: str) -> Iterator[bytes]:
    yield from local.images.get(tag).save(named=True)


def needs_image(local_id: str | None, remote_id: str | None) -> bool:
    """Ship the image when the host's daemon lacks it or holds another build under the same tag."""
    return local_id is not None and local_id != remote_id


def check_shipped_architecture(host: str, daemon_architecture: str, where: str, image: str | None = None) -> None:
    """The image built here (this machine's packages) runs on the host's daemon only if it is made for that
    daemon's CPU (its `docker info` Architecture, x86_64 for amd64): the image's own Architecture once it is built
    (prepare), this machine's before (validate, the preflight)."""
    check_same("the image built here from this machine's packages (sent by save and load)", image or this_machine(),
               where, [(f"the Docker daemon of host {host}", daemon_architecture)],
               "run this docker variant on this machine, or on a host of this machine's architecture")


def image_architecture(client: Any, tag: str) -> str:
    """An image's own Architecture (`docker image inspect`), "" when the daemon does not say."""
    return str(client.images.get(tag).attrs.get("Architecture") or "")


def sent_image_facts(client: Any, tag: str, variant: DockerVariant) -> dict[str, Any]:
    """The record of an image built here and sent by save and load (a variant's own `image:` is not): where it
    was made, its architecture and its daemon's, as read on the host's daemon that runs it."""
    if variant.image is not None:
        return {}
    facts: dict[str, Any] = {"image_from": "this machine's packages, sent by docker save and load"}
    with contextlib.suppress(Exception):
        facts |= {"image_architecture": image_architecture(client, tag),
                  "daemon_architecture": str(client.info().get("Architecture", ""))}
    return facts


def runs_hosts_mariadb(variant: DockerVariant, facts: dict[str, str]) -> bool:
    """Whether the host's own MariaDB (its release facts: host_image.py) is the server this variant asks for: its
    system has one, and the variant's server.version, if any, is its version."""
    theirs = parse_version(facts.get("server", ""))
    if theirs is None or theirs.name != "mariadb":
        return False
    return not variant.server.version or version_matches(variant.server.version, theirs.version)


def check_version_here(variant: DockerVariant, host: str, facts: dict[str, str]) -> None:
    """A `server.version` the host's own MariaDB is not: the image built here runs this machine's, which must be
    that version (else one line naming both)."""
    wanted, where = variant.server.version, f"variants.{variant.name}.server.version"
    if wanted is None or variant.image is not None or variant.mysqld is not None:
        return
    command = variant.server_command_here()
    here = detect_flavour(command, where) if command else None
    if here is None or here.name != "mariadb" or not version_matches(wanted, here.version):
        theirs = parse_version(facts.get("server", ""))
        there, ours = (found.label if found else "no mariadbd" for found in (theirs, here))
        raise BadInput(f"{where}: MariaDB {wanted} is neither host {host}'s ({there}) nor this machine's ({ours}), "
                       "whose image would be sent there; use the version of one of them")


class RemoteDockerBackend(DockerBackend):
    """DockerBackend with the daemon, ports, files and processes of an ssh: host."""

    def __init__(self, variant: DockerVariant, host: Host) -> None:
        super().__init__(variant)
        self.host = host
        self.lease_of = lambda: host_lease(host)  # its containers name the lease held on the host
        self.folder: str | None = None
        self.owner: str | None = None
        self.shipped: dict[str, object] = {}
        self.storage_facts: dict[str, object] = {}
        self._release: dict[str, str] | None = None
        self.served: tuple[str, int] | None = None  # (bind address, port) on the host
        self.forward: Forward | None = None  # reach: ssh: this machine's way to the server

    def check(self) -> None:
        v, where = self.variant, f"variants.{self.variant.name}.server_host"
        e = self.host.entry
        if e.identity_file or e.known_hosts or e.port:
            raise BadInput(f"{where}: a docker server on {self.host.name} is reached with the Docker SDK's ssh://, "
                           "which runs plain `ssh HOST`; put identity_file/known_hosts/port into a Host block of "
                           f"~/.ssh/config and give its alias as hosts.{self.host.name}.ssh")
        if v.client != "host" or v.network == "bridge-direct":
            raise BadInput(f"{where}: a docker server on an ssh: host serves sysbench through its published port or "
                           "host network: use network bridge or host and client: host (client_host places it)")
        self.host.check()
        missing = check_tools(self.host)
        if missing:
            raise PrerequisiteMissing(f"{where}: host {self.host.name} lacks {', '.join(missing)}; install them there")
        client = remote_docker_client(self.host)
        check_variant(client, v)
        if v.image is None and self.release() is None:  # the image built here, shipped by save and load (prepare)
            check_version_here(v, self.host.name, self._release or {})
            check_shipped_architecture(self.host.name, str(client.info().get("Architecture", "")), where)
        if v.image is None and v.server.config:
            self._check_option_names()
        if v.image and inspect_image(client, v.image) is not None:
            raise BadInput(f"variants.{v.name}.image: an image started through its entrypoint ({v.image}) on an "
                           "ssh: host: not yet; run it on this machine's Docker (remove server_host)")

    def _check_option_names(self) -> None:
        """server.config's names against the mariadbd the image runs: the host's own (its image is built there),
        else this machine's (the image built here)."""
        on = self.host if self.release() is not None else Host("local", HostEntry(local=True))
        script = f'b=$(command -v mariadbd || echo /usr/sbin/mariadbd); exec "$b" {" ".join(HELP_ARGS)}'
        helped = on.shell(script, name=f"mariadbd --help on {on.name}", timeout=60)
        where = f"host {self.host.name}" if on is self.host else "this machine"
        check_names_known(self.variant, parse_server_options(helped.output), f"mariadbd on {where}")

    def release(self) -> dict[str, str] | None:
        """The host's release facts when its own system has the MariaDB this variant runs (its image is then built
        there from that system: host_image.py), else None (the image built here is sent)."""
        v = self.variant
        if v.image is not None or v.mysqld is not None or v.server.flavour not in (None, "mariadb"):
            return None
        if self._release is None:
            self._release = host_facts(self.host)
        return self._release if runs_hosts_mariadb(v, self._release) else None

    def datasets_on_host(self) -> SnapshotsOnHost | None:
        """With the host's own image, the host's own server prepares and keeps the dataset (backends/host/
        dataset.py), so the container opens a datadir its own MariaDB made; otherwise it is built here and sent."""
        if self.release() is None:
            return None
        twin = HostVariant(name=self.variant.name, backend="host", server=self.variant.server,
                           server_host=self.variant.server_host, client_host=self.variant.client_host,
                           data_dir=self.variant.data_dir)
        return SnapshotsOnHost(twin, self.host, lambda: RemoteHostBackend(twin, self.host))

    def prepare(self, say: Callable[[str], None]) -> None:
        """The host's own image (built there), else the image built here (as locally), sent to the host's daemon
        when it lacks this build."""
        if self.variant.image is not None:
            return
        release = self.release()
        if release is not None:
            ensure_host_image(self.host, release, say)
            return
        from layerbench.backends.docker.daemon import docker_client
        from layerbench.server.image import ensure_docker_image, image_tag

        local = docker_client()
        ensure_docker_image(local, say)
        remote, tag = remote_docker_client(self.host), image_tag()
        daemon = str(remote.info().get("Architecture", ""))
        check_shipped_architecture(self.host.name, daemon, f"variants.{self.variant.name}.server_host",
                                   image_architecture(local, tag))  # the image's own, now that it is built
        if needs_image(image_id(local, tag), image_id(remote, tag)):
            say(f"sending image {tag} to the Docker daemon of host {self.host.name}")
            remote.images.load(image_stream(local, tag))
            if image_id(remote, tag) != image_id(local, tag):
                raise RunFailed(f"hosts.{self.host.name}: the image sent to its daemon is not {tag}")

    def _free_port(self, address: str) -> int:
        return pick_port(self.host)

    def up(self, spec: ServerSpec) -> Any:
        from layerbench.server.image import image_tag

        self.docker, self.spec = remote_docker_client(self.host), spec
        release = self.release()
        self.image = self.variant.image or (ensure_host_image(self.host, release, spec.say) if release else
                                            image_tag())
        with signals_deferred():  # noted for down() and `clean` before anything exists on the host
            self.folder, self.owner = claim_run_folder(self.host, self.variant.data_dir, spec.label)
        q = shlex.quote(self.folder)
        self.host.shell(f"umask 077 && mkdir -p {q}/conf {q}/logs && chmod 777 {q}/logs", name="mkdir")
        if spec.snapshot is not None and release is None:  # else the host's own (datasets_on_host)
            self.shipped = ship_snapshot(self.host, spec.snapshot.parent, spec.run_dir, lambda _t: None)
        endpoint = self._reached(spec, self._start(spec))
        wait_for_container(self, endpoint)
        self.host.shell(f"rm -f {q}/conf/init.sql", name=f"rm on {self.host.name}")
        self.storage_facts = storage_on_host(self.host, runs_root(self.host, self.variant.data_dir))
        self.facts = daemon_facts(self.docker, self.image) | {"server_host": self.host.name} | (
            image_facts(self.host, release) if release else sent_image_facts(self.docker, self.image, self.variant))
        return endpoint

    def _reached(self, spec: ServerSpec, endpoint: Endpoint) -> Endpoint:
        """Where this machine dials the server: through an SSH forward to the published port or host-network port
        on the host (`reach: ssh`; it is published on the bind address, 127.0.0.1 by default), else directly."""
        self.served = (endpoint.host, endpoint.port)
        if self.host.entry.reach == "ssh":
            self.forward = local_forward(self.host, dial_address(endpoint.host), endpoint.port, spec.run_dir)
            return replace(endpoint, host="127.0.0.1", port=self.forward.port)
        return replace(endpoint, host=spec.connect_address or endpoint.host)

    def served_on_host(self) -> tuple[str, int] | None:
        return (dial_address(self.served[0]), self.served[1]) if self.served else None

    def _write_config(self, spec: ServerSpec) -> None:
        assert self.folder is not None
        owned = {"datadir": DATADIR, "port": self.port, "socket": "/run/mysqld/mysqld.sock",
                 "bind-address": spec.listen_address if self.variant.network == "host" else "0.0.0.0",
                 "pid-file": "/run/mysqld/mysqld.pid", "user": "root"}
        files = server_files(spec, owned)
        self.host.write_private(f"{self.folder}/conf/my.cnf", files.mycnf)
        self.host.write_private(f"{self.folder}/conf/init.sql", files.init_sql)

    def _mounts(self, spec: ServerSpec) -> dict[str, Any]:
        assert self.folder is not None
        local = super()._mounts(spec)  # volumes, data containers, tmpfs: created on the host's daemon
        volumes = {k: v for k, v in local["volumes"].items() if not k.startswith("/")}
        volumes[f"{self.folder}/conf"] = {"bind": CONF, "mode": "ro"}
        volumes[f"{self.folder}/logs"] = {"bind": LOGS, "mode": "rw"}
        if spec.snapshot is not None and self.variant.storage not in HOST_RESTORED:
            volumes[f"{remote_snapshot(self.host, spec.snapshot.parent.name)}/datadir"] = {"bind": SNAPSHOT,
                                                                                          "mode": "ro"}
        if self.variant.storage == "bind":
            volumes[f"{self.folder}/datadir"] = {"bind": DATADIR, "mode": "rw"}
        return {**local, "volumes": volumes}

    def _bind_dir(self, spec: ServerSpec) -> Path:
        """The bind-mounted datadir is filled on the host (`_mounts` names its path there)."""
        assert self.folder is not None
        if spec.snapshot is not None:
            folder = spec.snapshot.parent  # the host's own snapshot is checked against the host's own manifest
            restore_on_host(self.host, folder, f"{self.folder}/datadir", spec.run_dir,
                            read_host_manifest(self.host, folder) if self.release() else None)
        else:
            self.host.shell(f"mkdir -p {shlex.quote(self.folder)}/datadir", name=f"mkdir on {self.host.name}")
        return Path(f"{self.folder}/datadir")

    def _remove_all(self) -> None:
        self.spec = None  # nothing of the run lives on this machine's work folder
        if self.forward is not None:
            self.forward.close()
            self.forward = None
        super()._remove_all()
        release_run_folder(self.host, self.folder, self.owner)
        self.folder = self.owner = None

    def components(self) -> dict[str, list[int]]:
        pid = self.server_pid()
        if not pid:
            return {}
        done = self.host.shell(components_script(pid), name=f"processes on {self.host.name}", timeout=30)
        return parse_components(done.output, pid, published_port_of(self.container))

    def client_processes(self, hook: Path) -> list[int]:
        return []

    def describe(self) -> dict[str, Any]:
        facts = super().describe() | reach_facts(self.host, self.served, self.forward)
        if self.shipped:
            facts["dataset_on_host"] = dict(self.shipped)
        if self.storage_facts:
            facts["storage"] = dict(self.storage_facts)  # the run's environment.storage (execution.py takes it)
        return facts

    def server_log_tail(self, lines: int = 20) -> str:
        if self.folder is not None:
            done = self.host.run(["tail", "-n", str(int(lines)), f"{self.folder}/logs/server.log"], timeout=30)
            if done.returncode == 0 and done.output.strip():
                return done.output
        if self.container is not None:
            try:
                return str(self.container.logs(tail=lines).decode(errors="replace"))
            except Exception:
                return ""
        return ""


def image_id(client: Any, tag: str) -> str | None:
    import docker.errors

    try:
        return str(client.images.get(tag).id)
    except docker.errors.ImageNotFound:
        return None


def published_port_of(container: Any) -> int | None:
    from layerbench.backends.docker.local import published_host_port

    return published_host_port(container)
