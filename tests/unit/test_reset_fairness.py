"""Fairness when variants reset their data differently: one line per variant against the baseline (a clone, a copy,
an overlay and a re-prepared table are not the same pages), asked when a variant's own `reset:` chose it."""

from __future__ import annotations

from layerbench.analysis.aggregate import recorded_resets
from layerbench.analysis.fairness import reset_differences, reset_kind
from layerbench.analysis.runs import RunRow
from layerbench.records import StoredFacts


def run(variant: str, method: str, restore: str | None = None, source: str = "workloads.w.reset",
        status: str = "ok") -> RunRow:
    reset: dict = {"method": method, "seconds": 1.0, "reset_from": source}
    if restore is not None:
        reset["restore"] = {"method": restore, "verified": "x"}
    return RunRow(1, 0, 1, variant, "w", 1, 1, status, None, {}, facts=StoredFacts.from_json({"reset": reset}))


def lines(runs: list[RunRow]) -> list[str]:
    return [d.text("host") for d in reset_differences("host", recorded_resets(runs))]


def test_each_recorded_restore_method_has_its_kind() -> None:
    kinds = [reset_kind("snapshot", m)[0] for m in (
        "clone", "copy", "clone into the host folder of a local-driver volume (type=none, o=bind)",
        "copy-on-write overlay of a prepared base image", "cp -a inside the container into a tmpfs in memory",
        "copy by the kubernetes backend", None)]
    assert kinds == ["clone", "copy", "clone", "overlay", "copy", "copy", "copy"]
    assert reset_kind("reprepare", None)[0] == "reprepare" and reset_kind("none", None)[0] == "none"


def test_a_copy_against_a_clone_is_one_unasked_line() -> None:
    said = lines([run("host", "snapshot", "clone"), run("docker", "snapshot", "copy into the host folder of a "
                                                                          "local-driver volume"),
                  run("docker", "snapshot", "copy"), run("vm", "snapshot", "copy-on-write overlay of a base image"),
                  run("same", "snapshot", "clone")])
    assert len(said) == 2 and all("\n" not in s for s in said)
    assert said[0].startswith("`docker` differs from `host` in how each run's data was reset: copy (a copy: ")
    assert "vs clone (a reflink clone: " in said[0] and said[0].endswith("(not asked by the campaign)")
    assert said[1].startswith("`vm` differs from `host` in how each run's data was reset: overlay (")


def test_a_re_prepared_variant_says_its_tables_are_freshly_written() -> None:
    said = lines([run("host", "snapshot", "copy"), run("pod", "reprepare", source="this variant cannot restore a "
                                                                                  "snapshot: emptyDir"),
                  run("own", "reprepare", source="variants.own.reset"), run("gone", "reprepare", status="failed")])
    assert len(said) == 2
    assert ("reprepare (re-prepared: freshly written tables (different page fill and cache state than the "
            "snapshot's)) vs copy") in said[0] and said[0].endswith("(not asked by the campaign)")
    assert said[1].startswith("`own` differs") and "asked by the campaign: the delta measures" in said[1]


def test_nothing_when_every_variant_resets_alike_or_the_baseline_has_no_runs() -> None:
    assert lines([run("host", "snapshot", "copy"), run("docker", "snapshot", "cp -a inside the container")]) == []
    assert lines([run("docker", "snapshot", "clone")]) == []
