"""Generate tests/cases.json for "Int8 Matmul with Per-Channel Scales" (deterministic; rerun
after edits; `--check` verifies the stored file).

Shape budget: each distinct (M, K, N) is one compile per grade. The three examples plus eight
hidden shapes: both ends of every dimension (M, N in {1, 32}, K in {1, 1024}), non-square
shapes (so a scale on the wrong axis cannot go unnoticed) and a few in between.

Value regimes: the full int8 range, the extremes (+127 and -128 everywhere: accumulators up to
exactly 2**24), random signs at full magnitude (int16 overflow), exact cancellation to 0, zero
rows and columns, small values (where nothing overflows), and scales that are 1 (the
accumulator itself), tiny, large, spread over decades and very different per channel.

The truth is independent of jax: an int64 numpy matmul times the float64 scales.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20250302

EXAMPLES = [
    Case("example-1",
         {"a": [[1, -2, 3], [127, 127, 127]], "a_scale": [0.5, 0.01],
          "b": [[1, 0], [2, -1], [3, 127]], "b_scale": [0.1, 2.0]},
         note="a small product; 383 and 16002 do not fit in int8"),
    Case("example-2",
         {"a": [[127, 127, 127, 127], [-128, -128, -128, -128]], "a_scale": [1.0, 0.5],
          "b": [[127, -128], [127, -128], [127, -128], [127, -128]], "b_scale": [0.25, 0.001]},
         note="extreme values: the accumulators (64516, -65024, 65536) overflow int16"),
    Case("example-3",
         {"a": [[5], [-7], [0]], "a_scale": [1.0, 2.0, 3.0],
          "b": [[3, -128]], "b_scale": [0.5, 0.125]},
         note="K = 1: an outer product, with a zero row"),
]

Ints = Callable[[np.random.RandomState, tuple[int, int]], np.ndarray]
Scales = Callable[[np.random.RandomState, int], np.ndarray]


def full(rs: np.random.RandomState, shape: tuple[int, int]) -> np.ndarray:
    return rs.randint(-128, 128, shape)


def ints(lo: int, hi: int) -> Ints:
    return lambda rs, shape: rs.randint(lo, hi + 1, shape)


def const(v: int) -> Ints:
    return lambda rs, shape: np.full(shape, v)


def big_random_sign(rs: np.random.RandomState, shape: tuple[int, int]) -> np.ndarray:
    """Magnitudes 120..127 (or -128) with random signs: partial sums wander far past int16."""
    mag = rs.randint(120, 129, shape)
    sign = rs.choice([-1, 1], shape)
    return np.clip(sign * mag, -128, 127)


def alternating(rs: np.random.RandomState, shape: tuple[int, int]) -> np.ndarray:
    """+127, -127, +127, ... along K (rows of a): against a constant b, sums cancel to 0 when
    K is even, though every partial sum overflows int8."""
    k = np.arange(shape[1])
    return np.broadcast_to(np.where(k % 2 == 0, 127, -127), shape).copy()


def sparse(rs: np.random.RandomState, shape: tuple[int, int]) -> np.ndarray:
    return full(rs, shape) * (rs.uniform(size=shape) < 0.1)


def zero_rows(rs: np.random.RandomState, shape: tuple[int, int]) -> np.ndarray:
    out = full(rs, shape)
    out[::2] = 0
    return out


def zero_cols(rs: np.random.RandomState, shape: tuple[int, int]) -> np.ndarray:
    out = full(rs, shape)
    out[:, 1::3] = 0
    return out


def log_scale(lo: float, hi: float) -> Scales:
    """10**uniform(lo, hi): scales spread over decades, very different per channel."""
    return lambda rs, n: 10.0 ** rs.uniform(lo, hi, n)


def scale_const(v: float) -> Scales:
    return lambda rs, n: np.full(n, v)


def typical(rs: np.random.RandomState, n: int) -> np.ndarray:
    """What symmetric quantisation of unit-scale data gives: about max|x| / 127."""
    return rs.uniform(0.5, 3.0, n) / 127.0


# ((M, K, N), a, a_scale, b, b_scale, note)
HIDDEN: list[tuple[tuple[int, int, int], Ints, Scales, Ints, Scales, str]] = [
    ((4, 64, 3), full, typical, full, typical, "full int8 range, typical scales"),
    ((8, 256, 8), full, typical, full, typical, "full int8 range, typical scales"),
    ((16, 128, 16), full, typical, full, typical, "full int8 range, typical scales"),
    ((32, 16, 32), full, typical, full, typical, "largest M and N, full int8 range"),
    ((5, 7, 9), full, typical, full, typical, "odd sizes, full int8 range"),
    ((3, 1024, 2), full, typical, full, typical, "largest K, full int8 range"),
    ((1, 1, 1), full, typical, full, typical, "M = K = N = 1"),
    ((1, 1024, 1), full, log_scale(-2, 1), full, log_scale(-2, 1), "one long dot product"),
    ((3, 1024, 2), const(127), scale_const(1.0), const(127), scale_const(1.0),
     "all +127, K = 1024, unit scales: c == 1024 * 127**2 = 16516096"),
    ((3, 1024, 2), const(-128), scale_const(1.0), const(-128), scale_const(1.0),
     "all -128, K = 1024, unit scales: c == 2**24, the largest accumulator"),
    ((1, 1024, 1), const(-128), log_scale(-1, 1), const(127), log_scale(-1, 1),
     "-128 times 127 over K = 1024: the most negative accumulator"),
    ((1, 1, 1), const(-128), scale_const(1.0), const(-128), scale_const(1.0),
     "one product (-128) * (-128) = 16384: no int8 result holds it"),
    ((4, 64, 3), big_random_sign, typical, big_random_sign, typical,
     "magnitudes 120..128 with random signs: int16 partial sums overflow"),
    ((8, 256, 8), big_random_sign, scale_const(1.0), big_random_sign, scale_const(1.0),
     "magnitudes 120..128 with random signs, unit scales: c is the accumulator"),
    ((16, 128, 16), alternating, typical, const(127), typical,
     "+127/-127 along K against a constant b: exact 0 after overflowing partial sums"),
    ((4, 64, 3), ints(-3, 3), typical, ints(-3, 3), typical,
     "small values in [-3, 3]: no accumulator overflows"),
    ((5, 7, 9), ints(-3, 3), scale_const(1.0), ints(-3, 3), scale_const(1.0),
     "small values, unit scales: small integer results"),
    ((32, 16, 32), ints(0, 127), typical, ints(0, 127), typical, "non-negative values only"),
    ((16, 128, 16), ints(-128, -1), typical, ints(0, 127), typical,
     "a negative, b non-negative: every entry of c is <= 0"),
    ((8, 256, 8), sparse, typical, full, typical, "a 90% zeros"),
    ((16, 128, 16), zero_rows, typical, zero_cols, typical, "zero rows of a and zero columns of b"),
    ((4, 64, 3), const(0), typical, full, typical, "a all zero: c == 0"),
    ((32, 16, 32), full, log_scale(-6, 2), full, log_scale(-6, 2),
     "scales over eight decades, the whole allowed range"),
    ((8, 256, 8), full, scale_const(1e-6), full, scale_const(1e-6), "tiny scales (1e-6)"),
    ((5, 7, 9), full, scale_const(100.0), full, scale_const(100.0), "the largest scales (100)"),
    ((3, 1024, 2), big_random_sign, log_scale(-6, 2), big_random_sign, log_scale(-6, 2),
     "largest K, extreme magnitudes, scales over eight decades"),
    ((32, 16, 32), full, scale_const(1.0), full, log_scale(-3, 2),
     "unit row scales, very different column scales"),
    ((32, 16, 32), full, log_scale(-3, 2), full, scale_const(1.0),
     "very different row scales, unit column scales"),
    ((5, 7, 9), full, log_scale(-3, 2), full, log_scale(-3, 2), "odd sizes, spread scales"),
    ((1, 1, 1), ints(-128, 127), log_scale(-6, 2), ints(-128, 127), log_scale(-6, 2),
     "one product, spread scales"),
    ((1, 1024, 1), big_random_sign, typical, big_random_sign, typical,
     "one long dot product at full magnitude"),
    ((16, 128, 16), big_random_sign, log_scale(-2, 0), full, log_scale(-2, 0),
     "extreme a against a full-range b"),
]


def hidden(rs: np.random.RandomState) -> Iterator[Case]:
    for i, ((m, k, n), a, sa, b, sb, note) in enumerate(HIDDEN, 1):
        inputs = {"a": a(rs, (m, k)), "a_scale": sa(rs, m), "b": b(rs, (k, n)),
                  "b_scale": sb(rs, n)}
        for key in ("a", "b"):
            assert inputs[key].min() >= -128 and inputs[key].max() <= 127, key
        yield Case(f"hidden-{i:02d}", inputs, note=f"M={m}, K={k}, N={n}: {note}")


def truth(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Exact integer product (int64), then the scales in float64."""
    acc = np.asarray(inputs["a"], np.int64) @ np.asarray(inputs["b"], np.int64)
    a_scale = np.asarray(inputs["a_scale"], np.float64)
    b_scale = np.asarray(inputs["b_scale"], np.float64)
    return {"c": acc.astype(np.float64) * a_scale[:, None] * b_scale[None, :]}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
