"""Generate tests/cases.json for "Traced learning-rate schedule" (deterministic; `--check`).

    python problems/traced-learning-rate-schedule/tests/generate.py          # write cases.json
    python problems/traced-learning-rate-schedule/tests/generate.py --check  # verify it

Steps (30 hidden tests). Every phase and every boundary of the schedule: step 0 (lr 0: w
unchanged), the first and last warmup steps (1, 99), the peak (100) and the steps after it, the
middle of the cosine (where one step moves lr by ~1.7e-4: an off-by-one shows), the last step of
the schedule (999), TOTAL itself (1000: lr = MIN_LR), and steps past it up to the largest
allowed (2000), where a cosine that is not clamped rises again. One program serves every step
(the requirement), and D is symbolic, so the tests cost one export whatever their number.

Tolerance (rtol 1e-5, atol 1e-6). lr is at most 0.1 and float32 computes it within ~1e-8 in any
order (t / WARMUP, the clipped progress, cos); w - lr * g is within ~1e-7 of the truth where it
cancels to ~0 (w ~ lr * g), and within ~1e-6 relative elsewhere. `adversarial` below puts
w ~ lr * g (|g| = 10) in every phase, and |w|, |g| up to 10: the margin check of `jaxjudge
check-problem` measures how much of the tolerance honest programs use there (14.5x).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from jaxjudge.authoring.testgen import Case, generate_main

SEED = 20261205
PEAK_LR, MIN_LR, WARMUP, TOTAL = 0.1, 0.001, 100, 1000

EXAMPLES = [
    Case("example-1", {"step": 0, "w": [1.0, -2.0], "g": [0.5, 0.5]},
         note="step 0: lr = 0, w unchanged"),
    Case("example-2", {"step": 50, "w": [1.0, -2.0], "g": [0.5, 0.5]},
         note="halfway through warmup: lr = 0.05"),
    Case("example-3", {"step": 550, "w": [1.0], "g": [2.0]},
         note="halfway through the cosine: lr = (0.1 + 0.001) / 2 = 0.0505"),
    Case("example-4", {"step": 1500, "w": [3.0, 0.0, -1.0], "g": [1.0, 1.0, 1.0]},
         note="past TOTAL: lr = MIN_LR = 0.001"),
]

Rs = np.random.RandomState

# step, D, note
HIDDEN: list[tuple[int, int, str]] = [
    (0, 8, "step 0: lr = 0"),
    (1, 3, "the first warmup step"),
    (37, 8, "warmup"),
    (99, 3, "the last warmup step"),
    (100, 8, "the peak: warmup done, cosine at 0"),
    (101, 1, "the first cosine step"),
    (250, 3, "early cosine"),
    (433, 8, "cosine"),
    (550, 1, "the middle of the cosine"),
    (551, 8, "one step after the middle: lr moves by ~1.7e-4"),
    (777, 3, "late cosine"),
    (900, 8, "late cosine"),
    (998, 3, "two steps before the end"),
    (999, 8, "the last step of the schedule"),
    (1000, 3, "TOTAL: lr = MIN_LR"),
    (1001, 1, "just past TOTAL"),
    (1450, 8, "past TOTAL: a cosine not clamped has risen again"),
    (1900, 3, "far past TOTAL: a cosine not clamped is back near the peak"),
    (2000, 8, "the largest step"),
    (64, 1, "warmup, D = 1"),
    (320, 1, "cosine, D = 1"),
    (1200, 1, "past TOTAL, D = 1"),
    (2, 8, "early warmup"),
    (98, 1, "the second-to-last warmup step"),
    (102, 3, "the second cosine step"),
    (549, 3, "one step before the middle of the cosine"),
    (660, 8, "cosine, past the middle"),
    (950, 1, "near the floor"),
    (1002, 8, "two steps past TOTAL"),
    (1999, 3, "the second-to-last allowed step"),
]


def hidden(rs: Rs) -> Iterator[Case]:
    for i, (step, d, note) in enumerate(HIDDEN, 1):
        w = rs.uniform(-10.0, 10.0, d)
        g = rs.normal(0.0, 3.0, d).clip(-10.0, 10.0)
        if i % 5 == 0:
            g = np.zeros(d)  # no gradient: w unchanged whatever lr
        yield Case(f"hidden-{i:02d}", {"step": step, "w": w, "g": g},
                   note=f"step={step}, D={d}: {note}")


def _lr(step: int) -> float:
    if step < WARMUP:
        return PEAK_LR * step / WARMUP
    p = min((step - WARMUP) / (TOTAL - WARMUP), 1.0)
    return MIN_LR + 0.5 * (PEAK_LR - MIN_LR) * (1.0 + np.cos(np.pi * p))


def adversarial(rs: Rs) -> Iterator[Case]:
    """Never graded: |w| = 10 cancelled by lr * g (w - lr * g ~ 0) in every phase, and the
    largest |w| and |g| with mixed signs."""
    for i, step in enumerate((1, 99, 100, 101, 549, 998, 999, 1000, 2000), 1):
        lr = float(np.float32(_lr(step)))
        d = 8
        g = np.full(d, 10.0) * rs.choice([-1.0, 1.0], d)
        w = np.clip(lr * g + rs.normal(0.0, 1e-6, d), -10, 10)
        yield Case(f"adversarial-cancel-{i:02d}", {"step": step, "w": w, "g": g},
                   note=f"step={step}: w ~ lr * g")
    for i, step in enumerate((50, 100, 550, 1000), 1):
        yield Case(f"adversarial-large-{i:02d}",
                   {"step": step, "w": rs.uniform(-10, 10, 8), "g": rs.uniform(-10, 10, 8)},
                   note=f"step={step}: |w|, |g| up to 10")


def truth(inputs: dict[str, Any]) -> dict[str, Any]:
    """The schedule in float64 on the float32 inputs."""
    lr = _lr(int(inputs["step"]))
    w = np.asarray(inputs["w"], np.float32).astype(np.float64)
    g = np.asarray(inputs["g"], np.float32).astype(np.float64)
    return {"lr": np.float64(lr), "w": w - lr * g}


if __name__ == "__main__":
    raise SystemExit(generate_main(__file__, examples=EXAMPLES, hidden=hidden, seed=SEED,
                                   truth=truth))
