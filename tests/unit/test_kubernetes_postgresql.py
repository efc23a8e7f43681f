"""PostgreSQL in the Kubernetes backend, built without a cluster (backends/kubernetes/pgpod.py, manifests.py): the pod
of the PostgreSQL image fills its datadir the flavour's way (a copy of the hostPath snapshot, initdb, or the data in
place), starts the server as user postgres with the ConfigMap's postgresql.conf, sets the account from the Secret
over its own socket before it is Ready, and never holds the password in its spec; validate's one-line refusals of
what a postgresql pod cannot be."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.kubernetes import manifests as m
from layerbench.backends.kubernetes import pgpod
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.secrets import Secret
from layerbench.server.flavour import MARIADB as MARIADB_FLAVOUR
from layerbench.server.flavour import Flavour
from layerbench.server.postgresql_image import SOCKET_DIR
from layerbench.server.servers import ServerProgram
from layerbench.server.spec import ServerSpec

POSTGRESQL = ServerProgram(Flavour("postgresql", "15.18"), ("/usr/lib/postgresql/15/bin/postgres",))
LABELS = {"layerbench.label": "lb1-x-1-pg", "layerbench.role": "server"}
PASSWORD = "s3cr3t-'quote"


def data(**kw: object) -> dict:
    return {"name": "c", "baseline": "k", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "k", "backend": "kubernetes", "kind": "pod",
                          "server": {"flavour": "postgresql", "version": "15"}, **kw}]}


def objects(snapshot: str | None = "/cache/snap", **kw: object) -> list[dict]:
    variant = parse_campaign(data(**kw)).variant("k")
    host_datadir = "/work/datadir" if kw.get("storage") == "hostpath" else None
    return m.server_objects(variant, POSTGRESQL, "layerbench/postgresql:1", "ns", LABELS, snapshot_path=snapshot,
                            host_datadir=host_datadir, restored=bool(kw.get("snapshot_class")))


def test_a_postgresql_pod_copies_the_snapshot_starts_as_postgres_and_sets_its_account_before_ready() -> None:
    pod, service = objects()
    container = pod["spec"]["containers"][0]
    script = container["command"][-1]
    assert f"cp -a /snapshot/. {pgpod.DATADIR}/" in script and "chown postgres:postgres" in script
    assert "setpriv --reuid=postgres --regid=postgres --clear-groups -- /usr/lib/postgresql/15/bin/postgres -D " \
        f"{pgpod.DATADIR} -c config_file=/etc/layerbench/postgresql.conf" in script
    assert f"-h {SOCKET_DIR}" in script and "-f /etc/layerbench-secret/account.sql" in script
    assert "trap 'kill -INT $pid' TERM INT" in script  # a pod's deletion is PostgreSQL's fast shutdown
    assert {"name": "data", "mountPath": pgpod.DATADIR} in container["volumeMounts"]
    assert container["ports"] == [{"containerPort": 5432, "name": "postgresql"}]
    assert pgpod.READY_MARK in container["readinessProbe"]["exec"]["command"][-1]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["conf"]["configMap"]["name"] == "pgconf" and volumes["init"]["secret"]["defaultMode"] == 0o400
    assert service["spec"]["ports"][0]["port"] == 5432
    assert subprocess.run(["sh", "-n", "-c", script]).returncode == 0  # the script parses


def test_a_fresh_datadir_is_made_by_initdb_and_a_hostpath_one_is_used_in_place() -> None:
    script = objects(snapshot=None)[0]["spec"]["containers"][0]["command"][-1]
    assert "/usr/lib/postgresql/15/bin/initdb -D /var/lib/postgresql/data --username=postgres" in script
    assert "cp -a" not in script
    script = objects(storage="hostpath")[0]["spec"]["containers"][0]["command"][-1]
    assert "cp -a" not in script and "initdb" not in script and "chmod 0700 /var/lib/postgresql/data" in script


def test_a_volumesnapshot_restore_is_hashed_in_the_postgresql_datadir() -> None:
    claim, sts, _service = objects(kind="statefulset", storage="pvc", snapshot_class="snap")
    assert claim["spec"]["dataSource"]["kind"] == "VolumeSnapshot" and sts["kind"] == "StatefulSet"
    pod = sts["spec"]["template"]["spec"]
    (verify,) = pod["initContainers"]
    assert verify["command"][-1].startswith(f"cd {pgpod.DATADIR} && find . -type f")
    assert "cp -a" not in pod["containers"][0]["command"][-1]  # the PVC is the restored datadir
    source, pod, _service = objects(kind="pod", storage="emptydir", snapshot_class="snap")
    assert source["metadata"]["name"] == "snapshot" and source["spec"]["dataSource"]["kind"] == "VolumeSnapshot"
    (fill,) = pod["spec"]["initContainers"]  # the emptyDir filled from the read-only PVC, then hashed
    assert fill["command"][-1].startswith(f"cp -a /snapshot/. {pgpod.DATADIR}/ && cd {pgpod.DATADIR} && find")
    assert {"name": "data", "mountPath": pgpod.DATADIR} in fill["volumeMounts"]


def test_the_conf_is_kept_with_the_run_and_only_the_secret_holds_the_password(tmp_path: Path) -> None:
    spec = ServerSpec(campaign="c", label="lb1-x-1-pg", run_dir=tmp_path / "run", private_dir=tmp_path / "p",
                      work_dir=tmp_path, config={"shared_buffers": "256MB"}, password=Secret(PASSWORD),
                      user="sbtest")
    conf, secret = pgpod.server_files(spec, m.CONF)
    assert "shared_buffers = '256MB'" in conf["postgresql.conf"] and "port = 5432" in conf["postgresql.conf"]
    assert "hba_file = '/etc/layerbench/pg_hba.conf'" in conf["postgresql.conf"]
    assert "scram-sha-256" in conf["pg_hba.conf"]
    assert (tmp_path / "run" / "postgresql.conf").read_text() == conf["postgresql.conf"]
    assert PASSWORD.replace("'", "''") in secret["account.sql"]
    assert all(PASSWORD not in text for text in conf.values())
    assert all(PASSWORD not in str(body) for body in objects())


@pytest.mark.parametrize(("key", "value", "says"), [
    ("mysqld", "/opt/my/usr/sbin/mysqld", "variants.k.mysqld: a postgresql variant runs this machine's PostgreSQL"),
    ("client_image", "registry.example:5000/c:1", "variants.k.client_image: a postgresql variant's Jobs (sysbench "
     "with the pgsql driver, pgbench, the seed's file check) run its PostgreSQL image"),
])
def test_what_a_postgresql_pod_cannot_be_is_one_line(key: str, value: str, says: str) -> None:
    extra = {"client": "job"} if key == "client_image" else {}
    with pytest.raises(BadInput) as error:
        parse_campaign(data(**{key: value}, **extra))
    assert says in str(error.value) and "\n" not in str(error.value)


def test_an_image_of_a_registry_is_a_postgresql_pods_server() -> None:
    """image: names layerbench's PostgreSQL image pushed to a registry (`layerbench image push`): accepted, its
    program at this machine's postgresql-15 path (the image contract), its Jobs run by the same image."""
    from layerbench.backends.kubernetes.backend import server_program
    from layerbench.backends.kubernetes.pod import pulled_images
    from layerbench.backends.kubernetes.variant import plan_text

    ref = "10.250.0.1:15000/layerbench/postgresql:0123456789ab"
    variant = parse_campaign(data(image=ref, client="job")).variant("k")
    server = server_program(variant)
    assert server.flavour.is_postgresql and server.program == "/usr/lib/postgresql/15/bin/postgres"
    assert m.client_image(variant, ref) == ref and pulled_images(variant) == [ref]
    assert m.port_of(server) == 5432 and m.datadir_of(server) == pgpod.DATADIR
    assert f"of the PostgreSQL image {ref}" in plan_text(variant)


def test_a_fresh_datadir_on_a_volumes_root_loses_its_empty_lost_and_found_first(tmp_path: Path) -> None:
    """initdb refuses a folder that is not empty, and a fresh ext4 volume's root holds lost+found: it is removed
    when empty (as the VM's init does for MySQL), and its absence is no error."""
    script = objects(snapshot=None)[0]["spec"]["containers"][0]["command"][-1]
    step = f"{{ rmdir {pgpod.DATADIR}/lost+found 2>/dev/null || true; }}"
    assert step in script and script.index(step) < script.index("initdb")
    for present in (True, False):
        (tmp_path / "lost+found").mkdir(exist_ok=True) if present else None
        run = step.replace(pgpod.DATADIR, str(tmp_path)) + " && echo next"
        assert subprocess.run(["sh", "-c", run], capture_output=True, text=True).stdout == "next\n"
        assert not (tmp_path / "lost+found").exists()


def test_each_pgbench_step_is_a_job_of_its_own() -> None:
    """The warm-up and the measured pgbench are two Jobs in the run's namespace (one name would collide)."""
    from pathlib import Path as P

    from layerbench.backends.kubernetes.job import MEASURED, job_name
    from layerbench.campaign.models import parse_campaign as parse
    from layerbench.endpoint import Endpoint
    from layerbench.pgbench.command import init_argv, run_argv

    campaign = parse({**data(), "workloads": [{"name": "w", "tool": "pgbench", "scale": 1}]})
    workload = campaign.workloads[0]
    endpoint = Endpoint("10.96.0.9", 5432, "sbtest", Secret("x"), driver="pgsql")
    warm, measured = (run_argv(workload, endpoint, P("/p/pgpass"), 1, 3, P("/r/pgbench"), per_statement=flag)
                      for flag in (False, True))
    names = [job_name(init_argv(workload, endpoint, P("/p/pgpass"))), job_name(warm), job_name(measured)]
    assert names == ["pgbench-init", "pgbench-warmup", "pgbench-run"] and "pgbench-run" in MEASURED


# --- a PostgreSQL dataset made in the cluster (seed.py with pgseed.py) and its SQL read in the pod (podexec.py) ---


def test_the_postgresql_seed_server_inits_on_the_pvc_with_its_own_conf_port_and_probe() -> None:
    from layerbench.backends.kubernetes import seed

    body = seed.seed_server_pod("seed-x-db", "ns", "pg:1", POSTGRESQL, "seed-x", m.labels("c", "seed-x", "seed"))
    spec = body["spec"]
    (container,) = spec["containers"]
    script = container["command"][-1]
    assert "initdb -D /var/lib/postgresql/data" in script and "cp -a" not in script and "lost+found" in script
    assert container["ports"] == [{"containerPort": 5432, "name": "postgresql"}]
    assert container["readinessProbe"]["exec"]["command"] == pgpod.ready_command()
    assert {"name": "data", "mountPath": pgpod.DATADIR} in container["volumeMounts"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["conf"]["configMap"]["name"] == "seed-x-pgconf"
    assert volumes["data"] == {"name": "data", "persistentVolumeClaim": {"claimName": "seed-x"}}
    assert spec["restartPolicy"] == "Never" and all("hostPath" not in v for v in spec["volumes"])


def test_the_postgresql_seed_prepares_with_pgsql_and_keeps_no_password(tmp_path: Path) -> None:
    from layerbench.backends.kubernetes import seed
    from layerbench.sysbench.command import config_file_text

    kind = seed.seed_kind(POSTGRESQL)
    config = kind.config(None)
    assert config == {"shared_buffers": "256MB", "synchronous_commit": False}
    spec = ServerSpec(campaign="c", label="seed-x", run_dir=tmp_path / "seed", private_dir=tmp_path / "p",
                      work_dir=tmp_path, config=config, password=Secret(PASSWORD), user="sbtest")
    conf, secret = m.config_files(POSTGRESQL, spec)
    assert set(conf) == {"postgresql.conf", "pg_hba.conf"} and set(secret) == {pgpod.ACCOUNT_FILE}
    assert "synchronous_commit = off" in conf["postgresql.conf"] and PASSWORD not in str(conf)
    endpoint = seed.seed_endpoint(POSTGRESQL, "10.244.0.9", spec)
    assert (endpoint.host, endpoint.port, endpoint.driver) == ("10.244.0.9", 5432, "pgsql")
    cfg = config_file_text(endpoint)
    assert "db-driver=pgsql" in cfg and "pgsql-host=10.244.0.9" in cfg and "pgsql-port=5432" in cfg
    sizes = {"base/5/16384": 8192, "base/5/16384_fsm": 24576, "global/1262": 8192, "pg_wal/000000010000": 16 << 20}
    assert kind.table_bytes(sizes, "sbtest") == 8192 + 24576
    assert seed.seed_kind(m.ServerProgram(MARIADB_FLAVOUR, ("mariadbd",))).config("16k")["innodb_page_size"] == "16k"


def test_the_postgresql_seed_stops_by_a_fast_shutdown_after_dropping_the_password() -> None:
    command = pgpod.stop_command('sb"test')
    assert command[:2] == ["sh", "-c"] and subprocess.run(["sh", "-n", "-c", command[2]]).returncode == 0
    script = command[2]
    assert """ALTER ROLE "sb""test" PASSWORD NULL""" in script and script.endswith("&& kill -TERM 1")
    assert f"-h {SOCKET_DIR}" in script and "-U postgres" in script and "ON_ERROR_STOP=1" in script
    # the container's script passes SIGTERM on as SIGINT (fast shutdown) and exits with the server's status
    server = pgpod.server_command(False, False, m.SNAPSHOT, m.CONF, m.SECRET_DIR)[-1]
    assert "trap 'kill -INT $pid' TERM INT" in server and "exit ${status:-0}" in server


def test_a_seeds_key_holds_the_image_and_the_flavour() -> None:
    from layerbench.backends.kubernetes.seed import ClusterSeeds
    from layerbench.server.spec import DatasetRequest

    campaign = parse_campaign(data(image="r:5000/layerbench/postgresql:1"))
    variant, workload = campaign.variant("k"), campaign.workloads[0]
    nowhere = Path("/nowhere")
    request = DatasetRequest(workload, None, nowhere, nowhere, "seed", "127.0.0.1", None, campaign="c")
    pg_key = ClusterSeeds(None, None, variant, POSTGRESQL, "r:5000/layerbench/postgresql:1").key(request)
    other_image = ClusterSeeds(None, None, variant, POSTGRESQL, "r:5000/layerbench/postgresql:2").key(request)
    mariadb = ClusterSeeds(None, None, variant, m.ServerProgram(MARIADB_FLAVOUR, ("mariadbd",)),
                           "r:5000/layerbench/postgresql:1").key(request)
    assert len({pg_key[0], other_image[0], mariadb[0]}) == 3
    assert "postgresql" in str(pg_key[1]) and "r:5000/layerbench/postgresql:1" in str(pg_key[1])


def test_the_servers_sql_in_a_postgresql_pod_is_psql_as_the_superuser_over_its_socket() -> None:
    from layerbench.backends.kubernetes.podexec import PodSql

    command = PodSql(None, "ns", "db-0", "postgresql", "sbtest").command("SELECT 1")
    assert command == pgpod.sql_command("sbtest", "SELECT 1")
    assert command[0].endswith("/psql") and command[command.index("-U") + 1] == "postgres"
    assert command[command.index("-d") + 1] == "sbtest" and "--csv" in command and "--tuples-only" in command
    assert command[command.index("-h") + 1] == SOCKET_DIR and not any("password" in w.lower() for w in command)
    assert PodSql(None, "ns", "db-0").command("SELECT 1")[0] == "mariadb"  # MariaDB's client otherwise
    for flavour in ("mysql", "percona"):  # MySQL's own client, the same options, as root@localhost, no password
        mysql = PodSql(None, "ns", "db-0", flavour, "sbtest").command("SELECT 1")
        assert mysql[0] == "mysql" and mysql[1:] == [*PodSql(None, "ns", "db-0").command("SELECT 1")[1:]]


@given(st.lists(st.tuples(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                                  min_size=1, max_size=30), st.text(max_size=30).filter(lambda t: "\x00" not in t)),
                max_size=20))
def test_psqls_csv_rows_read_back_whatever_the_values_hold(rows: list[tuple[str, str]]) -> None:
    def field(value: str) -> str:  # psql's csv_print_field: quoted when it holds a comma, a quote, CR or LF
        return '"' + value.replace('"', '""') + '"' if any(c in value for c in ',"\r\n') else value

    text = "".join(",".join(field(v) for v in row) + "\n" for row in rows)
    assert pgpod.parse_csv_rows(text) == rows
