"""Points: each group's points split exactly among its items, requirement points only for a
program that ran, and spec-level passes only when the program-level requirements corroborate
them."""

from __future__ import annotations

import math

from jaxjudge.grading.report import Mode, RequirementResult, TestResult, Verdict
from jaxjudge.problems.package import Problem


def max_score(problem: Problem, mode: Mode) -> float:
    """What a graded report of `problem` is out of: requirement points only when some
    requirement earns points, hidden-test points only in submit mode."""
    sc = problem.scoring
    hidden = sc.hidden_tests if mode == "submit" else 0.0
    reqs = sc.requirements if any(problem.earns_points(r) for r in problem.requirements) else 0.0
    return round(sc.visible_tests + hidden + reqs, 4)


POINT_GRID = 16


def split_points(points: float, n: int) -> list[float]:
    """`points` over `n` items that add up to exactly `points` in float arithmetic.

    Largest remainder on sixteenths: each item gets floor(units / n), the last `units % n` items
    one more, and the last item whatever of `points` lies below a sixteenth (e.g. of 100/3).
    Every partial sum is then a representable multiple of ulp(points), so sums in any order are
    exact. Less than a sixteenth per item would leave items worth 0: such a group is split
    evenly and its last item takes the float remainder (exact when summed in order; JSON prints
    4 decimals)."""
    if n <= 0:
        return []
    if not math.isfinite(points):
        return [points / n] * n
    units = math.floor(points * POINT_GRID)
    if units < n:
        shares = [points / n] * n
        shares[-1] = points - sum(shares[:-1])  # exact (Sterbenz): the rest is >= points / 2
        return shares
    q, r = divmod(units, n)
    shares = [(q + (i >= n - r)) / POINT_GRID for i in range(n)]
    shares[-1] += points - units / POINT_GRID
    return shares


def score(
    problem: Problem, tests: list[TestResult], reqs: list[RequirementResult], verdict: Verdict
) -> tuple[float, float]:
    """Partial credit: each group's points split over its items (`_split_points`: they add up
    to the group's points exactly); an item earns its share if it passed. The totals are the
    plain sums of the items, in report order, so they match what a reader of the JSON adds."""
    sc = problem.scoring
    visible = [t for t in tests if t.visible and not t.custom]
    hidden = [t for t in tests if not t.visible]
    for group, points in ((visible, sc.visible_tests), (hidden, sc.hidden_tests)):
        for t, share in zip(group, split_points(points, len(group)), strict=True):
            t.max_score = share
            t.score = share if t.verdict is Verdict.ACCEPTED else 0.0
    declared = {r.name for r in problem.requirements if problem.earns_points(r)}
    counted = [r for r in reqs if r.name in declared]
    # Structure points only count when the program actually ran to completion.
    ran = verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.REQUIREMENT_FAILED)
    for r, share in zip(counted, split_points(sc.requirements, len(counted)), strict=True):
        r.max_score = share
        r.score = share if r.passed and ran else 0.0
    items = [*tests, *counted]
    return sum((i.score for i in items), 0.0), sum((i.max_score for i in items), 0.0)


def corroborate(problem: Problem, reqs: list[RequirementResult]) -> None:
    """A spec-level pass stands only if the program-level requirements it names passed: the
    jaxpr summary came from the untrusted stage, so on its own it explains but never decides
    or pays. A spec-level failure is kept as is (a lie against oneself gains nothing)."""
    passed = {r.name for r in reqs if r.level == "program" and r.passed}
    declared = {r.name: r for r in problem.requirements}
    for res in reqs:
        req = declared.get(res.name)
        if res.level != "spec" or not res.passed or req is None:
            continue
        missing = [n for n in problem.corroborators(req) if n not in passed]
        if missing:
            res.passed = False
            res.message = (
                f"Your traced code reports this ({res.message.rstrip('.')}), but the "
                f"exported program does not confirm it: see {', '.join(missing)}."
            )
