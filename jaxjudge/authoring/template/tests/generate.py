"""Generate tests/cases.json for "{title}" (deterministic; rerun after edits; `--check`)."""

from __future__ import annotations

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 1
EXAMPLES = [
    Case("example-1", {{"x": [[3.0, 4.0]]}}, note="a 3-4-5 triangle"),
    Case("example-2", {{"x": [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]}}, note="a zero row stays zero"),
]


def hidden(rs: np.random.RandomState):
    shapes = [(b, d) for b in (1, 2, 6) for d in (2, 5)]
    for i in range(30):
        b, d = shapes[i % len(shapes)]
        scale = 10.0 ** rs.uniform(-3, 3)
        yield Case(f"hidden-{{i + 1:02d}}", {{"x": rs.normal(0, scale, (b, d))}},
                   note=f"B={{b}}, D={{d}}, scale {{scale:.3g}}")


def truth(inputs):
    x = np.asarray(inputs["x"], np.float64)
    norms = np.sqrt((x * x).sum(axis=1, keepdims=True))
    return {{"y": x / np.maximum(norms, 1e-12)}}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
