"""`image:` of an image with an entrypoint (mysql:8.4, mariadb:11, percona/percona-server:8.0): what layerbench gives
its documented entrypoint contract (environment, conf.d, initdb.d, a password file), what it reads back (the
declared and the running server's flavour), what validate refuses in one line, and hostile `image:` values.
The integration test that starts such an image is tests/integration/test_mysql_docker.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layerbench.backends.docker.upstream import (
    CONF_D,
    INITDB_D,
    SECRETS,
    UpstreamImage,
    check_upstream,
    upstream_options,
)
from layerbench.campaign.models import parse_campaign
from layerbench.errors import BadInput
from layerbench.secrets import Secret
from layerbench.server.flavour import flavour_of_server
from layerbench.server.spec import ServerSpec


def campaign(image: object, **extra: object) -> dict:
    return {"name": "c", "baseline": "d", "workloads": [{"name": "w", "tables": 1, "table_size": 10}],
            "variants": [{"name": "d", "backend": "docker", "image": image, **extra}]}


# What the images declare (their Dockerfiles' ENV) and what layerbench reads from it
DECLARED = [
    (("MYSQL_VERSION", "8.4.3-1.el9"), ("mysql", "8.4.3")),
    (("MYSQL_VERSION", "9.1.0-1.el9"), ("mysql", "9.1.0")),
    (("MARIADB_VERSION", "1:11.4.4+maria~ubu2404"), ("mariadb", "11.4.4")),
    (("PS_VERSION", "8.0.45-36.1"), ("percona", "8.0.45")),
]


@pytest.mark.parametrize(("declared", "expected"), DECLARED)
def test_the_version_an_image_declares_names_its_flavour(declared: tuple[str, str], expected: tuple) -> None:
    flavour = UpstreamImage("x", declared, ()).declared_flavour()
    assert flavour is not None and (flavour.name, flavour.version) == expected


@pytest.mark.parametrize("declared", [("MYSQL_VERSION", "5.7.44-1.el7"), ("MYSQL_VERSION", "5.6.51-1debian9"),
                                      ("MARIADB_VERSION", "1:10.3.39+maria~focal"), ("PS_VERSION", "5.7.44-48.1"),
                                      ("MYSQL_VERSION", "latest")])
def test_an_image_of_a_server_layerbench_does_not_know_is_refused_in_one_line(declared: tuple[str, str]) -> None:
    variant = parse_campaign(campaign("mysql:5.7")).variant("d")
    with pytest.raises(BadInput) as error:
        check_upstream(variant, UpstreamImage("mysql:5.7", declared, ()))
    text = str(error.value)
    assert "\n" not in text and text.startswith("variants.d.image: 'mysql:5.7' declares ") and \
        "does not know how to measure" in text


def test_an_image_that_declares_no_version_is_read_when_it_runs() -> None:
    check_upstream(parse_campaign(campaign("team/db:1")).variant("d"), UpstreamImage("team/db:1", None, ()))


@pytest.mark.parametrize(("extra", "expected"), [
    ({"client": "container"}, "variants.d.client: sysbench in a container of 'mysql:8.4': not yet"),
    ({"storage": "container-fs"}, "variants.d.storage: 'mysql:8.4' declares /var/lib/mysql a volume"),
])
def test_what_an_entrypoint_image_cannot_do_is_refused(extra: dict, expected: str) -> None:
    variant = parse_campaign(campaign("mysql:8.4", **extra)).variant("d")
    with pytest.raises(BadInput, match=expected):
        check_upstream(variant, UpstreamImage("mysql:8.4", ("MYSQL_VERSION", "8.4.3-1.el9"), ("/var/lib/mysql",)))


@pytest.mark.parametrize(("version", "comment", "expected"), [
    ("8.4.3", "MySQL Community Server - GPL", ("mysql", "8.4.3")),
    ("9.7.4-2", "(Debian)", ("mysql", "9.7.4")),
    ("11.4.4-MariaDB-ubu2404", "mariadb.org binary distribution", ("mariadb", "11.4.4")),
    ("8.0.45-36", "Percona Server (GPL), Release 36, Revision 1bc4fd1c", ("percona", "8.0.45")),
])
def test_the_running_servers_own_answer_names_its_flavour(version: str, comment: str, expected: tuple) -> None:
    flavour = flavour_of_server(version, comment)
    assert flavour is not None and (flavour.name, flavour.version) == expected


@pytest.mark.parametrize(("version", "comment"), [("5.7.44", "MySQL Community Server (GPL)"),
                                                  ("10.3.39-MariaDB", "mariadb.org binary distribution"), ("", "")])
def test_a_running_server_layerbench_does_not_know_is_named_as_such(version: str, comment: str) -> None:
    assert flavour_of_server(version, comment) is None


def spec(tmp_path: Path) -> ServerSpec:
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    return ServerSpec("c", "lb-upstream-1", tmp_path / "run", private, tmp_path / "work",
                      config={"innodb_buffer_pool_size": "256M"}, password=Secret("s3cret-account-pw"))


def test_the_contract_gets_files_not_secrets_in_its_environment(tmp_path: Path) -> None:
    run = spec(tmp_path)
    options, secrets = upstream_options(run, {"port": 3306, "bind-address": "0.0.0.0"},
                                        {"/elsewhere/conf": {"bind": "/etc/layerbench", "mode": "ro"}},
                                        "/etc/layerbench")
    env = options["environment"]
    root = secrets[0].reveal()
    assert env["MYSQL_ROOT_PASSWORD_FILE"] == env["MARIADB_ROOT_PASSWORD_FILE"] == f"{SECRETS}/root-password"
    assert env["MYSQL_DATABASE"] == env["MARIADB_DATABASE"] == "sbtest" and env["MYSQL_ROOT_HOST"] == "localhost"
    assert not any(root in value or "s3cret" in value for value in env.values())
    binds = {mount["bind"]: Path(path) for path, mount in options["volumes"].items()}
    assert set(binds) == {CONF_D, INITDB_D, SECRETS}  # layerbench's own conf folder is not mounted
    assert (binds[SECRETS] / "root-password").read_text() == root
    cnf = (binds[CONF_D] / "layerbench.cnf").read_text()
    assert "bind-address = 0.0.0.0" in cnf and "innodb_buffer_pool_size = 256M" in cnf and "datadir" not in cnf
    sql = (binds[INITDB_D] / "layerbench.sql").read_text()
    assert "CREATE USER 'layerbench'@'%' IDENTIFIED BY 's3cret-account-pw'" in sql
    for folder in binds.values():  # readable by the container's mysql user, inside the 0700 private folder
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755
        assert all(stat.S_IMODE(f.stat().st_mode) == 0o644 for f in folder.iterdir())
    assert "s3cret" not in (run.run_dir / "my.cnf").read_text() and root not in str(options)


def test_an_image_variant_starts_from_an_empty_datadir_and_refuses_a_snapshot() -> None:
    chosen = parse_campaign(campaign("mysql:8.4"))
    assert chosen.reset_for(chosen.variant("d"), chosen.workloads[0]).method == "reprepare"
    with pytest.raises(BadInput, match=r"variants\.d\.reset: .snapshot. cannot be restored into this variant"):
        parse_campaign(campaign("mysql:8.4", reset="snapshot"))


HOSTILE = ["mysql:8.4\n", "mysql:8.4\nrm -rf /", "[/x]", "[bold]mysql[/bold]", "x" * 300, "mysql:8.4;rm -rf /",
           ";rm", "", "MySQL:8.4", "mysql 8.4", "../../etc/passwd"]


@pytest.mark.parametrize("value", [*HOSTILE, ["mysql:8.4"], {"a": 1}, 10**400, True])
def test_hostile_image_values_are_refused_in_one_line(value: object) -> None:
    with pytest.raises(BadInput) as error:
        parse_campaign(campaign(value))
    text = str(error.value)
    assert "\n" not in text and "image" in text and len(text) < 400, text


@given(st.one_of(st.text(max_size=400), st.lists(st.text(max_size=5), max_size=3), st.integers(),
                 st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2)))
def test_any_image_value_is_accepted_as_a_reference_or_refused_in_one_line(value: object) -> None:
    try:
        chosen = parse_campaign(campaign(value)).variant("d")
    except BadInput as error:
        assert "\n" not in str(error) and len(str(error)) < 400
    else:
        image = getattr(chosen, "image", None)
        assert isinstance(image, str) and image.isprintable() and " " not in image and len(image) <= 255


def test_a_server_binary_with_an_image_on_a_docker_variant_is_refused_and_says_so() -> None:
    data = campaign("mysql:8.4", mysqld="/opt/percona/bin/mysqld")  # its image is made from its root
    with pytest.raises(BadInput, match="mysqld: a server binary of your own runs in an image made from its root"):
        parse_campaign(data)


@pytest.mark.parametrize("value", ["mysql:8.4\nrm -rf /", "[/x]", ";rm", "x" * 300, ["mysql:8.4"]])
def test_validate_refuses_a_hostile_image_with_exit_2_in_one_line(tmp_path: Path, value: object) -> None:
    import yaml
    from tests.unit.test_hostile_inputs import assert_one_line_bad_input, validate

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(campaign(value)))
    code, err = validate(path)
    assert_one_line_bad_input(code, err)
    assert "image" in err and "is not an image reference" in err


def test_the_server_log_layerbench_shows_has_the_runs_secrets_redacted(tmp_path: Path) -> None:
    from layerbench.backends.docker.local import container_log_tail

    run = spec(tmp_path)
    run.run_dir.mkdir(parents=True)
    (run.run_dir / "server.log").write_text("start\n[ERROR] bad password s3cret-account-pw for root-pw-123\n")
    tail = container_log_tail(run, None, 20, [run.password, Secret("root-pw-123")])
    assert "s3cret" not in tail and "root-pw-123" not in tail and "[ERROR] bad password ********" in tail
