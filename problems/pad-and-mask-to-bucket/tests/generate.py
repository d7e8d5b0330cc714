"""Generate tests/cases.json for "Pad and Mask to a Bucket" (deterministic; `--check`).

    python problems/pad-and-mask-to-bucket/tests/generate.py          # write
    python problems/pad-and-mask-to-bucket/tests/generate.py --check  # verify

Shapes. The requirement (`programs_per_bucket`) needs static shapes: one program is exported
per distinct input shape, and programs of lengths in one bucket are compared. So the tests use
few shapes, with two or more lengths per bucket and the other dimensions equal: (B, D) = (2, 2)
with L in {1, 3, 4} (bucket 4), {5, 8} (8), {9, 12} (12), {13, 16} (16), and (B, D) = (1, 3)
with L = 16: 10 shapes (each costs a per-shape export in stage A, ~0.4 s on a loaded
machine). L = 4, 8, 12 and 16 are bucket boundaries (no padding), L = 16 the largest bucket,
L = 1 the shortest sequence.

Values. Positions t >= lengths[b] hold garbage: +-1e30, +-1e6, copies of valid rows, or zeros;
the same test with clean padding would not tell a masked mean from one that divides by L. The
valid values are normal, with a few larger scales and near-tied scores.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20261205
BUCKETS = (4, 8, 12, 16)
Rs = np.random.RandomState
Inputs = dict[str, Any]

EXAMPLES = [
    Case("example-1", {"x": [[[1.0, 0.0], [3.0, 2.0], [1e30, -1e30]],
                             [[0.0, 1.0], [2.0, 2.0], [4.0, 0.0]]],
                       "lengths": [2, 3], "q": [0.0, 0.0]},
         note="L = 3 (bucket 4); q = 0: equal weights, pooled = mean; garbage in x[0, 2]"),
    Case("example-2", {"x": [[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]],
                             [[1.0, 2.0], [3.0, 4.0], [1e30, 5.0], [-7.0, 1e29], [0.0, 0.0]]],
                       "lengths": [5, 2], "q": [1.0, 0.0]},
         note="L = 5 (bucket 8): softmax over 5 and over 2 positions"),
    Case("example-3", {"x": [[[5.0, -1.0]], [[0.5, 2.0]]], "lengths": [1, 1], "q": [3.0, 3.0]},
         note="L = 1 (bucket 4): one position, mean = pooled = x"),
]


def _garbage(rs: Rs, kind: str, shape: tuple[int, ...], valid: np.ndarray) -> np.ndarray:
    if kind == "huge":
        return rs.choice([-1e30, 1e30], shape) * rs.uniform(0.5, 1.0, shape)
    if kind == "large":
        return rs.normal(0, 1e6, shape)
    if kind == "copies":
        return np.resize(valid[::-1], shape) if valid.size else np.zeros(shape)
    return np.zeros(shape)


def _batch(lengths: list[int], d: int, *, scale: float = 1.0, garbage: str = "huge",
           q_scale: float = 1.0) -> Callable[[Rs], Inputs]:
    def build(rs: Rs) -> Inputs:
        length = max(lengths)
        x = np.zeros((len(lengths), length, d))
        for i, n in enumerate(lengths):
            x[i, :n] = np.clip(rs.normal(0, scale, (n, d)), -10, 10)
            if n < length:
                x[i, n:] = _garbage(rs, garbage, (length - n, d), x[i, :n])
        q = np.clip(rs.normal(0, q_scale, d), -10, 10)
        return {"x": x, "lengths": np.array(lengths), "q": q}
    return build


def _tied(lengths: list[int], d: int) -> Callable[[Rs], Inputs]:
    """Rows that are the same up to a tiny change: near-tied scores."""
    def build(rs: Rs) -> Inputs:
        case = _batch(lengths, d)(rs)
        row = rs.normal(0, 1, d)
        for i, n in enumerate(lengths):
            case["x"][i, :n] = row + rs.normal(0, 1e-3, (n, d))
        return case
    return build


HIDDEN: list[tuple[Callable[[Rs], Inputs], str]] = [
    (_batch([1, 1], 2), "L = 1: single-element sequences"),
    (_batch([3, 1], 2), "L = 3, garbage 1e30"),
    (_batch([2, 3], 2, garbage="large"), "L = 3, garbage ~1e6"),
    (_batch([4, 4], 2), "L = 4, a bucket boundary: no padding, no garbage"),
    (_batch([4, 2], 2, garbage="copies"), "L = 4, the padding holds copies of valid rows"),
    (_batch([1, 4], 2, scale=5.0), "L = 4, one sequence of length 1"),
    (_batch([5, 2], 2), "L = 5 (bucket 8)"),
    (_batch([5, 5], 2, scale=3.0, q_scale=2.0), "L = 5, sharp softmax"),
    (_batch([8, 3], 2), "L = 8, a bucket boundary"),
    (_batch([8, 8], 2, garbage="zeros"), "L = 8, every sequence full"),
    (_batch([1, 8], 2, garbage="large"), "L = 8, lengths 1 and 8"),
    (_batch([9, 4], 2), "L = 9 (bucket 12)"),
    (_batch([6, 9], 2, garbage="copies"), "L = 9, copies in the padding"),
    (_batch([12, 11], 2), "L = 12, a bucket boundary"),
    (_batch([12, 1], 2, scale=8.0), "L = 12, large values"),
    (_batch([13, 13], 2), "L = 13 (bucket 16)"),
    (_batch([13, 7], 2, garbage="large"), "L = 13, garbage ~1e6"),
    (_batch([16, 16], 2), "L = 16, the largest bucket, full"),
    (_batch([16, 9], 2, q_scale=3.0), "L = 16, the largest bucket"),
    (_batch([2, 16], 2, garbage="copies"), "L = 16, copies in the padding"),
    (_batch([5, 1], 2, garbage="copies"), "L = 5, a sequence of length 1"),
    (_batch([8, 7], 2, scale=4.0), "L = 8, large values"),
    (_batch([3, 9], 2, garbage="zeros"), "L = 9, zero padding"),
    (_batch([16, 15], 2, scale=4.0, garbage="large"), "L = 16, large values"),
    (_batch([16], 3), "B = 1, D = 3, L = 16"),
    (_batch([16], 3, scale=6.0, q_scale=2.0), "B = 1, L = 16, sharp softmax"),
    (_tied([3, 2], 2), "near-tied scores, L = 3"),
    (_tied([12, 5], 2), "near-tied scores, L = 12"),
    (_tied([16], 3), "near-tied scores, B = 1"),
    (_batch([3, 3], 2, garbage="zeros"), "L = 3, full sequences"),
    (_batch([13, 2], 2, scale=0.01), "L = 13, tiny values"),
    (_batch([9, 9], 2, scale=10.0, q_scale=0.1), "L = 9, large values, flat softmax"),
]


def hidden(rs: Rs) -> Iterator[Case]:
    for i, (build, note) in enumerate(HIDDEN, 1):
        inputs = build(rs)
        b, length, d = inputs["x"].shape
        yield Case(f"hidden-{i:02d}", inputs, note=f"B={b}, L={length}, D={d}: {note}")


# Never graded: the legal inputs where float32 rounding is worst, for the margin check of
# `jaxjudge check-problem`: the largest valid values with sharp and near-tied softmaxes, means
# of values that cancel, on the tests' shapes.
def _cancelling(lengths: list[int], d: int) -> Callable[[Rs], Inputs]:
    def build(rs: Rs) -> Inputs:
        case = _batch(lengths, d, scale=10.0)(rs)
        for i, n in enumerate(lengths):
            v = case["x"][i, :n]
            v -= v.mean(axis=0)
        return case
    return build


ADVERSARIAL: list[Callable[[Rs], Inputs]] = [
    _batch([16, 16], 2, scale=10.0, q_scale=10.0), _batch([13, 13], 2, scale=10.0, q_scale=3.0),
    _batch([16], 3, scale=10.0, q_scale=1.0), _cancelling([16, 16], 2),
    _cancelling([12, 12], 2), _cancelling([16], 3), _tied([16, 16], 2), _tied([8, 8], 2),
]


def adversarial(rs: Rs) -> Iterator[Case]:
    for i, build in enumerate(ADVERSARIAL, 1):
        yield Case(f"adversarial-{i:02d}", build(rs))


def truth(inputs: dict[str, Any]) -> dict[str, Any]:
    """Float64, on the valid positions only (no padding at all)."""
    x = np.asarray(inputs["x"], np.float64)
    q = np.asarray(inputs["q"], np.float64)
    mean, pooled = [], []
    for row, n in zip(x, np.asarray(inputs["lengths"]), strict=True):
        v = row[:n]
        s = v @ q / np.sqrt(len(q))
        w = np.exp(s - s.max())
        mean.append(v.mean(axis=0))
        pooled.append((w / w.sum()) @ v)
    return {"mean": np.array(mean), "pooled": np.array(pooled)}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
