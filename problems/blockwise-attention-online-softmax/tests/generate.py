"""Generate tests/cases.json for "Blockwise attention with an online softmax" (deterministic;
rerun after edits; `--check` verifies the stored file).

Shapes: both requirements need static shapes (one export and compile per distinct (T, d) per
grade), and `loop-over-key-blocks` compares programs that differ only in T, so the tests use ten
shapes in four groups of equal d: d=1 with T in {16, 32}, d=2 with T in {16, 20, 32}, d=3 with T
in {24, 28}, d=4 with T in {16, 24, 32}. Every T (16 .. 32) and every d (1 .. 4) appears.

Coverage comes from the values: scores of several hundred (a softmax without the maximum
subtracted overflows to inf, or underflows to 0/0 when every score is very negative), maxima that
move to a later block for every query (the running sums must be rescaled), the maximum in the
first block, ties between blocks, uniform attention (q = 0 or k = 0), v = 0 or constant, tiny,
integer and sparse values. Large-score cases use integer q, k with d in {1, 4} so that every
score (q . k / sqrt(d)) is exact in float32: float32 rounding of a score of 500 would otherwise
move a softmax weight by ~1e-5 relative, and two correct programs summing in different orders
could disagree by more than the tolerance.

Reproducibility: `--check` must reproduce the stored outputs to 1e-6 on every supported jax.
An output error is about (rounding of the scores) x (spread of v), so the cases with inexact
scores keep scores and v moderate. Measured: jax 0.4.38 and 0.10.2 agree to within 0.39 of the
`--check` tolerance on every case.

The float64 truth is the plain softmax over the full score matrix (numpy, max subtracted).
"""

from __future__ import annotations

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20250313
SHAPES = [(16, 1), (32, 1), (16, 2), (20, 2), (32, 2), (24, 3), (28, 3), (16, 4), (24, 4),
          (32, 4)]


def _col(values) -> list[list[float]]:
    return [[float(x)] for x in values]


EXAMPLES = [
    Case("example-1", {
        "q": _col([1, 0, -1, 2, 0.5, -0.5, 1.5, -2, 0, 1, -1, 0.25, 2, -1.5, 0.75, 0]),
        "k": _col([0.5, -1, 1, 0, 2, -0.5, 1.5, -2, 1, 0, -1, 0.5, -1.5, 2, 0.25, 1]),
        "v": _col(range(1, 17)),
    }, note="T=16, d=1, moderate scores"),
    Case("example-2", {
        "q": _col([20, -20, 10, 0] * 4),
        "k": _col([-20, -10, 0, 10, -15, -5, 5, 15, -20, -10, 0, 10, -15, -5, 5, 20]),
        "v": _col(range(1, 17)),
    }, note="T=16, d=1, scores up to 400: the largest key sits in the last block"),
    Case("example-3", {
        "q": [[1, 0], [0, 1], [1, 1], [-1, 0]] * 4,
        "k": [[1, 0], [0, 0], [0, 1], [-1, -1]] * 4,
        "v": [[float(i), float(i % 4)] for i in range(16)],
    }, note="T=16, d=2, every block holds the same four keys"),
]


def _ints(rs: np.random.RandomState, lo: int, hi: int, shape) -> np.ndarray:
    return rs.randint(lo, hi + 1, shape).astype(np.float64)


def hidden(rs: np.random.RandomState):
    cases: list[tuple[tuple[int, int], str, dict]] = []

    def add(shape, note, q, k, v) -> None:
        cases.append((shape, note, {"q": q, "k": k, "v": v}))

    for t, d in SHAPES:
        add((t, d), "normal values", rs.normal(0, 1, (t, d)), rs.normal(0, 1, (t, d)),
            rs.normal(0, 1, (t, d)))
    for t, d in ((32, 1), (16, 4), (24, 4), (32, 4)):
        add((t, d), "integer q, k in [-20, 20]: scores up to several hundred",
            _ints(rs, -20, 20, (t, d)), _ints(rs, -20, 20, (t, d)), rs.uniform(-10, 10, (t, d)))
    for t, d in ((16, 1), (32, 4)):
        k = np.sort(_ints(rs, 5, 20, (t, 1)), axis=0) * np.ones((1, d))
        add((t, d), "keys sorted ascending, q > 0: every query's maximum moves to a later block "
            "(scores >= 100)", _ints(rs, 5, 20, (t, d)), k, rs.normal(0, 3, (t, d)))
    for t, d in ((24, 4), (16, 1)):
        k = -np.sort(_ints(rs, 5, 20, (t, 1)), axis=0) * np.ones((1, d))
        add((t, d), "keys sorted descending, q > 0: every maximum in the first block",
            _ints(rs, 5, 20, (t, d)), k, rs.normal(0, 3, (t, d)))
    for t, d in ((32, 1), (16, 4)):
        add((t, d), "every score very negative (q > 0, k < 0, scores <= -100): exp underflows "
            "to 0 without the maximum", _ints(rs, 5, 20, (t, d)), -_ints(rs, 5, 20, (t, d)),
            rs.normal(0, 3, (t, d)))
    for t, d in ((24, 4), (32, 1)):
        k = _ints(rs, -5, 5, (t, d))
        i, j = rs.choice(t // 4, 2, replace=False) * 4 + rs.randint(0, 4, 2)
        k[i] = k[j] = 20.0
        add((t, d), "one key repeated in two blocks dominates: out averages two rows of v",
            _ints(rs, 5, 20, (t, d)), k, rs.normal(0, 3, (t, d)))
    add((20, 2), "uniform q, k in [-2, 2], v in [-3, 3]", rs.uniform(-2, 2, (20, 2)),
        rs.uniform(-2, 2, (20, 2)), rs.uniform(-3, 3, (20, 2)))
    add((28, 3), "uniform q, k in [-3, 3]: scores up to ~15", rs.uniform(-3, 3, (28, 3)),
        rs.uniform(-3, 3, (28, 3)), rs.normal(0, 1, (28, 3)))
    k = np.sort(_ints(rs, 1, 5, (32, 1)), axis=0) * np.ones((1, 2))
    add((32, 2), "keys sorted ascending with moderate scores: the maximum moves block by block",
        _ints(rs, 1, 5, (32, 2)), k, rs.normal(0, 2, (32, 2)))
    add((20, 2), "q = 0: uniform attention, every row of out is the mean of v",
        np.zeros((20, 2)), rs.normal(0, 5, (20, 2)), rs.normal(0, 3, (20, 2)))
    add((28, 3), "k = 0: uniform attention", rs.normal(0, 5, (28, 3)), np.zeros((28, 3)),
        rs.normal(0, 3, (28, 3)))
    add((16, 2), "v = 0: out = 0", rs.normal(0, 2, (16, 2)), rs.normal(0, 2, (16, 2)),
        np.zeros((16, 2)))
    add((24, 3), "v constant per column: out = v[0]", rs.normal(0, 2, (24, 3)),
        rs.normal(0, 2, (24, 3)), np.tile(rs.uniform(-10, 10, (1, 3)), (24, 1)))
    add((32, 2), "q = k: self-attention", *(lambda x: (x, x.copy()))(rs.normal(0, 1.5, (32, 2))),
        rs.normal(0, 1, (32, 2)))
    add((20, 2), "tiny q, k ~1e-3: nearly uniform attention", rs.normal(0, 1e-3, (20, 2)),
        rs.normal(0, 1e-3, (20, 2)), rs.normal(0, 1, (20, 2)))
    add((28, 3), "large v ~ 10, moderate scores", rs.normal(0, 1, (28, 3)),
        rs.normal(0, 1, (28, 3)), rs.uniform(-10, 10, (28, 3)))
    add((32, 4), "every value negative", -rs.uniform(0.1, 2, (32, 4)),
        -rs.uniform(0.1, 2, (32, 4)), -rs.uniform(0.1, 5, (32, 4)))
    add((16, 4), "70% of all values zero",
        *(np.where(rs.uniform(size=(16, 4)) < 0.7, 0.0, rs.normal(0, 2, (16, 4)))
          for _ in range(3)))
    add((24, 4), "small integers", _ints(rs, -3, 3, (24, 4)), _ints(rs, -3, 3, (24, 4)),
        _ints(rs, -5, 5, (24, 4)))

    for i, ((t, d), note, inputs) in enumerate(cases, 1):
        yield Case(f"hidden-{i:02d}", inputs, note=f"T={t}, d={d}: {note}")


def _near_tied(rs: np.random.RandomState, t: int, d: int, spread: float):
    """Large non-integer scores (|q|, |k| close to 20) where the top keys are near-tied: every
    key is one direction plus a jitter of `spread`, so the scores of a query differ by a few
    units around several hundred and their float32 rounding (~|score| * 6e-8) moves the
    weights; v of +-10 with mixed signs lets out cancel to ~0, where only atol applies."""
    u = rs.choice([-1.0, 1.0], d) * rs.uniform(0.6, 1.0, d)
    u *= 19.0 / np.abs(u).max()
    q = np.clip(u + rs.uniform(-1, 1, (t, d)), -20, 20)
    k = np.clip(u + rs.uniform(-spread, spread, (t, d)), -20, 20)
    v = rs.choice([-1.0, 1.0], (t, d)) * rs.uniform(9.0, 10.0, (t, d))
    return {"q": q, "k": k, "v": v}


def _two_tied_blocks(rs: np.random.RandomState, t: int, d: int):
    """Two keys in different blocks dominate with scores of several hundred that differ by
    ~0.1, their v rows opposite (out ~ 10 (p_a - p_b), near 0); the other keys score far below."""
    q = rs.choice([-1.0, 1.0], (t, 1)) * rs.uniform(17.0, 20.0, (t, d))
    k = rs.uniform(-3.0, 3.0, (t, d))
    a, b = rs.choice(t // 4, 2, replace=False) * 4 + rs.randint(0, 4, 2)
    direction = np.sign(q[0])
    k[a] = direction * rs.uniform(18.0, 20.0, d)
    k[b] = np.clip(k[a] + rs.uniform(-0.01, 0.01, d), -20, 20)
    v = rs.uniform(-10.0, 10.0, (t, d))
    v[a], v[b] = 10.0, -10.0
    return {"q": q, "k": k, "v": v}


def _full_range(rs: np.random.RandomState, t: int, d: int):
    return {"q": rs.uniform(-20, 20, (t, d)), "k": rs.uniform(-20, 20, (t, d)),
            "v": rs.uniform(-10, 10, (t, d))}


# Never graded: the legal inputs where float32 rounding is worst, for the margin check of
# `jaxjudge check-problem` (jaxjudge/authoring/margin.py). Shapes reuse the tests' shapes.
ADVERSARIAL = [
    ((24, 3), _near_tied, 0.5, "near-tied large scores, jitter 0.5"),
    ((28, 3), _near_tied, 0.1, "near-tied large scores, jitter 0.1"),
    ((20, 2), _near_tied, 0.5, "near-tied large scores, jitter 0.5"),
    ((32, 4), _near_tied, 0.3, "near-tied large scores, jitter 0.3"),
    ((32, 1), _near_tied, 0.05, "near-tied large scores, jitter 0.05"),
    *[(shape, _two_tied_blocks, None, "two keys in different blocks, tied to ~0.1")
      for shape in ((24, 3), (32, 2), (16, 4), (24, 4), (32, 4), (16, 4), (24, 4), (32, 4))],
    ((28, 3), _full_range, None, "uniform over the whole range: scores up to ~690"),
    ((32, 4), _full_range, None, "uniform over the whole range: scores up to ~800"),
]


def adversarial(rs: np.random.RandomState):
    for i, ((t, d), build, spread, note) in enumerate(ADVERSARIAL, 1):
        inputs = build(rs, t, d) if spread is None else build(rs, t, d, spread)
        yield Case(f"adversarial-{i:02d}", inputs, note=f"T={t}, d={d}: {note}")


def truth(inputs):
    q, k, v = (np.asarray(inputs[n], np.float64) for n in ("q", "k", "v"))
    s = q @ k.T / np.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return {"out": (p @ v) / p.sum(axis=1, keepdims=True)}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
