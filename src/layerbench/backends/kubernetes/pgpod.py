"""PostgreSQL in a kubernetes variant's pod (docs/backends/kubernetes.md#postgresql): the image of
server/postgresql_image.py (this machine's postgresql-15, its user `postgres` with this machine's ids, sysbench with
the pgsql driver), the postgresql.conf and pg_hba.conf of server/postgresql.py (the other backends' files, with the
pod's paths) from a ConfigMap, and the benchmark account's psql script (it holds the password) from a Secret.

The container starts as root, makes the datadir the server user's (0700; a restored snapshot's files already are:
the image's `postgres` has the ids of the user that prepared it here), fills it (a `cp -a` of the read-only
hostPath snapshot, or initdb) unless it is restored in place (a hostPath copy, a PVC made from a VolumeSnapshot),
then starts the server as `postgres` (setpriv), sets the account over the pod's own Unix socket with psql (trust
for the superuser over that socket only: the password is never on a command line, in the environment or in the API
server's records, as the MariaDB pod's init SQL) and marks the pod ready. SIGTERM (pod deletion) is passed on as
SIGINT: PostgreSQL's fast shutdown. Pure: no API call here.
"""

from __future__ import annotations

import csv
import io
import shlex
from typing import TYPE_CHECKING

from layerbench.server import postgresql as pg
from layerbench.server.postgresql_image import SOCKET_DIR, check_image_here, image_settings
from layerbench.server.spec import ServerSpec

if TYPE_CHECKING:
    from layerbench.backends.kubernetes.variant import KubernetesVariant

DATADIR = "/var/lib/postgresql/data"
PORT = 5432
CONF_MAP = "pgconf"  # the ConfigMap of postgresql.conf and pg_hba.conf (MariaDB's and MySQL's: mycnf)
ACCOUNT_FILE = "account.sql"  # in the Secret server-init (MariaDB's and MySQL's: init.sql)
READY_MARK = "/tmp/layerbench-account-set"  # made once the benchmark account is set: the readiness probe's test


def check_postgresql(variant: KubernetesVariant, dataset_here: bool) -> None:
    """What a postgresql pod needs of this machine: the docker backend's (its image is the same); the dataset folder
    only when its dataset is made here (on a node), not in the cluster."""
    check_image_here(variant, "Kubernetes", dataset_here)


def server_files(spec: ServerSpec, conf_dir: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the ConfigMap's files, the Secret's files): postgresql.conf and pg_hba.conf, and the account's psql script;
    the conf is also written to the run's folder (the file says what ran)."""
    conf = pg.render_conf(pg.merged(spec.config, image_settings("0.0.0.0", PORT, conf_dir)))
    spec.run_dir.mkdir(parents=True, exist_ok=True)
    (spec.run_dir / "postgresql.conf").write_text(conf, encoding="utf-8")
    account = pg.account_script(spec.user, spec.password, spec.database)
    return {"postgresql.conf": conf, "pg_hba.conf": pg.HBA}, {ACCOUNT_FILE: account}


def tool(name: str) -> str:
    return str(pg.BIN_DIR / name)  # this machine's postgresql-15 programs, at the same paths in the image


def server_command(fill_from_snapshot: bool, data_in_place: bool, snapshot: str, conf_dir: str,
                   secret_dir: str) -> list[str]:
    """The server container's script (see the module's text); its exit status is the server's."""
    user, owner = pg.RUN_AS, f"{pg.RUN_AS}:{pg.RUN_AS}"
    steps = [f"mkdir -p {DATADIR} {SOCKET_DIR}", f"chown {owner} {DATADIR} {SOCKET_DIR}",
             f"chmod 0700 {DATADIR} {SOCKET_DIR}"]
    if fill_from_snapshot and not data_in_place:
        steps.append(f"cp -a {snapshot}/. {DATADIR}/ && chown {owner} {DATADIR} && chmod 0700 {DATADIR}")
    elif not fill_from_snapshot:  # a fresh volume's root may hold mkfs's empty lost+found: initdb wants an empty dir
        steps.append(f"{{ rmdir {DATADIR}/lost+found 2>/dev/null || true; }}")
        steps.append(shlex.join(pg.switch_user("setpriv", user, user, pg.initdb_args(DATADIR))) + " >/dev/null")
    server = pg.switch_user("setpriv", user, user, [tool("postgres"), "-D", DATADIR, "-c",
                                                    f"config_file={conf_dir}/postgresql.conf"])
    ready = f"{shlex.join([tool('pg_isready'), '-q', '-h', SOCKET_DIR, '-p', str(PORT)])}"
    psql = shlex.join([*superuser_psql("postgres"), "-q", "-f", f"{secret_dir}/{ACCOUNT_FILE}"])
    start = (f"{shlex.join(server)} & pid=$!; trap 'kill -INT $pid' TERM INT; "
             f"until {ready}; do kill -0 $pid 2>/dev/null || exit 1; sleep 0.2; done; "
             f"{psql} >/dev/null || {{ kill -INT $pid; wait $pid; exit 1; }}; : > {READY_MARK}; "
             "while kill -0 $pid 2>/dev/null; do wait $pid; status=$?; done; exit ${status:-0}")
    return ["sh", "-c", " && ".join(steps) + f" && {{ {start}; }}"]


def ready_command() -> list[str]:
    """Ready once the account is set (the mark) and the server answers on its socket."""
    return ["sh", "-c", f"test -e {READY_MARK} && {tool('pg_isready')} -q -h {SOCKET_DIR} -p {PORT}"]


def superuser_psql(database: str) -> list[str]:
    """psql in the server's container as the superuser over the pod's own socket (trust there only, pg_hba.conf:
    no password exists for it), into `database`; no psqlrc, stopping at the first error."""
    return [tool("psql"), "-X", "-h", SOCKET_DIR, "-p", str(PORT), "-U", pg.SUPERUSER, "-d", database, "-v",
            "ON_ERROR_STOP=1"]


def sql_command(database: str, sql: str) -> list[str]:
    """One statement by superuser_psql, its rows as CSV without a header (parse_csv_rows reads them back)."""
    return [*superuser_psql(database), "--csv", "--tuples-only", "--command", sql]


def parse_csv_rows(text: str) -> list[tuple[str, ...]]:
    """psql --csv rows (RFC 4180: a value holding a comma, quote or newline is quoted) as tuples of text."""
    return [tuple(row) for row in csv.reader(io.StringIO(text, newline="")) if row]


def stop_command(user: str) -> list[str]:
    """A dataset made in the cluster, stopped cleanly in its server container (exec): the benchmark account's
    password removed first (no snapshot keeps one, as the host's build does), then SIGTERM to the container's
    script (PID 1 of the container), which passes it on as SIGINT: PostgreSQL's fast shutdown, a checkpoint, and
    the pod ends with the server's own exit status (0: a clean stop)."""
    sql = f"ALTER ROLE {pg.sql_identifier(user)} PASSWORD NULL"
    return ["sh", "-c", f"{shlex.join([*superuser_psql('postgres'), '-q', '-c', sql])} && kill -TERM 1"]
