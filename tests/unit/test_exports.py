"""JSON (golden, stable schema), CSV (pandas-ready shape) and JUnit XML (valid against the schema Jenkins reads,
tests/data/junit/) exports of a synthetic campaign."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from golden import check
from helpers import fill_store
from layerbench.analysis.loading import analyze
from layerbench.analysis.report_model import report_model
from layerbench.report import csv_export, json_export, junit, write_report
from layerbench.store import Store


def analysis(tmp_path: Path):
    db = tmp_path / "lb.db"
    cid = fill_store(db, {"host": 1.0, "vm": 0.95}, reps=6, threads=(2, 4), costs={"host": 200.0, "vm": 120.0})
    with Store(db) as store:
        return analyze(store, cid)


def test_json_golden_and_schema(tmp_path: Path) -> None:
    a = analysis(tmp_path)
    text = json_export.render(report_model(a))
    doc = json.loads(text)
    assert doc["schema"] == "layerbench.analysis/1"
    assert {"campaign", "settings", "points", "sweeps", "price_performance", "warnings", "runs"} <= doc.keys()
    vm = next(v for v in doc["points"][0]["variants"] if v["variant"] == "vm")
    # paired by round (6 pairs, one comparison): the signed-rank interval at 6 pairs is [min, max] of the per-round
    # ratios and reaches into the band; unpaired (6 + 6 runs) it was `slower`
    assert vm["comparisons"]["tps"]["verdict"]["kind"] == "slower?" and vm["comparisons"]["tps"]["pairs"] == 6
    assert len(doc["runs"]) == 24 and doc["runs"][0]["series"][0].keys() == {"time", "tps", "warmup"}
    check("report_sweep_price.json", text)


def test_csv_one_row_per_run(tmp_path: Path) -> None:
    a = analysis(tmp_path)
    rows = list(csv.DictReader(io.StringIO(csv_export.render(report_model(a)))))
    assert len(rows) == 24 and rows[0].keys() >= {"variant", "threads", "tps", "lat_pct_ms", "steady_state"}
    assert {r["variant"] for r in rows} == {"host", "vm"} and all(float(r["tps"]) > 0 for r in rows)


def test_every_format_writes_a_file(tmp_path: Path) -> None:
    a = analysis(tmp_path)
    for fmt in ("md", "html", "json", "csv", "junit"):
        path = write_report(report_model(a), fmt, tmp_path / "out")
        assert path.exists() and path.stat().st_size > 100
    assert "<script>" in (tmp_path / "out" / "report.html").read_text()[:5_000_000]


def test_csv_cells_a_spreadsheet_would_evaluate_are_inert(tmp_path: Path) -> None:
    """OWASP CSV injection: a text cell starting with = + - @ (or tab/CR) gets a leading quote; numbers stay."""
    from layerbench.importing.table import import_csv

    source = tmp_path / "hostile.csv"
    source.write_text('variant,iteration,tps\n"=HYPERLINK(""http://x"")",1,10\n+cmd,1,11\n-2+3,1,12\n@SUM(A1),1,13\n'
                      "plain,1,14\n", encoding="utf-8")
    with Store(tmp_path / "lb.db") as store:
        cid = import_csv(store, source, "hostile", "plain")
        rows = list(csv.DictReader(io.StringIO(csv_export.render(report_model(analyze(store, cid))))))
    variants = {r["variant"] for r in rows}
    assert variants == {"'=HYPERLINK(\"http://x\")", "'+cmd", "'-2+3", "'@SUM(A1)", "plain"}
    assert all(not r["variant"].startswith(("=", "+", "-", "@")) for r in rows)
    assert sorted(float(r["tps"]) for r in rows) == [10, 11, 12, 13, 14]


def test_report_into_a_file_is_one_line_bad_input(tmp_path: Path) -> None:
    import pytest

    from layerbench.errors import BadInput

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(BadInput, match=r"--output: .* cannot hold the report"):
        write_report(report_model(analysis(tmp_path)), "md", blocker)


# --- JUnit XML ---------------------------------------------------------------------------------------------------

JUNIT_XSD = Path(__file__).resolve().parents[1] / "data" / "junit" / "junit.xsd"


def valid_junit(text: str) -> ET.Element:
    """The document, after checking it against the JUnit schema in tests/data/junit/junit.xsd (xmlschema raises on
    any violation)."""
    import xmlschema

    xmlschema.XMLSchema(JUNIT_XSD).validate(text)
    return ET.fromstring(text)


def test_junit_one_case_per_comparison_a_firm_slower_fails_by_default(tmp_path: Path) -> None:
    """vm 5 % below host at 2 and 4 threads, 6 rounds paired (the paired t-test): TPS `slower?` at 2 threads (its
    interval reaches into ±2 %) and `slower` at 4, p95 latency `slower`: without --fail-on only the firm `slower`
    fails, `slower?` is skipped as undecided."""
    root = valid_junit(junit.render(report_model(analysis(tmp_path))))
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 4 and suite.get("tests") == "4" and root.get("failures") == suite.get("failures") == "3"
    assert suite.get("skipped") == "1" and suite.get("errors") == "0"
    tps = next(c for c in cases if c.get("name") == "vm vs host: TPS")
    assert tps.get("classname") == "layerbench.golden.default, 2 threads"
    skipped = tps.find("skipped")
    assert skipped.get("message").startswith("vm at default, 2 threads, TPS: slower?: -")
    assert "(p=0.004, n=6 pairs)" in skipped.get("message") and "could not be decided" in skipped.text
    failure = next(c for c in cases if c.get("name") == "vm vs host: p95 latency (ms)").find("failure")
    assert failure.get("type") == "slower" and "matches --fail-on slower" in failure.text
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["gate"] == "--fail-on slower" and properties["exit_code"] == "3"
    assert "paired by round" in properties["method"] and properties["legend"].startswith("Verdicts: ")


def test_junit_under_fail_on_passes_carry_their_evidence(tmp_path: Path) -> None:
    from layerbench.analysis.gate import parse_gate

    text = junit.render(report_model(analysis(tmp_path)), parse_gate(["faster:tps"], None))
    suite = valid_junit(text).find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 2 and suite.get("failures") == "0" and suite.get("skipped") == "0"
    out = cases[0].find("system-out").text
    assert out.startswith("vm at default, 2 threads, TPS: slower?: -") and out.endswith("no regression")


def test_junit_holds_any_name_and_a_campaign_without_comparisons(tmp_path: Path) -> None:
    """Imported names with markup stay valid XML (an import refuses control characters; xml_text would replace
    them); a campaign where only the baseline has values gives one skipped case that says so."""
    from layerbench.importing.table import import_csv
    from layerbench.report.junit import xml_text

    source = tmp_path / "hostile.csv"
    source.write_text('variant,iteration,tps\n"<b>&amp;\'",1,10\n"<b>&amp;\'",2,11\nplain,1,14\nplain,2,15\n',
                      encoding="utf-8")
    with Store(tmp_path / "lb.db") as store:
        cid = import_csv(store, source, "hostile", "plain")
        root = valid_junit(junit.render(report_model(analyze(store, cid))))
    case = root.find("testsuite").find("testcase")
    assert case.get("name") == "<b>&amp;' vs plain: TPS" and case.find("skipped") is not None
    assert xml_text("a\x00b\x1fc\td\ne") == "a?b?c\td\ne"
    only = tmp_path / "only.csv"
    only.write_text("variant,iteration,tps\nplain,1,14\nplain,2,15\n", encoding="utf-8")
    with Store(tmp_path / "lb.db") as store:
        root = valid_junit(junit.render(report_model(analyze(store, import_csv(store, only, "only", "plain")))))
    (empty,) = root.find("testsuite").findall("testcase")
    assert empty.get("name") == "no comparison" and empty.find("skipped").get("message") == (
        "Only the baseline was measured.")


def test_the_junit_schema_refuses_what_ci_systems_would_not_read() -> None:
    import pytest
    import xmlschema

    with pytest.raises(xmlschema.XMLSchemaValidationError):  # a test case without its name
        valid_junit('<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase classname="c"/>'
                    "</testsuite></testsuites>")
    with pytest.raises(xmlschema.XMLSchemaValidationError):  # a failure outside a test case
        valid_junit('<testsuites><testsuite name="s" tests="1" failures="1" errors="0"><failure/></testsuite>'
                    "</testsuites>")


def test_junit_is_a_format_of_the_campaign_file() -> None:
    from helpers import synthetic_campaign
    from layerbench.campaign.models import parse_campaign

    campaign = parse_campaign(synthetic_campaign({"host": 1.0, "vm": 1.0}) | {"formats": ["md", "junit"]})
    assert campaign.formats == ["md", "junit"]
