"""The command line (Typer + Rich): parse, call the core, draw progress, map errors to exit codes."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn
from rich.table import Table
from rich.text import Text

from layerbench.campaign.models import Campaign, load_campaign, smoke_version
from layerbench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, BadInput, Interrupted, LayerbenchError, shown
from layerbench.hosts.procs import stop_all
from layerbench.paths import existing_store, store_path, where
from layerbench.records import RunRecord
from layerbench.report import write_report
from layerbench.run.orchestrator import Outcome, resume_campaign, run_campaign, slug
from layerbench.run.schedule import RunSpec
from layerbench.settings import DEFAULTS
from layerbench.store import Store

if TYPE_CHECKING:  # SciPy (under the analysis) only when a command needs it
    from layerbench.analysis.gate import Outcome as GateOutcome

HELP = """What does each layer under your MySQL-compatible database cost? Variants vs a baseline, measured with
sysbench.

\b
Start here:
  layerbench init -o my.yaml             write a campaign to start from (--list: the published studies)
  layerbench validate my.yaml            the plan: what it creates, how many runs, how long
  layerbench run my.yaml                 run it, store every run, write its report
  layerbench list                        the campaigns in the store, and where the store is

\b
Where things live (every command uses this rule):
  store:   --db PATH, else $LAYERBENCH_DB, else <output>/layerbench.db, where <output> is the campaign's
           output: key (default results) when a command is given the campaign file (run and validate; resume,
           show and report when REF is the .yaml file; run --output overrides it), else results, relative to
           the current folder. Commands that only read never create a store.
  reports: <output>/<id>-<name>/ (report --output writes them elsewhere).

--debug (anywhere on the command line) shows the traceback of an error."""

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  rich_markup_mode=None, help=HELP)
# markup=False: user text (file names, variant names, imported campaign names) is never read as Rich markup
console = Console(stderr=True, soft_wrap=True, markup=False)
out = Console(soft_wrap=True, markup=False)
STATE: dict[str, Any] = {"debug": False}

DbOption = Annotated[Path | None, typer.Option(
    "--db", help="SQLite store [default: $LAYERBENCH_DB, else results/layerbench.db]")]
AlphaOption = Annotated[float | None, typer.Option("--alpha", help="significance level of the verdicts "
                                                                  f"(default {DEFAULTS.shown('alpha')})")]
MinRunsOption = Annotated[int | None, typer.Option("--min-runs", help="a floor of runs per side for a verdict, on "
                                                   f"top of what alpha needs (default {DEFAULTS.shown('min_runs')})")]
ThresholdOption = Annotated[float | None, typer.Option("--threshold", help="noise threshold as a fraction (default "
                                                       f"{DEFAULTS.shown('noise_threshold')} = "
                                                       f"{DEFAULTS.noise_threshold * 100:g} %)")]
CorrectionOption = Annotated[str | None, typer.Option("--correction", help="the family over which p is "
                                                    "Holm-corrected: point (the variants of each point) or sweep "
                                                    "(every thread count of a workload together) [default: "
                                                    f"{DEFAULTS.correction}; report: the campaign's]")]
EstimatorOption = Annotated[str | None, typer.Option("--estimator", help="paired (each variant against the "
                                                  "baseline by round, where the rounds allow it) or unpaired "
                                                  "[default: the campaign's]")]
RefArgument = Annotated[str, typer.Argument(help="campaign id, name or `latest`; or the campaign's YAML file, "
                                             "which also finds the store in its output:")]
FailOnOption = Annotated[list[str] | None, typer.Option(
    "--fail-on", help="exit 3 when a verdict matches: slower, slower?, faster or faster?, optionally :METRIC[,...] "
    "(e.g. 'slower?:tps'; default metrics tps and lat_pct_ms); 4 when one could not be decided, else 0 "
    "(repeatable; docs/pipelines.md)")]
MinEffectOption = Annotated[float | None, typer.Option(
    "--min-effect", help="with --fail-on: count a matching verdict only when its estimate is at least this many "
    "percent from 0")]


def show_versions(value: bool) -> None:
    if value:
        from layerbench.versions import version_lines

        for line in version_lines():
            out.print(line, highlight=False, markup=False)
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show the traceback of an error (accepted anywhere)")] = False,
    version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=show_versions,
        help="the versions of layerbench, sysbench, the server, the Docker and Kubernetes clients")] = False,
) -> None:
    STATE["debug"] = STATE["debug"] or debug


def default_campaign_text() -> str:
    return resources.files("layerbench").joinpath("data/default-campaign.yaml").read_text(encoding="utf-8")


class CampaignMissing(typer.BadParameter):
    """`run` without a campaign file: a usage error that says where to start."""

    def format_message(self) -> str:
        return self.message


def load(path: Path, scale: str | None = None) -> tuple[Campaign, str]:
    """The campaign file, at `--scale`'s size when given (campaign/scaling.py)."""
    campaign = load_campaign(path)
    if scale is None:
        return campaign, str(path)
    if scale not in ("published", "machine"):
        raise BadInput(f"--scale: {shown(scale)} is not a size; use published (the study's) or machine (scaled to "
                       "this machine, keeping dataset : buffer pool : RAM)")
    from layerbench.campaign.scaling import with_scale

    try:
        return with_scale(campaign, scale), str(path)  # type: ignore[arg-type]
    except ValueError as error:
        raise BadInput(f"{shown(str(path), 100, quote=False, keep_end=True)}: --{error}") from None


ScaleOption = Annotated[str | None, typer.Option(
    "--scale", help="published: the size of the study in the campaign's published.size; machine: scaled to this "
    "machine's RAM, keeping the study's dataset : buffer pool : RAM (docs/studies.md) [default: the campaign's "
    "scale:, else its own workloads]")]


def located(ref: str, db: Path | None) -> tuple[Path, str]:
    """The store and the campaign a REF names (paths.py): a campaign file means the store in its `output:` and
    the newest campaign of its name; an id, a name or `latest` means the store of --db, $LAYERBENCH_DB or
    results/."""
    if ref.endswith((".yaml", ".yml")) and Path(ref).is_file():
        parsed, _ = load(Path(ref))
        return existing_store(db, parsed.output), parsed.name
    return existing_store(db), ref


class TimeLeftColumn(ProgressColumn):
    """Time left from the runs still to go, each taking about `seconds_per_run`."""

    def render(self, task: Task) -> Text:
        per_run = task.fields.get("per_run", 0.0)
        started = task.fields.get("run_started") or time.monotonic()
        left = max(0.0, (task.total or 0) - task.completed) * per_run - (time.monotonic() - started)
        minutes, seconds = divmod(int(max(left, 0)), 60)
        return Text(f"~{minutes}:{seconds:02d} left", style="cyan")


class RichProgress:
    """Draws run i of n, the variant, live TPS and time left; prints one line per finished run.

    Redrawn only when something changes (once per sysbench interval during a run), never by Rich's own 10 Hz
    refresh thread: those redraws cost about 1.7 % of a core, on the machine being measured (docs/fidelity.md)."""

    def __init__(self, to: Console = console) -> None:
        self.console = to
        self.bar = Progress(TextColumn("{task.description}", style="bold", markup=False), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[tps]}", markup=False), TimeLeftColumn(),
                            console=to, transient=True, auto_refresh=False)
        self.task: Any = None

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def message(self, text: str) -> None:
        self.console.print(Text(text, style="dim"))

    def campaign_started(self, campaign_id: int, total: int, done: int, seconds_per_run: float) -> None:
        self.console.print(f"campaign {campaign_id}: {total} runs ({done} already stored)")
        self.task = self.bar.add_task("starting", total=total, completed=done, tps="", per_run=seconds_per_run,
                                      run_started=time.monotonic())
        self.bar.refresh()

    def run_started(self, spec: RunSpec, position: int, total: int) -> None:
        self.bar.update(self.task, description=f"run {position}/{total} {spec.variant}", tps="starting",
                        total=total, run_started=time.monotonic(), refresh=True)  # a replacement adds a run

    def interval(self, spec: RunSpec, tps: float, elapsed: float) -> None:
        self.bar.update(self.task, tps=f"{tps:,.0f} TPS @ {elapsed:.0f}s", refresh=True)

    def run_finished(self, spec: RunSpec, record: RunRecord) -> None:
        self.bar.advance(self.task)
        self.bar.refresh()
        if record.status in ("ok", "replaced") and record.totals:
            t, busy = record.totals, " (busy: replaced)" if record.status == "replaced" else ""
            self.console.print(f"  run {spec.idx + 1}: {spec.label()}: {t.tps:,.1f} TPS, {t.qps:,.0f} QPS, "
                               f"avg {t.latency_avg_ms or 0:.2f} ms{busy}")
        else:
            self.console.print(Text(f"  run {spec.idx + 1}: {spec.label()}: failed: {record.error}", style="red"))


def finish(store: Store, outcome: Outcome, formats: list[str]) -> None:
    from layerbench.analysis.aggregate import analyze, busy_summary
    from layerbench.analysis.report_model import report_model

    report = report_model(analyze(store, outcome.campaign_id))  # computed once, rendered in every format
    for fmt in formats:
        path = write_report(report, fmt, outcome.output_dir)
        out.print(f"report: {path}")
    replaced = f", {outcome.replaced} replaced (busy machine)" if outcome.replaced else ""
    console.print(f"{outcome.ok} runs ok, {outcome.failed} failed{replaced}; campaign {outcome.campaign_id} in "
                  f"{store.path}")
    for line in busy_summary(report.analysis):
        console.print(Text(line, style="yellow"))


def on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """SIGTERM and SIGHUP (a closed terminal) stop a campaign as Ctrl-C does: everything started is taken down."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_sigterm)


@app.command()
def run(
    ctx: typer.Context,
    campaign: Annotated[Path | None, typer.Argument(help="campaign YAML (`layerbench init` writes one)")] = None,
    db: Annotated[Path | None, typer.Option(
        "--db", help="SQLite store [default: $LAYERBENCH_DB, else <output>/layerbench.db]")] = None,
    smoke: Annotated[bool, typer.Option(help="tiny data, 1 repetition of 3 s: check it runs, not numbers")] = False,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="folder for the store and the reports [default: the campaign's output:]")] = None,
    max_failures: Annotated[int | None, typer.Option(min=0, help="stop after more failed runs than this")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="check all that run checks, print the plan, create "
                                          "nothing (as validate)")] = False,
    scale: ScaleOption = None,
) -> None:
    """Run a campaign, store every run, then write its report.

    Every variant x workload x threads x repetition, in the campaign's order; each run is stored the moment it
    ends (Ctrl-C keeps them: `layerbench resume`). `layerbench validate` shows the plan first."""
    if campaign is None:
        raise CampaignMissing("run needs a campaign file. Write one with `layerbench init -o campaign.yaml` "
                              "(or `layerbench init --study NAME`), check it with `layerbench validate campaign.yaml`"
                              "; `make demo` runs the bundled demo campaign.", ctx=ctx)
    parsed, source = load(campaign, scale)
    parsed = smoke_version(parsed) if smoke else parsed
    parsed = parsed.model_copy(update={"output": str(output)}) if output else parsed
    parsed = parsed.model_copy(update={"max_failures": max_failures}) if max_failures is not None else parsed
    if dry_run:
        check_and_plan(parsed, str(campaign), store_path(db, parsed.output))
        return
    stop_on_signals()
    path = store_path(db, parsed.output)
    try:
        with Store(path) as store, RichProgress() as progress:
            outcome = run_campaign(parsed, store, progress=progress, source_path=source)
    except Interrupted as error:  # `resume <the campaign file>` finds this store whatever its output: is
        again = f"layerbench resume {source}" + (f" --db {path}" if db is not None else "")
        raise Interrupted(f"{error}, or `{again}` (store: {path})") from None
    with Store(path) as store:
        finish(store, outcome, list(parsed.formats))
    if path != store_path() and db is None:
        console.print(f"the other commands read this store with: --db {path}", highlight=False)
    if outcome.failed:
        raise typer.Exit(1)


@app.command()
def resume(ref: RefArgument = "latest", db: DbOption = None) -> None:
    """Continue an interrupted campaign: runs already stored are kept, the rest are run."""
    stop_on_signals()
    path, ref = located(ref, db)
    with Store(path) as store, RichProgress() as progress:
        outcome = resume_campaign(store, ref, progress=progress)
    with Store(path) as store:
        finish(store, outcome, list(store.campaign(outcome.campaign_id).definition.report_formats))


@app.command()
def validate(
    campaign: Annotated[Path, typer.Argument(help="campaign YAML")],
    db: Annotated[Path | None, typer.Option(
        "--db", help="store whose past runs calibrate the estimate [default: as run would use]")] = None,
    scale: ScaleOption = None,
) -> None:
    """Check a campaign file and print its plan, without running anything.

    Everything run checks before it starts, creating nothing; then per variant what will be created, per
    workload the threads x repetitions, the datasets, what is built the first time, where the results go, and
    how long it takes, in parts (prepare, restores, runs, waits): estimated from this machine's past runs in the
    store when it has them, else a rough estimate; and how far the estimate of the last campaign of the same name
    in the store was off."""
    parsed, _ = load(campaign, scale)
    check_and_plan(parsed, str(campaign), store_path(db, parsed.output))


def check_and_plan(parsed: Campaign, name: str, db: Path) -> None:
    """Everything run checks before it starts (preflight.py), creating nothing; then the plan."""
    from layerbench.hosts.inventory import Hosts
    from layerbench.run.plan import last_estimate_line, make_plan
    from layerbench.run.preflight import preflight

    try:
        preflight(parsed)
    finally:  # the shared SSH connections of the checks (run keeps its own for the campaign)
        Hosts(parsed.hosts).close()
    plan = make_plan(parsed, db)
    out.print(f"{name}: valid; {len(parsed.variants)} variants, {plan.runs} runs, {plan.estimate_text()}",
              highlight=False, markup=False)
    for line in plan.lines:
        out.print(f"  {line}", highlight=False, markup=False)
    last = last_estimate_line(db, parsed.name)
    if last is not None:
        out.print(f"  {last}", highlight=False, markup=False)


@app.command("list")
def list_campaigns(db: DbOption = None) -> None:
    """The campaigns in the store, and where that store is."""
    out.print(f"store: {where(db)}", highlight=False, markup=False)
    if not store_path(db).is_file():
        out.print("no campaigns yet: `layerbench run campaign.yaml` creates the store "
                  "(`layerbench init -o campaign.yaml` writes a campaign to start from)", highlight=False)
        return
    with Store(store_path(db)) as store:
        table = Table("id", "name", "status", "started", "runs ok", "failed", "planned")
        for row in store.campaigns():
            c = row.campaign
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(c.started_at))
            table.add_row(str(c.id), Text(c.name), c.status, started, str(row.ok_runs), str(row.failed_runs),
                          str(row.planned_runs))
        out.print(table)


@app.command()
def show(ref: RefArgument = "latest", db: DbOption = None) -> None:
    """One campaign's runs and aggregates, in the terminal."""
    path, ref = located(ref, db)
    with Store(path) as store:
        from layerbench.analysis.aggregate import analyze
        from layerbench.analysis.report_model import report_model
        from layerbench.report.markdown import render

        out.print(render(report_model(analyze(store, ref))), markup=False, highlight=False)


@app.command()
def report(
    ref: RefArgument = "latest",
    fmt: Annotated[list[str] | None, typer.Option(
        "--format", "-f", help="md, html, json, csv or junit (repeatable) [default: the campaign's formats:]")] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="folder for the report files [default: <output>/<id>-<name>/]")] = None,
    alpha: AlphaOption = None, min_runs: MinRunsOption = None, threshold: ThresholdOption = None,
    correction: CorrectionOption = None, estimator: EstimatorOption = None, db: DbOption = None,
    fail_on: FailOnOption = None, min_effect: MinEffectOption = None,
) -> int:
    """Write a campaign's report from the store (offline; interrupted campaigns too)."""
    from layerbench.analysis.aggregate import analyze
    from layerbench.analysis.gate import judge_report, parse_gate
    from layerbench.analysis.report_model import report_model
    from layerbench.cli.statistics_options import statistics_options

    overrides = statistics_options(alpha, min_runs, threshold, correction, estimator)
    gate = parse_gate(fail_on, min_effect)
    path, ref = located(ref, db)
    with Store(path) as store:
        row = store.campaign(ref)
        formats = fmt or list(row.definition.report_formats)
        analysis = analyze(store, row.id, overrides)
    if not analysis.runs:
        console.print(f"campaign {analysis.campaign_id} ({analysis.name}, {analysis.status}) has no stored run: "
                      "the report says so and holds no numbers", highlight=False, markup=False)
    folder = output or Path(row.output_dir) / f"{row.id}-{slug(row.name)}"
    model = report_model(analysis)
    for one in formats:
        out.print(f"report: {write_report(model, one, folder, gate)}", highlight=False, markup=False)
    return gate_status(judge_report(gate, model)) if gate else 0


def gate_status(outcome: GateOutcome) -> int:
    """--fail-on: the outcome's lines on stderr, and its exit code (analysis/gate.py)."""
    from layerbench.analysis.gate import summary_lines

    for line in summary_lines(outcome):
        console.print(line, highlight=False, markup=False)
    return outcome.exit_code


cache_app = typer.Typer(help="The dataset cache: snapshots prepared once and restored for every run.",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(cache_app, name="cache")


def human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


@cache_app.command("list")
def cache_list() -> None:
    """Cached dataset snapshots with their sizes."""
    from layerbench.hosts.workdirs import datasets_dir
    from layerbench.server.snapshot import list_snapshots

    table = Table("dataset", "rows", "size", "prepared in", title=str(datasets_dir()))
    for key, size, meta in list_snapshots():
        rows = sum(meta.get("rows", {}).values()) if "rows" in meta else "incomplete"
        table.add_row(key, str(rows), human_bytes(size), f"{meta.get('prepare_seconds', '-')} s")
    out.print(table)


@cache_app.command("clear")
def cache_clear() -> None:
    """Remove every cached dataset snapshot (they are rebuilt when needed)."""
    from layerbench.server.snapshot import clear_snapshots

    count, size = clear_snapshots()
    out.print(f"removed {count} snapshot(s), {human_bytes(size)}")


@app.command()
def clean(all_: Annotated[bool, typer.Option("--all", help="also what running campaigns own")] = False,
          db: DbOption = None) -> None:
    """Remove what a crashed or killed campaign left behind, and nothing else.

    Its servers, VMs, datadirs, containers, Kubernetes namespaces, taps and bridges. The store is never touched:
    clean names the campaigns in it that have runs left, and the command that continues each."""
    from layerbench.run.cleanup import clean_backends, clean_recorded

    done = clean_backends(include_live=all_) + clean_recorded(include_live=all_)
    done += clean_backends(include_live=all_, after_processes=True)  # VM taps and bridges, after their QEMU is gone
    for line in done:
        out.print(line)
    out.print(f"clean: {len(done)} item(s) removed" if done else "clean: nothing to remove")
    for line in unfinished_campaigns(store_path(db)):
        out.print(line, highlight=False, markup=False)


def unfinished_campaigns(path: Path) -> list[str]:
    """Campaigns of an existing store that still have runs to do, with the command that continues each."""
    if not path.is_file():
        return []
    with Store(path) as store:
        rows = [r for r in store.campaigns() if r.unfinished]
    return [f"campaign {r.campaign.id} ({r.campaign.name}, {r.campaign.status}) in {path}: "
            f"{r.ok_runs + r.failed_runs} of {r.planned_runs} runs stored; continue it with "
            f"`layerbench resume {r.campaign.id}`" for r in rows]


@app.command()
def doctor() -> None:
    """Check prerequisites and report leftovers of crashed campaigns."""
    from layerbench.cli.doctor import diagnose

    problems = 0
    for ok, line in diagnose():
        out.print(Text.assemble(("ok   ", "green") if ok else ("fail ", "red"), line), highlight=False)
        problems += 0 if ok else 1
    if problems:
        raise typer.Exit(1)


image_app = typer.Typer(help="The locally built server image (Debian rootfs with the host's MariaDB).",
                        no_args_is_help=True, rich_markup_mode=None)
app.add_typer(image_app, name="image")


@image_app.command("build")
def image_build() -> None:
    """Build (or find cached) the server image: debootstrap + the host's exact MariaDB, imported into Docker."""
    from layerbench.backends.docker.daemon import docker_client
    from layerbench.server.image import ensure_docker_image

    started = time.monotonic()
    tag = ensure_docker_image(docker_client(), lambda text: console.print(Text(text, style="dim")))
    out.print(f"image: {tag} (ready in {time.monotonic() - started:.0f} s)")


server_app = typer.Typer(help="Servers other than the host's MariaDB, built locally (docs/servers.md).",
                         no_args_is_help=True, rich_markup_mode=None)
app.add_typer(server_app, name="server")


@server_app.command("build")
def server_build(
    flavour: Annotated[str, typer.Argument(help="the server family: mysql")],
    version: Annotated[str, typer.Argument(help="its version: 9.7")],
) -> None:
    """Build (or find cached) a server's root filesystem: debootstrap sid + the pinned package, about 80 s."""
    from layerbench.server.mysql_rootfs import ensure_rootfs

    if flavour != "mysql":
        raise BadInput(f"flavour: {shown(flavour)} is not one layerbench builds; use mysql (MariaDB is the "
                       "host's own, from scripts/setup)")
    started = time.monotonic()
    rootfs = ensure_rootfs(version, lambda text: console.print(Text(text, style="dim")))
    out.print(f"mysql {rootfs.package_version}: {rootfs.root} (ready in {time.monotonic() - started:.0f} s)")


@server_app.command("list")
def server_list() -> None:
    """The server root filesystems built on this machine."""
    from layerbench.server.mysql_rootfs import built_rootfses

    built = built_rootfses()
    for version, rootfs in built:
        out.print(f"mysql {version}: {rootfs.root}", highlight=False)
    if not built:
        out.print("no server built; build one with: layerbench server build mysql 9.7")


@app.command("import")
def import_results(
    source: Annotated[str, typer.Argument(help="a .csv with the columns variant, iteration, [threads], "
                                               "total_queries, qps, tps, lat_avg_ms, lat_max_ms, lat_p<N>_ms "
                                               "(lat_p95_ms, lat_p99_ms, lat_p99.9_ms: any percentile), at least "
                                               "one metric; or raw sysbench output files (0.4, 0.5, 1.0, 1.1): a "
                                               "folder, a quoted glob, or a YAML mapping file (docs/import.md)")],
    name: Annotated[str, typer.Option(help="name of the new campaign")],
    baseline: Annotated[str, typer.Option(help="the variant the others are compared with")],
    alpha: AlphaOption = None, min_runs: MinRunsOption = None, threshold: ThresholdOption = None,
    correction: CorrectionOption = None, db: DbOption = None,
) -> None:
    """Import results measured elsewhere, to analyse and report them like layerbench's own."""
    from layerbench.cli.statistics_options import statistics_options
    from layerbench.importing.sources import import_results as import_any

    options = statistics_options(alpha, min_runs, threshold, correction)
    path = store_path(db)
    with removed_if_new_on_error(path), Store(path) as store:
        campaign_id = import_any(store, source, name, baseline, options)
        runs = len(store.runs(campaign_id))
    out.print(f"imported {runs} runs as campaign {campaign_id}; report it with: layerbench report {campaign_id}")


@contextlib.contextmanager
def removed_if_new_on_error(path: Path) -> Iterator[None]:
    """A store (and its folder) that this command creates is removed again if the command fails: bad input
    leaves nothing behind."""
    folder_existed, store_existed = path.parent.exists(), path.exists()
    try:
        yield
    except BaseException:
        if not store_existed:
            for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"),
                             path.with_name(path.name + "-journal")):
                leftover.unlink(missing_ok=True)
            if not folder_existed:
                with contextlib.suppress(OSError):
                    path.parent.rmdir()
        raise


def study_names() -> list[str]:
    folder = resources.files("layerbench").joinpath("data/examples")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


@app.command("compare")
def compare_cmd(
    a: Annotated[str, typer.Argument(help="the earlier campaign (id, name or latest)")],
    b: Annotated[str, typer.Argument(help="the later campaign")],
    db: DbOption = None, fail_on: FailOnOption = None, min_effect: MinEffectOption = None,
) -> int:
    """Did anything move between two campaigns? Every shared variant and point, B against A."""
    from layerbench.analysis.aggregate import analyze
    from layerbench.analysis.cross_campaign import campaign_comparison
    from layerbench.analysis.gate import comparison_cases, judge, parse_gate
    from layerbench.report.markdown import render_comparison

    gate = parse_gate(fail_on, min_effect)
    with Store(existing_store(db)) as store:
        first, second = analyze(store, a), analyze(store, b)
    if first.campaign_id == second.campaign_id:
        raise BadInput(f"compare: {a!r} and {b!r} are the same campaign ({first.campaign_id}, {first.name}); "
                       "compare two different campaigns (see `layerbench list`)")
    for one in (first, second):
        if not one.runs:
            raise BadInput(f"compare: campaign {one.campaign_id} ({one.name}, {one.status}) has no stored run; "
                           "nothing to compare")
    found = campaign_comparison(first, second)
    if not found.rows:
        raise BadInput(f"campaigns {a} and {b} share no variant measured at the same workload and threads")
    out.print(render_comparison(found), markup=False, highlight=False)
    return gate_status(judge(gate, comparison_cases(found))) if gate else 0


def study_description(name: str) -> str:
    """The first paragraph of the example's header comment: the claim it tests."""
    text = resources.files("layerbench").joinpath(f"data/examples/{name}.yaml").read_text(encoding="utf-8")
    head = []
    for line in text.splitlines():
        if not line.startswith("#") or not line.strip("# "):
            break
        head.append(line.strip("# "))
    return " ".join(head)


@app.command()
def init(
    study: Annotated[str | None, typer.Option(help="start from a published study's example (see --list)")] = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="where to write the campaign")] = Path("campaign.yaml"),
    list_: Annotated[bool, typer.Option("--list", help="list the studies and exit")] = False,
    force: Annotated[bool, typer.Option(help="overwrite the file if it exists")] = False,
) -> None:
    """Write a campaign file to start from: the demo, or a published study's example."""
    if list_:
        if study is not None:
            raise BadInput("init: --list lists the studies and writes nothing; drop --study, or drop --list to "
                           f"write the study {study!r}")
        for name in study_names():
            out.print(f"{name}: {study_description(name)}", highlight=False, markup=False)
        return
    if study is not None and study not in study_names():
        raise BadInput(f"--study: {study!r} is not a study; use one of: {', '.join(study_names())}")
    text = default_campaign_text() if study is None else resources.files("layerbench").joinpath(
        f"data/examples/{study}.yaml").read_text(encoding="utf-8")
    if output.exists() and not force:
        raise BadInput(f"--output: {output} exists already; use --force to overwrite it, or another -o PATH")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    out.print(f"wrote {output}; check it with `layerbench validate {output}`, run it with `layerbench run {output}`",
              highlight=False, markup=False)


def without_debug(args: list[str]) -> list[str]:
    """`--debug` is accepted anywhere before `--`: it is taken out here and switches tracebacks on."""
    cut = args.index("--") if "--" in args else len(args)
    kept = [a for a in args[:cut] if a != "--debug"]
    STATE["debug"] = STATE["debug"] or len(kept) < cut
    return kept + args[cut:]


def command_context(args: list[str]) -> Any:
    """The context of the (sub)command that `args` names, for a usage line."""
    command = typer.main.get_command(app)
    ctx = command.make_context("layerbench", [], resilient_parsing=True)
    for word in args:
        found = getattr(command, "commands", {}).get(word)
        if found is None and not word.startswith("-"):
            break
        if found is not None:
            command, ctx = found, found.make_context(word, [], parent=ctx, resilient_parsing=True)
    return ctx


def one_line(text: str, limit: int = 1000) -> str:
    """An error message as one line (user text never adds lines), cut at limit characters."""
    text = " ".join(text.split("\n"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main(argv: list[str] | None = None) -> None:
    """Entry point: runs the command, then exits with its code. Once the command is over, a late signal (Ctrl-C
    just as a campaign finishes) is ignored, so it cannot turn a finished command into a kill status."""
    try:
        code = run_command(argv)
    except KeyboardInterrupt:  # a signal while an error was being reported
        code = EXIT_INTERRUPTED
    if argv is None:  # the process's own command line: it exits next (an in-process caller keeps its handlers)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
    if code == EXIT_INTERRUPTED:
        stop_all()  # a process whose own cleanup a signal cut short: none outlives the command
    sys.exit(code)


def run_command(argv: list[str] | None) -> int:
    """Runs one command; maps every error to a one-line message and returns the exit code."""
    code, args = 0, []
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C: KeyboardInterrupt, then exit 130
    stop_on_signals()  # SIGTERM and SIGHUP alike, from the first moment a command can start anything
    try:
        args = without_debug(list(sys.argv[1:] if argv is None else argv))
        result = app(args=args, prog_name="layerbench", standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except LayerbenchError as error:
        if STATE["debug"]:
            console.print_exception()
        console.print(Text.assemble(("error: ", "red"), one_line(str(error))), highlight=False, soft_wrap=True)
        code = error.exit_code
    except typer.Exit as done:
        code = done.exit_code
    except typer.Abort:
        code = EXIT_INTERRUPTED
    except typer.TyperException as error:  # usage errors: unknown option, missing argument, ...
        show = getattr(error, "show", None)  # click's usage errors print the usage line and the help hint
        if show is not None:
            if hasattr(error, "ctx") and error.ctx is None:  # some parser errors come without their command
                error.ctx = command_context(args)
            show(file=sys.stderr)
        else:
            console.print(error.format_message(), highlight=False, markup=False)
        code = getattr(error, "exit_code", EXIT_BAD_INPUT) or EXIT_BAD_INPUT
    except KeyboardInterrupt:
        console.print("interrupted")
        code = EXIT_INTERRUPTED
    except Exception as error:  # a bug: one line for the user, the traceback with --debug
        if STATE["debug"]:
            console.print_exception()
        console.print(Text.assemble(("error: ", "red"), f"internal error: {type(error).__name__}: "
                                    f"{one_line(str(error))} (run with --debug for the traceback, and please "
                                    "report it)"), highlight=False, soft_wrap=True)
        code = 1
    return code
