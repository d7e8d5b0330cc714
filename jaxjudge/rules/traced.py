"""Program-level `traced_input`: an argument is a traced array that the one exported program
reads when it runs (a step counter, say), not a value the submission fixed while tracing.

What proves "one program serves every value": stage A exports `solve` from input shapes and
dtypes only (jaxjudge/stages/trace.py); an argument of shape () gives one program for every
test,
whatever its value, and stage B runs that very program on each test's value. So no program can
be specialized to a value; what remains to check is that the program reads the argument at all:
it is one of the program's inputs (jax.export drops unused ones) and some dataflow
path that constant folding does not cut (`0 * step`, a `where` on a constant) takes it to every
named output.

A submission that needs the value while tracing (a Python `if` on it, `int()`, `float()`,
`.item()`, a numpy call, a static argument of an inner `jax.jit`) cannot be traced at all:
`untraceable` turns that failure into this requirement's failure, with the reason, instead of
a runtime error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from jaxjudge.analysis.dataflow import Budget, Graph, TooComplex, build_graph
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.folding import Value, fold_constants, live_nodes
from jaxjudge.analysis.parsed import MAX_TOTAL_CHARS
from jaxjudge.analysis.region import readers_of, region_of
from jaxjudge.analysis.stablehlo import Module, ParseError, parse_module
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

_PATH = r"^[A-Za-z_][A-Za-z0-9_.]*$"
MAX_OUTPUTS = 16


class TracedInputOptions(RuleOptions):
    argument: str = Field(pattern=_PATH, description="the argument path, e.g. step")
    outputs: tuple[Annotated[str, Field(pattern=_PATH)], ...] = Field(
        default=(), max_length=MAX_OUTPUTS,
        description="output paths that must depend on it, e.g. [lr, w] (default: every output)")


def _fix(name: str) -> str:
    return (f"Keep {name} an array: compute with jnp/lax operations on it (jnp.where, "
            f"jnp.minimum, jax.lax.cond, jax.lax.switch) instead of Python `if`, int(), "
            f"float(), .item() or numpy.")


_TRACING = re.compile(r"while tracing the function ([A-Za-z_<][A-Za-z0-9_.<>]*)")
_NAMED = re.compile(r"argument '?([A-Za-z_][A-Za-z0-9_]*)")


def untraceable(message: str, *, argument: str, outputs: Sequence[str] = (),
                entry_point: str | None = None) -> RuleOutcome | None:
    """This requirement's failure for a trace that needed a traced value in Python, when the
    error (JAX's wording, from the untrusted stage: it only words the message) names `argument`
    as the argument it depends on, or names no argument, or names an argument of a helper that
    JAX was tracing (an inner `jax.jit`, not `entry_point`: the helper's own parameter name says
    nothing about which of solve's arguments reached it); None when it names another argument
    of the entry point."""
    named = _NAMED.findall(message)
    helpers = [f for f in _TRACING.findall(message)
               if entry_point is not None and f.split(".")[-1] != entry_point]
    top = argument.split(".")[0]
    if named and top not in named and not helpers:
        return None
    where = ""
    if helpers and top not in named:
        param = f" (its parameter {named[-1]})" if named else ""
        where = (f" JAX found it in the helper {helpers[-1]}{param}, which {argument} reaches: "
                 f"a Python branch on a traced value fails inside a jitted helper too.")
    return RuleOutcome(False, (
        f"solve uses the value of {argument} in Python while it is being traced (an `if`, "
        f"int(), float(), .item() or numpy call on it, or a static argument of jax.jit).{where} "
        f"{argument} is a traced array: the "
        f"grader exports one program that reads it when it runs, so its value is not known "
        f"while tracing, and one program must serve every value. {_fix(argument)}"))


def _live_with_trip_counts(g: Graph, values: list[Value], nodes: list[int]) -> set[int]:
    """What the nodes depend on, a loop's trip count included: when a result of a
    `stablehlo.while` is live, so is what its condition returns (a fori_loop whose trip count is
    the step gives a result that the step decides, though no value of the step flows into it)."""
    live = live_nodes(g, values, nodes)
    done: set[int] = set()
    while True:
        more = [n for i, loop in enumerate(g.loops)
                if i not in done and any(r in live for r in loop.results)
                for ret in loop.cond_returns for n in ret]
        done.update(i for i, loop in enumerate(g.loops) if any(r in live for r in loop.results))
        more = [n for n in more if n not in live]
        if not more:
            return live
        live |= live_nodes(g, values, more)


@register("traced_input", "program", TracedInputOptions, untraceable=untraceable)
def check_traced_input(programs: Sequence[ProgramInfo], *, argument: str,
                       outputs: Sequence[str] = ()) -> RuleOutcome:
    """The exported program reads the argument when it runs; every named output depends on it.

    One program is exported per input shape from shapes and dtypes alone, so it serves every
    value of the argument; a dependence that constant folding removes (0 * x) does not count."""
    if not isinstance(programs, Sequence) or isinstance(programs, str | bytes) or not programs:
        return RuleOutcome(False, "No exported program was available to check.")
    if not all(isinstance(p, ProgramInfo) and isinstance(p.text, str) for p in programs):
        return RuleOutcome(False, "The exported programs are malformed and could not be checked.")
    if sum(len(p.text) for p in programs) > MAX_TOTAL_CHARS:
        return RuleOutcome(False, "The exported programs are too large to verify: remove dead "
                                  "computations from solve.")
    budget = Budget()  # one for all of this grade's programs
    first: Module | None = None
    for p in programs:
        if argument not in p.args:
            return RuleOutcome(False, (
                f"Your exported program does not read {argument} at all (for input shapes "
                f"{p.signature}): your outputs cannot depend on it. {_fix(argument)}"))
        wanted = list(outputs) or list(p.outs)
        try:
            module = parse_module(p.text)
            if first is None:
                first = module
            g = build_graph(module)
            g.budget = budget
            budget.spend(len(g.steps))
            if len(g.main_args) != len(p.args) or len(g.main_results) != len(p.outs):
                return RuleOutcome(False, "The exported program could not be analyzed (its "
                                          "arguments or results do not match their paths).")
            values = fold_constants(g)
            arg = g.main_args[p.args.index(argument)]
            for name in wanted:
                nodes = [g.main_results[i] for i, o in enumerate(p.outs)
                         if o == name or o.startswith(name + ".")]
                if not nodes:
                    return RuleOutcome(False, f"Your program has no output {name}.")
                if arg not in _live_with_trip_counts(g, values, nodes):
                    return RuleOutcome(False, (
                        f"Your output {name} does not depend on {argument} in the exported "
                        f"program (for input shapes {p.signature}): it is computed without it, "
                        f"or only through something constant (0 * {argument}, a where whose "
                        f"branches are equal). {_fix(argument)}"))
        except (ParseError, TooComplex) as exc:
            return RuleOutcome(False, f"The exported program for input shapes {p.signature} "
                                      f"could not be analyzed ({exc}).")
    names = " and ".join(outputs) if outputs else "your outputs"
    region = None
    if first is not None:  # where the program reads it: the ops that take it as an operand
        region = region_of(first, readers_of(first, programs[0], argument), programs[0], depth=0)
    return RuleOutcome(True, f"{argument} is an input of the one exported program, read when "
                             f"it runs: {names} depend on it, so one program serves every "
                             f"{argument}.", region)
