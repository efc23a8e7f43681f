"""Published numbers as data (#33 item 3): the `published:` block is validated with one-line errors (hostile
inputs too), each number is judged against our interval (agrees / same direction, other size / disagrees /
cannot tell), every format shows the section, `--scale` arithmetic keeps the study's ratios, and the examples
carry their studies' numbers."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import fill_store
from layerbench.analysis.loading import analyze
from layerbench.analysis.metrics import Metric
from layerbench.analysis.published import AGREES, CANNOT, DISAGREES, PARTLY, judged
from layerbench.analysis.report_model import Report, report_model
from layerbench.analysis.stats import Comparison, DeltaCI, Verdict
from layerbench.campaign.models import load_campaign, parse_campaign, with_scale
from layerbench.campaign.published import PublishedNumber, PublishedSize
from layerbench.campaign.scaling import ROW_BYTES, scaled_size
from layerbench.cli.main import main
from layerbench.errors import BadInput
from layerbench.report import csv_export, html, json_export, markdown
from layerbench.run.plan import published_lines
from layerbench.run.preflight import BYTES_PER_ROW
from layerbench.store import Store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GIB = 2**30


def campaign(published: object, **extra: object) -> dict:
    return {"name": "c", "baseline": "host", "variants": [{"name": "host", "backend": "host"},
                                                          {"name": "docker", "backend": "host"}],
            "workload": {"tables": 4, "table_size": 1000}, "published": published, **extra}


def study(**size: object) -> dict:
    return {"source": "Study X, 2020", "baseline": "MySQL on the host", "numbers": [
        {"variant": "docker", "delta": "-10%"}], **({"size": size} if size else {})}


def refused(data: dict) -> str:
    with pytest.raises(BadInput) as error:
        parse_campaign(data)
    message = str(error.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# --- the block ------------------------------------------------------------------------------------------------


def test_a_published_number_is_a_percent_or_a_direction() -> None:
    c = parse_campaign(campaign({**study(), "numbers": [{"variant": "docker", "delta": "-10 %", "said": "about"},
                                                         {"variant": "docker", "metric": "pct_latency",
                                                          "delta": "slower"}]}))
    assert c.published is not None
    first, second = c.published.numbers
    assert (first.delta, first.fraction, first.metric) == ("-10%", -0.1, "tps")
    assert (second.delta, second.fraction) == ("slower", None)
    zero = parse_campaign(campaign({**study(), "numbers": [{"variant": "docker", "delta": "-0%"}]}))
    assert zero.published is not None and zero.published.numbers[0].delta == "+0%"
    said = {**study(), "numbers": [{"variant": "docker", "delta": "-1%", "said": "a\nb"}]}
    assert refused(campaign(said)).startswith("published.numbers[0].said: 'a\\nb' must be one line")


@pytest.mark.parametrize(("number", "field"), [
    ({"variant": "docker", "delta": -10}, "published.numbers[0].delta: -10 is not a published delta"),
    ({"variant": "docker", "delta": "-0.1"}, "published.numbers[0].delta"),
    ({"variant": "docker", "delta": "-150%"}, "published.numbers[0].delta"),
    ({"variant": "dockr", "delta": "-10%"}, "published.numbers[0].variant: 'dockr' names no variant; use one of: "
                                            "docker"),
    ({"variant": "host", "delta": "-10%"}, "published.numbers[0].variant: 'host' is the baseline"),
    ({"variant": "docker", "delta": "-10%", "workload": "nope"}, "published.numbers[0].workload: 'nope' names no "
                                                                  "workload"),
    ({"variant": "docker", "delta": "-10%", "metric": "latency"}, "published.numbers.0.metric"),
])
def test_a_wrong_number_is_one_line_naming_its_field(number: dict, field: str) -> None:
    message = refused(campaign({**study(), "numbers": [number]}))
    assert message.startswith(field.replace(".0.", "[0].")) or field in message, message


def test_the_same_number_twice_and_a_size_without_data_are_refused() -> None:
    twice = {**study(), "numbers": [{"variant": "docker", "delta": "-10%"}, {"variant": "docker", "delta": "-9%"}]}
    assert refused(campaign(twice)).startswith("published.numbers: docker tps is given twice")
    assert "give the study's data" in refused(campaign(study(buffer_pool="2G")))
    assert "is not a size" in refused(campaign(study(data="45 bytes")))


HOSTILE = st.one_of(st.text(max_size=30), st.sampled_from(["[/x]", "a\nb", "", " ", "-10%\n", "10**400"]),
                    st.integers(min_value=-10**400, max_value=10**400), st.lists(st.text(max_size=3), max_size=2),
                    st.none(), st.floats(allow_nan=True), st.dictionaries(st.text(max_size=3), st.text(max_size=3),
                                                                          max_size=2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(key=st.sampled_from(["source", "baseline", "numbers", "size", "delta", "variant", "metric", "workload",
                            "data", "ram", "buffer_pool", "tables", "said"]), value=HOSTILE)
def test_hostile_values_are_one_line_errors_or_accepted(key: str, value: object) -> None:
    block = study(data="2.3G")
    if key in ("source", "baseline", "numbers", "size"):
        block[key] = value
    elif key in ("data", "ram", "buffer_pool", "tables"):
        block["size"][key] = value
    else:
        block["numbers"][0][key] = value
    try:
        parse_campaign(campaign(block))
    except BadInput as error:
        assert "\n" not in str(error) and len(str(error)) < 1200 and str(error).startswith(("published", "campaign"))


def test_a_published_block_that_is_not_a_mapping_is_one_line() -> None:
    assert refused(campaign(["a list"])).startswith("published")
    assert refused(campaign("-10%")).startswith("published")


# --- judging one number against our interval --------------------------------------------------------------------


def comparison(delta: float, low: float, high: float, n: int = 6, kind: str | None = None) -> Comparison:
    """Our comparison; its verdict by default the one its interval gives (a test that agrees with it)."""
    if kind is None:
        kind = "faster" if low > 0 else "slower" if high < 0 else "~"
    return Comparison("docker", DeltaCI(delta, low, high), 0.01, 0.01, Verdict(kind, "text"), n, n)


def verdict_of(delta: str, c: Comparison | None, metric: Metric = Metric.TPS) -> str:
    return judged(PublishedNumber(variant="docker", delta=delta), metric, c)[3]


@pytest.mark.parametrize(("published", "ours", "expected"), [
    ("-10%", (-0.12, -0.15, -0.08), AGREES),  # inside, same side
    ("-10%", (-0.30, -0.35, -0.25), PARTLY),  # same side, interval excludes the value
    ("-10%", (-0.1368, -0.168, -0.110), PARTLY),  # docs/studies.md: the container example of 2026-11-22
    ("-10%", (0.05, 0.02, 0.08), DISAGREES),  # opposite side
    ("-10%", (0.00, -0.02, 0.02), DISAGREES),  # no difference here, and -10 % excluded
    ("-10%", (-0.05, -0.15, 0.03), CANNOT),  # holds both 0 and -10 %
    ("0%", (0.00, -0.02, 0.02, 6, "within noise"), AGREES),  # "does not matter", and shown to be small here
    ("0%", (-0.08, -0.20, 0.24), CANNOT),  # "does not matter", and nothing detected, but a cost of 20 % not excluded
    ("0%", (-0.2, -0.25, -0.15), DISAGREES),  # "does not matter", but it does here
    ("slower", (-0.2, -0.25, -0.15), AGREES),
    ("slower", (0.2, 0.15, 0.25), DISAGREES),
    ("slower", (0.0, -0.1, 0.1), CANNOT),
])
def test_agreement_is_direction_and_the_published_value_against_our_interval(published: str, ours: tuple,
                                                                              expected: str) -> None:
    assert verdict_of(published, comparison(*ours)) == expected


def test_slower_latency_is_a_higher_latency() -> None:
    assert verdict_of("slower", comparison(0.2, 0.1, 0.3), Metric.LAT_PCT) == AGREES
    assert verdict_of("faster", comparison(0.2, 0.1, 0.3), Metric.LAT_PCT) == DISAGREES


@pytest.mark.parametrize("published", ["slower", "-30%", "-10%", "0%"])
def test_an_interval_that_excludes_0_only_before_holm_cannot_tell(published: str) -> None:
    """The docker storage study at its published size (2026-11-26): bind-bridge -34.8 % [-41.2, -22.7] with
    p = 0.015 alone, 0.156 after Holm over 6 variants: the verdict is ~, so the agreement may not claim a
    direction either."""
    row = judged(PublishedNumber(variant="docker", delta=published), Metric.TPS,
                 comparison(-0.348, -0.412, -0.227, kind="~"))
    assert row[1] == "ours undecided after Holm" and row[3] == CANNOT and "Holm" in row[4]
    assert row[2] == ("-" if published == "slower" else "inside" if published == "-30%" else "outside")


def test_our_data_that_cannot_decide_says_so() -> None:
    assert verdict_of("-10%", None) == CANNOT
    few = judged(PublishedNumber(variant="docker", delta="-10%"), Metric.TPS,
                 comparison(-0.1, -0.3, 0.1, n=3, kind="need more runs"))
    assert few[3] == CANNOT and "too few runs" in few[4]


# --- the section in every format ----------------------------------------------------------------------------------


def report(tmp_path: Path, published: dict) -> Report:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "docker": 0.9, "vm": 1.0}, reps=6, extra={"published": published})
    with Store(db) as store:
        return report_model(analyze(store, cid))


PUBLISHED = {"source": "Study <script>x</script> | 2020", "baseline": "MySQL 8.0 on the host",
             "size": {"tables": 20, "table_size": 10_000_000, "data": "45G", "buffer_pool": "2G"},
             "numbers": [{"variant": "docker", "delta": "-10%", "said": "about 10 %"},
                         {"variant": "vm", "delta": "-50%"}]}


def test_every_format_shows_published_vs_measured(tmp_path: Path) -> None:
    r = report(tmp_path, PUBLISHED)
    assert r.published is not None and [row.agreement for row in r.published.rows] == [AGREES, DISAGREES]
    md = markdown.render(r)
    assert "## Published vs measured" in md and "| docker | default, 2 threads | TPS | -10% (about 10 %) |" in md
    assert "Measured at the example's size, not the study's" in md and "Study <script>x</script> / 2020" in md
    page = html.render(r)
    assert "Published vs measured" in page and "&lt;script&gt;x&lt;/script&gt;" in page
    assert "<script>x</script>" not in page
    doc = json.loads(json_export.render(r))
    assert [row["agreement"] for row in doc["published"]["rows"]] == [AGREES, DISAGREES]
    rows = list(csv.DictReader(io.StringIO(csv_export.render(r))))
    docker = next(row for row in rows if row["variant"] == "docker")
    host = next(row for row in rows if row["variant"] == "host")
    assert (docker["published"], docker["published_agreement"]) == ("TPS: -10%", AGREES)
    assert (host["published"], host["published_agreement"]) == ("", "")


def test_a_campaign_without_published_numbers_has_no_section(tmp_path: Path) -> None:
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "docker": 0.9}, reps=6)
    with Store(db) as store:
        r = report_model(analyze(store, cid))
    assert r.published is None and "Published vs" not in markdown.render(r)
    assert "published" not in json.loads(json_export.render(r)) and "published" not in csv_export.render(r)


# --- --scale ------------------------------------------------------------------------------------------------------


def test_the_published_size_keeps_the_studys_rows_pool_and_run_length() -> None:
    size = PublishedSize(tables=20, table_size=10_000_000, data="45G", buffer_pool="2G", duration=300, warmup=60)
    s = scaled_size(size, "published", tables=4, ram_here=24 * GIB)
    assert (s.tables, s.table_size, s.factor, s.duration, s.warmup) == (20, 10_000_000, 1.0, 300, 60)
    assert s.buffer_pool_pct == pytest.approx(2 / 45 * 100)


def test_a_size_given_in_bytes_becomes_rows_over_the_workloads_tables() -> None:
    s = scaled_size(PublishedSize(data="2.3G", buffer_pool="256M"), "published", tables=4, ram_here=GIB)
    assert s.tables == 4 and s.table_size == round(2.3 * GIB / ROW_BYTES / 4)
    assert s.buffer_pool_pct == pytest.approx(256 / (2.3 * 1024) * 100)


def test_scaled_to_this_machine_the_ratios_of_data_pool_and_ram_are_the_studys() -> None:
    size = PublishedSize(tables=20, table_size=10_000_000, buffer_pool="2G", ram="64G")
    s = scaled_size(size, "machine", tables=4, ram_here=24 * GIB)
    assert s.factor == pytest.approx(24 / 64) and s.table_size == round(10_000_000 * 24 / 64)
    data_here = s.tables * s.table_size * ROW_BYTES
    study_data = 20 * 10_000_000 * ROW_BYTES
    assert data_here / (24 * GIB) == pytest.approx(study_data / (64 * GIB), rel=1e-6)  # data : RAM kept
    assert s.buffer_pool_pct == pytest.approx(2 * GIB / study_data * 100)  # pool : data kept
    bigger = scaled_size(size, "machine", tables=4, ram_here=256 * GIB)
    assert bigger.factor == 1.0 and bigger.table_size == 10_000_000  # never larger than the study


def test_scale_machine_without_the_studys_ram_is_one_line() -> None:
    assert "scale: machine needs published.size.ram" in refused(campaign(study(data="2.3G"), scale="machine"))
    assert "scale: published needs published.size" in refused(campaign(study(), scale="published"))


def test_scale_in_the_file_and_with_scale_give_the_same_campaign_and_the_plan_says_which() -> None:
    data = campaign(study(tables=20, table_size=1_000_000, buffer_pool="1G", ram="64G", duration=300))
    from_file = parse_campaign({**data, "scale": "machine"})
    by_option = with_scale(parse_campaign(data), "machine")
    assert from_file.workloads == by_option.workloads and from_file.scale == "machine"
    assert any(line.startswith("size: scaled to this machine") for line in published_lines(from_file))
    assert any(line.startswith("size: the example's") for line in published_lines(parse_campaign(data)))
    assert parse_campaign({**data, "scale": "published"}).workloads[0].duration == 300


def test_a_workload_with_its_own_buffer_pool_keeps_it() -> None:
    data = campaign(study(data="2.3G", buffer_pool="256M"))
    data["workload"]["buffer_pool"] = "150%"
    assert parse_campaign({**data, "scale": "published"}).workloads[0].buffer_pool == "150%"


def test_row_bytes_is_the_preflights() -> None:
    assert ROW_BYTES == BYTES_PER_ROW


def test_a_wrong_scale_word_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(campaign(study())))
    err = io.StringIO()
    from layerbench.cli import terminal as cli

    old, old_debug = cli.console._file, cli.STATE["debug"]
    cli.console.file, cli.STATE["debug"] = err, False  # another test may have left --debug on
    try:
        with pytest.raises(SystemExit) as done, contextlib.redirect_stdout(io.StringIO()):
            main(["validate", str(path), "--scale", "huge"])
    finally:
        cli.console._file, cli.STATE["debug"] = old, old_debug
    assert done.value.code == 2 and err.getvalue().strip().startswith("error: --scale: 'huge' is not a size")


# --- the examples --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["container-overhead", "mysql-container-overhead", "docker-storage-network",
                                  "k8s-qos", "tuning-ladder", "vm-thread-sweep"])
def test_the_examples_carry_their_studys_numbers(name: str) -> None:
    c = load_campaign(EXAMPLES / f"{name}.yaml")
    assert c.published is not None and c.published.numbers and "citation" in c.published.source


def test_the_container_study_runs_at_its_published_size() -> None:
    c = with_scale(load_campaign(EXAMPLES / "container-overhead.yaml"), "published")
    w = c.workloads[0]
    assert (w.tables, w.table_size, w.duration, w.buffer_pool) == (20, 10_000_000, 300, "4.444%")


def test_a_scaled_campaign_resumes_at_the_same_size() -> None:
    """The store keeps `scale:` and the scaled workloads; reading them back (resume) scales to the same size."""
    from layerbench.campaign.models import campaign_as_dict, stored_campaign

    data = campaign(study(tables=20, table_size=1_000_000, buffer_pool="1G", ram="64G", duration=300))
    scaled = with_scale(parse_campaign(data), "machine", ram_here=24 * GIB)
    again = stored_campaign(campaign_as_dict(scaled))
    assert again.scale == "machine" and again.published == scaled.published
    assert [w.buffer_pool for w in again.workloads] == [w.buffer_pool for w in scaled.workloads]
    assert again.workloads[0].tables == 20
