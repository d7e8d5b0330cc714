"""Spec-level rules on stage A's jaxpr summary beyond checkpoints: which primitives are used
(`uses_primitive`), and whether a custom_vjp's result and backward rule make what `solve`
returns (`custom_vjp_used`).

The summary comes from the untrusted stage, so these rules explain; they score only when the
program-level requirements named in `corroborated_by` pass (see
jaxjudge.problems.package.Requirement). A requirement with `corroborated_by = []` states a property
no exported program can show (which differentiation rule produced a gradient, say): it can fail a
submission but earns no points.

`custom_vjp_used` reads the summary's "custom_rules" record, which stage A writes beside the
table (jaxjudge/stages/trace.py, `_CustomRuleCalls.report`) and keeps when the table is omitted:

    {"functions": [{"kind": "custom_vjp" | "custom_jvp", "name": str, "library": bool,
                    "output_used": bool, "bwd_run": bool, "bwd_used": bool,
                    "fwd_identity": bool, "bwd_identity": bool,
                    "fwd_ops": [str, ...], "bwd_ops": [str, ...], "bwd_ct_used": bool,
                    "probe_failed": bool}, ...],
     "dropped": int}                         (flags absent: false; dropped absent: 0)

"fwd_ops" and "bwd_ops" come from tracing each rule again on its own (stage A's `_probe`):
the primitives computed from the function's argument (for the backward rule: from its
residuals, not the cotangent) whose results reach the rule's result, a product with a constant
0 or an unchosen case cutting the path; "res_ops" the same for what the forward rule computes
into its residuals (a mask saved for the backward rule); "bwd_ct_used" says the cotangent
reaches the backward rule's result. Absent: the rule never ran (or the record predates them).
    | {"omitted": str}                       (the dataflow was too large to follow)

At most 64 functions and 64-character names; anything else is malformed and fails with a
message saying so. A name reaches a message only when it is a plain identifier.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field

from jaxjudge.rules.jaxpr import MAX_REASON_CHARS, _Malformed, _Table
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register


class UsesPrimitiveOptions(RuleOptions):
    any_of: list[str] = Field(min_length=1, max_length=16,
                              description="primitive names, e.g. [custom_vjp_call, "
                                          "custom_vjp_call_jaxpr] (names differ across JAX)")
    what: str = Field(min_length=1, max_length=80, description="what a learner calls it")
    hint: str = Field(default="", max_length=400, description="how to fix a failure")


@register("uses_primitive", "spec", UsesPrimitiveOptions)
def check_uses_primitive(summary: object, *, any_of: list[str], what: str, hint: str = ""
                         ) -> RuleOutcome:
    """The traced program uses one of the given primitives (at any nesting depth).

    Custom-derivative functions called while tracing count too (the summary's `called` list):
    one that was only differentiated leaves no eqn in the jaxpr."""
    if summary is None:
        return RuleOutcome(False, f"Your function could not be traced, so the use of {what} "
                                  "could not be checked: fix the error reported first.")
    if isinstance(summary, dict) and "omitted" in summary:
        reason = summary.get("omitted")
        why = f" ({reason[:MAX_REASON_CHARS]})" if isinstance(reason, str) and reason else ""
        return RuleOutcome(False, f"The traced program is too large to summarize{why}, so the "
                                  f"use of {what} could not be checked.")
    try:
        table = _Table(summary)
        names = {e["primitive"] for j in table.reachable([table.root]) for e in table.eqns[j]}
        called = summary.get("called", [])
        if not isinstance(called, list) or len(called) > 16 or not all(
            isinstance(c, str) and len(c) <= 64 for c in called
        ):
            raise _Malformed("its list of called custom-derivative functions is malformed")
        names.update(called)
    except _Malformed as exc:
        return RuleOutcome(False, f"The trace summary could not be read ({exc}), so the use "
                                  f"of {what} could not be checked.")
    found = sorted(names & set(any_of))
    if found:
        return RuleOutcome(True, f"Your traced program uses {what} ({found[0]}).")
    return RuleOutcome(False, f"No {what} was found in your traced program. {hint}".strip())


# -- custom_vjp_used -------------------------------------------------------------------------------
MAX_CUSTOM_FUNCTIONS = 64  # stage A records at most 32
MAX_FUNCTION_NAME = 64
_KINDS = ("custom_vjp", "custom_jvp")
_FLAGS = ("library", "output_used", "bwd_run", "bwd_used", "fwd_identity", "bwd_identity",
          "probe_failed")
_OPS = ("fwd_ops", "bwd_ops", "res_ops")
MAX_OPS = 64


@dataclass(frozen=True)
class _CustomFunction:
    kind: str
    name: str  # shown only when it is a plain identifier (it comes from the submission)
    library: bool = False
    output_used: bool = False
    bwd_run: bool = False
    bwd_used: bool = False
    fwd_identity: bool = False  # its function returned its argument unchanged
    bwd_identity: bool = False  # its backward rule returned the cotangent unchanged
    probe_failed: bool = False  # a rule could not be traced on its own
    fwd_ops: frozenset[str] | None = None  # None: not recorded
    bwd_ops: frozenset[str] | None = None
    res_ops: frozenset[str] | None = None  # what its forward rule computes into the residuals
    bwd_ct_used: bool | None = None

    def named(self, what: str) -> str:
        """"jax.custom_vjp `quantize`", or "jax.custom_vjp function" when the name is not a
        plain identifier (a lambda, a partial, or anything a submission chose)."""
        shown = self.name if _IDENTIFIER.fullmatch(self.name) else ""
        return f"{what} `{shown}`" if shown else f"{what} function"


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _custom_functions(summary: object) -> tuple[list[_CustomFunction], int] | str:
    """The summary's "custom_rules" record (see jaxjudge/stages/trace.py `_summary`): the
    functions and how many were dropped, or the reason it was omitted. Raises _Malformed."""
    if not isinstance(summary, dict):
        raise _Malformed("the summary is not an object")
    record = summary.get("custom_rules")
    if record is None:
        raise _Malformed("it has no record of the custom-derivative functions called")
    if not isinstance(record, dict):
        raise _Malformed("its record of custom-derivative functions is not an object")
    if "omitted" in record:
        reason = record["omitted"]
        return reason[:MAX_REASON_CHARS] if isinstance(reason, str) else ""
    raw, dropped = record.get("functions"), record.get("dropped", 0)
    if not isinstance(raw, list) or len(raw) > MAX_CUSTOM_FUNCTIONS:
        raise _Malformed(f"its list of custom-derivative functions is not a list of at most "
                         f"{MAX_CUSTOM_FUNCTIONS}")
    if type(dropped) is not int or dropped < 0:
        raise _Malformed("its count of dropped custom-derivative functions is not a count")
    functions = []
    for entry in raw:
        if not isinstance(entry, dict) or entry.get("kind") not in _KINDS:
            raise _Malformed("a custom-derivative function has no valid kind")
        name = entry.get("name", "")
        if not isinstance(name, str) or len(name) > MAX_FUNCTION_NAME:
            raise _Malformed("a custom-derivative function's name is not a short string")
        flags = {k: entry.get(k, False) for k in _FLAGS}
        if not all(type(v) is bool for v in flags.values()):
            raise _Malformed("a custom-derivative function's flags are not booleans")
        ops: dict[str, frozenset[str] | None] = {}
        for key in _OPS:
            raw_ops = entry.get(key)
            if raw_ops is not None and (not isinstance(raw_ops, list) or len(raw_ops) > MAX_OPS
                                        or not all(isinstance(n, str) and len(n) <= 64
                                                   for n in raw_ops)):
                raise _Malformed("a custom-derivative function's list of operations is malformed")
            ops[key] = None if raw_ops is None else frozenset(raw_ops)
        ct_used = entry.get("bwd_ct_used")
        if ct_used is not None and type(ct_used) is not bool:
            raise _Malformed("a custom-derivative function's flags are not booleans")
        functions.append(_CustomFunction(entry["kind"], name, **flags, **ops,
                                         bwd_ct_used=ct_used))
    return functions, dropped


class CustomVjpUsedOptions(RuleOptions):
    output: bool = Field(default=True, description="the custom_vjp's result must reach the "
                                                   "returned values")
    backward: bool = Field(default=True, description="its backward rule must produce a "
                                                     "returned value (the gradient)")
    computes: bool = Field(default=False, description="neither its function nor its backward "
                                                      "rule returns its input unchanged (no "
                                                      "identity wrapper)")
    forward_ops: list[str] = Field(default=[], max_length=16,
                                   description="primitives, one of which its function (and "
                                               "forward rule) must compute from its argument "
                                               "into its result, e.g. [sign, ge, gt, lt, le]")
    backward_ops: list[str] = Field(default=[], max_length=16,
                                    description="primitives, one of which its backward rule "
                                                "must compute from its residuals into its "
                                                "result, with the cotangent used too")
    forward_work: str = Field(default="the forward value", max_length=80,
                              description="what the forward ops do, for messages")
    backward_work: str = Field(default="the gradient rule", max_length=80,
                               description="what the backward ops do, for messages")
    hint: str = Field(default="", max_length=400, description="how to fix a failure")


@dataclass(frozen=True)
class _Work:
    """What the rules must compute themselves (the options forward_ops, backward_ops)."""

    forward_ops: frozenset[str] = frozenset()
    backward_ops: frozenset[str] = frozenset()
    forward_work: str = "the forward value"
    backward_work: str = "the gradient rule"

    def lacks(self, f: _CustomFunction) -> list[tuple[str, str]]:
        """(what is missing, how to fix it) for each rule of `f` that does not do its work."""
        out = []
        if (self.forward_ops or self.backward_ops) and f.probe_failed:
            out.append(("its rules could not be traced on their own to check what they compute",
                        "keep the rules plain functions of their arguments"))
            return out
        if self.forward_ops and not (f.fwd_ops or frozenset()) & self.forward_ops:
            out.append((f"its function does not compute {self.forward_work} from its argument "
                        "(it is done outside, or multiplied by 0)",
                        f"compute {self.forward_work} inside the custom_vjp function"))
        if self.backward_ops and f.bwd_run:
            # The mask may be computed by the forward rule and saved (`|x| <= 1` as the
            # residual): then the backward rule must still compute from its residuals.
            done = (f.bwd_ops or frozenset()) | ((f.res_ops or frozenset()) if f.bwd_ops
                                                 else frozenset())
            if not done & self.backward_ops:
                out.append((f"its backward rule does not apply {self.backward_work} to the "
                            "gradient from its residuals (it is done outside, or multiplied "
                            "by 0)", f"apply {self.backward_work} inside its backward rule"))
            elif f.bwd_ct_used is False:
                out.append(("its backward rule's result does not depend on the incoming "
                            "gradient", "multiply or select the incoming gradient in it"))
        return out


def _unused(f: _CustomFunction, output: bool, backward: bool, computes: bool = False,
            work: _Work | None = None) -> list[str]:
    """What `f` lacks of the requirement, as clauses of the failure message."""
    lacks = []
    if output and not f.output_used:
        lacks.append("its result does not reach the returned values")
    if backward and not f.bwd_used:
        lacks.append("what its backward rule computes does not reach the returned values"
                     if f.bwd_run else "its backward rule is never used for the returned gradient")
    if computes and f.fwd_identity:
        lacks.append("it returns its argument unchanged (an identity wrapper: the forward value "
                     "is not computed in it)")
    if computes and f.bwd_identity:
        lacks.append("its backward rule returns the incoming gradient unchanged (no gradient "
                     "rule of its own)")
    if work is not None:
        lacks.extend(what for what, _ in work.lacks(f))
    return lacks


@register("custom_vjp_used", "spec", CustomVjpUsedOptions)
def check_custom_vjp_used(summary: object, *, output: bool = True, backward: bool = True,
                          computes: bool = False, forward_ops: list[str] | None = None,
                          backward_ops: list[str] | None = None,
                          forward_work: str = "the forward value",
                          backward_work: str = "the gradient rule",
                          hint: str = "") -> RuleOutcome:
    """A jax.custom_vjp that solve calls gives the returned values, and its backward rule the
    returned gradient.

    Reads the summary's "custom_rules" record: per custom-derivative function stage A saw
    called, whether its result (`output_used`) and its backward rule's result (`bwd_used`)
    reach what solve returns: through dependence, where a value multiplied by a constant 0 or
    not chosen by a constant predicate does not count. With `computes`, neither the function
    (`fwd_identity`) nor its backward rule (`bwd_identity`) may return its input unchanged. JAX's
    own custom functions (`library`) do not count; a custom_jvp found instead of a custom_vjp,
    or beside one whose backward rule is not used, is named as such."""
    what = "jax.custom_vjp"
    if summary is None:
        return RuleOutcome(False, f"Your function could not be traced, so the use of {what} "
                                  "could not be checked: fix the error reported first.")
    try:
        found = _custom_functions(summary)
    except _Malformed as exc:
        too_large = isinstance(summary, dict) and "omitted" in summary
        why = "The traced program is too large to summarize" if too_large else (
            f"The trace summary could not be read ({exc})")
        return RuleOutcome(False, f"{why}, so the use of {what} could not be checked.")
    if isinstance(found, str):
        why = f" ({found})" if found else ""
        return RuleOutcome(False, f"The traced program is too large to follow{why}, so the use "
                                  f"of {what} could not be checked.")
    functions, dropped = found
    own = [f for f in functions if not f.library]
    vjps = [f for f in own if f.kind == "custom_vjp"]
    more = (f" (only the first {len(functions)} custom-derivative functions called were "
            "recorded)") if dropped else ""
    if not vjps:
        jvps = [f for f in own if f.kind == "custom_jvp"]
        if jvps:
            text = (f"Found a {jvps[0].named('jax.custom_jvp')}, not a {what}: a custom_jvp "
                    "gives a forward-mode rule that JAX transposes, while this requirement asks "
                    f"for your own backward rule, attached with .defvjp(fwd, bwd){more}.")
        else:
            text = f"No {what} function is called in solve{more}."
        return RuleOutcome(False, f"{text} {hint}".strip())
    work = _Work(frozenset(forward_ops or ()), frozenset(backward_ops or ()), forward_work,
                 backward_work)
    passing = [f for f in vjps if not _unused(f, output, backward, computes, work)]
    # A custom_vjp beside the one that passes, called (differentiated, even) but with nothing
    # it computes reaching what solve returns: a decoy whose rules would be the ones checked.
    decoys = [f for f in vjps if not f.output_used and not f.bwd_used]
    if passing and decoys and (output or backward):
        return RuleOutcome(False, (
            f"Your {decoys[0].named(what)} is called, but neither its result nor its backward "
            f"rule's reaches what solve returns (it is thrown away), beside "
            f"{passing[0].named(what)}, which does: call only the one whose result and "
            f"gradient you return. {hint}").strip())
    if passing:
        parts = []
        if output:
            parts.append("gives the returned values")
        if backward:
            parts.append("its backward rule produces the returned gradient")
        done = ", and ".join(parts) if parts else "is called"
        return RuleOutcome(True, f"Your {passing[0].named(what)} {done}.")
    best = max(vjps, key=lambda f: (f.output_used + f.bwd_used, f.bwd_used, f.bwd_run,
                                    -(f.fwd_identity + f.bwd_identity), -len(work.lacks(f))))
    lacks = _unused(best, output, backward, computes, work)
    closest = "" if len(vjps) == 1 else f" (the closest of {len(vjps)} {what} functions)"
    fixes = []
    if output and not best.output_used:
        fixes.append("return its result, not a value computed beside it")
    if backward and not best.bwd_used:
        fixes.append("compute the returned gradient with jax.vjp or jax.grad through it, not "
                     "with a formula")
    if computes and best.fwd_identity:
        fixes.append("compute the forward value inside the custom_vjp function")
    if computes and best.bwd_identity:
        fixes.append("apply the gradient rule inside its backward rule")
    fixes.extend(fix for _, fix in work.lacks(best) if fix not in fixes)
    jvps = [f for f in own if f.kind == "custom_jvp"]
    also = ""
    if jvps and backward and not best.bwd_used:
        also = (f" A {jvps[0].named('jax.custom_jvp')} is called too: JAX transposes its "
                "forward-mode rule, which is not the backward rule this requirement asks for.")
    return RuleOutcome(False, f"Your {best.named(what)}{closest} is called, but "
                              + ", and ".join(lacks) + ": " + "; and ".join(fixes)
                              + f"{more}.{also}")
