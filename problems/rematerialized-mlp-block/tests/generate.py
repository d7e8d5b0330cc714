"""Generate tests/cases.json for "Rematerialized MLP Block" (deterministic; rerun after edits).

    .venv/bin/python problems/rematerialized-mlp-block/tests/generate.py          # write
    .venv/bin/python problems/rematerialized-mlp-block/tests/generate.py --check  # verify

Shape budget: every distinct (B, D, H) is one XLA compile of the submission per grade, and the
machines grading have 2 cores, so the hidden cases reuse a small set of shapes instead of drawing
a fresh shape per case. The set below is the 3 example shapes, the 8 corners of the constraint
box (B in {1, 4}, D in {2, 4}, H in {2, 5}) and one interior shape (2, 3, 4): 12 shapes in total,
which still hits every value of B, D and H. Coverage comes from the values instead (saturation,
zeros, signs, magnitudes, y == out, ...).

Inputs come from numpy's legacy RandomState, whose stream numpy promises never to change, so the
inputs are bit-identical on every numpy version. Expected outputs are the reference's float32
results (jax.jit on CPU); `--check` compares them with a 1e-6 tolerance because different jax/XLA
versions may round the last bit differently. Every case is also checked against an independent
float64 computation so that no case sits on a rounding knife-edge where two correct float32
programs could disagree by more than the grading tolerance.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax
import numpy as np

SEED = 20240611
HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
CASES_PATH = HERE / "cases.json"
GENERATOR = "tests/generate.py"
CHECK_RTOL = 1e-6
CHECK_ATOL = 1e-6
# A case is accepted only if the float32 reference is this fraction of the grading tolerance
# away from the float64 truth, leaving room for other (correct) float32 operation orders.
CONDITIONING_MARGIN = 0.25

Arrays = dict[str, np.ndarray]
Builder = Callable[[np.random.RandomState, int, int, int], tuple[Arrays, np.ndarray, np.ndarray]]

# The published examples, exactly as the statement prints them (tests/examples.json holds the
# published outputs too).
EXAMPLES: list[dict[str, Any]] = [
    {
        "params": {
            "w1": [[0.5, -0.3, 0.8], [0.1, 0.4, -0.6]],
            "b1": [0.0, 0.1, -0.1],
            "w2": [[0.2, -0.5], [0.7, 0.3], [-0.4, 0.6]],
            "b2": [0.05, -0.05],
        },
        "x": [[1.0, -2.0]],
        "y": [[0.5, -1.0]],
        "note": "published example 1: B=1, D=2, H=3, moderate values",
    },
    {
        "params": {
            "w1": [[1.0, 0.0], [0.0, 1.0]],
            "b1": [0.0, 0.0],
            "w2": [[1.0, 0.0], [0.0, 1.0]],
            "b2": [0.0, 0.0],
        },
        "x": [[0.5, -0.5], [1.0, 2.0]],
        "y": [[0.0, 0.0], [0.0, 0.0]],
        "note": "published example 2: identity weights, zero target",
    },
    {
        "params": {
            "w1": [[4.0, -3.0], [2.5, 3.5]],
            "b1": [1.0, -1.0],
            "w2": [[0.3, -0.2], [0.1, 0.4]],
            "b2": [0.0, 0.2],
        },
        "x": [[2.0, 1.5], [-1.0, -2.0], [0.5, 0.5]],
        "y": [[1.0, 1.0], [-1.0, 0.0], [0.0, 0.5]],
        "note": "published example 3: saturated tanh, tiny w1/b1 gradients",
    },
]

CORNERS = [(b, d, h) for b in (1, 4) for d in (2, 4) for h in (2, 5)]


# -- value builders -------------------------------------------------------------------------
def _params(rs: np.random.RandomState, d: int, h: int, scale: float = 1.0) -> Arrays:
    return {
        "w1": rs.normal(0.0, scale, (d, h)),
        "b1": rs.normal(0.0, scale, (h,)),
        "w2": rs.normal(0.0, scale, (h, d)),
        "b2": rs.normal(0.0, scale, (d,)),
    }


def _normal(scale: float = 1.0) -> Builder:
    def build(rs: np.random.RandomState, b: int, d: int, h: int):
        return _params(rs, d, h, scale), rs.normal(0, scale, (b, d)), rs.normal(0, scale, (b, d))

    return build


def _uniform(low: float, high: float) -> Builder:
    def build(rs: np.random.RandomState, b: int, d: int, h: int):
        p = {k: rs.uniform(low, high, s) for k, s in _shapes(d, h).items()}
        return p, rs.uniform(low, high, (b, d)), rs.uniform(low, high, (b, d))

    return build


def _shapes(d: int, h: int) -> dict[str, tuple[int, ...]]:
    return {"w1": (d, h), "b1": (h,), "w2": (h, d), "b2": (d,)}


def _strong_saturation(rs, b, d, h):
    p = _params(rs, d, h)
    p["w1"] = rs.normal(0, 6.0, (d, h))
    return p, rs.normal(0, 2.0, (b, d)), rs.normal(0, 1.0, (b, d))


def _partial_saturation(rs, b, d, h):
    sign = np.where(rs.uniform(size=(d, h)) < 0.5, -1.0, 1.0)
    p = {
        "w1": sign * rs.uniform(2.5, 4.5, (d, h)),
        "b1": rs.uniform(-1, 1, (h,)),
        "w2": rs.uniform(-0.5, 0.5, (h, d)),
        "b2": rs.uniform(-0.3, 0.3, (d,)),
    }
    return p, rs.uniform(-2, 2, (b, d)), rs.uniform(-1, 1, (b, d))


def _bias_saturation(rs, b, d, h):
    p = _params(rs, d, h, 0.3)
    p["b1"] = np.where(rs.uniform(size=h) < 0.5, -30.0, 30.0)
    return p, rs.normal(0, 1, (b, d)), rs.normal(0, 1, (b, d))


def _mixed_saturation(rs, b, d, h):
    p = _params(rs, d, h, 0.5)
    p["w1"][:, ::2] *= 40.0  # even hidden units saturate, odd ones stay in the linear range
    return p, rs.normal(0, 1, (b, d)), rs.normal(0, 1, (b, d))


def _zero_params(rs, b, d, h):
    p = {k: np.zeros(s) for k, s in _shapes(d, h).items()}
    return p, rs.normal(0, 1, (b, d)), rs.normal(0, 1, (b, d))


def _zero_inputs(rs, b, d, h):
    return _params(rs, d, h), np.zeros((b, d)), np.zeros((b, d))


def _all_zero(rs, b, d, h):
    return {k: np.zeros(s) for k, s in _shapes(d, h).items()}, np.zeros((b, d)), np.zeros((b, d))


def _zero_w1(rs, b, d, h):
    p = _params(rs, d, h)
    p["w1"] = np.zeros((d, h))
    return p, rs.normal(0, 1, (b, d)), rs.normal(0, 1, (b, d))


def _zero_x(rs, b, d, h):
    return _params(rs, d, h), np.zeros((b, d)), rs.normal(0, 1, (b, d))


def _all_negative(rs, b, d, h):
    p = {k: -np.abs(rs.normal(0, 1, s)) - 0.05 for k, s in _shapes(d, h).items()}
    x = -np.abs(rs.normal(0, 1, (b, d))) - 0.05
    y = -np.abs(rs.normal(0, 1, (b, d))) - 0.05
    return p, x, y


def _large_inputs(rs, b, d, h):
    p = _params(rs, d, h)
    p["w1"] = rs.normal(0, 0.005, (d, h))  # keeps x W1 around 1 so the tanh is not saturated
    return p, rs.normal(0, 100, (b, d)), rs.normal(0, 100, (b, d))


def _large_output_weights(rs, b, d, h):
    p = _params(rs, d, h)
    p["w2"] = rs.normal(0, 100, (h, d))
    p["b2"] = rs.normal(0, 100, (d,))
    return p, rs.normal(0, 1, (b, d)), rs.normal(0, 100, (b, d))


def _thousands(rs, b, d, h):
    p = _params(rs, d, h)
    return p, rs.uniform(-1000, 1000, (b, d)), rs.uniform(-1000, 1000, (b, d))


def _mixed_magnitudes(rs, b, d, h):
    def draw(shape: tuple[int, ...]) -> np.ndarray:
        sign = np.where(rs.uniform(size=shape) < 0.5, -1.0, 1.0)
        return sign * 10.0 ** rs.uniform(-2, 2, shape)

    p = {k: draw(s) for k, s in _shapes(d, h).items()}
    return p, draw((b, d)), draw((b, d))


def _exact_fit(rs, b, d, h):
    """y == out exactly: W1 = b1 = 0 makes tanh(0) = 0, and dyadic x, b2 add without rounding."""
    p = {
        "w1": np.zeros((d, h)),
        "b1": np.zeros(h),
        "w2": rs.normal(0, 1, (h, d)),
        "b2": rs.randint(-8, 9, d) / 4.0,
    }
    x = rs.randint(-8, 9, (b, d)) / 4.0
    return p, x, x + p["b2"]


def _fit(rs, b, d, h):
    """y is the block output rounded to float32: loss and gradients are ~0 but not exactly."""
    p = _params(rs, d, h)
    x = rs.normal(0, 1, (b, d))
    p32, x32 = _f32_tree(p), _f32(x)
    return p, x, forward64(p32, x32)


def _tiny(rs, b, d, h):
    return _params(rs, d, h, 1e-3), rs.normal(0, 1e-3, (b, d)), rs.normal(0, 1e-3, (b, d))


def _identity_target(rs, b, d, h):
    x = rs.normal(0, 1, (b, d))
    return _params(rs, d, h, 0.2), x, x.copy()


def _integers(rs, b, d, h):
    # W1, b1 and x in {-1, 0, 1} keep |x W1 + b1| <= 3: integer pre-activations near 9 would put
    # 1 - tanh^2 on a float32 rounding edge.
    p = {k: rs.randint(-3, 4, s).astype(np.float64) for k, s in _shapes(d, h).items()}
    p["w1"] = rs.randint(-1, 2, (d, h)).astype(np.float64)
    p["b1"] = rs.randint(-1, 2, h).astype(np.float64)
    return p, rs.randint(-1, 2, (b, d)).astype(np.float64), rs.randint(-3, 4, (b, d)) * 1.0


def _sparse(rs, b, d, h):
    def draw(shape: tuple[int, ...]) -> np.ndarray:
        return np.where(rs.uniform(size=shape) < 0.7, 0.0, rs.normal(0, 1, shape))

    p = {k: draw(s) for k, s in _shapes(d, h).items()}
    return p, draw((b, d)), draw((b, d))


def _duplicate_rows(rs, b, d, h):
    row = rs.normal(0, 1, (1, d))
    target = rs.normal(0, 1, (1, d))
    return _params(rs, d, h), np.repeat(row, b, 0), np.repeat(target, b, 0)


def _outlier_row(rs, b, d, h):
    x = rs.normal(0, 0.1, (b, d))
    x[b // 2] = rs.normal(0, 50, d)
    p = _params(rs, d, h, 0.5)
    p["w1"] = rs.normal(0, 0.01, (d, h))  # the outlier row's pre-activation stays < 2
    return p, x, rs.normal(0, 1, (b, d))


def _zero_w2(rs, b, d, h):
    p = _params(rs, d, h)
    p["w2"] = np.zeros((h, d))
    return p, rs.normal(0, 1, (b, d)), rs.normal(0, 1, (b, d))


def _constant_target(rs, b, d, h):
    return _params(rs, d, h, 0.5), rs.normal(0, 1, (b, d)), np.full((b, d), -50.0)


# (shape, builder, note) for hidden-01.. in order. Reordering changes every later case.
HIDDEN: list[tuple[tuple[int, int, int], Builder, str]] = [
    *[
        (c, _normal(0.8), f"corner B={c[0]}, D={c[1]}, H={c[2]}: random normal values")
        for c in CORNERS
    ],
    ((1, 2, 3), _uniform(-2, 2), "shape of example 1, fresh uniform values in [-2, 2]"),
    ((2, 2, 2), _uniform(-2, 2), "shape of example 2, fresh uniform values in [-2, 2]"),
    ((3, 2, 2), _uniform(-2, 2), "shape of example 3, fresh uniform values in [-2, 2]"),
    ((2, 3, 4), _normal(1.0), "interior shape, random normal values"),
    ((2, 3, 4), _uniform(-1, 1), "interior shape, uniform values in [-1, 1]"),
    ((4, 4, 5), _strong_saturation, "strong tanh saturation: most |x W1 + b1| > 5"),
    ((3, 2, 2), _partial_saturation, "partial saturation like example 3: tiny w1/b1 gradients"),
    ((1, 4, 2), _bias_saturation, "saturated by b1 = +-30: w1/b1 gradients are exactly 0"),
    ((2, 3, 4), _mixed_saturation, "half the hidden units saturated, half linear"),
    ((4, 2, 5), _zero_params, "all parameters zero: out = x"),
    ((2, 2, 2), _zero_inputs, "x = y = 0 with random parameters"),
    ((1, 4, 5), _all_zero, "everything zero: loss and gradients exactly 0"),
    ((4, 4, 2), _zero_w1, "W1 = 0: constant hidden layer tanh(b1)"),
    ((1, 2, 3), _zero_x, "x = 0, random target"),
    ((4, 4, 5), _all_negative, "every parameter and input negative"),
    ((2, 3, 4), _all_negative, "every parameter and input negative"),
    ((1, 2, 2), _all_negative, "every parameter and input negative"),
    ((4, 2, 2), _large_inputs, "large inputs |x|, |y| ~ 1e2 with small W1 (tanh unsaturated)"),
    ((1, 4, 5), _large_output_weights, "large W2, b2, y ~ 1e2"),
    ((2, 3, 4), _thousands, "x, y uniform in [-1000, 1000]: deep saturation, large loss"),
    ((4, 4, 5), _uniform(-100, 100), "every value uniform in [-100, 100]"),
    ((3, 2, 2), _mixed_magnitudes, "every entry's magnitude drawn from 1e-2 .. 1e2"),
    ((3, 2, 2), _exact_fit, "y == out exactly: loss and gradients exactly 0"),
    ((4, 4, 5), _fit, "y == out rounded to float32: loss and gradients ~0"),
    ((1, 2, 2), _fit, "y == out rounded to float32: loss and gradients ~0"),
    ((4, 2, 5), _tiny, "every value ~1e-3: tiny loss and gradients"),
    ((2, 2, 2), _identity_target, "y == x: the MLP branch should learn to output 0"),
    ((1, 2, 3), _integers, "small integer values: W1, b1, x in {-1, 0, 1}, the rest in [-3, 3]"),
    ((4, 4, 2), _sparse, "70% of all values are zero"),
    ((2, 2, 2), _duplicate_rows, "identical batch rows: the mean must divide by B*D"),
    ((4, 2, 5), _outlier_row, "one batch row ~50, the others ~0.1"),
    ((1, 4, 5), _zero_w2, "W2 = 0: the hidden layer does not reach out; w1/b1 gradients 0"),
    ((2, 3, 4), _uniform(-1.5, 1.5), "every value uniform in [-1.5, 1.5]"),
    ((4, 4, 5), _normal(1.0), "largest shape, random normal values"),
    ((1, 2, 2), _constant_target, "y = -50 everywhere: a large constant error"),
]


# -- float32 / float64 helpers ---------------------------------------------------------------
def _f32(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


def _f32_tree(p: dict[str, Any]) -> dict[str, np.ndarray]:
    return {k: _f32(p[k]) for k in ("w1", "b1", "w2", "b2")}


def _to_json(a: np.ndarray) -> Any:
    """float32 values as Python floats (exact: every float32 is a double)."""
    return np.asarray(a, dtype=np.float32).astype(np.float64).tolist()


def forward64(p: Arrays, x: np.ndarray) -> np.ndarray:
    x64 = x.astype(np.float64)
    h = np.tanh(x64 @ p["w1"].astype(np.float64) + p["b1"])
    return x64 + h @ p["w2"].astype(np.float64) + p["b2"]


def loss_and_grads64(p: Arrays, x: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """Hand-written float64 forward and backward pass, independent of jax."""
    w1, b1, w2, b2 = (p[k].astype(np.float64) for k in ("w1", "b1", "w2", "b2"))
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    h = np.tanh(x64 @ w1 + b1)
    err = x64 + h @ w2 + b2 - y64
    g_out = 2.0 * err / err.size
    g_pre = (g_out @ w2.T) * (1.0 - h * h)
    return {
        "loss": float(np.mean(err * err)),
        "grads": {
            "w1": x64.T @ g_pre,
            "b1": g_pre.sum(0),
            "w2": h.T @ g_out,
            "b2": g_out.sum(0),
        },
    }


def _leaves(tree: dict[str, Any]) -> list[tuple[str, np.ndarray]]:
    return [("loss", np.asarray(tree["loss"], np.float64))] + [
        (f"grads.{k}", np.asarray(tree["grads"][k], np.float64)) for k in ("w1", "b1", "w2", "b2")
    ]


def _load_reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rmb_reference", PACKAGE / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tolerance() -> tuple[float, float]:
    meta = tomllib.loads((PACKAGE / "problem.toml").read_text(encoding="utf-8"))
    tol = meta.get("tolerance", {})
    return float(tol.get("rtol", 1e-4)), float(tol.get("atol", 1e-5))


# -- generation -----------------------------------------------------------------------------
def build_cases() -> dict[str, Any]:
    """Every case with its expected output, in file order (examples first)."""
    solve = jax.jit(_load_reference().solve)
    rs = np.random.RandomState(SEED)
    raw: list[tuple[str, bool, dict[str, np.ndarray], np.ndarray, np.ndarray, str]] = []
    for i, ex in enumerate(EXAMPLES, 1):
        raw.append(
            (
                f"example-{i}",
                True,
                _f32_tree(ex["params"]),
                _f32(ex["x"]),
                _f32(ex["y"]),
                ex["note"],
            )
        )
    for i, ((b, d, h), build, note) in enumerate(HIDDEN, 1):
        p, x, y = build(rs, b, d, h)
        raw.append((f"hidden-{i:02d}", False, _f32_tree(p), _f32(x), _f32(y), note))

    rtol, atol = _tolerance()
    cases = []
    for name, visible, p, x, y, note in raw:
        got = jax.device_get(solve(p, x, y))
        expected = {
            "loss": float(np.float32(got["loss"])),
            "grads": {k: _to_json(got["grads"][k]) for k in ("w1", "b1", "w2", "b2")},
        }
        _check_conditioning(name, expected, loss_and_grads64(p, x, y), rtol, atol)
        cases.append(
            {
                "name": name,
                "visible": visible,
                "inputs": {
                    "params": {k: _to_json(v) for k, v in p.items()},
                    "x": _to_json(x),
                    "y": _to_json(y),
                },
                "expected": expected,
                "note": note,
            }
        )
    return {"generator": GENERATOR, "seed": SEED, "cases": cases}


def _check_conditioning(
    name: str, got: dict[str, Any], truth: dict[str, Any], rtol: float, atol: float
) -> None:
    for (leaf, a), (_, t) in zip(_leaves(got), _leaves(truth), strict=True):
        if not np.all(np.isfinite(a)):
            raise SystemExit(f"{name}: {leaf} is not finite")
        limit = CONDITIONING_MARGIN * (atol + rtol * np.abs(t))
        if np.any(np.abs(a - t) > limit):
            worst = float(np.max(np.abs(a - t) - limit))
            raise SystemExit(
                f"{name}: {leaf} float32 reference is {worst:.3g} beyond the "
                "conditioning margin: the case is too close to a rounding edge"
            )


def dumps(data: dict[str, Any]) -> str:
    """One case per line: small diffs when a case changes, still plain JSON."""
    lines = ",\n".join("  " + json.dumps(c, allow_nan=False) for c in data["cases"])
    head = f'{{"generator": {json.dumps(data["generator"])}, "seed": {data["seed"]}, "cases": [\n'
    return head + lines + "\n]}\n"


def _close(a: Any, b: Any) -> bool:
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return a64.shape == b64.shape and bool(
        np.all(np.abs(a64 - b64) <= CHECK_ATOL + CHECK_RTOL * np.abs(b64))
    )


def compare(fresh: dict[str, Any], stored: dict[str, Any]) -> list[str]:
    """Differences between a regenerated and a stored cases.json (empty when they agree)."""
    problems = []
    for key in ("generator", "seed"):
        if fresh[key] != stored.get(key):
            problems.append(f"{key}: stored {stored.get(key)!r}, generated {fresh[key]!r}")
    stored_cases = stored.get("cases", [])
    if len(stored_cases) != len(fresh["cases"]):
        problems.append(f"{len(stored_cases)} stored cases, {len(fresh['cases'])} generated")
    for new, old in zip(fresh["cases"], stored_cases, strict=False):
        name = new["name"]
        for key in ("name", "visible", "inputs", "note"):
            if new[key] != old.get(key):
                problems.append(f"{name}: {key} differs")
        exp_old = old.get("expected", {})
        for (leaf, a), (_, b) in zip(_leaves(new["expected"]), _leaves(exp_old), strict=True):
            if not _close(a, b):
                problems.append(f"{name}: expected {leaf} differs beyond 1e-6")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="regenerate in memory and fail if cases.json differs"
    )
    args = parser.parse_args(argv)
    fresh = build_cases()
    if args.check:
        try:
            stored = json.loads(CASES_PATH.read_text(encoding="utf-8"))
        except FileNotFoundError:
            print(f"{CASES_PATH} is missing: run this script without --check", file=sys.stderr)
            return 1
        try:
            problems = compare(fresh, stored)
        except (KeyError, TypeError, ValueError) as exc:
            problems = [f"cases.json is malformed: {exc!r}"]
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print(f"{CASES_PATH} is out of date: rerun {GENERATOR}", file=sys.stderr)
            return 1
        print(f"{CASES_PATH.name}: {len(fresh['cases'])} cases reproduce (jax {jax.__version__})")
        return 0
    CASES_PATH.write_text(dumps(fresh), encoding="utf-8")
    print(f"wrote {len(fresh['cases'])} cases to {CASES_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
