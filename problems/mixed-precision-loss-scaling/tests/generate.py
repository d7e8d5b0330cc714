"""Generate tests/cases.json for "Mixed-Precision Training Step with Dynamic Loss Scaling"
(deterministic; `--check` verifies the stored file).

    python problems/mixed-precision-loss-scaling/tests/generate.py          # write
    python problems/mixed-precision-loss-scaling/tests/generate.py --check  # verify

Shapes. The problem is exported once with B, D and H symbolic; every distinct shape still
costs an XLA compile per grade (bfloat16 programs never run on the interpreter), so the tests
use four: the examples' (2, 2, 2) and (B, D, H) = (4, 3, 5), (1, 3, 5), (8, 2, 4).

Regimes. Finite steps (good_steps 0..2: the scale is kept; good_steps 3: the scale doubles and
the counter restarts), overflowing steps (the update skipped, the scale halved, the counter
reset, also from good_steps 3), scales from 2^0 to 2^100 on finite steps and 2^124 to 2^127 on
overflowing ones. They are kept far apart: on finite steps every scaled value of the backward
pass stays below ~1e35 (float32 and bfloat16 hold ~3.4e38), on overflowing ones the scaled
cotangent of the prediction exceeds 1e39, so every honest order of the operations takes the
same branch. Values: x = 0 (no w1 gradient), saturated tanh (|pre-activation| up to ~8), B = 1,
large targets, all-zero weights.

Tolerances: see problem.toml. The truth is numpy float64 with the same formulas; the finite
test asks whether the scaled gradients fit in float32 (what bfloat16 and float32 programs see).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20261204
LEARNING_RATE = 1e-3
GROWTH_INTERVAL = 4
F32_MAX = float(np.finfo(np.float32).max)

Rs = np.random.RandomState
Inputs = dict[str, Any]

EXAMPLE_PARAMS = {"w1": [[0.0, 0.0], [0.0, 0.0]], "b1": [0.0, 0.0], "w2": [0.5, -1.0],
                  "b2": 0.5}
EXAMPLE_X = [[1.0, 2.0], [0.0, -1.0]]
EXAMPLES = [
    Case("example-1", {"params": EXAMPLE_PARAMS, "x": EXAMPLE_X, "y": [1.0, -1.0],
                       "loss_scale": 1024.0, "good_steps": 0},
         note="a finite step: the update is applied, the scale kept, good_steps 0 -> 1"),
    Case("example-2", {"params": EXAMPLE_PARAMS, "x": EXAMPLE_X, "y": [1.0, -1.0],
                       "loss_scale": 1024.0, "good_steps": 3},
         note="the fourth finite step in a row: the scale doubles, good_steps restarts at 0"),
    Case("example-3", {"params": EXAMPLE_PARAMS, "x": EXAMPLE_X, "y": [16.0, -16.0],
                       "loss_scale": 2.0 ** 127, "good_steps": 2},
         note="the scaled gradients overflow: the step is skipped, the scale halved"),
]


def _normal(rs: Rs, sigma: float, shape: Any, bound: float) -> np.ndarray:
    return np.clip(rs.normal(0, sigma, shape), -bound, bound)


def _params(rs: Rs, d: int, h: int, scale: float = 0.7) -> dict[str, Any]:
    return {"w1": _normal(rs, scale, (d, h), 2), "b1": _normal(rs, 0.5 * scale, h, 2),
            "w2": _normal(rs, scale, h, 2), "b2": _normal(rs, 0.5, (), 2)}


def _random(exponent: int, steps: int, *, y_scale: float = 1.0, w_scale: float = 0.7,
            x_scale: float = 1.0) -> Callable[[Rs, int, int, int], Inputs]:
    def build(rs: Rs, b: int, d: int, h: int) -> Inputs:
        return {"params": _params(rs, d, h, w_scale), "x": _normal(rs, x_scale, (b, d), 2),
                "y": _normal(rs, y_scale, b, 16), "loss_scale": 2.0 ** exponent,
                "good_steps": steps}
    return build


def _overflow(exponent: int, steps: int) -> Callable[[Rs, int, int, int], Inputs]:
    """Targets of magnitude 13..16 against predictions below ~5: at 2^127 the scaled
    derivative of the loss by a prediction, 2^127 * 2 |pred - y| / B, is beyond 4e38 for
    B <= 8 (2^126: B <= 4, 2^125: B <= 2): it overflows float32 and bfloat16."""
    def build(rs: Rs, b: int, d: int, h: int) -> Inputs:
        assert b <= 2 ** (exponent - 122)
        y = rs.choice([-1.0, 1.0], b) * rs.uniform(13.0, 16.0, b)
        return {"params": _params(rs, d, h, 0.3), "x": _normal(rs, 1, (b, d), 2), "y": y,
                "loss_scale": 2.0 ** exponent, "good_steps": steps}
    return build


def _zero_x(rs: Rs, b: int, d: int, h: int) -> Inputs:
    case = _random(15, 1)(rs, b, d, h)
    case["x"] = np.zeros((b, d))
    return case


def _zero_weights(rs: Rs, b: int, d: int, h: int) -> Inputs:
    case = _random(8, 0, y_scale=2.0)(rs, b, d, h)
    case["params"] = {"w1": np.zeros((d, h)), "b1": np.zeros(h), "w2": np.zeros(h),
                      "b2": 0.0}
    return case


# (B, D, H), builder, note
HIDDEN: list[tuple[tuple[int, int, int], Callable[[Rs, int, int, int], Inputs], str]] = [
    ((4, 3, 5), _random(15, 0), "scale 2^15, good_steps 0"),
    ((4, 3, 5), _random(15, 1), "scale 2^15, good_steps 1"),
    ((4, 3, 5), _random(15, 2), "scale 2^15, good_steps 2"),
    ((4, 3, 5), _random(15, 3), "scale 2^15, good_steps 3: the scale doubles"),
    ((4, 3, 5), _random(0, 0), "scale 1"),
    ((4, 3, 5), _random(100, 2), "scale 2^100, finite"),
    ((4, 3, 5), _random(60, 3, y_scale=6.0), "scale 2^60, targets ~6, the scale doubles"),
    ((4, 3, 5), _overflow(127, 0), "scale 2^127: overflow, skipped"),
    ((4, 3, 5), _overflow(126, 3), "scale 2^126 from good_steps 3: overflow, reset"),
    ((4, 3, 5), _overflow(126, 1), "scale 2^126: overflow"),
    ((4, 3, 5), _zero_x, "x = 0: no gradient for w1"),
    ((4, 3, 5), _zero_weights, "all-zero weights: tanh(0) = 0, only w2's gradient is 0"),
    ((4, 3, 5), _random(20, 1, w_scale=2.0), "large weights: saturated tanh"),
    ((4, 3, 5), _random(24, 0, x_scale=2.0), "large inputs"),
    ((1, 3, 5), _random(15, 0), "B = 1"),
    ((1, 3, 5), _random(15, 3), "B = 1, the scale doubles"),
    ((1, 3, 5), _overflow(127, 2), "B = 1, overflow"),
    ((1, 3, 5), _random(1, 1, y_scale=5.0), "B = 1, scale 2"),
    ((1, 3, 5), _zero_x, "B = 1, x = 0"),
    ((1, 3, 5), _random(90, 2, w_scale=2.0), "B = 1, scale 2^90, large weights"),
    ((8, 2, 4), _random(15, 0), "B = 8"),
    ((8, 2, 4), _random(15, 3), "B = 8, the scale doubles"),
    ((8, 2, 4), _random(32, 1, y_scale=8.0), "B = 8, targets ~8"),
    ((8, 2, 4), _overflow(127, 3), "B = 8, overflow from good_steps 3"),
    ((8, 2, 4), _overflow(127, 0), "B = 8, scale 2^127: overflow"),
    ((8, 2, 4), _zero_weights, "B = 8, all-zero weights"),
    ((8, 2, 4), _random(12, 2, w_scale=2.0, x_scale=2.0), "B = 8, saturated tanh"),
    ((8, 2, 4), _random(100, 3), "B = 8, scale 2^100, the scale doubles"),
    ((2, 2, 2), _random(15, 1), "the example shape"),
    ((2, 2, 2), _overflow(125, 3), "the example shape, scale 2^125: overflow from good_steps 3"),
    ((2, 2, 2), _random(3, 3, y_scale=3.0), "the example shape, scale 8 doubles"),
    ((2, 2, 2), _random(50, 0, w_scale=0.2), "the example shape, small weights"),
]


def hidden(rs: Rs) -> Iterator[Case]:
    for i, ((b, d, h), build, note) in enumerate(HIDDEN, 1):
        yield Case(f"hidden-{i:02d}", build(rs, b, d, h), note=f"B={b}, D={d}, H={h}: {note}")


def _near_boundary_free(rs: Rs, b: int, d: int, h: int) -> Inputs:
    """Targets up to 16, weights and inputs up to 2 at scale 2^100: the largest finite-step
    magnitudes."""
    return _random(100, 1, y_scale=10.0, w_scale=2.0, x_scale=2.0)(rs, b, d, h)


# Never graded: where bfloat16 rounding costs most within the constraints, for the margin check
# of `jaxjudge check-problem`. Gradients that are sums of terms cancelling to ~0 (targets near
# the prediction's mean), saturated tanh, large targets.
ADVERSARIAL: list[tuple[tuple[int, int, int], Callable[[Rs, int, int, int], Inputs], str]] = [
    *[(shape, _random(15, 1, y_scale=0.1), "targets ~0.1: small residuals")
      for shape in ((4, 3, 5), (8, 2, 4), (1, 3, 5))],
    *[(shape, _near_boundary_free, "targets ~50, weights ~2, inputs ~3")
      for shape in ((4, 3, 5), (8, 2, 4), (1, 3, 5))],
    *[(shape, _random(15, 0, w_scale=2.0, x_scale=2.0), "saturated tanh")
      for shape in ((4, 3, 5), (8, 2, 4))],
    *[(shape, _random(15, 0), "random") for shape in ((4, 3, 5), (8, 2, 4), (2, 2, 2))],
]


def adversarial(rs: Rs) -> Iterator[Case]:
    for i, ((b, d, h), build, note) in enumerate(ADVERSARIAL, 1):
        yield Case(f"adversarial-{i:02d}", build(rs, b, d, h), note=f"B={b}, D={d}, H={h}: {note}")


def truth(inputs: dict[str, Any]) -> dict[str, Any]:
    """The float64 step: the same formulas without rounding."""
    p = {k: np.asarray(v, np.float64) for k, v in inputs["params"].items()}
    x, y = np.asarray(inputs["x"], np.float64), np.asarray(inputs["y"], np.float64)
    scale, steps = float(inputs["loss_scale"]), int(inputs["good_steps"])
    z = x @ p["w1"] + p["b1"]
    hid = np.tanh(z)
    pred = hid @ p["w2"] + p["b2"]
    dpred = scale * 2.0 * (pred - y) / len(y)
    dz = np.outer(dpred, p["w2"]) * (1.0 - hid * hid)
    scaled = {"w1": x.T @ dz, "b1": dz.sum(0), "w2": hid.T @ dpred, "b2": dpred.sum()}
    finite = all(np.all(np.abs(g) <= F32_MAX) for g in scaled.values()) and np.all(
        np.abs(dpred) <= F32_MAX)
    if finite:
        grads = {k: g / scale for k, g in scaled.items()}
        new = {k: p[k] - LEARNING_RATE * grads[k] for k in p}
        steps += 1
        if steps == GROWTH_INTERVAL:
            scale, steps = scale * 2, 0
    else:
        grads = {k: np.zeros_like(g) for k, g in scaled.items()}
        new, scale, steps = p, scale / 2, 0
    return {"params": new, "grads": grads, "loss_scale": np.float64(scale),
            "good_steps": np.int64(steps)}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
