"""Generate tests/cases.json for "Straight-Through Estimator" (deterministic; rerun after edits;
`--check` verifies the stored file).

Shape budget: every distinct N is one compile of the submission per grade, so the hidden cases
reuse six lengths (1, 2, 8, 33, 256, 1024: both ends of the constraint and a few between) and the
coverage comes from the values: the decision points x = 0, -0.0 and x = +-1 exactly, their float32
neighbours, x all inside or all outside [-1, 1], huge and tiny magnitudes, zero and extreme
cotangents. No subnormal x: XLA on the CPU flushes them to zero, which would move a negative
subnormal to the other side of the sign decision.

The truth is plain float64 numpy (np.where on the definitions), independent of the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20250301
F32 = np.float32
ONE_DOWN = float(np.nextafter(F32(1), F32(0)))  # 1 - 2**-24: just inside the pass-through band
ONE_UP = float(np.nextafter(F32(1), F32(2)))  # 1 + 2**-23: just outside
TINY = float(np.finfo(F32).tiny)  # the smallest normal float32
HUGE = float(np.finfo(F32).max)

EXAMPLES = [
    Case("example-1",
         {"x": [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5],
          "g": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]},
         note="every region: far below, the boundaries -1 and 1, zero, inside, far above"),
    Case("example-2",
         {"x": [-0.0, 0.999, 1.001, -1.0, 1e6],
          "g": [0.5, -2.0, 3.0, -0.25, 8.0]},
         note="-0.0 quantises to +1; just inside and just outside the band; a huge x"),
    Case("example-3", {"x": [0.3], "g": [-1.5]}, note="N = 1: the gradient passes through"),
]

SHAPES = (1, 2, 8, 33, 256, 1024)
Draw = Callable[[np.random.RandomState, int], np.ndarray]


def _normal(scale: float) -> Draw:
    return lambda rs, n: rs.normal(0.0, scale, n)


def _uniform(lo: float, hi: float) -> Draw:
    return lambda rs, n: rs.uniform(lo, hi, n)


def _signed_log(lo: float, hi: float) -> Draw:
    """Random sign times 10**uniform(lo, hi): magnitudes spread over many decades."""
    return lambda rs, n: rs.choice([-1.0, 1.0], n) * 10.0 ** rs.uniform(lo, hi, n)


def _choice(values: list[float]) -> Draw:
    return lambda rs, n: rs.choice(np.asarray(values, np.float64), n)


def _outside(rs: np.random.RandomState, n: int) -> np.ndarray:
    """|x| > 1 everywhere: the straight-through gradient is 0 everywhere."""
    return rs.choice([-1.0, 1.0], n) * (ONE_UP + rs.exponential(2.0, n))


def _inside(rs: np.random.RandomState, n: int) -> np.ndarray:
    """|x| < 1 everywhere: the gradient is g everywhere."""
    return rs.uniform(-ONE_DOWN, ONE_DOWN, n)


def _constant(value: float) -> Draw:
    return lambda rs, n: np.full(n, value)


# The decision points and their float32 neighbours.
EDGES = [0.0, -0.0, 1.0, -1.0, ONE_DOWN, -ONE_DOWN, ONE_UP, -ONE_UP, TINY, -TINY]

# (N, x draw, g draw, note). Cycling the lengths keeps the compiles to six.
HIDDEN: list[tuple[int, Draw, Draw, str]] = [
    (8, _normal(1.0), _normal(1.0), "x and g standard normal"),
    (33, _normal(1.0), _normal(1.0), "x and g standard normal"),
    (256, _normal(1.0), _normal(1.0), "x and g standard normal"),
    (1024, _normal(1.0), _normal(1.0), "largest N, x and g standard normal"),
    (1024, _uniform(-1.5, 1.5), _normal(3.0), "largest N, x uniform in [-1.5, 1.5]"),
    (256, _uniform(-1.1, 1.1), _uniform(-5, 5), "x uniform in [-1.1, 1.1]: mostly inside"),
    (33, _inside, _normal(1.0), "|x| < 1 everywhere: dx == g"),
    (256, _inside, _signed_log(-3, 3), "|x| < 1 everywhere, g over six decades"),
    (33, _outside, _normal(1.0), "|x| > 1 everywhere: dx == 0"),
    (256, _outside, _normal(10.0), "|x| > 1 everywhere, larger g: dx == 0"),
    (8, _choice([1.0, -1.0]), _normal(1.0), "x is exactly +1 or -1: on the band's edge, passes"),
    (33, _choice(EDGES), _normal(1.0), "x only at 0, -0.0, +-1 and their float32 neighbours"),
    (256, _choice(EDGES), _uniform(-2, 2), "x only at 0, -0.0, +-1 and their float32 neighbours"),
    (8, _choice([ONE_DOWN, -ONE_DOWN, ONE_UP, -ONE_UP]), _normal(1.0),
     "x one ulp inside or outside the band"),
    (8, _constant(0.0), _normal(1.0), "x all zero: y == +1, dx == g"),
    (33, _constant(-0.0), _normal(1.0), "x all -0.0: y == +1 (since -0.0 >= 0), dx == g"),
    (2, _choice([0.0, -0.0]), _normal(1.0), "x is 0.0 or -0.0"),
    (1, _constant(-0.0), _constant(2.5), "N = 1, x = -0.0"),
    (1, _constant(-1.0), _constant(-4.0), "N = 1, x = -1: the edge passes"),
    (1, _constant(3.0), _constant(7.0), "N = 1, x = 3: blocked"),
    (1, _constant(-TINY), _constant(1.0), "N = 1, the smallest negative normal: y == -1"),
    (2, _normal(1.0), _normal(1.0), "N = 2, normal"),
    (2, _choice([HUGE, -HUGE]), _normal(1.0), "x at +-float32 max: y == +-1, dx == 0"),
    (256, _signed_log(-37, 38), _normal(1.0), "x magnitudes from 1e-37 to 1e38"),
    (33, _signed_log(-30, -1), _normal(1.0), "tiny x (1e-30 .. 0.1): sign still matters"),
    (33, _signed_log(1, 30), _normal(1.0), "huge x (10 .. 1e30): dx == 0"),
    (256, _normal(1.0), _constant(0.0), "g all zero: dx == 0"),
    (256, _normal(1.0), _signed_log(20, 30), "huge g (1e20 .. 1e30)"),
    (256, _normal(1.0), _signed_log(-30, -20), "tiny g (1e-30 .. 1e-20)"),
    (33, _choice([-2.0, -1.0, 0.0, 1.0, 2.0]), _choice([-3.0, -1.0, 1.0, 3.0]),
     "small integers for x and g"),
    (8, lambda rs, n: -np.abs(rs.normal(0, 1, n)) - TINY, _normal(1.0),
     "x all negative: y == -1"),
    (8, lambda rs, n: np.abs(rs.normal(0, 1, n)), _normal(1.0), "x all >= 0: y == +1"),
    (1024, _choice([*EDGES, 0.5, -0.5, 2.0, -2.0]), _normal(1.0),
     "largest N, edges mixed with ordinary values"),
    (1024, _signed_log(-5, 5), _signed_log(-5, 5), "largest N, x and g over ten decades"),
]


def hidden(rs: np.random.RandomState) -> Iterator[Case]:
    for i, (n, draw_x, draw_g, note) in enumerate(HIDDEN, 1):
        assert n in SHAPES, n
        yield Case(f"hidden-{i:02d}", {"x": draw_x(rs, n), "g": draw_g(rs, n)},
                   note=f"N={n}: {note}")


def truth(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The definitions in float64: q(x) = +1 for x >= 0 else -1; dx = g where |x| <= 1 else 0."""
    x = np.asarray(inputs["x"], np.float64)
    g = np.asarray(inputs["g"], np.float64)
    return {"y": np.where(x >= 0, 1.0, -1.0), "dx": np.where(np.abs(x) <= 1.0, g, 0.0)}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
