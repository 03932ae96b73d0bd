"""Successive halving over question rungs, the front of measure against cost, and the pick.

A search's questions are shuffled once (seeded); rung r is their first `rungs(n)[r]`. A
trial answers the first rung, then is ranked with every trial that answered it, on the
same questions, by non-dominated sorting on measure and cost (the front first, then the
front of the rest, ...): it goes on to the next rung if fewer than 1/eta of them rank ahead
of it (so the front always goes on: a cheap setting is worth finishing too), or fewer than
eta trials are there to compare with; a trial over the cost ceiling stops at once.
Successive halving as Jamieson & Talwalkar (2016), asynchronous as ASHA (Li et al., 2020):
nobody waits for a rung to fill; ranked on two objectives as MO-ASHA (Schmucker et al.,
2021). Optuna's own pruners take one objective; this takes two.

The pick among trials that answered every question: the best measure within the ceiling
(the cheaper on a tie), or, without a ceiling, the knee of the front, the point furthest
from the chord between its cheapest and its best (Satopaa et al.'s Kneedle, on the front).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

ETA = 3  # a third goes on at each rung
SMALLEST = 12  # questions in the first rung, at least


def rungs(n: int, eta: int = ETA, smallest: int = SMALLEST) -> list[int]:
    """Question counts of the rungs, smallest first, the last `n`: 250 -> [27, 83, 250]."""
    sizes = [n]
    while math.ceil(sizes[-1] / eta) >= smallest:
        sizes.append(math.ceil(sizes[-1] / eta))
    return sizes[::-1]


@dataclass(frozen=True)
class Point:
    """A trial on the measure (higher is better) and the cost (lower is better)."""

    number: int
    measure: float
    cost: float


def beats(a: Point, b: Point) -> bool:
    """`a` is at least as good as `b` on both, and better on one."""
    return a.measure >= b.measure and a.cost <= b.cost and \
        (a.measure > b.measure or a.cost < b.cost)


def front(points: Sequence[Point]) -> list[Point]:
    """The points no other beats, cheapest first."""
    return sorted((p for p in points if not any(beats(q, p) for q in points)),
                  key=lambda p: (p.cost, -p.measure, p.number))


def fronts(points: Sequence[Point]) -> list[list[Point]]:
    """Non-dominated sorting: the front, then the front of what is left, and so on."""
    left, out = list(points), []
    while left:
        first = [p for p in left if not any(beats(q, p) for q in left)]
        out.append(first)
        left = [p for p in left if p not in first]
    return out


def goes_on(point: Point, peers: Sequence[Point], *, eta: int = ETA,
            ceiling: float | None = None) -> tuple[bool, str]:
    """Whether a trial at a rung answers the next, and why not (see the module)."""
    if ceiling is not None and point.cost > ceiling:
        return False, f"over the cost ceiling ({point.cost:.4g} > {ceiling:g})"
    others = [p for p in peers if p.number != point.number]
    if len(others) < eta:
        return True, ""
    ahead = 0
    for level in fronts([*others, point]):
        if point in level:
            break
        ahead += len(level)
    quota = math.ceil((len(others) + 1) / eta)
    if ahead < quota:
        return True, ""
    return False, (f"{ahead} of {len(others)} trials rank ahead of it on measure and cost "
                   f"(non-dominated sorting); the best {quota} go on")


def pick(points: Sequence[Point], ceiling: float | None = None) -> Point | None:
    """The chosen point: the best within `ceiling`, or the knee of the front (None when
    nothing is within the ceiling, or there are no points)."""
    if ceiling is not None:
        within = [p for p in points if p.cost <= ceiling]
        return max(within, key=lambda p: (p.measure, -p.cost, -p.number), default=None)
    return knee(front(points))


def knee(points: Sequence[Point]) -> Point | None:
    """The front's point furthest from the chord between its cheapest and its best, both
    axes scaled to [0, 1]; with fewer than three points, the best."""
    if len(points) < 3:
        return max(points, key=lambda p: (p.measure, -p.cost), default=None)
    cheap, best = points[0], points[-1]
    span_c = (best.cost - cheap.cost) or 1.0
    span_m = (best.measure - cheap.measure) or 1.0

    def distance(p: Point) -> float:  # above the chord, in scaled units
        x, y = (p.cost - cheap.cost) / span_c, (p.measure - cheap.measure) / span_m
        return (y - x) / math.sqrt(2)

    return max(points, key=lambda p: (distance(p), p.measure))
