"""custom_vjp_rules_run: a custom_vjp's rules, run on their own on the tests, compute what
solve returns: the forward value from the function and the forward rule, the gradient from the
backward rule. The exported program of solve has the rules inlined and cannot say which ops
were inside them; running the rules alone can. A backward rule of `-(-g)` with the clipping
applied to the cotangent before it, or a forward rule of `clip(x, -inf, inf)` with the
quantisation around it, computes other values than solve returns, whatever the ops are called.

A custom_vjp of several arguments is run with the ones solve gave it besides x: solve's own
arguments as the test's, values computed from none of them as constants (recomputed by solve's
own steps); one computed from solve's arguments is refused (it would carry the work in). Only
the backward rule's cotangent for x is compared: the others' are not the learner's business.

The rules program is exported by stage A (untrusted) from the submission's custom_vjp object,
and run by stage B on the tests; the parent compares its values with solve's. A submission that
forges the rules program must itself write rules that compute the right values: the work the
requirement asks for."""

from __future__ import annotations

from pydantic import Field

from jaxjudge.analysis.executed_rules import RuleMismatch, RulesRun
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register


class CustomVjpRulesRunOptions(RuleOptions):
    argument: str = Field(description="solve's argument the custom_vjp function is applied to")
    cotangent: str = Field(description="solve's argument given to the backward rule")
    primal_output: str = Field(description="solve's output the function's value must equal")
    gradient_output: str = Field(description="solve's output the backward rule's must equal")
    forward_work: str = Field(default="the forward value", max_length=80,
                              description="what the function must compute, for messages")
    backward_work: str = Field(default="the gradient rule", max_length=80,
                               description="what the backward rule must compute, for messages")
    hint: str = Field(default="", max_length=400, description="how to fix a failure")


_PART = {
    "function": "your custom_vjp function",
    "forward": "your forward rule's first result",
    "backward": "your backward rule",
}


def _value(v: float) -> str:
    return f"{v:.6g}"


def _mismatch_text(m: RuleMismatch, argument: str, cotangent: str, primal: str,
                   gradient: str, forward_work: str, backward_work: str) -> str:
    base, _, shape = m.part.partition("@")
    grad = base == "backward"
    given = (f"given {argument}'s residuals and {cotangent}" if grad else f"given {argument}")
    output = gradient if grad else primal
    test = f"test '{m.test}'" if m.visible else "a hidden test"
    if m.visible and m.index:
        at = "[" + ", ".join(map(str, m.index)) + "]"
        where = (f" where {argument}{at} = {_value(m.input_value)}"
                 if m.input_value is not None else "")
        what = (f"returns {_value(m.rule_value)} at {output}{at}{where}, while solve returns "
                f"{_value(m.solve_value)} ({m.differing} of {m.total} elements differ)")
    elif m.differing == m.total:
        what = f"does not return {output} as solve does (another shape or value everywhere)"
    else:
        what = f"differs from the {output} solve returns at {m.differing} of {m.total} elements"
    missing = backward_work if grad else forward_work
    ran = (" at another shape or dtype solve called it at (on x laid out and cast to it, as "
           "jax.vmap would)" if shape else "")
    return (f"Run on their own on {test}{ran}, {_PART[base]}, {given}, {what}: {missing} is "
            "not done inside the rule, or is done again outside it.")


NAME = "custom_vjp_rules_run"  # the grader asks stage A for the rules when a problem uses it


@register(NAME, "program", CustomVjpRulesRunOptions, same_shape=("argument", "cotangent"))
def check_custom_vjp_rules_run(programs: list[ProgramInfo], *, argument: str, cotangent: str,
                               primal_output: str, gradient_output: str,
                               forward_work: str = "the forward value",
                               backward_work: str = "the gradient rule",
                               hint: str = "") -> RuleOutcome:
    """A custom_vjp's function, forward rule and backward rule, run on their own on the tests,
    give the values solve returns."""
    run = next((p.rules_run for p in programs if p.rules_run is not None), None)
    if run is None:
        run = RulesRun(reason="they were not run")
    called = (f"fwd({argument}, the others as solve gave them) then "
              f"bwd(residuals, {cotangent})")
    if run.reason:
        return RuleOutcome(False, f"Your custom_vjp's rules could not be run on their own as "
                                  f"{called}: {run.reason.rstrip('.')}. {hint}".strip())
    if run.errors:
        test, error = run.errors[0]
        return RuleOutcome(False, f"Your custom_vjp's rules, run on their own as {called}, "
                                  f"failed on test '{test}': {error[-600:]}. {hint}".strip())
    if not run.tests:
        return RuleOutcome(False, "Your custom_vjp's rules ran on no test that solve also ran, "
                                  "so what they compute could not be checked.")
    if run.mismatches:
        text = _mismatch_text(run.mismatches[0], argument, cotangent, primal_output,
                              gradient_output, forward_work, backward_work)
        return RuleOutcome(False, f"{text} {hint}".strip())
    return RuleOutcome(True, f"Run on their own on {run.tests} tests, your custom_vjp function "
                             f"and forward rule give {primal_output} and your backward rule "
                             f"gives {gradient_output}, as solve returns them.")
