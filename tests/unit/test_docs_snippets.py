"""Every ```yaml snippet of README.md and docs/**/*.md is checked by the code: each is run through
`layerbench validate` in-process (as tests/unit/test_hostile_inputs.py does), and must say "valid" (exit 0).

Convention (the line right before a snippet's fence may hold a marker, an HTML comment the reader does not see):
- no marker: a campaign, or a fragment of one, made whole here: a mapping with `variants:` is a campaign (a
  missing `name` becomes docs-snippet, a missing `baseline` its first variant, a missing workload a small one); a
  list is variants, added after a host baseline; a mapping without `variants:` is top-level keys of a campaign
  whose only variant is a host. `output:` always goes to the test's own folder. Then full `validate`.
- `<!-- snippet: plan-only (why) -->`: it needs what this machine cannot give a test (an SSH host of the reader's,
  a Kubernetes cluster, a folder of the reader's): the same campaign is checked offline, by the schema and the
  plan (`parse_campaign` + `make_plan`), which is what `validate` prints after its preflight.
- `<!-- snippet: refused (text) -->`: validate must refuse it, exit 2, in one line containing `text`.
- `<!-- snippet: import-mapping (why) -->`: a mapping file of `layerbench import`: read by its own reader, with
  (empty) files of the names it lists made beside it.
A fenced block of any language whose first line is `-- file: PATH` (Lua) or `# file: PATH` is a file the page's
snippets use (a custom workload's script): it is written at PATH in the folder each snippet of that page runs in.
A snippet that would reach another machine (an `ssh:` host, a Kubernetes variant) must be marked plan-only, so
this test never sends a packet beyond this machine.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_hostile_inputs import validate

from layerbench.campaign.models import parse_campaign
from layerbench.importing.logs import read_mapping
from layerbench.run.plan import make_plan

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<marker>[ \t]*<!-- snippet: (?P<kind>[\w-]+)(?: \((?P<note>[^)]*)\))? -->\n)?"
                   r"(?P<indent>[ \t]*)```yaml\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
SMALL_WORKLOAD = {"tables": 1, "table_size": 1000, "threads": 1, "duration": 5, "warmup": 1}
KINDS = {None, "plan-only", "refused", "import-mapping"}
FILE_BLOCK = re.compile(r"^```\w*\n(?:--|#) file: (?P<path>[\w./-]+)[^\n]*\n(?P<body>.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Snippet:
    where: str  # file:line
    kind: str | None
    note: str
    text: str
    files: tuple[tuple[str, str], ...] = ()  # (relative path, content) of the page's file blocks


def snippets() -> list[Snippet]:
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        files = tuple((f["path"], f.group(0).split("\n", 1)[1].rsplit("```", 1)[0]) for f in FILE_BLOCK.finditer(text))
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start("indent")) + 1
            body = textwrap.dedent("".join(ln.removeprefix(m["indent"]) + "\n" for ln in m["body"].splitlines()))
            found.append(Snippet(f"{path.relative_to(ROOT)}:{line}", m["kind"], m["note"] or "", body, files))
    return found


def as_campaign(data: Any, output: Path) -> dict[str, Any]:
    """A snippet made a whole campaign by the convention above."""
    host = {"name": "host", "backend": "host"}
    if isinstance(data, list):
        data = {"variants": [host, *data], "baseline": "host"}
    elif "variants" not in data:
        data = {"variants": [host], **data}
    campaign = {"name": "docs-snippet", **data, "output": str(output)}
    campaign.setdefault("baseline", campaign["variants"][0]["name"])
    if "workload" not in campaign and "workloads" not in campaign:
        campaign["workload"] = SMALL_WORKLOAD
    return campaign


SNIPPETS = snippets()


def test_the_docs_have_snippets_and_every_marker_is_known() -> None:
    assert len(SNIPPETS) >= 10
    assert {s.kind for s in SNIPPETS} <= KINDS, [s.where for s in SNIPPETS if s.kind not in KINDS]
    assert all(s.note for s in SNIPPETS if s.kind), "a marker says why in its (...)"


def reaches_out(campaign: dict[str, Any]) -> bool:
    """Would validate contact another machine (an ssh: host, a Kubernetes API server)?"""
    hosts = campaign.get("hosts") or {}
    return any("ssh" in (h or {}) for h in hosts.values()) or any(
        v.get("backend") == "kubernetes" for v in campaign["variants"])


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind == "import-mapping"], ids=lambda s: s.where)
def test_import_mapping_snippet_reads(snippet: Snippet, tmp_path: Path) -> None:
    data = yaml.safe_load(snippet.text)
    for entry in data["runs"]:
        (tmp_path / entry["file"]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / entry["file"]).touch()
    (tmp_path / "mapping.yaml").write_text(snippet.text, encoding="utf-8")
    files = read_mapping(tmp_path / "mapping.yaml")
    assert [(f.variant, f.iteration) for f in files] == [(e["variant"], e["iteration"]) for e in data["runs"]]


@pytest.mark.parametrize("snippet", [s for s in SNIPPETS if s.kind != "import-mapping"], ids=lambda s: s.where)
def test_snippet_validates(snippet: Snippet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           no_cluster_kubeconfig: Path) -> None:
    monkeypatch.chdir(tmp_path)
    for relative, content in snippet.files:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(content, encoding="utf-8")
    campaign = as_campaign(yaml.safe_load(snippet.text), tmp_path / "out")
    assert snippet.kind == "plan-only" or not reaches_out(campaign), f"{snippet.where}: mark it plan-only"
    if snippet.kind == "plan-only":  # the plan alone, whatever cluster this machine runs now: none answers
        plan = make_plan(parse_campaign(campaign), None)
        assert plan.runs > 0 and len(plan.lines) >= len(campaign["variants"])
        return
    path = tmp_path / "campaign.yaml"
    path.write_text(yaml.safe_dump(campaign), encoding="utf-8")
    code, err = validate(path)
    if snippet.kind == "refused":
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and snippet.note in lines[0], err
    else:
        assert code == 0, f"{snippet.where}: {err}"
    assert not (tmp_path / "out").exists()  # validate creates nothing
