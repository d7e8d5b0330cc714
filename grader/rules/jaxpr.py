"""Spec-level rule: a differentiated jax.checkpoint region with the right policy holds the op.

Reads the jaxpr summary stage A writes (see `check_checkpoint_region`). This level reports what
the submission *asked for*, which gives the most precise learner feedback ("your policy is
nothing_saveable"); the program-level rule is the authoritative check of what actually runs.

Summary format (JSON-shaped, from an untrusted sandbox):

    summary = {"eqns": [eqn, ...]}
    eqn = {"primitive": str, "checkpoint": bool, "policy": str | None,
           "differentiated": bool | None, "prevent_cse": bool | None, "jaxprs": [summary, ...]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from grader.rules import RuleOutcome
from grader.rules.registry import RuleOptions, register

MAX_EQNS = 200_000  # eqns visited in total, nested ones included (and re-visits per region)
MAX_NAME_CHARS = 256


class _Malformed(ValueError):
    """The summary does not have the documented shape."""


@dataclass(frozen=True)
class _Region:
    differentiated: bool
    policy: str  # "none", "custom", a checkpoint_policies member name, or "?" when missing
    contains: bool

    def score(self, policy: str) -> tuple[int, bool, bool, bool]:
        ok_policy = self.policy == policy
        return (
            self.differentiated + ok_policy + self.contains,
            self.contains,
            self.differentiated,
            ok_policy,
        )


def _eqns_of(summary: Any) -> list[Any]:
    if not isinstance(summary, dict):
        raise _Malformed("a jaxpr summary is not an object")
    eqns = summary.get("eqns")
    if not isinstance(eqns, list):
        raise _Malformed("a jaxpr summary has no eqns list")
    return eqns


def _check_eqn(eqn: Any) -> dict[str, Any]:
    if not isinstance(eqn, dict):
        raise _Malformed("an eqn is not an object")
    prim = eqn.get("primitive")
    if not isinstance(prim, str) or len(prim) > MAX_NAME_CHARS:
        raise _Malformed("an eqn has no valid primitive name")
    if not isinstance(eqn.get("checkpoint", False), bool):
        raise _Malformed("an eqn's checkpoint flag is not a boolean")
    policy = eqn.get("policy")
    if policy is not None and (not isinstance(policy, str) or len(policy) > MAX_NAME_CHARS):
        raise _Malformed("an eqn's policy is not a string")
    if eqn.get("differentiated") not in (True, False, None):
        raise _Malformed("an eqn's differentiated flag is not a boolean")
    if not isinstance(eqn.get("jaxprs", []), list):
        raise _Malformed("an eqn's jaxprs is not a list")
    return eqn


class _Walker:
    """Iterates eqns of nested summaries with an explicit stack and a global budget."""

    def __init__(self) -> None:
        self.budget = MAX_EQNS

    def eqns(self, roots: list[Any]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seen: set[int] = set()
        stack = list(reversed(roots))
        while stack:
            summary = stack.pop()
            if id(summary) in seen:  # a Python caller could hand us a cyclic structure
                continue
            seen.add(id(summary))
            for raw in _eqns_of(summary):
                self.budget -= 1
                if self.budget < 0:
                    raise _Malformed(f"the summary has more than {MAX_EQNS} eqns")
                eqn = _check_eqn(raw)
                out.append(eqn)
                stack.extend(reversed(eqn.get("jaxprs", [])))
        return out


def _describe_policy(policy: str) -> str:
    if policy == "none":
        return (
            "it has no policy (jax.checkpoint without policy= saves nothing, so the matmul is "
            "recomputed too)"
        )
    if policy == "custom":
        return "it uses a hand-written policy function"
    if policy == "?":
        return "its policy is unknown"
    return f"its policy is {policy}"


class CheckpointRegionOptions(RuleOptions):
    policy: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                        description="a jax.checkpoint_policies member name")
    contains: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                          description="a primitive the region must hold, e.g. tanh")


@register("checkpoint_region", "spec", CheckpointRegionOptions)
def check_checkpoint_region(summary: object, *, policy: str, contains: str) -> RuleOutcome:
    """A differentiated jax.checkpoint region with the given policy holds the given op.

    Pass iff some checkpoint eqn is differentiated, has `policy`, and holds a `contains` eqn.

    On failure, the message describes the region closest to passing.
    """
    if not isinstance(policy, str) or not isinstance(contains, str):
        return RuleOutcome(False, "The requirement is misconfigured (policy/contains options).")
    if summary is None:
        return RuleOutcome(
            False,
            "Your function could not be traced, so the jax.checkpoint requirement could not be "
            "checked: fix the error reported for tracing first.",
        )
    walker = _Walker()
    try:
        regions: list[_Region] = []
        for eqn in walker.eqns([summary]):
            if eqn.get("checkpoint") is not True:
                continue
            body = walker.eqns(list(eqn.get("jaxprs", [])))
            regions.append(
                _Region(
                    differentiated=eqn.get("differentiated") is True,
                    policy=eqn.get("policy") or "?",
                    contains=any(e["primitive"] == contains for e in body),
                )
            )
    except _Malformed as exc:
        return RuleOutcome(
            False, f"The trace summary of your function is malformed ({exc}); it cannot be checked."
        )
    fix = (
        f"wrap the whole block in jax.checkpoint(block, policy=jax.checkpoint_policies.{policy}) "
        f"inside the function you pass to jax.grad/jax.value_and_grad"
    )
    if not regions:
        return RuleOutcome(False, f"No jax.checkpoint region was found: {fix}.")
    best = max(regions, key=lambda r: r.score(policy))
    problems: list[str] = []
    if not best.differentiated:
        problems.append(
            "it is outside the function you differentiate: move jax.checkpoint inside the "
            "function passed to jax.grad/value_and_grad"
        )
    if best.policy != policy:
        problems.append(
            f"{_describe_policy(best.policy)}: pass policy=jax.checkpoint_policies.{policy}"
        )
    if not best.contains:
        problems.append(
            f"the checkpointed function does not contain the {contains}: wrap the whole block"
        )
    if not problems:
        return RuleOutcome(
            True,
            f"Found a jax.checkpoint region with policy {policy}, holding the {contains}, inside "
            "the differentiated function.",
        )
    found = (
        "a jax.checkpoint region" if len(regions) == 1 else f"{len(regions)} jax.checkpoint regions"
    )
    closest = "" if len(regions) == 1 else " (the closest one)"
    return RuleOutcome(False, f"Found {found}, but{closest} " + "; and ".join(problems) + ".")
