"""Generate tests/cases.json for "Pairwise Distances with Nested vmap" (deterministic; `--check`).

    python problems/pairwise-distances-nested-vmap/tests/generate.py          # write
    python problems/pairwise-distances-nested-vmap/tests/generate.py --check  # verify

Shapes. Both requirements read one exported program per input shape (sizes and loop counts
need static shapes), so the tests use 9 shapes (N, M, D), each one compile per grade:
(1, 6, 4), (3, 6, 4) and (8, 6, 4) differ only in N, (8, 1, 4), (8, 3, 4) and (8, 6, 4) only
in M (no-loop-over-points compares programs that differ in one of them); (16, 16, 16) is where
the size limit NM + (N+M)(D+2) = 832 is below a quarter of N*M*D = 4096 (no-difference-tensor
catches the differences even when they are formed in halves or quarters; (N, M, 2) stacks of
two outputs stay below the limit at every test shape); (1, 1, 3) is a single
point on each side, (3, 6, 1) has D = 1, and (2, 3, 2) is the first example's.

Values. Random points of every scale up to the constraint (|coordinate| <= 10), integer
coordinates (exact distances), zero vectors, repeated points within x, within y and between
them (exact zeros), y = x (a zero diagonal), nearly identical points (x + 1e-3 noise: distances
of ~1e-5 below the float32 rounding of the norms, where the formula a.a + b.b - 2 a.b cancels
and an unclamped d2 comes out negative: its square root is NaN), far apart sets (d2 up to 6400).
`truth` is the float64 sum of squared differences of the float32 inputs; testgen refuses a case
whose reference output is not within a quarter of the tolerance of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20261204

Rs = np.random.RandomState
Inputs = dict[str, Any]
Builder = Callable[[Rs, int, int, int], Inputs]

EXAMPLES = [
    Case("example-1", {"x": [[0.0, 0.0], [1.0, 2.0]],
                       "y": [[3.0, 4.0], [1.0, 2.0], [0.0, -1.0]]},
         note="N=2, M=3, D=2: a 3-4-5 triangle, an identical pair (0), unit offsets"),
    Case("example-2", {"x": [[1.0, 2.0, 3.0]], "y": [[1.0, 2.0, 3.0]]},
         note="a single point on each side, identical: d2 = d = 0 exactly"),
    Case("example-3", {"x": [[0.0, 0.0, 0.0, 0.0]],
                       "y": [[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [3.0, 0.0, 4.0, 0.0],
                             [-2.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5],
                             [10.0, -10.0, 0.0, 0.0]]},
         note="x is the zero vector: d2[0, j] = ||y_j||^2"),
]


def _uniform(scale: float) -> Builder:
    def build(rs: Rs, n: int, m: int, d: int) -> Inputs:
        return {"x": rs.uniform(-scale, scale, (n, d)), "y": rs.uniform(-scale, scale, (m, d))}
    return build


def _normal(rs: Rs, n: int, m: int, d: int) -> Inputs:
    return {"x": rs.normal(0, 1, (n, d)), "y": rs.normal(0, 1, (m, d))}


def _integers(rs: Rs, n: int, m: int, d: int) -> Inputs:
    return {"x": rs.randint(-10, 11, (n, d)).astype(float),
            "y": rs.randint(-10, 11, (m, d)).astype(float)}


def _shared(rs: Rs, n: int, m: int, d: int) -> Inputs:
    """Every y_j is one of the x_i (or x_i one of y_j): exact zeros where they meet."""
    case = _uniform(10.0)(rs, n, m, d)
    if n >= m:
        case["y"] = case["x"][rs.choice(n, m, replace=False)]
    else:
        case["x"] = case["y"][rs.choice(m, n, replace=False)]
    return case


def _same_set(rs: Rs, n: int, m: int, d: int) -> Inputs:
    assert n == m
    x = rs.uniform(-10, 10, (n, d))
    return {"x": x, "y": x.copy()}


def _repeated(rs: Rs, n: int, m: int, d: int) -> Inputs:
    """Few distinct points, repeated within x and within y (integers: exact distances)."""
    pool = rs.randint(-5, 6, (3, d)).astype(float)
    return {"x": pool[rs.randint(0, 3, n)], "y": pool[rs.randint(0, 3, m)]}


def _zeros(rs: Rs, n: int, m: int, d: int) -> Inputs:
    """x is all zero vectors; every other y_j too."""
    y = rs.uniform(-10, 10, (m, d))
    y[::2] = 0.0
    return {"x": np.zeros((n, d)), "y": y}


def _near(noise: float, scale: float) -> Builder:
    """y_j = x_i + noise for some i: distances ~noise^2 D among norms up to scale^2 D, where the
    three-dot-product formula cancels (and can go negative before the clamp)."""
    def build(rs: Rs, n: int, m: int, d: int) -> Inputs:
        base = rs.uniform(-scale, scale, (max(n, m), d))
        x = base[:n]
        y = base[rs.randint(0, n, m)] + rs.normal(0, noise, (m, d))
        return {"x": x, "y": y}
    return build


def _far(rs: Rs, n: int, m: int, d: int) -> Inputs:
    """x near +10, y near -10: the largest distances the constraints allow."""
    return {"x": rs.uniform(8, 10, (n, d)), "y": rs.uniform(-10, -8, (m, d))}


def _axis(rs: Rs, n: int, m: int, d: int) -> Inputs:
    """Axis-aligned points (one non-zero coordinate each)."""
    x = np.zeros((n, d))
    y = np.zeros((m, d))
    x[np.arange(n), rs.randint(0, d, n)] = rs.choice([-3.0, 2.0, 7.0], n)
    y[np.arange(m), rs.randint(0, d, m)] = rs.choice([-3.0, 2.0, 7.0], m)
    return {"x": x, "y": y}


HIDDEN: list[tuple[tuple[int, int, int], Builder, str]] = [
    ((8, 6, 4), _uniform(10.0), "uniform in [-10, 10]"),
    ((3, 6, 4), _uniform(10.0), "uniform in [-10, 10]"),
    ((1, 6, 4), _uniform(10.0), "a single x point"),
    ((8, 1, 4), _uniform(10.0), "a single y point"),
    ((8, 3, 4), _normal, "standard normal"),
    ((16, 16, 16), _uniform(10.0), "uniform in [-10, 10], the largest shape"),
    ((16, 16, 16), _normal, "standard normal, the largest shape"),
    ((1, 1, 3), _uniform(10.0), "one point on each side"),
    ((3, 6, 1), _uniform(10.0), "D = 1: |x_i - y_j|^2"),
    ((2, 3, 2), _normal, "standard normal, the first example's shape"),
    ((8, 6, 4), _integers, "integer coordinates: exact distances"),
    ((16, 16, 16), _integers, "integer coordinates, the largest shape"),
    ((3, 6, 1), _integers, "integers, D = 1"),
    ((8, 6, 4), _shared, "every y_j is one of the x_i: exact zeros"),
    ((8, 3, 4), _shared, "every y_j is one of the x_i"),
    ((1, 6, 4), _shared, "the x point is one of the y_j"),
    ((16, 16, 16), _same_set, "y = x: a zero diagonal"),
    ((1, 1, 3), _same_set, "the same single point: 0"),
    ((8, 6, 4), _repeated, "three distinct points, repeated within x and y"),
    ((3, 6, 4), _repeated, "three distinct points, repeated"),
    ((8, 6, 4), _zeros, "x all zero vectors, every other y_j zero"),
    ((1, 6, 4), _zeros, "the zero vector against y (d2 = ||y_j||^2)"),
    ((8, 1, 4), _zeros, "zero vectors on both sides: all distances 0"),
    ((8, 6, 4), _near(1e-3, 5.0), "y_j = x_i + 1e-3 noise, |coordinate| <= 5"),
    ((16, 16, 16), _near(1e-3, 5.0), "nearly identical points, the largest shape"),
    ((8, 3, 4), _near(1e-2, 5.0), "y_j = x_i + 1e-2 noise"),
    ((3, 6, 4), _near(1e-3, 5.0), "nearly identical points"),
    ((16, 16, 16), _near(1e-4, 3.0), "y_j = x_i + 1e-4 noise"),
    ((8, 6, 4), _far, "x near +10, y near -10: the largest distances"),
    ((16, 16, 16), _far, "far apart sets, the largest shape"),
    ((8, 6, 4), _axis, "axis-aligned points"),
    ((3, 6, 1), _shared, "D = 1, shared points"),
    ((2, 3, 2), _integers, "integers, the first example's shape"),
    ((8, 3, 4), _uniform(0.01), "tiny coordinates (|value| <= 0.01)"),
]


def _near_max(noise: float) -> Builder:
    """Coordinates at +-10 (the largest norms) with y_j = x_i + noise: the worst cancellation."""
    def build(rs: Rs, n: int, m: int, d: int) -> Inputs:
        base = rs.choice([-1.0, 1.0], (max(n, m), d)) * rs.uniform(9.0, 10.0, (max(n, m), d))
        return {"x": base[:n], "y": base[rs.randint(0, n, m)] + rs.normal(0, noise, (m, d))}
    return build


# Never graded: the legal inputs where float32 rounding is worst, for the margin check of
# `jaxjudge check-problem` (jaxjudge/authoring/margin.py), at the tests' shapes.
ADVERSARIAL: list[tuple[tuple[int, int, int], Builder, str]] = [
    *[(shape, _near_max(noise), f"|coordinate| in [9, 10], y_j = x_i + {noise:g} noise")
      for shape in ((16, 16, 16), (8, 6, 4), (3, 6, 1)) for noise in (0.0, 1e-4, 1e-3, 1e-2)],
    ((16, 16, 16), _near(1e-3, 10.0), "uniform in [-10, 10], y_j = x_i + 1e-3 noise"),
    ((16, 16, 16), _same_set, "y = x, uniform in [-10, 10]"),
    ((16, 16, 16), _far, "far apart sets"),
]


def adversarial(rs: Rs) -> Iterator[Case]:
    for i, ((n, m, d), build, note) in enumerate(ADVERSARIAL, 1):
        yield Case(f"adversarial-{i:02d}", build(rs, n, m, d), note=f"N={n}, M={m}, D={d}: {note}")


def hidden(rs: Rs) -> Iterator[Case]:
    for i, ((n, m, d), build, note) in enumerate(HIDDEN, 1):
        yield Case(f"hidden-{i:02d}", build(rs, n, m, d), note=f"N={n}, M={m}, D={d}: {note}")


def truth(inputs: dict[str, Any]) -> dict[str, Any]:
    """Float64 sums of squared differences of the float32 inputs (no cancellation)."""
    x = np.asarray(inputs["x"], np.float64)
    y = np.asarray(inputs["y"], np.float64)
    d2 = ((x[:, None, :] - y[None, :, :]) ** 2).sum(axis=-1)
    return {"d2": d2, "d": np.sqrt(d2)}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
