"""The maintenance commands: the dataset cache, `clean` of what a crashed campaign left behind, `doctor`, and the
locally built images and servers (`image build`, `image push`, `server build`, `server list`)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from layerbench.cli.options import DbOption
from layerbench.cli.terminal import console, out
from layerbench.errors import BadInput, shown
from layerbench.paths import store_path
from layerbench.store import Store
from layerbench.vocabulary.sizes import byte_text

cache_app = typer.Typer(help="The dataset cache: snapshots prepared once and restored for every run.",
                        no_args_is_help=True, rich_markup_mode=None)


@cache_app.command("list")
def cache_list() -> None:
    """Cached dataset snapshots with their sizes."""
    from layerbench.hosts.workdirs import datasets_dir
    from layerbench.server.snapshot import list_snapshots

    table = Table("dataset", "rows", "size", "prepared in", title=str(datasets_dir()))
    for key, size, meta in list_snapshots():
        rows = sum(meta.get("rows", {}).values()) if "rows" in meta else "incomplete"
        table.add_row(key, str(rows), byte_text(size, "auto", ".1f"), f"{meta.get('prepare_seconds', '-')} s")
    out.print(table)


@cache_app.command("clear")
def cache_clear() -> None:
    """Remove every cached dataset snapshot (they are rebuilt when needed)."""
    from layerbench.server.snapshot import clear_snapshots

    count, size = clear_snapshots()
    out.print(f"removed {count} snapshot(s), {byte_text(size, 'auto', '.1f')}")


def clean(all_: Annotated[bool, typer.Option("--all", help="also what running campaigns own")] = False,
          inventory: Annotated[Path | None, typer.Option(
              "--inventory", help="a YAML file with a hosts: mapping: also sweep each ssh: host of it")] = None,
          campaign: Annotated[Path | None, typer.Option(
              "--campaign", help="a campaign file: also sweep each ssh: host of its hosts: and the cluster of each "
                                 "kubernetes variant's kubeconfig and context")] = None,
          db: DbOption = None) -> None:
    """Remove what a crashed or killed campaign left behind, and nothing else.

    Its servers, VMs, datadirs, containers, Kubernetes namespaces, taps and bridges: on this machine by its owner
    records and labels, and with --inventory or --campaign on every ssh: host those files name (its Docker daemon
    by label, its processes and folders by the owner records kept on the host), from any machine, even one with no
    state of its own: a thing there is removed only when the lease of the harness that made it is no longer held
    (docs/topology.md). Kubernetes namespaces on the default cluster, and with --campaign on the cluster of each
    kubernetes variant's kubeconfig and context: this machine's when their harness is gone, another machine's when
    its heartbeat (a Lease in the namespace) stopped 45 s ago (docs/backends/kubernetes.md). The store is never
    touched: clean names the campaigns in it that have runs left, and the command that continues each."""
    from layerbench.run.cleanup import clean_backends, clean_recorded, places, sweep_places

    where = places(str(inventory) if inventory else None, str(campaign) if campaign else None)
    done = clean_backends(include_live=all_) + clean_recorded(include_live=all_)
    done += clean_backends(include_live=all_, after_processes=True)  # VM taps and bridges, after their QEMU is gone
    done += sweep_places(where, all_, lambda text: console.print(Text(text, style="dim")))
    for line in done:
        out.print(line, highlight=False, markup=False)
    removed = sum(1 for line in done if line.startswith(REMOVED))
    out.print(f"clean: {removed} item(s) removed" if removed else "clean: nothing to remove")
    for line in unfinished_campaigns(store_path(db)):
        out.print(line, highlight=False, markup=False)


REMOVED = ("removed", "stopped", "deleted")  # the lines that say a thing was removed (others: kept, unreachable)


def unfinished_campaigns(path: Path) -> list[str]:
    """Campaigns of an existing store that still have runs to do, with the command that continues each."""
    if not path.is_file():
        return []
    with Store(path) as store:
        rows = [r for r in store.campaigns() if r.unfinished]
    return [f"campaign {r.campaign.id} ({r.campaign.name}, {r.campaign.status}) in {path}: "
            f"{r.ok_runs + r.failed_runs} of {r.planned_runs} runs stored; continue it with "
            f"`layerbench resume {r.campaign.id}`" for r in rows]


def doctor() -> None:
    """Check prerequisites and report leftovers of crashed campaigns."""
    from layerbench.cli.doctor import diagnose

    problems = 0
    for ok, line in diagnose():
        out.print(Text.assemble(("ok   ", "green") if ok else ("fail ", "red"), line), highlight=False)
        problems += 0 if ok else 1
    if problems:
        raise typer.Exit(1)


image_app = typer.Typer(help="The locally built server images (MariaDB's, MySQL's): build, push to a registry.",
                        no_args_is_help=True, rich_markup_mode=None)


@image_app.command("build")
def image_build() -> None:
    """Build (or find cached) the server image: debootstrap + the host's exact MariaDB, imported into Docker."""
    from layerbench.backends.registry import container_engine

    started = time.monotonic()
    tag = container_engine("docker").build_server_image(lambda text: console.print(Text(text, style="dim")))
    out.print(f"image: {tag} (ready in {time.monotonic() - started:.0f} s)")


@image_app.command("push")
def image_push(
    registry: Annotated[str, typer.Argument(help="host:port of the registry, like 10.250.0.1:15000")],
) -> None:
    """Push every image layerbench builds (MariaDB's; MySQL's of each built rootfs; PostgreSQL's once built; the
    neighbours') to a registry.

    The images keep their names under the registry (10.250.0.1:15000/layerbench/mariadb:<key>): name that in a
    kubernetes variant's image:, and layerbench/neighbours:<key> in a pod neighbour's image: (off a node). One line
    per image: its reference, digest and CPU architecture. A registry on a private or loopback IPv4 address may
    speak plain HTTP (the lab's: scripts/k8s-local registry status)."""
    from layerbench.backends.registry import container_engine
    from layerbench.server.image_registry import mysql_images, push_image, registry_address

    address = registry_address(registry)
    say = lambda text: console.print(Text(text, style="dim"))  # noqa: E731
    engine = container_engine("docker")
    engine.check()
    mysql = mysql_images(say)
    tags = [engine.build_server_image(say), *mysql, *engine.built_images(say), engine.prepare_neighbours(say)]
    for tag in tags:
        say(f"pushing {tag} to {address}")
        pushed = push_image(tag, address)
        out.print(f"{pushed.reference}@{pushed.digest} ({pushed.architecture}, {pushed.seconds:.0f} s)",
                  highlight=False)
    out.print(f"pushed {len(tags)} image(s) to {address}" + ("" if mysql else
              "; no MySQL rootfs is built (layerbench server build mysql 9.7 builds one)"), highlight=False)


server_app = typer.Typer(help="Servers other than the host's MariaDB, built locally (docs/servers.md).",
                         no_args_is_help=True, rich_markup_mode=None)


@server_app.command("build")
def server_build(
    flavour: Annotated[str, typer.Argument(help="the server family: mysql or postgresql")],
    version: Annotated[str, typer.Argument(help="its version: 9.7 (MySQL), 18 (PostgreSQL)")],
) -> None:
    """Build (or find cached) a server's root filesystem: debootstrap sid + the pinned package, about 80 s."""
    from layerbench.server import mysql_rootfs, postgresql_rootfs

    say = lambda text: console.print(Text(text, style="dim"))  # noqa: E731
    started = time.monotonic()
    if flavour == "mysql":
        rootfs = mysql_rootfs.ensure_rootfs(version, say)
        out.print(f"mysql {rootfs.package_version}: {rootfs.root} (ready in {time.monotonic() - started:.0f} s)")
    elif flavour == "postgresql":
        built = postgresql_rootfs.ensure_rootfs(version, say)
        out.print(f"postgresql {postgresql_rootfs.pinned(version, postgresql_rootfs.POSTGRESQL)}: {built.root} "
                  f"(ready in {time.monotonic() - started:.0f} s)")
    else:
        raise BadInput(f"flavour: {shown(flavour)} is not one layerbench builds; use mysql or postgresql (MariaDB "
                       "and PostgreSQL 15 are the host's own, from scripts/setup)")


@server_app.command("list")
def server_list() -> None:
    """The server root filesystems built on this machine."""
    from layerbench.server.mysql_rootfs import built_rootfses
    from layerbench.server.postgresql_rootfs import built_rootfses as built_postgresql

    built = [("mysql", version, rootfs.root) for version, rootfs in built_rootfses()]
    built += [("postgresql", version, rootfs.root) for version, rootfs in built_postgresql()]
    for name, version, root in built:
        out.print(f"{name} {version}: {root}", highlight=False)
    if not built:
        out.print("no server built; build one with: layerbench server build mysql 9.7")
