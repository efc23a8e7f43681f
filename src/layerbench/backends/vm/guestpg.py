"""PostgreSQL in the VM's guest (docs/servers.md#postgresql-in-a-vm): what the config disk carries for it and how
the guest init (data/vm/init.sh, which names no server) runs it. The server is Debian's postgresql-15 of the
guest's root disk (installed at this machine's versions: server/vmimage.py), run as the guest's user `postgres`
on the data disk mounted at the guest's datadir, with layerbench's postgresql.conf and pg_hba.conf
(server/postgresql.py writes both, as for the host backend) and the benchmark account set by psql over the
guest's own socket (the superuser logs in nowhere else). The guest's `postgres` may have another uid than this
machine's, whose files the snapshot holds: the datadir is given to it when they differ (a few inodes: the
overlay takes them, the base is never written)."""

from __future__ import annotations

import shlex
from pathlib import Path

from layerbench.secrets import write_private
from layerbench.server import postgresql as pg
from layerbench.server.servers import ServerProgram
from layerbench.server.spec import ServerSpec

GUEST_PORT = 5432
GUEST_SOCKET_DIR = "/run/postgresql"
CONFIG = "/etc/layerbench"  # the config disk, read-only in the guest


def owned() -> dict[str, str | int]:
    """The postgresql.conf settings layerbench owns in the guest: every address of its one NIC, its port, socket."""
    return {"listen_addresses": "*", "port": GUEST_PORT, "unix_socket_directories": GUEST_SOCKET_DIR,
            "password_encryption": "scram-sha-256"}


def server_script(server: ServerProgram, datadir: str) -> str:
    """server.sh for PostgreSQL: init_datadir (initdb as postgres), run_server (the datadir given to postgres,
    the conf files copied in, /dev/shm for its dynamic shared memory, the server exec'd as postgres: the init's
    `$SERVER` is the postmaster) and server_ready (the account script run by psql over the socket: ready once the
    benchmark account can log in)."""
    d, conf = shlex.quote(datadir), shlex.quote(CONFIG)
    as_postgres = "setpriv --reuid=postgres --regid=postgres --init-groups --"
    psql = [str(pg.program("psql")), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", GUEST_SOCKET_DIR, "-p",
            str(GUEST_PORT), "-U", pg.SUPERUSER, "-d", "postgres"]
    return "\n".join([
        f"as_postgres() {{ {as_postgres} \"$@\"; }}",
        f"own_datadir() {{ chown postgres:postgres {d} && chmod 0700 {d}; [ ! -e {d}/PG_VERSION ] || "
        f"[ \"$(stat -c %u {d}/PG_VERSION)\" = \"$(id -u postgres)\" ] || chown -R postgres:postgres {d}; }}",
        f"init_datadir() {{ own_datadir && as_postgres {shlex.join(pg.initdb_args(Path(datadir)))}; }}",
        "run_server() {",
        "  own_datadir",
        f"  cp {conf}/postgresql.conf {conf}/pg_hba.conf {d}/ && chown postgres:postgres {d}/postgresql.conf "
        f"{d}/pg_hba.conf",
        f"  rm -f {d}/postmaster.pid",
        "  mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm 2> /dev/null || chmod 1777 /dev/shm",
        f"  mkdir -p {GUEST_SOCKET_DIR} && chown postgres:postgres {GUEST_SOCKET_DIR} && chmod 0700 "
        f"{GUEST_SOCKET_DIR}",
        f"  exec {as_postgres} {shlex.join(server.command)} -D {d}",
        "}",
        f"server_ready() {{ as_postgres {shlex.join(psql)} < {conf}/init.sql; }}", ""])


def write_config(spec: ServerSpec, server: ServerProgram, folder: Path, datadir: str) -> None:
    """The config disk's files for PostgreSQL: postgresql.conf (a copy kept in the run's folder: what ran),
    pg_hba.conf, the account script (0600: it holds the password) and server.sh."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    conf = pg.render_conf(pg.merged(spec.config, owned()))
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    (spec.run_dir / "postgresql.conf").write_text(conf, encoding="utf-8")
    (folder / "postgresql.conf").write_text(conf, encoding="utf-8")
    (folder / "pg_hba.conf").write_text(pg.HBA, encoding="utf-8")
    write_private(folder / "init.sql", pg.account_script(spec.user, spec.password, spec.database))
    (folder / "server.sh").write_text(server_script(server, datadir), encoding="utf-8")
