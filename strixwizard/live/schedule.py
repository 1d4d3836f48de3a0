"""All pairs in rounds of disjoint pairs (the circle method of round-robin tournaments).

For N nodes: N-1 rounds for even N, N rounds for odd N (one node rests each
round). Within a round no node appears twice, so the round's pairs can run
at the same time without sharing a node; every unordered pair appears exactly
once over all rounds.
"""

from __future__ import annotations

from collections.abc import Sequence


def rounds(nodes: Sequence[str]) -> list[list[tuple[str, str]]]:
    names = list(nodes)
    if len(set(names)) != len(names):
        raise ValueError("node names must be unique")
    if len(names) < 2:
        return []
    slots: list[str | None] = [*names, None] if len(names) % 2 else list(names)
    n = len(slots)
    schedule = []
    for _ in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = slots[i], slots[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b) if names.index(a) < names.index(b) else (b, a))
        schedule.append(pairs)
        slots = [slots[0], slots[-1], *slots[1:-1]]  # keep the first, rotate the rest
    return schedule


def in_rounds(pairs: Sequence[tuple[str, str]], nodes: Sequence[str]) -> list[list[tuple[str, str]]]:
    """`pairs` grouped as the all-pairs rounds place them (disjoint pairs together), in round
    order; a pair the rounds do not hold as given (reversed, unknown node) runs alone, last."""
    wanted = set(pairs)
    schedule = [[p for p in r if p in wanted] for r in rounds(nodes)]
    placed = {p for r in schedule for p in r}
    return [r for r in schedule if r] + [[p] for p in dict.fromkeys(pairs) if p not in placed]
