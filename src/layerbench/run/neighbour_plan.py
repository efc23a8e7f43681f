"""The plan's words for neighbours (`validate` and `run` print them): per variant, each load generator's kind,
intensity and placement, and the variants that have none, so a reader sees an unequal comparison before it runs."""

from __future__ import annotations

from layerbench.campaign.models import Campaign


def neighbour_lines(campaign: Campaign) -> list[str]:
    """One line per variant with neighbours; one more naming the variants without, when some have them."""
    lines, without = [], []
    for variant in campaign.variants:
        neighbours = campaign.neighbours_of(variant)
        if not neighbours:
            without.append(variant.name)
            continue
        said = "; ".join(f"{n.name}: {n.kind}, {n.intensity()}, on the {n.where()}" for n in neighbours)
        lines.append(f"neighbours of {variant.name} (started before the warm-up, stopped after the run): {said}")
    if lines and without:
        lines.append(f"no neighbours: {', '.join(without)}")
    return lines
