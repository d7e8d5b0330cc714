"""Generate tests/cases.json for "Per-Example Gradient Clipping" (deterministic; `--check`).

    python problems/per-example-gradient-clipping/tests/generate.py          # write
    python problems/per-example-gradient-clipping/tests/generate.py --check  # verify

Shapes. The requirement (`independent_of_dim`, dim B) is checked on one program exported with B
symbolic; a submission that cannot be exported that way (a Python loop over the examples) is
exported once per shape, and at the judge's probe shapes (B = 3, 5, 7 with D = 3, chosen from
[constraints]), whose programs are compared: the tests' shapes need not differ only in B. They
are D = 3 with B in {1, 3, 8}, D = 1 with B in {1, 4}, D = 5 with B in {2, 8}, and the example
shape (2, 2): 8 shapes, each one compile per grade.

Regimes. Every clipping factor regime appears: all examples below max_norm (plain mean
gradient), all above (tiny max_norm: the result is max_norm times the mean direction), mixed,
exactly at max_norm (integer data with ||(x_i, 1)|| an integer, so the norm is exact), zero
gradients (exact fits with small integers, so x . w + b - y is exactly 0 in any order), rows of
x equal to 0 (only b has a gradient), a single outlier, identical and cancelling examples. With
B = 1 clipping the mean equals clipping the example, so most tests have B > 1; with max_norm
large nothing is clipped, so most tests clip at least one example.

Tolerance (rtol 1e-4, atol 1e-5). `truth` recomputes each case in float32 in three other correct
ways (closed form with min(1, C/n); vmap-like order with 1/max(1, n/C) and a sum divided by B;
g * C / max(n, C) with the norm over the concatenated vector) and refuses a case where one of them
is not within half the tolerance of the float64 truth.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20250306
RTOL, ATOL = 1e-4, 1e-5  # problem.toml [tolerance] (grads.b's; grads.w's atol is larger)

Rs = np.random.RandomState
Inputs = dict[str, Any]

EXAMPLES = [
    Case("example-1", {"params": {"w": [0.5, -0.25], "b": 0.0},
                       "x": [[2.0, 2.0], [0.0, 0.0]], "y": [-0.5, 0.5], "max_norm": 1.0},
         note="one example clipped (norm 3 -> 1), one below max_norm (norm 0.5)"),
    Case("example-2", {"params": {"w": [1.0, 0.0, -1.0], "b": 1.0},
                       "x": [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [2.0, 2.0, 0.0]],
                       "y": [1.0, -1.0, 4.0], "max_norm": 2.0},
         note="a zero gradient, a norm exactly at max_norm, one clipped (norm 3 -> 2)"),
    Case("example-3", {"params": {"w": [2.0], "b": 0.5}, "x": [[0.75]], "y": [0.0],
                       "max_norm": 0.5},
         note="B = 1: the gradient (1.5, 2) of norm 2.5 is scaled by 0.2"),
]


def _random(scale_x: float = 1.0, scale_y: float = 1.0, c: float | None = None
            ) -> Callable[[Rs, int, int], Inputs]:
    """Normal data; max_norm log-uniform in [0.1, 10] unless given."""
    def build(rs: Rs, b: int, d: int) -> Inputs:
        return {"params": {"w": rs.normal(0, 1, d), "b": rs.normal(0, 1)},
                "x": rs.normal(0, scale_x, (b, d)), "y": rs.normal(0, scale_y, b),
                "max_norm": 10 ** rs.uniform(-1, 1) if c is None else c}
    return build


def _exact_fit(rs: Rs, b: int, d: int) -> Inputs:
    """Small integers, y = x . w + b exactly: every gradient is exactly 0."""
    w, bias = rs.randint(-3, 4, d).astype(float), float(rs.randint(-3, 4))
    x = rs.randint(-3, 4, (b, d)).astype(float)
    return {"params": {"w": w, "b": bias}, "x": x, "y": x @ w + bias, "max_norm": 1.0}


def _some_exact(rs: Rs, b: int, d: int) -> Inputs:
    """Integers; every other example fits exactly (zero gradient), the rest miss by 1..3."""
    case = _exact_fit(rs, b, d)
    miss = rs.randint(1, 4, b) * rs.choice([-1.0, 1.0], b)
    miss[::2] = 0.0
    case["y"] = case["y"] + miss
    case["max_norm"] = 2.5
    return case


def _at_threshold(rs: Rs, b: int, d: int) -> Inputs:
    """Every example's gradient norm is exactly max_norm = 6: ||(x_i, 1)|| = 3, |r_i| = 2."""
    rows = [[2.0, 2.0, 0.0], [0.0, 2.0, 2.0], [2.0, 0.0, 2.0], [-2.0, 2.0, 0.0]]
    x = np.array([rows[i % 4] for i in range(b)])[:, :d]
    assert d == 3
    w, bias = rs.randint(-2, 3, d).astype(float), 1.0
    r = rs.choice([-2.0, 2.0], b)
    return {"params": {"w": w, "b": bias}, "x": x, "y": x @ w + bias - r, "max_norm": 6.0}


def _around_threshold(rs: Rs, b: int, d: int) -> Inputs:
    """Norms 2, 4, 6, 8, ... against max_norm = 6: below, at and above in one batch."""
    x = np.zeros((b, d))  # x = 0: the gradient is (0, ..., 0, r) with norm |r|
    r = 2.0 * (np.arange(b) + 1) * rs.choice([-1.0, 1.0], b)
    bias = 0.5
    return {"params": {"w": rs.normal(0, 1, d), "b": bias}, "x": x, "y": bias - r,
            "max_norm": 6.0}


def _zero_rows(rs: Rs, b: int, d: int) -> Inputs:
    case = _random(c=0.5)(rs, b, d)
    case["x"][::2] = 0.0
    return case


def _outlier(rs: Rs, b: int, d: int) -> Inputs:
    """One example with a residual of ~80 among small ones: only it is clipped."""
    case = _random(scale_y=0.1, c=2.0)(rs, b, d)
    case["params"]["w"] *= 0.1
    case["params"]["b"] = 0.0
    case["y"][b // 2] = 80.0
    return case


def _identical(rs: Rs, b: int, d: int) -> Inputs:
    one = _random(c=0.3)(rs, 1, d)
    one["x"] = np.repeat(one["x"], b, axis=0)
    one["y"] = np.repeat(one["y"], b)
    return one


def _cancelling(rs: Rs, b: int, d: int) -> Inputs:
    """Pairs (x, y) and (x, 2 (x . w + b) - y): opposite residuals, clipped gradients cancel."""
    assert b % 2 == 0
    half = _random(scale_y=3.0, c=0.7)(rs, b // 2, d)
    w, bias = half["params"]["w"], half["params"]["b"]
    x = np.concatenate([half["x"], half["x"]])
    pred = half["x"] @ w + bias
    y = np.concatenate([half["y"], 2 * pred - half["y"]])
    return {"params": half["params"], "x": x, "y": y, "max_norm": 0.7}


def _bias_dominated(rs: Rs, b: int, d: int) -> Inputs:
    """Small x, large residuals: the b part of each gradient dominates its norm."""
    return _random(scale_x=0.05, scale_y=10.0, c=1.0)(rs, b, d)


def _large(rs: Rs, b: int, d: int) -> Inputs:
    case = _random(scale_x=10.0, scale_y=50.0, c=5.0)(rs, b, d)
    case["params"]["w"] *= 5
    return case


# (B, D), builder, note
HIDDEN: list[tuple[tuple[int, int], Callable[[Rs, int, int], Inputs], str]] = [
    ((8, 3), _random(), "random data, max_norm in [0.1, 10]"),
    ((3, 3), _random(), "random data, max_norm in [0.1, 10]"),
    ((1, 3), _random(), "B = 1: clipping the mean is the same as clipping the example"),
    ((8, 5), _random(), "random data, D = 5"),
    ((2, 5), _random(), "random data, B = 2, D = 5"),
    ((4, 1), _random(), "random data, D = 1"),
    ((1, 1), _random(), "B = 1, D = 1"),
    ((2, 2), _random(), "random data, the example shape"),
    ((8, 3), _random(c=1e3), "max_norm 1e3: nothing is clipped (the plain mean gradient)"),
    ((4, 1), _random(c=100.0), "max_norm 100: nothing is clipped"),
    ((8, 3), _random(c=1e-4), "max_norm 1e-4: every example is clipped"),
    ((3, 3), _random(c=1e-3), "max_norm 1e-3: every example is clipped"),
    ((8, 5), _random(c=1e-4), "max_norm 1e-4, D = 5"),
    ((1, 1), _random(c=1e-4), "max_norm 1e-4, B = 1"),
    ((8, 3), _exact_fit, "exact fit: every gradient is exactly zero"),
    ((2, 5), _exact_fit, "exact fit, D = 5"),
    ((1, 3), _exact_fit, "exact fit, B = 1"),
    ((8, 5), _some_exact, "every other example fits exactly (zero gradient)"),
    ((3, 3), _some_exact, "examples 1 and 3 fit exactly"),
    ((8, 3), _at_threshold, "every norm exactly at max_norm"),
    ((3, 3), _at_threshold, "every norm exactly at max_norm, B = 3"),
    ((4, 1), _around_threshold, "norms 2, 4, 6, 8 against max_norm 6 (x = 0)"),
    ((8, 5), _around_threshold, "norms 2 .. 16 against max_norm 6 (x = 0)"),
    ((8, 3), _zero_rows, "every other row of x is zero: only b has a gradient there"),
    ((8, 5), _outlier, "one outlier (y = 80) among small residuals: only it is clipped"),
    ((3, 3), _outlier, "one outlier, B = 3"),
    ((4, 1), _identical, "identical examples: the mean is the one clipped gradient"),
    ((8, 3), _cancelling, "pairs with opposite residuals: the clipped gradients cancel"),
    ((2, 2), _cancelling, "one cancelling pair"),
    ((8, 3), _bias_dominated, "small x, large residuals: b dominates each norm"),
    ((2, 5), _bias_dominated, "b dominates each norm, D = 5"),
    ((8, 5), _large, "large values (x ~ 10, y ~ 50): every example clipped to 5"),
    ((3, 3), _large, "large values, B = 3"),
    ((1, 3), _random(c=1e-3), "B = 1, max_norm 1e-3"),
    ((2, 2), _random(scale_y=5.0, c=1.0), "max_norm 1, residuals ~5"),
]


def _cancelling_at(c: float, scale: float) -> Callable[[Rs, int, int], Inputs]:
    """Pairs (x, y) and (x, 2 pred - y) as in `_cancelling`, with |x| up to `scale` (<= 99)
    and max_norm `c`: clipped gradients of norm up to c cancel to ~0, where only atol covers
    their float32 rounding (~c * 6e-8 each). The residuals are +-(scale/4 .. scale/2), never
    the difference of nearly equal large values, and y is rounded to float32, so the two of a
    pair are not exact opposites."""
    def build(rs: Rs, b: int, d: int) -> Inputs:
        w = rs.uniform(-0.5, 0.5, d) / d
        bias = rs.uniform(-0.5, 0.5)
        x = rs.uniform(-scale, scale, (b // 2, d))
        pred = x @ w + bias
        r = rs.choice([-1.0, 1.0], b // 2) * rs.uniform(scale / 4, scale / 2, b // 2)
        return {"params": {"w": w, "b": bias}, "x": np.concatenate([x, x]),
                "y": np.concatenate([pred + r, pred - r]), "max_norm": c}
    return build


def _uniform(scale: float, c: float) -> Callable[[Rs, int, int], Inputs]:
    def build(rs: Rs, b: int, d: int) -> Inputs:
        return {"params": {"w": rs.uniform(-1, 1, d), "b": rs.uniform(-1, 1)},
                "x": rs.uniform(-scale, scale, (b, d)), "y": rs.uniform(-scale, scale, b),
                "max_norm": c}
    return build


def _near_threshold(rs: Rs, b: int, d: int) -> Inputs:
    """max_norm 1e3 and gradient norms within a few ulps of it, half just below (kept), half
    just above (scaled by ~1): the two branches of the clipping meet."""
    x = rs.choice([-1.0, 1.0], (b, d)) * rs.uniform(20.0, 40.0, (b, d))  # ||(x_i, 1)|| >= 20
    w = rs.uniform(-0.1, 0.1, d)
    bias = rs.uniform(-1.0, 1.0)
    n = np.sqrt((x * x).sum(axis=1) + 1.0)  # |r| = 1e3 / n <= 50, so |y| <= 71
    r = 1e3 / n * (1.0 + rs.choice([-1.0, 1.0], b) * rs.uniform(0, 1e-6, b))
    r *= rs.choice([-1.0, 1.0], b)
    return {"params": {"w": w, "b": bias}, "x": x, "y": x @ w + bias - r, "max_norm": 1e3}


# Never graded: the legal inputs where float32 rounding is worst, for the margin check of
# `jaxjudge check-problem` (jaxjudge/authoring/margin.py). Shapes reuse the tests' shapes. They
# keep x . w + b well conditioned: with |x_ij w_j| ~ 1e4 cancelling to a residual ~1, every
# float32 program is off by ~6e-4 (relative to the gradient) and no tolerance can tell right
# from wrong, so the tests avoid that too (testgen refuses such cases).
ADVERSARIAL: list[tuple[tuple[int, int], Callable[[Rs, int, int], Inputs], str]] = [
    *[(shape, _cancelling_at(1e3, 99.0), "pairs cancel at max_norm 1e3, |x| up to 99")
      for shape in ((8, 3), (8, 5), (2, 2), (2, 5), (8, 3), (8, 5), (2, 2), (2, 5))],
    ((2, 2), _cancelling_at(1e3, 30.0), "one pair cancels at max_norm 1e3, |x| up to 30"),
    ((8, 3), _cancelling_at(10.0, 99.0), "pairs cancel at max_norm 10, |x| up to 99"),
    ((8, 5), _near_threshold, "norms within 1e-6 of max_norm 1e3, above and below"),
    *[(shape, _uniform(100.0, 1e3), "x, y uniform in [-100, 100], max_norm 1e3")
      for shape in ((8, 3), (2, 2), (2, 5), (8, 5))],
    ((8, 5), _uniform(100.0, 1e-4), "x, y uniform in [-100, 100], max_norm 1e-4"),
]


def adversarial(rs: Rs) -> Iterator[Case]:
    for i, ((b, d), build, note) in enumerate(ADVERSARIAL, 1):
        inputs = build(rs, b, d)
        yield Case(f"adversarial-{i:02d}", inputs, note=f"B={b}, D={d}: {note}")


def hidden(rs: Rs) -> Iterator[Case]:
    for i, ((b, d), build, note) in enumerate(HIDDEN, 1):
        inputs = build(rs, b, d)
        c = float(np.float32(inputs["max_norm"]))
        yield Case(f"hidden-{i:02d}", inputs, note=f"B={b}, D={d}, max_norm={c:.3g}: {note}")


def _clipped_mean64(w: np.ndarray, b: float, x: np.ndarray, y: np.ndarray, c: float
                    ) -> dict[str, Any]:
    r = x @ w + b - y
    gw, gb = r[:, None] * x, r
    norm = np.sqrt((gw * gw).sum(axis=1) + gb * gb)
    scale = np.ones_like(norm)
    big = norm > c
    scale[big] = c / norm[big]
    return {"grads": {"w": (scale[:, None] * gw).mean(axis=0), "b": (scale * gb).mean()}}


def _variants32(w: np.ndarray, b: np.float32, x: np.ndarray, y: np.ndarray, c: np.float32
                ) -> dict[str, tuple[np.ndarray, np.float32]]:
    """The same result from other correct float32 programs (w, x, y are float32 arrays)."""
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        r = x @ w + b - y
        gw, gb = r[:, None] * x, r
        n = np.sqrt((gw * gw).sum(axis=1) + gb * gb)
        s = np.minimum(np.float32(1), c / n)
        out["min(1, C/n)"] = ((s[:, None] * gw).mean(axis=0), (s * gb).mean())
        r2 = (x * w).sum(axis=1) + b - y
        g = np.concatenate([r2[:, None] * x, r2[:, None]], axis=1)
        n2 = np.linalg.norm(g, axis=1)
        g = g / np.maximum(np.float32(1), n2 / c)[:, None]
        total = g.sum(axis=0) / np.float32(len(x))
        out["1/max(1, n/C), sum/B"] = (total[:-1], total[-1])
        g3 = np.concatenate([r[:, None] * x, r[:, None]], axis=1)
        g3 = g3 * (c / np.maximum(n2, c))[:, None]
        m3 = g3.mean(axis=0)
        out["g*C/max(n, C)"] = (m3[:-1], m3[-1])
    return out


def truth(inputs: dict[str, Any]) -> dict[str, Any]:
    """The float64 clipped mean of the float32 inputs; refuses a case where another correct
    float32 program is not comfortably within the tolerance."""
    p, x, y, c = inputs["params"], inputs["x"], inputs["y"], inputs["max_norm"]
    f64 = {k: np.asarray(v, np.float64) for k, v in (("w", p["w"]), ("x", x), ("y", y))}
    want = _clipped_mean64(f64["w"], float(p["b"]), f64["x"], f64["y"], float(c))
    for name, (gw, gb) in _variants32(np.asarray(p["w"], np.float32), np.float32(p["b"]),
                                      np.asarray(x, np.float32), np.asarray(y, np.float32),
                                      np.float32(c)).items():
        for got, t in ((gw, want["grads"]["w"]), (gb, want["grads"]["b"])):
            err = np.abs(np.asarray(got, np.float64) - t) - 0.5 * (ATOL + RTOL * np.abs(t))
            if not np.all(np.isfinite(got)) or np.any(err > 0):
                raise SystemExit(f"the float32 '{name}' variant is not within half the "
                                 f"tolerance (excess {float(np.max(err)):.3g}): pick another case")
    return want


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
