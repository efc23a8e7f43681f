"""MySQL in the Kubernetes backend, built without a cluster: the pod's init, start and readiness probe come from the
server's flavour (servers.image_server), the image is the one imported from the cached MySQL rootfs, the dataset
snapshot is the rootfs mysqld's; an image: of a registry (`layerbench image push`) and what it needs beside a
sysbench Job (validate's one line)."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench.backends.kubernetes import manifests as m
from layerbench.backends.kubernetes import pod
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.server.flavour import MARIADB, MYSQL_DEFAULTS, Flavour
from layerbench.server.servers import IMAGE_PROGRAMS, ServerProgram

MYSQL = ServerProgram(Flavour("mysql", "9.7.4", dict(MYSQL_DEFAULTS)), (IMAGE_PROGRAMS["mysql"],))
MARIADB_IMAGE = ServerProgram(MARIADB, (IMAGE_PROGRAMS["mariadb"],))
LABELS = {"layerbench.label": "lb1-x-1-mysql", "layerbench.role": "server"}


def campaign(**kw: object):
    data = {"name": "c", "baseline": "k", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "k", "backend": "kubernetes", "kind": "pod", "storage": "hostpath",
                          "server": {"flavour": "mysql", "version": "9.7"}, **kw}]}
    return parse_campaign(data)


def server_container(server: ServerProgram) -> dict:
    """The server container of a fresh datadir's pod (no snapshot: reset reprepare)."""
    objects = m.server_objects(campaign().variant("k"), server, "img", "ns", LABELS, snapshot_path=None,
                               host_datadir=None)
    return objects[0]["spec"]["containers"][0]


def test_a_fresh_mysql_pod_is_initialised_and_started_by_the_mysql_flavour() -> None:
    container = server_container(MYSQL)
    script = container["command"][-1]
    assert "/usr/sbin/mysqld --no-defaults --initialize-insecure --datadir=/var/lib/mysql --user=root" in script
    assert script.endswith("exec /usr/sbin/mysqld --defaults-file=/etc/layerbench/my.cnf "
                           "--init-file=/etc/layerbench-secret/init.sql")
    assert container["readinessProbe"]["exec"]["command"] == ["test", "-S", m.SOCKET]  # no mysqladmin in the rootfs
    assert "mariadb" not in script


def test_a_mariadb_pod_keeps_its_install_script_program_and_admin_ping() -> None:
    container = server_container(MARIADB_IMAGE)
    script = container["command"][-1]
    assert script.startswith("mkdir -p /var/lib/mysql /run/mysqld && mariadb-install-db --no-defaults")
    assert "exec mariadbd --defaults-file=/etc/layerbench/my.cnf" in script
    assert container["readinessProbe"]["exec"]["command"] == ["mariadb-admin", f"--socket={m.SOCKET}", "ping"]


@pytest.mark.parametrize(("storage", "copied"), [("hostpath", False), ("emptydir", True)])
def test_a_mysql_snapshot_is_used_in_place_or_copied_never_initialised(storage: str, copied: bool) -> None:
    variant = campaign(storage=storage).variant("k")
    objects = m.server_objects(variant, MYSQL, "img", "ns", LABELS, snapshot_path="/cache/snap",
                               host_datadir="/work/datadir" if storage == "hostpath" else None)
    script = objects[0]["spec"]["containers"][0]["command"][-1]
    assert ("cp -a /snapshot/. /var/lib/mysql/" in script) == copied
    assert "--initialize" not in script and "exec /usr/sbin/mysqld " in script


def test_a_mysql_image_of_a_registry_is_taken_and_its_job_runs_the_mariadb_image_of_that_registry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No rootfs needed here (an empty cache): the image comes from the registry, as pushed by `image push`."""
    from layerbench.server.image import image_tag
    from layerbench.server.servers import own_image_mysql

    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    image = "10.250.0.1:15000/layerbench/mysql:9.7.4-2-abc"
    for client in ("host", "job"):
        variant = campaign(image=image, client=client).variant("k")
        variant.check_server_here()
        assert not any("MySQL" in cost.what for cost in variant.first_time_costs())  # nothing imported here
        assert f"of the image {image}" in variant.describe_plan()
    job = campaign(image=image, client="job").variant("k")
    assert m.client_image(job, image) == f"10.250.0.1:15000/{image_tag()}"
    assert pod.pulled_images(job) == [image, f"10.250.0.1:15000/{image_tag()}"]
    assert pod.pulled_images(campaign(image=image).variant("k")) == [image]
    server = own_image_mysql()
    assert server.flavour.name == "mysql" and server.program == "/usr/sbin/mysqld" and not server.flavour.version
    assert server.flavour.defaults["mysqlx"] == "OFF"


def test_client_image_names_the_jobs_image_so_no_local_mariadb_is_asked_and_only_a_job_has_it() -> None:
    """Off a node the MariaDB packages the default tag is derived from need not be installed: client_image is
    taken as written (pulled by the nodes, checked in its registry like image:)."""
    image, client = "10.250.0.1:15000/layerbench/mysql:9.7.4-2-abc", "10.250.0.1:15000/layerbench/mariadb:abc"
    job = campaign(image=image, client="job", client_image=client).variant("k")
    job.check_server_here()
    assert m.client_image(job, image) == client and pod.pulled_images(job) == [image, client]
    with pytest.raises(BadInput, match=r"variants\.k\.client_image: the image of the sysbench Jobs, but client is "
                                       r"'host'; set client: job or remove client_image"):
        campaign(image=image, client="host", client_image=client)


def test_a_mysql_image_without_a_registry_and_a_job_client_is_one_line() -> None:
    with pytest.raises(BadInput, match=r"variants.k.image: with client: job beside MySQL, the sysbench Job runs "
                                       r"layerbench's MariaDB image from the registry of image:") as error:
        campaign(image="mysql:8.4", client="job").variant("k").check_server_here()
    assert "\n" not in str(error.value)
    campaign(image="mysql:8.4", client="host").variant("k").check_server_here()


def test_a_sysbench_job_beside_mysql_runs_the_mariadb_image_whose_sysbench_it_is(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch
                                                                                   ) -> None:
    from layerbench.server.image import image_tag

    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    variant = campaign(client="job").variant("k")
    assert m.client_image(variant, "layerbench/mysql:9.7.4-x") == image_tag()  # the MySQL image has no sysbench
    assert m.client_image(campaign(client="job", server={}).variant("k"), "srv") == "srv"  # MariaDB: its own
    whats = [c.what for c in variant.first_time_costs()]
    assert whats[0].startswith("the MySQL 9.7 image") and any("MariaDB" in w for w in whats[1:]), whats


def test_a_kubernetes_mysql_snapshot_is_made_by_the_rootfs_mysql_of_its_version() -> None:
    chosen = campaign().variant("k").snapshot_server()
    assert (chosen.flavour, chosen.version, chosen.mysqld) == ("mysql", "9.7", None)


def test_the_plan_counts_the_mysql_image_import_not_the_mariadb_image(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    variant = campaign().variant("k")
    whats = [c.what for c in variant.first_time_costs()]
    assert whats[0] == "the MySQL 9.7 image, imported once from its rootfs (docker import)"
    assert not any("MariaDB" in w or "layerbench image" in w for w in whats), whats
    assert "local MySQL 9.7 image (the cached rootfs)" in variant.describe_plan()


def test_the_local_image_of_a_mysql_that_is_not_built_is_refused_with_the_command_that_builds_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYERBENCH_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(BadInput, match=r"variants\.k\.server\.version: MySQL 9\.7 is not built") as error:
        pod.local_image_tag(campaign().variant("k"))
    assert "layerbench server build mysql 9.7" in str(error.value)


def test_the_k8s_qos_example_switched_to_mysql_as_its_header_says_is_one_mysql_study(
        no_cluster_kubeconfig: Path) -> None:
    """examples/k8s-qos.yaml's header says which line to add to every variant: with it, every variant (host and
    pods) runs MySQL 9.7 and the plan names the MySQL image for the pods."""
    import yaml

    from layerbench.run.plan import make_plan

    text = (Path(__file__).resolve().parents[2] / "examples" / "k8s-qos.yaml").read_text(encoding="utf-8")
    header = [line.removeprefix("#").strip() for line in text.splitlines() if line.startswith("#")]
    server = yaml.safe_load(next(line for line in header if line.startswith("server:")))["server"]
    data = yaml.safe_load(text)
    data["variants"] = [{**v, "server": server} for v in data["variants"]]
    study = parse_campaign(data)
    assert {(v.server.flavour, v.server.version) for v in study.variants} == {("mysql", "9.7")}
    pods = [v for v in study.variants if v.backend == "kubernetes"]
    assert pods and all(v.client == "host" and v.image is None for v in pods)  # nothing validate refuses
    plan = "\n".join(make_plan(study, None).lines)
    assert plan.count("local MySQL 9.7 image (the cached rootfs)") == len(pods), plan


def node(name: str, arch: str) -> object:
    from types import SimpleNamespace

    return SimpleNamespace(metadata=SimpleNamespace(name=name),
                           status=SimpleNamespace(node_info=SimpleNamespace(architecture=arch)))


def test_the_image_built_here_is_checked_against_the_nodes_before_the_first_run() -> None:
    from layerbench.backends.kubernetes.cluster import image_architecture
    from layerbench.hosts.architecture import this_machine

    variant = campaign().variant("k")
    assert image_architecture(variant, [node("n1", this_machine())], []) == this_machine()
    other = "arm64" if this_machine() != "arm64" else "amd64"
    with pytest.raises(BadInput, match=rf"^variants.k.image: the image built here from this machine's packages is "
                                       rf"built for {this_machine()}, but n2 \({other}\) is not; run the campaign"):
        image_architecture(variant, [node("n1", this_machine()), node("n2", other)], [])
