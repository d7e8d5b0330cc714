"""Program-level `traced_input` (jaxjudge.rules.traced) on real exported programs: a traced step
read by every named output passes in every branch form; a step that is unused, or used only
through constants, fails; the `untraceable` hook words a trace that needed the step's value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_rules_structure import f32, program

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.rules import RULES
from jaxjudge.rules.registry import RuleConfigError, validate
from jaxjudge.rules.traced import check_traced_input, untraceable

STEP = np.int32(3)


def schedule(step: jax.Array) -> jax.Array:
    t = step.astype(jnp.float32)
    return jnp.where(step < 100, 0.1 * t / 100, 0.05 * (1 + jnp.cos(jnp.pi * t / 1000)))


def update(lr_of: Callable[[jax.Array], jax.Array]) -> Callable[..., Any]:
    def fn(step: jax.Array, w: jax.Array, g: jax.Array) -> tuple[jax.Array, jax.Array]:
        lr = lr_of(step)
        return lr, w - lr * g

    return fn


def check(fn: Callable[..., Any], **options: Any) -> Any:
    p = program(fn, {"D": 3}, STEP, f32(3), f32(3))
    return check_traced_input([p], **{"argument": "a0", "outputs": ("o0", "o1"), **options})


HONEST = {
    "where": schedule,
    "cond": lambda s: jax.lax.cond(s < 100, lambda t: t * 1e-3, lambda t: 0.1 - t * 1e-5,
                                   s.astype(jnp.float32)),
    "switch": lambda s: jax.lax.switch(jnp.clip(s // 100, 0, 2),
                                       [lambda: 0.1, lambda: 0.05, lambda: 0.01]),
    "minimum": lambda s: jnp.minimum(s * 1e-3, 0.1),
    "table": lambda s: jnp.linspace(0.0, 0.1, 101)[jnp.minimum(s, 100)],
    # The step only as a fori_loop trip count: no value of it flows into lr, its loop's
    # condition decides how many increments lr gets.
    "trip_count": lambda s: jax.lax.fori_loop(0, jnp.minimum(s, 100),
                                              lambda i, c: c + 1e-3, jnp.float32(0.0)),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_every_branch_form_passes(name: str) -> None:
    outcome = check(update(HONEST[name]))
    assert outcome.passed, outcome.message
    assert outcome.message == ("a0 is an input of the one exported program, read when it runs: "
                               "o0 and o1 depend on it, so one program serves every a0.")
    # The report's excerpt marks where the program reads it (through jax.export's main).
    assert outcome.region is not None and outcome.region.focus
    marked = [op for k, op in enumerate(outcome.region.ops) if k in outcome.region.focus]
    assert all(op.name != "func.call" for op in marked)


def test_an_unused_step_fails() -> None:
    outcome = check(update(lambda s: jnp.float32(0.1)))
    assert not outcome.passed
    assert outcome.message.startswith("Your exported program does not read a0 at all")


@pytest.mark.parametrize("lr_of", [
    lambda s: 0.1 + 0 * s.astype(jnp.float32),                  # 0 * step
    lambda s: jnp.where(s < 100, 0.1, 0.1),                      # equal branches
    lambda s: jax.lax.select(jnp.bool_(True), jnp.float32(0.1), s * 1e-3),  # constant predicate
    # a trip count that folds to a constant (0 * step)
    lambda s: jax.lax.fori_loop(0, 0 * s + 3, lambda i, c: c + 1e-3, jnp.float32(0.0)),
])
def test_a_step_used_only_through_constants_fails(lr_of: Callable[..., Any]) -> None:
    outcome = check(update(lr_of))
    assert not outcome.passed
    assert outcome.message.startswith("Your output o0 does not depend on a0")


def test_every_named_output_must_depend_on_it() -> None:
    def lr_only(step: jax.Array, w: jax.Array, g: jax.Array) -> tuple[jax.Array, jax.Array]:
        return schedule(step), w - 0.1 * g

    assert check(lr_only, outputs=("o0",)).passed
    outcome = check(lr_only)
    assert not outcome.passed and "Your output o1 does not depend on a0" in outcome.message
    assert not check(lr_only, outputs=()).passed  # default: every output


def test_hostile_programs_fail_cleanly() -> None:
    good = program(update(schedule), {"D": 3}, STEP, f32(3), f32(3))
    for bad in ([], "text", [object()],
                [ProgramInfo("D=3", "not mlir", good.args, good.outs, {"D": 3})],
                [ProgramInfo("D=3", good.text, good.args[:1], good.outs, {"D": 3})]):
        outcome = check_traced_input(bad, argument="a0")  # type: ignore[arg-type]
        assert not outcome.passed and outcome.message


JAX_BOOL = ("Attempted boolean conversion of traced array with shape bool[].\nThe error occurred "
            "while tracing the function solve at s.py:2 for jit. This concrete value was not "
            "available in Python because it depends on the value of the argument step.")


def test_untraceable_words_a_trace_that_needed_the_step() -> None:
    outcome = untraceable(JAX_BOOL, argument="step")
    assert outcome is not None and not outcome.passed
    assert outcome.message.startswith("solve uses the value of step in Python while it is "
                                      "being traced")
    assert "jnp.where" in outcome.message
    assert untraceable(JAX_BOOL.replace("argument step", "argument w"), argument="step") is None
    assert untraceable("Abstract tracer value encountered", argument="step") is not None
    assert RULES["traced_input"].untraceable is untraceable
    assert RULES["loop_over_dim"].untraceable is None


def test_untraceable_in_a_jitted_helper_names_the_argument() -> None:
    """JAX names the helper's own parameter (t) and the helper it traced: that says nothing of
    which of solve's arguments reached it, so the requirement's argument fails, named."""
    helper = JAX_BOOL.replace("function solve", "function schedule").replace(
        "argument step", "argument t")
    outcome = untraceable(helper, argument="step", entry_point="solve")
    assert outcome is not None and not outcome.passed
    assert outcome.message.startswith("solve uses the value of step in Python")
    assert "the helper schedule (its parameter t)" in outcome.message
    # solve's own other argument still is not this requirement's.
    other = JAX_BOOL.replace("argument step", "argument w")
    assert untraceable(other, argument="step", entry_point="solve") is None


def test_options_are_typed() -> None:
    opts = validate("traced_input", "program", {"argument": "step", "outputs": ["lr", "w"]})
    assert opts.outputs == ("lr", "w")  # type: ignore[attr-defined]
    for bad in ({}, {"argument": "1step"}, {"argument": "step", "outputs": "lr"},
                {"argument": "step", "outputs": [f"o{i}" for i in range(40)]},
                {"argument": "step", "other": 1}):
        with pytest.raises(RuleConfigError):
            validate("traced_input", "program", bad)
