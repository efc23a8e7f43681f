"""PostgreSQL in the Kubernetes backend, built without a cluster (backends/kubernetes/pgpod.py, manifests.py): the pod
of the PostgreSQL image fills its datadir the flavour's way (a copy of the hostPath snapshot, initdb, or the data in
place), starts the server as user postgres with the ConfigMap's postgresql.conf, sets the account from the Secret
over its own socket before it is Ready, and never holds the password in its spec; validate's one-line refusals of
what a postgresql pod cannot be."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from layerbench.backends.kubernetes import manifests as m
from layerbench.backends.kubernetes import pgpod
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.secrets import Secret
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
    ("image", "registry.example:5000/pg:1", "variants.k.image: a postgresql kubernetes variant runs the PostgreSQL "
     "image layerbench builds"),
    ("mysqld", "/opt/my/usr/sbin/mysqld", "variants.k.mysqld: a postgresql variant runs this machine's PostgreSQL"),
    ("client_image", "registry.example:5000/c:1", "variants.k.client_image: a postgresql variant's sysbench Job "
     "runs the PostgreSQL image"),
    ("namespace", "bench", "variants.k.namespace: namespace-scoped mode makes the dataset in the cluster, which "
     "PostgreSQL does not do yet"),
])
def test_what_a_postgresql_pod_cannot_be_is_one_line(key: str, value: str, says: str) -> None:
    extra = {"client": "job"} if key == "client_image" else {"reset": "reprepare"} if key == "namespace" else {}
    with pytest.raises(BadInput) as error:
        parse_campaign(data(**{key: value}, **extra))
    assert says in str(error.value) and "\n" not in str(error.value)


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
