"""The report as JUnit XML, for CI systems that show test reports (Jenkins, GitLab): one test suite per campaign,
one test case per comparison in the gate's scope (analysis/gate.py; without `--fail-on`, a firm `slower` of TPS
or percentile latency fails). A regression is a <failure>, a comparison that could not be decided <skipped>, a
passed one carries its evidence in <system-out>; every message has the verdict, the estimate, its interval, p
and n. The document validates against the JUnit schema in tests/data/junit/junit.xsd."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from layerbench.analysis.gate import (
    DEFAULT_GATE,
    INCONCLUSIVE,
    REGRESSION,
    Case,
    Gate,
    Judged,
    Outcome,
    judge_report,
)
from layerbench.analysis.report_model import Report
from layerbench.report.evidence import evidence_with_note

NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")  # characters XML 1.0 cannot hold


def xml_text(text: str) -> str:
    """User text (variant and campaign names) as XML 1.0 can hold it: control characters as `?`."""
    return NOT_XML.sub("?", text)


def case_evidence(case: Case) -> str:
    """`slower: -19.84% [-25.1, -14.2] (p=0.002, n=6 pairs)`; the note for a comparison not made."""
    c = case.comparison
    shown = c.verdict.text if c.verdict.kind == "not compared" else evidence_with_note(c)
    return f"{c.verdict.kind}: {shown}"


def testcase(parent: ET.Element, campaign: str, judged: Judged) -> None:
    case = judged.case
    title = f"{case.variant} vs {case.against}: {case.label}"
    element = ET.SubElement(parent, "testcase", name=xml_text(title),
                            classname=xml_text(f"layerbench.{campaign}.{case.point}"))
    message = xml_text(f"{case.variant} at {case.point}, {case.label}: {case_evidence(case)}")
    if judged.status == REGRESSION:
        ET.SubElement(element, "failure", type=case.comparison.verdict.kind, message=message).text = (
            f"{message}\n{judged.why}")
    elif judged.status == INCONCLUSIVE:
        ET.SubElement(element, "skipped", type=case.comparison.verdict.kind, message=message).text = (
            f"{message}\n{judged.why}: could not be decided")
    else:
        ET.SubElement(element, "system-out").text = f"{message}\n{judged.why}"


def render_outcome(report: Report, outcome: Outcome) -> str:
    analysis = report.analysis
    campaign = xml_text(analysis.name)
    counts = {"tests": str(max(1, len(outcome.judged))), "failures": str(outcome.count(REGRESSION)),
              "errors": "0", "skipped": str(outcome.count(INCONCLUSIVE) + (0 if outcome.judged else 1))}
    root = ET.Element("testsuites", name="layerbench", **{k: v for k, v in counts.items() if k != "skipped"})
    suite = ET.SubElement(root, "testsuite", name=xml_text(f"{campaign} (campaign {analysis.campaign_id})"),
                          id=str(analysis.campaign_id), package="layerbench", **counts)
    properties = ET.SubElement(suite, "properties")
    for name, value in (("gate", outcome.gate.text()), ("status", outcome.status),
                        ("exit_code", str(outcome.exit_code)), ("method", report.method), ("rule", report.rule),
                        ("legend", report.legend)):
        ET.SubElement(properties, "property", name=name, value=xml_text(value))
    for judged in outcome.judged:
        testcase(suite, campaign, judged)
    if not outcome.judged:  # nothing compared: one skipped case that says why, not an empty suite that passes
        empty = ET.SubElement(suite, "testcase", name="no comparison", classname=f"layerbench.{campaign}")
        ET.SubElement(empty, "skipped", message=xml_text(outcome.empty_why))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(report: Report, gate: Gate | None = None) -> str:
    """The JUnit XML of a report under `gate` (None: DEFAULT_GATE, a firm `slower` fails)."""
    return render_outcome(report, judge_report(gate or DEFAULT_GATE, report))
