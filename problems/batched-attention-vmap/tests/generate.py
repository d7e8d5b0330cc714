"""Generate tests/cases.json for "Batched Attention with vmap" (deterministic; `--check`).

    python problems/batched-attention-vmap/tests/generate.py          # write
    python problems/batched-attention-vmap/tests/generate.py --check  # verify

Shapes. Both requirements read one exported program per input shape (sizes and loop counts
need static shapes), so the tests use 9 shapes (B, H, T, d), each one compile per grade:
(1, 2, 8, 4), (3, 2, 8, 4) and (5, 2, 8, 4) differ only in B, (3, 1, 8, 4), (3, 2, 8, 4) and
(3, 4, 8, 4) only in H (no-loop-over-batch-or-heads compares programs that differ in one of
them); (4, 2, 16, 8) is where the limit B*H*T*(2T + 3d) = 7168 is below half of the
(B, H, T, T, d) products (16384), and below the (B, B, H, T, T) scores of every example against
every other (8192); (2, 3, 1, 4) has a single token; (1, 1, 3, 2) and (2, 2, 3, 2) are the
examples'. No two shapes differ only in a size of 1 and one other size: growth and loops are
compared between sizes >= 2, so an honest `if B == 1` special case is not mistaken for a loop.

Values. Random q, k, v of every scale up to the constraint (|value| <= 10: scores up to
10 * 10 * 8 / sqrt(8) ~ 283, where an exponential without the row maximum overflows), every
length from 1 (one real key: out is its value) to T, padded positions full of garbage up to 1e4
(a mask applied after the exponential, or to the queries, shows), q = 0 (uniform weights over
the real keys), identical keys, integer q and k with d = 4 (exact scores, near ties of large
scores). `truth` is a float64 computation of the float32 inputs; testgen refuses a case whose
reference output is not within a quarter of the tolerance of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20261205

Rs = np.random.RandomState
Inputs = dict[str, Any]
Shape = tuple[int, int, int, int]
Builder = Callable[[Rs, Shape], Inputs]

EXAMPLES = [
    Case("example-1", {"q": [[[[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]]]],
                       "k": [[[[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]]]],
                       "v": [[[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]]],
                       "lengths": [2]},
         note="B=H=1, T=3, d=2: the third key is padding"),
    Case("example-2", {"q": [[[[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]],
                              [[1.0, -1.0], [0.0, 0.0], [0.0, 3.0]]],
                             [[[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]],
                              [[0.0, 0.0], [3.0, 3.0], [0.0, 0.0]]]],
                       "k": [[[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                              [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]],
                             [[[2.0, 0.0], [9.0, 9.0], [9.0, 9.0]],
                              [[0.0, 2.0], [9.0, 9.0], [9.0, 9.0]]]],
                       "v": [[[[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]],
                              [[4.0, 0.0], [0.0, 4.0], [1.0, 1.0]]],
                             [[[5.0, -5.0], [99.0, 99.0], [99.0, 99.0]],
                              [[7.0, 1.0], [99.0, 99.0], [99.0, 99.0]]]],
                       "lengths": [3, 1]},
         note="B=H=2: example 1 uses all 3 keys, example 2 only its first"),
]


def _random(qk: float = 1.0, vs: float = 1.0, lengths: str = "mixed") -> Builder:
    """q, k uniform in [-qk, qk], v in [-vs, vs]; lengths: full, one or mixed; garbage in the
    padding."""
    def build(rs: Rs, shape: Shape) -> Inputs:
        b, _, t, _ = shape
        lens = {"full": np.full(b, t), "one": np.ones(b, int),
                "mixed": rs.randint(1, t + 1, b)}[lengths]
        case = {"q": rs.uniform(-qk, qk, shape), "k": rs.uniform(-qk, qk, shape),
                "v": rs.uniform(-vs, vs, shape), "lengths": lens}
        return _garbage(rs, case)
    return build


def _garbage(rs: Rs, case: Inputs) -> Inputs:
    """Padded keys and values (positions >= lengths[b]) hold values up to 1e4."""
    for name in ("k", "v"):
        arr = case[name]
        for i, n in enumerate(case["lengths"]):
            arr[i, :, n:] = rs.uniform(-1e4, 1e4, arr[i, :, n:].shape)
    return case


def _zero_queries(rs: Rs, shape: Shape) -> Inputs:
    """q = 0: every score is 0, out is the mean of the real values."""
    case = _random(vs=5.0)(rs, shape)
    case["q"] = np.zeros(shape)
    return case


def _same_keys(rs: Rs, shape: Shape) -> Inputs:
    """Every key of an example and head is the same: uniform weights whatever q."""
    case = _random(qk=5.0, vs=5.0)(rs, shape)
    case["k"] = np.repeat(case["k"][:, :, :1], shape[2], axis=2)
    return _garbage(rs, case)


def _integers(rs: Rs, shape: Shape) -> Inputs:
    """Integer q and k up to 10 (d = 4: exact scores up to 200), near-tied large scores."""
    b, _, t, _ = shape
    case = {"q": rs.randint(-10, 11, shape).astype(float),
            "k": rs.randint(-10, 11, shape).astype(float),
            "v": rs.uniform(-10, 10, shape), "lengths": rs.randint(1, t + 1, b)}
    return _garbage(rs, case)


def _one_hot_keys(rs: Rs, shape: Shape) -> Inputs:
    """Large aligned q and k: each query picks (nearly) one key."""
    case = _random(qk=10.0, vs=10.0, lengths="full")(rs, shape)
    return case


HIDDEN: list[tuple[Shape, Builder, str]] = [
    ((3, 2, 8, 4), _random(), "random, mixed lengths"),
    ((1, 2, 8, 4), _random(), "B = 1"),
    ((5, 2, 8, 4), _random(), "B = 5"),
    ((3, 1, 8, 4), _random(), "H = 1"),
    ((3, 4, 8, 4), _random(), "H = 4"),
    ((4, 2, 16, 8), _random(), "the largest shape"),
    ((2, 3, 1, 4), _random(), "T = 1: a single token (out = v)"),
    ((1, 1, 3, 2), _random(), "B = H = 1, the first example's shape"),
    ((2, 2, 3, 2), _random(), "the second example's shape"),
    ((3, 2, 8, 4), _random(lengths="full"), "no padding"),
    ((5, 2, 8, 4), _random(lengths="one"), "one real key per example: out is its value"),
    ((4, 2, 16, 8), _random(lengths="one"), "one real key, the largest shape"),
    ((3, 4, 8, 4), _random(lengths="full"), "no padding, H = 4"),
    ((1, 2, 8, 4), _random(lengths="one"), "B = 1, one real key"),
    ((3, 2, 8, 4), _random(qk=3.0, vs=10.0), "scores up to ~18, |v| up to 10"),
    ((4, 2, 16, 8), _random(qk=3.0, vs=10.0), "scores up to ~25, the largest shape"),
    ((3, 2, 8, 4), _integers, "integer q, k up to 10: exact scores up to 200"),
    ((5, 2, 8, 4), _integers, "integer q, k, B = 5"),
    ((3, 1, 8, 4), _integers, "integer q, k, H = 1"),
    ((3, 4, 8, 4), _integers, "integer q, k, H = 4"),
    ((1, 2, 8, 4), _integers, "integer q, k, B = 1"),
    ((2, 3, 1, 4), _integers, "integer q, k, T = 1"),
    ((3, 2, 8, 4), _zero_queries, "q = 0: the mean of the real values"),
    ((4, 2, 16, 8), _zero_queries, "q = 0, the largest shape"),
    ((3, 4, 8, 4), _same_keys, "identical keys: uniform weights"),
    ((5, 2, 8, 4), _same_keys, "identical keys, B = 5"),
    ((3, 2, 8, 4), _one_hot_keys, "|q|, |k| up to 10: scores up to ~200, no padding"),
    ((3, 1, 8, 4), _one_hot_keys, "scores up to ~200, H = 1"),
    ((2, 2, 3, 2), _integers, "integer q, k, the second example's shape"),
    ((1, 1, 3, 2), _zero_queries, "q = 0, B = H = 1"),
    ((3, 2, 8, 4), _random(qk=0.01), "tiny scores: nearly uniform weights"),
    ((5, 2, 8, 4), _random(vs=0.01), "tiny values"),
    ((3, 4, 8, 4), _random(qk=2.0, lengths="one"), "one real key, H = 4"),
    ((2, 3, 1, 4), _zero_queries, "q = 0, T = 1"),
]


def _near_tie(rs: Rs, shape: Shape) -> Inputs:
    """Two keys per query nearly tied at the largest scores, with opposite values: the weights
    move with the last bits of scores ~280."""
    b, _, t, _ = shape
    q = rs.choice([-10.0, 10.0], shape) * rs.uniform(0.95, 1.0, shape)
    k = np.repeat(q[:, :, :1], t, axis=2) + rs.normal(0, 1e-3, shape)
    v = rs.choice([-10.0, 10.0], shape)
    return {"q": q, "k": k, "v": v, "lengths": np.full(b, t)}


# Never graded: the legal inputs where float32 rounding is worst, for the margin check of
# `jaxjudge check-problem` (jaxjudge/authoring/margin.py), at the tests' shapes.
ADVERSARIAL: list[tuple[Shape, Builder, str]] = [
    *[(shape, _near_tie, "keys nearly tied at scores ~280, values +-10")
      for shape in ((4, 2, 16, 8), (3, 2, 8, 4), (4, 2, 16, 8), (3, 4, 8, 4))],
    ((4, 2, 16, 8), _random(qk=10.0, vs=10.0), "|q|, |k|, |v| up to 10, mixed lengths"),
    ((4, 2, 16, 8), _random(qk=10.0, vs=10.0, lengths="full"), "|q|, |k|, |v| up to 10"),
    ((5, 2, 8, 4), _integers, "integer q, k"),
]


def adversarial(rs: Rs) -> Iterator[Case]:
    for i, (shape, build, note) in enumerate(ADVERSARIAL, 1):
        yield Case(f"adversarial-{i:02d}", build(rs, shape), note=f"{_dims(shape)}: {note}")


def _dims(shape: Shape) -> str:
    return "B={}, H={}, T={}, d={}".format(*shape)


def hidden(rs: Rs) -> Iterator[Case]:
    for i, (shape, build, note) in enumerate(HIDDEN, 1):
        yield Case(f"hidden-{i:02d}", build(rs, shape), note=f"{_dims(shape)}: {note}")


def truth(inputs: dict[str, Any]) -> dict[str, Any]:
    """Float64 masked attention of the float32 inputs, the real keys only."""
    q, k, v = (np.asarray(inputs[n], np.float64) for n in ("q", "k", "v"))
    out = np.zeros_like(q)
    for b, n in enumerate(np.asarray(inputs["lengths"])):
        s = np.einsum("htd,hsd->hts", q[b], k[b, :, :n]) / np.sqrt(q.shape[-1])
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        out[b] = np.einsum("hts,hsd->htd", w / w.sum(axis=-1, keepdims=True), v[b, :, :n])
    return {"out": out}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
