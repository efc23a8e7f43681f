"""The evidence of a comparison and a summary as text, shared by every report format: the estimate, its
interval, the p-value and n per side, always (a 'need more runs' verdict is an annotation next to it, never a
replacement), and 'undefined' (with why) for what a single value cannot give: sd, CV, intervals, p-values."""

from __future__ import annotations

from layerbench.analysis.stats import Comparison, Summary, format_bound, format_p

UNDEFINED = "undefined (n=1)"


def single(c: Comparison) -> bool:
    return min(c.n_baseline, c.n_variant) < 2


def evidence(c: Comparison | None) -> str:
    """`-9.91% [-11.0, -8.8] (p=0.002, n=6+6)`; a plain difference for single values."""
    if c is None or c.delta is None:
        return "-" if c is None else f"no values on one side (n={c.n_baseline}+{c.n_variant})"
    shown = f"{c.delta.delta * 100:+.2f}%"
    if single(c):
        return (f"{shown} (plain difference, n={c.n_baseline}+{c.n_variant}: interval and p undefined "
                "for a single value)")
    p = format_p(c.p_adjusted if c.p_adjusted is not None else 1.0)
    runs = f"{c.n_baseline}+{c.n_variant}"
    n = f"n={runs}"
    if c.pairs is not None:  # paired by round; the runs per side too when some had no partner in their round
        n = f"n={c.pairs} pairs" + ("" if c.n_baseline == c.n_variant == c.pairs else f" of {runs} runs")
    return f"{shown} [{format_bound(c.delta.low)}, {format_bound(c.delta.high)}] ({p}, {n})"


def verdict_word(c: Comparison | None) -> str:
    return "-" if c is None else c.verdict.kind


def annotation(c: Comparison | None) -> str:
    """Which n would give a verdict ('need >= 5 runs per side'; the why is in the rule and the warnings), or ''."""
    if c is None or c.verdict.kind != "need more runs":
        return ""
    return c.verdict.text.split(" (have ")[0]


def evidence_with_note(c: Comparison | None) -> str:
    note = annotation(c)
    return evidence(c) + (f"; {note}" if note else "")


def summary_cells(s: Summary, fmt: object) -> tuple[str, str, str]:
    """sd, CV and the CI of the mean, or 'undefined (n=1)' for each."""
    if s.n < 2:
        return UNDEFINED, UNDEFINED, UNDEFINED
    show = fmt if callable(fmt) else str
    return show(s.sd), f"{s.cv * 100:.1f} %", f"[{show(s.ci_low)}, {show(s.ci_high)}]"
