"""The command line (Typer + Rich): parse, call the core, draw progress, map errors to exit codes."""

from __future__ import annotations

import json
import signal
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn
from rich.table import Table
from rich.text import Text

from layerbench.analysis.aggregate import analyze
from layerbench.campaign import Campaign, load_campaign, parse_campaign, smoke_version
from layerbench.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, BadInput, LayerbenchError
from layerbench.orchestrator import Outcome, default_db_path, resume_campaign, run_campaign, slug
from layerbench.report import write_report
from layerbench.schedule import RunSpec
from layerbench.store import RunRecord, Store

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="What does each layer under your MySQL-compatible database cost? "
                       "Variants vs a baseline, measured with sysbench.")
console = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)
STATE: dict[str, Any] = {"debug": False}

DbOption = Annotated[Path | None, typer.Option("--db", help="SQLite store [default: results/layerbench.db]")]
AlphaOption = Annotated[float | None, typer.Option("--alpha", help="significance level of the verdicts "
                                                                  "(default 0.05)")]
MinRunsOption = Annotated[int | None, typer.Option("--min-runs", help="a floor of runs per side for a verdict, on "
                                                                      "top of what alpha needs (default none)")]
ThresholdOption = Annotated[float | None, typer.Option("--threshold", help="noise threshold as a fraction "
                                                                          "(default 0.02 = 2 %)")]


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="show tracebacks")] = False) -> None:
    STATE["debug"] = debug


def default_campaign_text() -> str:
    return resources.files("layerbench").joinpath("data/default-campaign.yaml").read_text(encoding="utf-8")


def load(path: Path | None) -> tuple[Campaign, str | None]:
    if path is None:
        import yaml

        return parse_campaign(yaml.safe_load(default_campaign_text())), None
    return load_campaign(path), str(path)


class TimeLeftColumn(ProgressColumn):
    """Time left from the runs still to go, each taking about `seconds_per_run`."""

    def render(self, task: Task) -> Text:
        per_run = task.fields.get("per_run", 0.0)
        started = task.fields.get("run_started") or time.monotonic()
        left = max(0.0, (task.total or 0) - task.completed) * per_run - (time.monotonic() - started)
        minutes, seconds = divmod(int(max(left, 0)), 60)
        return Text(f"~{minutes}:{seconds:02d} left", style="cyan")


class RichProgress:
    """Draws run i of n, the variant, live TPS and time left; prints one line per finished run."""

    def __init__(self) -> None:
        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[tps]}"), TimeLeftColumn(), console=console, transient=True)
        self.task: Any = None

    def __enter__(self) -> RichProgress:
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()

    def message(self, text: str) -> None:
        console.print(f"[dim]{text}[/dim]")

    def campaign_started(self, campaign_id: int, total: int, done: int, seconds_per_run: float) -> None:
        console.print(f"campaign {campaign_id}: {total} runs ({done} already stored)")
        self.task = self.bar.add_task("starting", total=total, completed=done, tps="", per_run=seconds_per_run,
                                      run_started=time.monotonic())

    def run_started(self, spec: RunSpec, position: int, total: int) -> None:
        self.bar.update(self.task, description=f"run {position}/{total} {spec.variant}", tps="starting",
                        run_started=time.monotonic())

    def interval(self, spec: RunSpec, tps: float, elapsed: float) -> None:
        self.bar.update(self.task, tps=f"{tps:,.0f} TPS @ {elapsed:.0f}s")

    def run_finished(self, spec: RunSpec, record: RunRecord) -> None:
        self.bar.advance(self.task)
        if record.status == "ok" and record.totals:
            t = record.totals
            console.print(f"  run {spec.idx + 1}: {spec.label()}: {t.tps:,.1f} TPS, {t.qps:,.0f} QPS, "
                          f"avg {t.latency_avg_ms or 0:.2f} ms")
        else:
            console.print(f"  [red]run {spec.idx + 1}: {spec.label()}: failed: {record.error}[/red]")


def finish(store: Store, outcome: Outcome, formats: list[str]) -> None:
    analysis = analyze(store, outcome.campaign_id)
    for fmt in formats:
        path = write_report(analysis, fmt, outcome.output_dir)
        out.print(f"report: {path}")
    console.print(f"{outcome.ok} runs ok, {outcome.failed} failed; campaign {outcome.campaign_id} in {store.path}")


def on_sigterm(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


@app.command()
def run(
    campaign: Annotated[Path | None, typer.Argument(help="campaign YAML; none: the bundled default")] = None,
    db: DbOption = None,
    smoke: Annotated[bool, typer.Option(help="tiny data, 2 repetitions of 3 s: check it runs, not numbers")] = False,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="overrides the campaign's output")] = None,
    max_failures: Annotated[int | None, typer.Option(min=0, help="stop after more failed runs than this")] = None,
) -> None:
    """Run a campaign: every variant x workload x threads x repetition, then write its report."""
    parsed, source = load(campaign)
    parsed = smoke_version(parsed) if smoke else parsed
    parsed = parsed.model_copy(update={"output": str(output)}) if output else parsed
    parsed = parsed.model_copy(update={"max_failures": max_failures}) if max_failures is not None else parsed
    signal.signal(signal.SIGTERM, on_sigterm)
    with Store(db or Path(parsed.output) / "layerbench.db") as store, RichProgress() as progress:
        outcome = run_campaign(parsed, store, progress=progress, source_path=source)
    with Store(db or Path(parsed.output) / "layerbench.db") as store:
        finish(store, outcome, list(parsed.formats))
    if outcome.failed:
        raise typer.Exit(1)


@app.command()
def resume(ref: Annotated[str, typer.Argument(help="campaign id, name or `latest`")] = "latest",
           db: DbOption = None) -> None:
    """Continue an interrupted campaign: runs already stored are kept, the rest are run."""
    signal.signal(signal.SIGTERM, on_sigterm)
    with Store(db or default_db_path()) as store, RichProgress() as progress:
        outcome = resume_campaign(store, ref, progress=progress)
    with Store(db or default_db_path()) as store:
        formats = json.loads(store.campaign(outcome.campaign_id)["definition"]).get("formats", ["md"])
        finish(store, outcome, formats)


@app.command()
def validate(campaign: Annotated[Path, typer.Argument(help="campaign YAML")]) -> None:
    """Check a campaign file without running it: what it would create and how long it would take."""
    from layerbench.plan import make_plan

    parsed, _ = load(campaign)
    plan = make_plan(parsed)
    out.print(f"{campaign}: valid; {len(parsed.variants)} variants, {plan.runs} runs, about "
              f"{plan.seconds / 60:.0f} min", highlight=False)
    for line in plan.lines:
        out.print(f"  {line}", highlight=False)


@app.command("list")
def list_campaigns(db: DbOption = None) -> None:
    """The campaigns in the store."""
    with Store(db or default_db_path()) as store:
        table = Table("id", "name", "status", "started", "runs ok", "failed", "planned")
        for row in store.campaigns():
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["started_at"]))
            table.add_row(str(row["id"]), row["name"], row["status"], started, str(row["ok_runs"]),
                          str(row["failed_runs"]), str(row["planned_runs"]))
        out.print(table)


@app.command()
def show(ref: Annotated[str, typer.Argument(help="campaign id, name or `latest`")] = "latest",
         db: DbOption = None) -> None:
    """One campaign's runs and aggregates, in the terminal."""
    with Store(db or default_db_path()) as store:
        from layerbench.report.markdown import render

        out.print(render(analyze(store, ref)), markup=False, highlight=False)


@app.command()
def report(
    ref: Annotated[str, typer.Argument(help="campaign id, name or `latest`")] = "latest",
    fmt: Annotated[list[str] | None, typer.Option("--format", "-f", help="md, html, json or csv (repeatable)")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="folder for the report files")] = None,
    alpha: AlphaOption = None, min_runs: MinRunsOption = None, threshold: ThresholdOption = None,
    db: DbOption = None,
) -> None:
    """Write a campaign's report from the store (offline; works for interrupted campaigns too)."""
    from layerbench.importer import statistics_options

    overrides = statistics_options(alpha, min_runs, threshold)
    with Store(db or default_db_path()) as store:
        row = store.campaign(ref)
        formats = fmt or json.loads(row["definition"]).get("formats", ["md", "html"])
        analysis = analyze(store, int(row["id"]), overrides)
        folder = output or Path(row["output_dir"]) / f"{row['id']}-{slug(row['name'])}"
        for one in formats:
            out.print(f"report: {write_report(analysis, one, folder)}")


cache_app = typer.Typer(help="The dataset cache: snapshots prepared once and restored for every run.",
                        no_args_is_help=True)
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
    from layerbench.server.dataset import datasets_dir, list_snapshots

    table = Table("dataset", "rows", "size", "prepared in", title=str(datasets_dir()))
    for key, size, meta in list_snapshots():
        rows = sum(meta.get("rows", {}).values()) if "rows" in meta else "incomplete"
        table.add_row(key, str(rows), human_bytes(size), f"{meta.get('prepare_seconds', '-')} s")
    out.print(table)


@cache_app.command("clear")
def cache_clear() -> None:
    """Remove every cached dataset snapshot (they are rebuilt when needed)."""
    from layerbench.server.dataset import clear_snapshots

    count, size = clear_snapshots()
    out.print(f"removed {count} snapshot(s), {human_bytes(size)}")


@app.command()
def clean(all_: Annotated[bool, typer.Option("--all", help="also what running campaigns own")] = False) -> None:
    """Remove what a crashed or killed campaign left: its servers, VMs, datadirs, containers, Kubernetes namespaces,
    taps and bridges; nothing else."""
    from layerbench.backends.vm_net import clean_devices
    from layerbench.cleanup import clean_docker, clean_kubernetes, clean_recorded

    done = clean_docker(include_live=all_) + clean_kubernetes(include_live=all_) + clean_recorded(include_live=all_)
    done += clean_devices(include_live=all_)  # VM taps and bridges, after their QEMU is gone
    for line in done:
        out.print(line)
    out.print(f"clean: {len(done)} item(s) removed" if done else "clean: nothing to remove")


@app.command()
def doctor() -> None:
    """Check prerequisites and report leftovers of crashed campaigns."""
    from layerbench.doctor import diagnose

    problems = 0
    for ok, line in diagnose():
        out.print(("[green]ok[/green]   " if ok else "[red]fail[/red] ") + line, highlight=False)
        problems += 0 if ok else 1
    if problems:
        raise typer.Exit(1)


image_app = typer.Typer(help="The locally built server image (Debian rootfs with the host's MariaDB).",
                        no_args_is_help=True)
app.add_typer(image_app, name="image")


@image_app.command("build")
def image_build() -> None:
    """Build (or find cached) the server image: debootstrap + the host's exact MariaDB, imported into Docker."""
    from layerbench.backends.docker import docker_client
    from layerbench.server.image import ensure_docker_image

    started = time.monotonic()
    tag = ensure_docker_image(docker_client(), lambda text: console.print(f"[dim]{text}[/dim]"))
    out.print(f"image: {tag} (ready in {time.monotonic() - started:.0f} s)")


@app.command("import")
def import_results(
    source: Annotated[str, typer.Argument(help="a .csv with the columns variant, iteration, threads (optional), "
                                               "total_queries, qps, tps, lat_avg_ms, lat_max_ms, lat_p<N>_ms "
                                               "(lat_p95_ms, lat_p99_ms, lat_p99.9_ms: any percentile), at least "
                                               "one metric; or raw sysbench output files (0.4, 0.5, 1.0, 1.1): a "
                                               "folder, a quoted glob, or a YAML mapping file (docs/import.md)")],
    name: Annotated[str, typer.Option(help="name of the new campaign")],
    baseline: Annotated[str, typer.Option(help="the variant the others are compared with")],
    alpha: AlphaOption = None, min_runs: MinRunsOption = None, threshold: ThresholdOption = None,
    db: DbOption = None,
) -> None:
    """Import results measured elsewhere, to analyse and report them like layerbench's own."""
    from layerbench.importer import import_results as import_any
    from layerbench.importer import statistics_options

    options = statistics_options(alpha, min_runs, threshold)
    with Store(db or default_db_path()) as store:
        campaign_id = import_any(store, source, name, baseline, options)
        runs = len(store.runs(campaign_id))
    out.print(f"imported {runs} runs as campaign {campaign_id}; report it with: layerbench report {campaign_id}")


def study_names() -> list[str]:
    folder = resources.files("layerbench").joinpath("data/examples")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


@app.command("compare")
def compare_cmd(
    a: Annotated[str, typer.Argument(help="the earlier campaign (id, name or latest)")],
    b: Annotated[str, typer.Argument(help="the later campaign")],
    db: DbOption = None,
) -> None:
    """Did anything move between two campaigns? Every shared variant and point, B against A."""
    from layerbench.analysis.campaigns import compare_campaigns
    from layerbench.report.markdown import fmt, table

    with Store(db or default_db_path()) as store:
        first, second = analyze(store, a), analyze(store, b)
    rows = compare_campaigns(first, second)
    if not rows:
        raise BadInput(f"campaigns {a} and {b} share no variant measured at the same workload and threads")
    body = [[f"`{r.variant}`", r.workload if r.threads is None else f"{r.workload}, {r.threads} thr",
             r.metric, fmt(r.mean_a), fmt(r.mean_b), r.comparison.verdict.kind, r.comparison.verdict.text]
            for r in rows]
    header = ["variant", "point", "metric", f"A ({first.campaign_id})", f"B ({second.campaign_id})", "verdict",
              "B vs A"]
    out.print("\n".join(table(header, body, "lllrrll")), markup=False, highlight=False)


@app.command()
def init(
    study: Annotated[str | None, typer.Option(help="start from a published study's example (see --list)")] = None,
    list_: Annotated[bool, typer.Option("--list", help="list the studies")] = False,
    force: Annotated[bool, typer.Option(help="overwrite campaign.yaml")] = False,
) -> None:
    """Write a campaign to ./campaign.yaml to start from: the default one, or a study's example."""
    if list_:
        for name in study_names():
            out.print(name)
        return
    if study is not None and study not in study_names():
        raise BadInput(f"--study: {study!r} is not a study; use one of: {', '.join(study_names())}")
    text = default_campaign_text() if study is None else resources.files("layerbench").joinpath(
        f"data/examples/{study}.yaml").read_text(encoding="utf-8")
    target = Path("campaign.yaml")
    if target.exists() and not force:
        raise BadInput("campaign.yaml exists already; use --force to overwrite it")
    target.write_text(text, encoding="utf-8")
    out.print(f"wrote {target}; check it with `layerbench validate {target}`, run it with `layerbench run {target}`")


def main(argv: list[str] | None = None) -> None:
    """Entry point: maps every error to a one-line message and its exit code."""
    code = 0
    try:
        result = app(args=argv, standalone_mode=False)
        code = result if isinstance(result, int) else 0
    except LayerbenchError as error:
        if STATE["debug"]:
            console.print_exception()
        console.print(f"[red]error:[/red] {error}", markup=True, highlight=False, soft_wrap=True)
        code = error.exit_code
    except typer.Exit as done:
        code = done.exit_code
    except typer.Abort:
        code = EXIT_INTERRUPTED
    except typer.TyperException as error:  # usage errors: unknown option, missing argument, ...
        console.print(error.format_message(), highlight=False, markup=False)
        code = getattr(error, "exit_code", EXIT_BAD_INPUT) or EXIT_BAD_INPUT
    except KeyboardInterrupt:
        console.print("interrupted")
        code = EXIT_INTERRUPTED
    except Exception as error:  # a bug: one line for the user, the traceback with --debug
        if STATE["debug"]:
            console.print_exception()
        console.print(f"[red]error:[/red] internal error: {type(error).__name__}: {error} (run with --debug for "
                      "the traceback, and please report it)", highlight=False, soft_wrap=True)
        code = 1
    sys.exit(code)
