"""Generate tests/cases.json for "Spectral norm by power iteration" (deterministic; `--check`).

    python problems/spectral-norm-power-iteration/tests/generate.py          # write cases.json
    python problems/spectral-norm-power-iteration/tests/generate.py --check  # verify it

Shapes. The requirement (`loop_over_dim`, a fixed trip count of 8) exports one program per
input shape, so every distinct (M, N) costs an export and a compile per grade: the tests use 7,
(1, 1), (1, 4), (4, 1), (2, 2), (3, 3), (5, 7) and (8, 8).

What the tests hold. Random matrices at several scales; matrices whose two largest singular
values are close (s2 / s1 in [0.8, 0.95]), where 8 iterations have not converged: the estimate
is below the true sigma, and 7 or 9 iterations, or another estimate of sigma (||w^T u||), give
other numbers; equal top singular values (an orthogonal matrix, the identity); rank one; and
the zero vectors the constraints allow: u = 0, w = 0, and u non-zero only on zero rows of w
(w^T u = 0 exactly), where every normalization meets a zero vector and sigma = 0.

The constraint ||w^T u|| >= 0.01 ||w||_F ||u|| keeps the first step away from cancellation: a
u almost orthogonal to w's columns would make v the normalized rounding error of w^T u, and no
tolerance would fit. After the first step the Rayleigh quotient only grows, so no later step
cancels either. `adversarial` below sits at that bound, at the largest values, and at the
slowest convergence (s2 / s1 = 0.99): the margin check of `jaxjudge check-problem` measures the
tolerance on them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20261204
NUM_ITERS, EPS = 8, 1e-12

EXAMPLES = [
    Case("example-1", {"w": [[3.0, 0.0], [0.0, 1.0]], "u": [1.0, 1.0]},
         note="diag(3, 1): u converges to e1 and sigma to 3"),
    Case("example-2", {"w": [[1.0, 0.0], [0.0, 0.9]], "u": [1.0, 1.0]},
         note="diag(1, 0.9): after 8 iterations the estimate is still below 1"),
    Case("example-3", {"w": [[1.0, -2.0, 0.5]], "u": [0.0]},
         note="u = 0: every vector stays zero, sigma = 0 and w_sn = w"),
]

Rs = np.random.RandomState
Builder = Callable[[Rs, int, int], tuple[np.ndarray, np.ndarray]]


def _with_singular_values(rs: Rs, m: int, n: int, s: list[float]) -> np.ndarray:
    """A random (m, n) matrix with the given leading singular values (the rest random small)."""
    k = min(m, n)
    left, _ = np.linalg.qr(rs.normal(size=(m, m)))
    right, _ = np.linalg.qr(rs.normal(size=(n, n)))
    values = np.concatenate([s, rs.uniform(0.0, 0.5 * s[-1], max(0, k - len(s)))])[:k]
    return (left[:, :k] * values) @ right[:, :k].T


def _random(scale: float) -> Builder:
    return lambda rs, m, n: (rs.normal(0.0, scale, (m, n)), rs.normal(0.0, 1.0, m))


def _gap(ratio: float, top: float = 2.0) -> Builder:
    return lambda rs, m, n: (_with_singular_values(rs, m, n, [top, ratio * top]),
                             rs.normal(0.0, 1.0, m))


def _equal_top(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return _with_singular_values(rs, m, n, [1.5, 1.5]), rs.normal(0.0, 1.0, m)


def _identity(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.eye(m, n), rs.uniform(-2.0, 2.0, m)


def _rank_one(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.outer(rs.normal(size=m), rs.normal(size=n)), rs.normal(0.0, 1.0, m)


def _zero_u(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rs.normal(0.0, 1.0, (m, n)), np.zeros(m)


def _zero_w(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((m, n)), rs.normal(0.0, 1.0, m)


def _u_on_zero_rows(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    w = rs.normal(0.0, 1.0, (m, n))
    w[m // 2:] = 0.0
    u = np.zeros(m)
    u[m // 2:] = rs.uniform(0.5, 2.0, m - m // 2)
    return w, u


def _integers(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rs.randint(-3, 4, (m, n)).astype(np.float64), rs.randint(1, 4, m).astype(np.float64)


def _large_u(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rs.normal(0.0, 1.0, (m, n)), rs.uniform(-10.0, 10.0, m)


def _positive(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rs.uniform(0.0, 10.0, (m, n)), rs.uniform(0.0, 1.0, m)


# (M, N), builder, note
HIDDEN: list[tuple[tuple[int, int], Builder, str]] = [
    ((8, 8), _random(1.0), "random 8x8"),
    ((8, 8), _gap(0.9), "s2 / s1 = 0.9: not converged after 8 iterations"),
    ((8, 8), _gap(0.95), "s2 / s1 = 0.95: far from converged"),
    ((8, 8), _random(3.0), "random, values up to ~10"),
    ((5, 7), _random(1.0), "random 5x7 (wide)"),
    ((5, 7), _gap(0.85, 5.0), "s2 / s1 = 0.85, sigma 5"),
    ((5, 7), _rank_one, "rank one: converged after one step"),
    ((5, 7), _u_on_zero_rows, "u only on zero rows of w: w^T u = 0, every vector zero"),
    ((3, 3), _identity, "the identity: u is normalized, sigma = 1"),
    ((3, 3), _equal_top, "two equal top singular values"),
    ((3, 3), _gap(0.8, 0.5), "s2 / s1 = 0.8, sigma 0.5"),
    ((3, 3), _zero_u, "u = 0: sigma = 0 and w_sn = w"),
    ((3, 3), _zero_w, "w = 0: sigma = 0, u = 0"),
    ((3, 3), _integers, "small integers"),
    ((2, 2), _gap(0.9, 1.0), "2x2, s2 / s1 = 0.9"),
    ((2, 2), _random(1e-2), "tiny values (~1e-2)"),
    ((2, 2), _large_u, "|u| up to 10"),
    ((1, 1), _random(2.0), "1x1: sigma = |w|"),
    ((1, 1), _zero_u, "1x1, u = 0"),
    ((1, 4), _random(1.0), "one row: sigma = ||w||"),
    ((1, 4), _zero_w, "one zero row"),
    ((4, 1), _random(1.0), "one column: sigma = ||w||"),
    ((4, 1), _positive, "one column, positive values up to 10"),
    ((8, 8), _positive, "positive values up to 10: a dominant singular value"),
    ((8, 8), _zero_u, "8x8, u = 0"),
    ((8, 8), _u_on_zero_rows, "8x8, u only on zero rows"),
    ((5, 7), _large_u, "5x7, |u| up to 10"),
    ((3, 3), _gap(0.93, 8.0), "s2 / s1 = 0.93, sigma 8"),
    ((2, 2), _identity, "2x2 identity"),
    ((4, 1), _zero_u, "one column, u = 0"),
]


def _ok(w: np.ndarray, u: np.ndarray) -> bool:
    """The statement's constraint on the first step (w^T u exactly 0, or not cancelling)."""
    w32, u32 = w.astype(np.float32).astype(np.float64), u.astype(np.float32).astype(np.float64)
    wtu = w32.T @ u32
    if not wtu.any():
        return True
    return bool(np.linalg.norm(wtu) >= 0.01 * np.linalg.norm(w32) * np.linalg.norm(u32))


def _cases(rs: Rs, table: list[tuple[tuple[int, int], Builder, str]],
           prefix: str) -> Iterator[Case]:
    for i, ((m, n), build, note) in enumerate(table, 1):
        for _ in range(100):
            w, u = build(rs, m, n)
            if _ok(w, u) and np.abs(w).max(initial=0) <= 10 and np.abs(u).max(initial=0) <= 10:
                break
        else:
            raise SystemExit(f"{prefix}-{i:02d}: no legal input drawn")
        yield Case(f"{prefix}-{i:02d}", {"w": w, "u": u}, note=f"M={m}, N={n}: {note}")


def hidden(rs: Rs) -> Iterator[Case]:
    yield from _cases(rs, HIDDEN, "hidden")


def _at_bound(rs: Rs, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """||w^T u|| just above 0.01 ||w||_F ||u||: u mostly along w's smallest left direction."""
    w = _with_singular_values(rs, m, n, [10.0, 9.0])
    left, s, _ = np.linalg.svd(w)
    u = left[:, -1] * 10.0 if m > n else left[:, min(m, n) - 1] * 10.0
    u = u + 0.02 * np.linalg.norm(w) * 10.0 / max(s[0], 1e-9) * left[:, 0] * 0.6
    return np.clip(w, -10, 10), np.clip(u, -10, 10)


# Never graded: the legal inputs where float32 rounding is worst, for the margin check of
# `jaxjudge check-problem` (jaxjudge/authoring/margin.py). Shapes the tests use.
ADVERSARIAL: list[tuple[tuple[int, int], Builder, str]] = [
    ((8, 8), _gap(0.99, 9.0), "s2 / s1 = 0.99, sigma 9: the slowest convergence"),
    ((8, 8), _at_bound, "||w^T u|| near 0.01 ||w|| ||u||"),
    ((5, 7), _at_bound, "5x7, ||w^T u|| near the bound"),
    ((8, 8), lambda rs, m, n: (rs.uniform(-10, 10, (m, n)), rs.uniform(-10, 10, m)),
     "the largest values, mixed signs"),
    ((3, 3), _gap(0.999, 1.0), "s2 / s1 = 0.999"),
    ((2, 2), lambda rs, m, n: (rs.normal(0.0, 1e-3, (m, n)), rs.normal(0.0, 1e-3, m)),
     "tiny w and u"),
]


def adversarial(rs: Rs) -> Iterator[Case]:
    yield from _cases(rs, ADVERSARIAL, "adversarial")


def _normalize(x: np.ndarray) -> np.ndarray:
    return x / max(float(np.linalg.norm(x)), EPS)


def truth(inputs: dict[str, Any]) -> dict[str, Any]:
    """The same iteration in float64 on the float32 inputs."""
    w = np.asarray(inputs["w"], np.float32).astype(np.float64)
    u = np.asarray(inputs["u"], np.float32).astype(np.float64)
    v = np.zeros(w.shape[1])
    for _ in range(NUM_ITERS):
        v = _normalize(w.T @ u)
        u = _normalize(w @ v)
    sigma = float(u @ (w @ v))
    return {"sigma": np.float64(sigma), "u": u, "w_sn": w / sigma if sigma > 0 else w}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
