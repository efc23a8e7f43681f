"""The commands about campaigns: write one to start from (init), check and plan it (validate), run and resume it,
list and show what the store holds, write reports, compare two campaigns, import results measured elsewhere."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from layerbench.campaign.models import Campaign, load_campaign, smoke_version, with_scale
from layerbench.cli.options import (
    AlphaOption,
    CorrectionOption,
    DbOption,
    EstimatorOption,
    FailOnOption,
    MinEffectOption,
    MinRunsOption,
    RefArgument,
    ScaleOption,
    ThresholdOption,
)
from layerbench.cli.progress import RichProgress
from layerbench.cli.terminal import console, out, stop_on_signals
from layerbench.errors import BadInput, Interrupted, shown
from layerbench.paths import existing_store, report_folder, store_path, where
from layerbench.report import write_report
from layerbench.run.orchestrator import Outcome, resume_campaign, run_campaign
from layerbench.store import Store

if TYPE_CHECKING:
    from layerbench.analysis.gate import Gate
    from layerbench.analysis.gate import Outcome as GateOutcome
    from layerbench.analysis.report_model import Report


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
    try:
        return with_scale(campaign, scale, option=True), str(path)  # type: ignore[arg-type]
    except ValueError as error:  # "scale: machine needs ...", or a derived key (from --scale machine)
        dashes = "--" if str(error).startswith("scale") else ""
        raise BadInput(f"{shown(str(path), 100, quote=False, keep_end=True)}: {dashes}{error}") from None


def located(ref: str, db: Path | None) -> tuple[Path, str]:
    """The store and the campaign a REF names (paths.py): a campaign file means the store in its `output:` and
    the newest campaign of its name; an id, a name or `latest` means the store of --db, $LAYERBENCH_DB or
    results/."""
    if ref.endswith((".yaml", ".yml")) and Path(ref).is_file():
        parsed, _ = load(Path(ref))
        return existing_store(db, parsed.output), parsed.name
    return existing_store(db), ref


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


def finish(store: Store, outcome: Outcome, formats: list[str]) -> None:
    """The end of `run` and `resume`: the campaign's reports, what its runs came to, and a busy machine's warnings."""
    from layerbench.analysis.aggregate import busy_summary
    from layerbench.analysis.loading import analyze
    from layerbench.analysis.report_model import report_model

    report = report_model(analyze(store, outcome.campaign_id))
    write_reports(report, formats, outcome.output_dir)
    replaced = f", {outcome.replaced} replaced (busy machine)" if outcome.replaced else ""
    console.print(f"{outcome.ok} runs ok, {outcome.failed} failed{replaced}; campaign {outcome.campaign_id} in "
                  f"{store.path}")
    for line in busy_summary(report.analysis):
        console.print(Text(line, style="yellow"))


def write_reports(report: Report, formats: list[str], folder: Path, gate: Gate | None = None) -> None:
    """The one place reports are written (run, resume, report): the report, computed once, in every format into
    `folder` (paths.report_folder, unless `report --output`), each file's path on stdout; `gate` (--fail-on) says
    which verdicts a JUnit file counts as failures."""
    for fmt in formats:
        out.print(f"report: {write_report(report, fmt, folder, gate)}", highlight=False, markup=False)


def gate_status(outcome: GateOutcome) -> int:
    """--fail-on: the outcome's lines on stderr, and its exit code (analysis/gate.py)."""
    from layerbench.analysis.gate import summary_lines

    for line in summary_lines(outcome):
        console.print(line, highlight=False, markup=False)
    return outcome.exit_code


def resume(ref: RefArgument = "latest", db: DbOption = None) -> None:
    """Continue an interrupted campaign: runs already stored are kept, the rest are run."""
    stop_on_signals()
    path, ref = located(ref, db)
    with Store(path) as store, RichProgress() as progress:
        outcome = resume_campaign(store, ref, progress=progress)
    with Store(path) as store:
        finish(store, outcome, list(store.campaign(outcome.campaign_id).definition.report_formats))


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
    from layerbench.run.preflight import preflight, resolve_defaults

    try:
        parsed = resolve_defaults(parsed)  # planned as checked (a kubernetes variant's client: where it stands)
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


def show(ref: RefArgument = "latest", db: DbOption = None) -> None:
    """One campaign's runs and aggregates, in the terminal."""
    path, ref = located(ref, db)
    with Store(path) as store:
        from layerbench.analysis.loading import analyze
        from layerbench.analysis.report_model import report_model
        from layerbench.report.markdown import render

        out.print(render(report_model(analyze(store, ref))), markup=False, highlight=False)


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
    from layerbench.analysis.gate import judge_report, parse_gate
    from layerbench.analysis.loading import analyze
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
    model = report_model(analysis)
    write_reports(model, formats, output or report_folder(row.output_dir, row.id, row.name), gate)
    return gate_status(judge_report(gate, model)) if gate else 0


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


def compare_cmd(
    a: Annotated[str, typer.Argument(help="the earlier campaign (id, name or latest)")],
    b: Annotated[str, typer.Argument(help="the later campaign")],
    db: DbOption = None, fail_on: FailOnOption = None, min_effect: MinEffectOption = None,
) -> int:
    """Did anything move between two campaigns? Every shared variant and point, B against A."""
    from layerbench.analysis.cross_campaign import campaign_comparison
    from layerbench.analysis.gate import comparison_cases, judge, parse_gate
    from layerbench.analysis.loading import analyze
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


def study_names() -> list[str]:
    folder = resources.files("layerbench").joinpath("data/examples")
    return sorted(p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml"))


def study_description(name: str) -> str:
    """The first paragraph of the example's header comment: the claim it tests."""
    text = resources.files("layerbench").joinpath(f"data/examples/{name}.yaml").read_text(encoding="utf-8")
    head = []
    for line in text.splitlines():
        if not line.startswith("#") or not line.strip("# "):
            break
        head.append(line.strip("# "))
    return " ".join(head)


def default_campaign_text() -> str:
    return resources.files("layerbench").joinpath("data/default-campaign.yaml").read_text(encoding="utf-8")
