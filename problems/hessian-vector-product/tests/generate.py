"""Generate tests/cases.json for "Hessian-vector product" (deterministic; rerun after edits;
`--check` verifies the stored file).

Shapes: the requirement `no-dense-hessian` needs static shapes, so every distinct n is one
export and compile per grade. The tests use six values of n: 8 (the examples and the smallest
n), 9, 16, 31, 48 and 64 (the largest), and the coverage comes from the values: moderate and
large logits (|s_i w_i| up to 100, where a naive log(sum(exp)) overflows), a dominant logit, tied
logits, uniform softmax (s = 0 or w = 0), lam = 0 and lam = 10, v = 0, one-hot v (a column of
H), v in the null direction of the logsumexp part (H v = lam v), tiny and integer values.

Reproducibility: `--check` must reproduce the stored outputs to 1e-6 on every supported jax,
and H v loses digits to cancellation (s^2 p v against (s p) <s p, v> when one p is near 1), so
s and w are rounded to float16 precision (`_half`: every logit s_i w_i is then exact in float32)
and the magnitudes of the near-one-hot cases are kept moderate. Measured: jax 0.4.38 and 0.10.2
agree to within 0.23 of the `--check` tolerance on every case.

The float64 truth is the closed form: with p = softmax(s * w),
    H v = s^2 p v - (s p) <s p, v> + lam v.
"""

from __future__ import annotations

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20250312
SIZES = (8, 9, 16, 31, 48, 64)

EXAMPLES = [
    Case("example-1", {
        "w": [0.5, -1.0, 0.0, 2.0, 1.0, -0.5, 0.25, 1.5],
        "v": [1.0, 0.0, -1.0, 0.5, 2.0, 0.0, 1.0, -2.0],
        "s": [1.0, 2.0, -1.0, 0.5, 1.0, 3.0, -2.0, 1.0],
        "lam": 0.1,
    }, note="moderate values"),
    Case("example-2", {
        "w": [0.0] * 8,
        "v": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        "s": [1.0] * 8,
        "lam": 0.5,
    }, note="w = 0, s = 1: uniform softmax"),
    Case("example-3", {
        "w": [10.0, 9.0, -10.0, 0.0, 5.0, -5.0, 8.0, 1.0],
        "v": [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0],
        "s": [10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0],
        "lam": 1.0,
    }, note="logits up to 100: exp overflows float32 without the max shift"),
]


def _half(x) -> np.ndarray:
    """x rounded to float16 precision (11 significant bits): then every product s_i w_i is
    exact in float32, so the logits do not depend on whether a program rounds s * w before
    subtracting the maximum or fuses the two (an FMA). Rounding a logit near 100 would move the
    softmax by ~4e-6 relative: jax 0.4.38 and 0.10 disagree by that much, more than the 1e-6
    to which `--check` must reproduce the stored outputs on every supported jax."""
    return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)


def _sign(rs: np.random.RandomState, n: int) -> np.ndarray:
    return np.where(rs.uniform(size=n) < 0.5, -1.0, 1.0)


def hidden(rs: np.random.RandomState):
    cases: list[tuple[int, str, dict]] = []

    def add(n: int, note: str, w, v, s, lam) -> None:
        cases.append((n, note, {"w": _half(w), "v": v, "s": _half(s), "lam": float(lam)}))

    for n in SIZES:
        add(n, "normal values", rs.normal(0, 1, n), rs.normal(0, 1, n), rs.normal(0, 1, n),
            rs.uniform(0, 2))
    for n in (16, 64):
        add(n, "w, v uniform in [-10, 10], s in [-1, 1], lam in [0, 10]", rs.uniform(-10, 10, n),
            rs.uniform(-10, 10, n), rs.uniform(-1, 1, n), rs.uniform(0, 10))
    for n in (9, 48):
        add(n, "lam = 0: the logsumexp part alone", rs.normal(0, 1, n), rs.normal(0, 1, n),
            rs.normal(0, 2, n), 0.0)
    for n in (8, 31):
        add(n, "lam = 10, the largest regularization", rs.normal(0, 1, n), rs.normal(0, 1, n),
            rs.normal(0, 1, n), 10.0)
    for n in (16, 64):
        s = 10.0 * _sign(rs, n)
        z = rs.uniform(-100, 80, n)
        z[rs.choice(n, 4, replace=False)] = 95.0 + rs.uniform(-1, 1, 4)
        add(n, "logits s w from -100 to 96, four near the top: exp overflows without the max "
            "shift", z / s, rs.normal(0, 1, n), s, rs.uniform(0, 1))
    for n in (9, 31):
        w = rs.normal(0, 1, n)
        w[rs.randint(n)] = 8.0
        add(n, "one dominant logit: softmax nearly one-hot", w, rs.normal(0, 1, n),
            np.full(n, 3.0), rs.uniform(0, 1))
    for n in (8, 48):
        w = rs.normal(0, 1, n)
        i, j = rs.choice(n, 2, replace=False)
        w[i] = w[j] = 6.0
        add(n, "two tied largest logits", w, rs.normal(0, 1, n), np.full(n, 2.0), 0.3)
    add(16, "s = 0: softmax uniform and constant, H v = lam v", rs.normal(0, 1, 16),
        rs.normal(0, 1, 16), np.zeros(16), 0.7)
    add(31, "w = 0: uniform softmax, H v = s^2 v / n - s <s, v> / n^2 + lam v", np.zeros(31),
        rs.normal(0, 1, 31), rs.normal(0, 1, 31), 0.2)
    add(48, "v = 0: H v = 0", rs.normal(0, 1, 48), np.zeros(48), rs.normal(0, 1, 48), 1.0)
    for n in (8, 64):
        v = np.zeros(n)
        v[rs.randint(n)] = 1.0
        add(n, "one-hot v: a column of H", rs.normal(0, 1, n), v, rs.normal(0, 1.5, n),
            rs.uniform(0, 1))
    w = rs.normal(0, 1, 16)
    add(16, "v = w", w, w.copy(), rs.normal(0, 1, 16), 0.5)
    s = _sign(rs, 31) * rs.uniform(0.5, 2.0, 31)
    add(31, "v = 1/s: the logsumexp part's null direction, H v = lam v", rs.normal(0, 1, 31),
        1.0 / s, s, 0.5)
    for n in (9, 64):
        add(n, "tiny values ~1e-3", rs.normal(0, 1e-3, n), rs.normal(0, 1e-3, n),
            rs.normal(0, 1e-3, n), 1e-3)
    add(48, "small integers", rs.randint(-3, 4, 48) * 1.0, rs.randint(-3, 4, 48) * 1.0,
        rs.randint(-2, 3, 48) * 1.0, 2.0)
    for n in (16, 31):
        add(n, "every value negative", -rs.uniform(0.1, 2, n), -rs.uniform(0.1, 2, n),
            -rs.uniform(0.1, 2, n), 0.25)
    add(64, "magnitudes drawn from 1e-2 .. 1e1 (s up to 3)",
        _sign(rs, 64) * 10 ** rs.uniform(-2, 1, 64), _sign(rs, 64) * 10 ** rs.uniform(-2, 1, 64),
        _sign(rs, 64) * 10 ** rs.uniform(-2, 0.5, 64), 3.0)
    add(8, "large v uniform in [-10, 10] with moderate logits", rs.normal(0, 1, 8),
        rs.uniform(-10, 10, 8), rs.normal(0, 0.7, 8), 1.0)
    add(48, "s constant: H = s^2 (diag(p) - p p^T) + lam I", rs.normal(0, 1, 48),
        rs.normal(0, 1, 48), np.full(48, -1.5), 0.4)
    add(9, "sparse w, v, s (60% zeros)", *(np.where(rs.uniform(size=9) < 0.6, 0.0,
                                                    rs.normal(0, 2, 9)) for _ in range(3)), 0.6)

    for i, (n, note, inputs) in enumerate(cases, 1):
        yield Case(f"hidden-{i:02d}", inputs, note=f"n={n}: {note}")


def _logits_to_w(z: np.ndarray, s: np.ndarray) -> np.ndarray:
    """w = z / s kept legal (|w| <= 10, |s w| <= 100) after float32 rounding."""
    w = np.clip(z / s, -10.0, 10.0).astype(np.float32).astype(np.float64)
    while np.any(np.abs(w.astype(np.float32) * s.astype(np.float32)) > 100.0):
        w = np.where(np.abs(w * s) > 100.0, np.nextafter(w.astype(np.float32), 0).astype(
            np.float64), w)
    return w


def _dominant(rs: np.random.RandomState, n: int, gap: float):
    """|s| = 10 and full float32 logits up to 100 (rounded, unlike the tests'): the top logit
    `gap` above the next, v = +-10. Near one-hot, s^2 p v and (s p) <s p, v> cancel in the top
    component, where only the rounding of the two large terms remains."""
    s = _sign(rs, n) * rs.uniform(9.0, 10.0, n)
    z = rs.uniform(60.0, 99.5 - gap, n)
    top = rs.randint(n)
    z[top], s[top] = 99.5, np.sign(s[top]) * rs.uniform(9.96, 10.0)  # |w_top| < 10
    return {"w": _logits_to_w(z, s), "v": _sign(rs, n) * rs.uniform(9.0, 10.0, n), "s": s,
            "lam": 0.0}


def _tied(rs: np.random.RandomState, n: int, count: int):
    """`count` logits tied near 100 within 0.01 (float32, so not exactly), the rest far below:
    the softmax splits between them and H v mixes +-10 values of v."""
    s = _sign(rs, n) * rs.uniform(9.0, 10.0, n)
    z = rs.uniform(40.0, 90.0, n)
    top = rs.choice(n, count, replace=False)
    z[top] = 99.5 - rs.uniform(0.0, 0.01, count)
    s[top] = np.sign(s[top]) * rs.uniform(9.96, 10.0, count)  # |w| < 10: the ties stay
    return {"w": _logits_to_w(z, s), "v": _sign(rs, n) * rs.uniform(9.0, 10.0, n), "s": s,
            "lam": rs.uniform(0.0, 10.0)}


def _cancelling(rs: np.random.RandomState, n: int, gap: float):
    """The two largest logits near 100, `gap` apart, |s| ~ 10, with s_a v_a = s_b v_b: the top
    component of H v, s_a p_a (s_a v_a (1 - p_a) - s_b p_b v_b - ...), is ~0 while its two terms
    are ~s_a^2 |v_a| p_a ~ 1000 (most with one logit ahead): only atol covers their rounding."""
    s = _sign(rs, n) * rs.uniform(9.0, 10.0, n)
    z = rs.uniform(40.0, 90.0, n)
    a, b = rs.choice(n, 2, replace=False)
    z[a], z[b] = 99.5, 99.5 - gap - rs.uniform(0.0, 0.01)
    s[[a, b]] = np.sign(s[[a, b]]) * rs.uniform(9.96, 10.0, 2)  # |w| < 10: the gap stays
    v = _sign(rs, n) * rs.uniform(9.0, 10.0, n)
    v[a] = np.sign(v[a]) * min(abs(v[a]), 10.0 * abs(s[b] / s[a]))
    v[b] = s[a] * v[a] / s[b]
    return {"w": _logits_to_w(z, s), "v": v, "s": s, "lam": 0.0}


def _full_range(rs: np.random.RandomState, n: int):
    s = rs.uniform(-10.0, 10.0, n)
    return {"w": _logits_to_w(rs.uniform(-100.0, 100.0, n), s), "v": rs.uniform(-10, 10, n),
            "s": s, "lam": rs.uniform(0.0, 10.0)}


# Never graded: the legal inputs where float32 rounding is worst, for the margin check of
# `jaxjudge check-problem` (jaxjudge/authoring/margin.py). Sizes reuse the tests' sizes.
ADVERSARIAL = [
    (16, lambda rs, n: _dominant(rs, n, 5.0), "one logit 5 above the rest, |s| ~ 10"),
    (64, lambda rs, n: _dominant(rs, n, 0.5), "one logit 0.5 above the rest, |s| ~ 10"),
    (9, lambda rs, n: _tied(rs, n, 2), "two logits tied near 100, |s| ~ 10"),
    (48, lambda rs, n: _tied(rs, n, 5), "five logits tied near 100, |s| ~ 10"),
    *[(n, lambda rs, n, gap=gap: _cancelling(rs, n, gap),
       f"the two largest logits {gap:g} apart near 100, s_a v_a = s_b v_b: (H v)_a ~ 0")
      for n, gap in ((8, 0.0), (48, 0.0), (16, 1.0), (48, 1.0), (64, 2.0), (48, 3.0), (64, 3.0),
                     (31, 5.0))],
    (31, _full_range, "every value uniform over its whole range"),
    (64, _full_range, "every value uniform over its whole range"),
]


def adversarial(rs: np.random.RandomState):
    for i, (n, build, note) in enumerate(ADVERSARIAL, 1):
        yield Case(f"adversarial-{i:02d}", build(rs, n), note=f"n={n}: {note}")


def truth(inputs):
    w, v, s = (np.asarray(inputs[k], np.float64) for k in ("w", "v", "s"))
    lam = float(inputs["lam"])
    z = s * w
    p = np.exp(z - z.max())
    p /= p.sum()
    sp = s * p
    return {"hv": s * sp * v - sp * np.dot(sp, v) + lam * v}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
