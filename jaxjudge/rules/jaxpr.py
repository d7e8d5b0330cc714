"""Spec-level rule: a differentiated jax.checkpoint region with the right policy holds the op.

Reads the jaxpr summary stage A writes (see `check_checkpoint_region`). This level reports what
the submission *asked for*, which gives the most precise learner feedback ("your policy is
nothing_saveable"); the program-level rule is the authoritative check of what actually runs.

Summary format (JSON-shaped, from an untrusted sandbox; jaxjudge/stages/trace.py writes it):

    summary = {"root": int, "jaxprs": [jaxpr, ...]}     each distinct traced jaxpr once
            | {"omitted": str}                           too large to summarize (not checked)
    jaxpr = {"eqns": [eqn, ...]}
    eqn = {"primitive": str, "jaxprs": [int, ...], "count": int,    (optional: [], 1)
           "checkpoint": bool, "policy": str | None, "differentiated": bool | None,
           "prevent_cse": bool | None,                   (optional: false / None)
           "live": [str, ...]}                           (checkpoint eqns: see below)

"live" lists the primitives inside a checkpoint region (nested jaxprs included) whose results
the traced program's outputs depend on: stage A's backward walk from the outputs, where a
product with a constant 0 or a select case a constant predicate does not choose is not a
dependence. A region counts as holding the op only when the op is live in it: a checkpoint
whose result never reaches the loss, or whose backward pass is fed a zero cotangent (`0.0 *
dead`), holds a tanh nothing uses, beside work done elsewhere (a hand-written custom_vjp that
recomputes the tanh). In the differentiated program, JAX keeps the checkpoint's forward part
outside the region under `dots_saveable`; the region that stays is the backward pass's
recomputation, so a live tanh there is the tanh the program-level rule finds recomputed, as far
as a summary can say. A summary without "live" (the walk was over stage A's budget) is read as
before, by the op's presence alone.

Sub-jaxprs are indices into the table, so a helper called 2,000 times is summarized once. The
walk visits each jaxpr of the table at most once (explicit stacks, no recursion), so its work
is bounded by the table's size (MAX_JAXPRS, MAX_EQNS, MAX_REFERENCES) and its depth by the
number of jaxprs; a cycle of indices (stage A cannot write one: it numbers jaxpr objects) is
reported as malformed. An omitted summary passes with a "not checked" message: this level only
explains (a submission controls its summary anyway), the program level decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

MAX_JAXPRS = 50_000  # entries in the table
MAX_EQNS = 200_000  # eqn entries in the whole table
MAX_REFERENCES = 1_000_000  # sub-jaxpr indices in the whole table
MAX_NAME_CHARS = 256
MAX_REASON_CHARS = 300


class _Malformed(ValueError):
    """The summary does not have the documented shape."""


@dataclass(frozen=True)
class _Region:
    differentiated: bool
    policy: str  # "none", "custom", a checkpoint_policies member name, or "?" when missing
    contains: bool
    live: bool = True  # the op it holds reaches the outputs (see the module docstring)

    def score(self, policy: str) -> tuple[int, bool, bool, bool, bool]:
        ok_policy = self.policy == policy
        return (
            self.differentiated + ok_policy + self.contains,
            self.contains and self.live,
            self.contains,
            self.differentiated,
            ok_policy,
        )


def _check_eqn(eqn: Any, n_jaxprs: int) -> dict[str, Any]:
    """The eqn, if it has the documented shape and its indices are in the table."""
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
    children = eqn.get("jaxprs", [])
    if not isinstance(children, list):
        raise _Malformed("an eqn's jaxprs is not a list of indices")
    live = eqn.get("live", [])
    if not isinstance(live, list) or len(live) > 64 or not all(
            isinstance(n, str) and len(n) <= MAX_NAME_CHARS for n in live):
        raise _Malformed("an eqn's live list is not a short list of names")
    for k in children:
        if type(k) is not int or not 0 <= k < n_jaxprs:
            raise _Malformed("an eqn refers to a jaxpr that is not in the table")
    return eqn


class _Table:
    """The validated table of jaxprs, walked from its root."""

    def __init__(self, summary: Any) -> None:
        if not isinstance(summary, dict):
            raise _Malformed("the summary is not an object")
        jaxprs = summary.get("jaxprs")
        if not isinstance(jaxprs, list) or not 0 < len(jaxprs) <= MAX_JAXPRS:
            raise _Malformed(f"the summary has no table of 1 to {MAX_JAXPRS} jaxprs")
        root = summary.get("root")
        if type(root) is not int or not 0 <= root < len(jaxprs):
            raise _Malformed("the summary's root is not an index into its table")
        self.root = root
        self.eqns: list[list[dict[str, Any]]] = []
        budget, references = MAX_EQNS, MAX_REFERENCES
        for jaxpr in jaxprs:
            if not isinstance(jaxpr, dict) or not isinstance(jaxpr.get("eqns"), list):
                raise _Malformed("a jaxpr summary has no eqns list")
            budget -= len(jaxpr["eqns"])
            if budget < 0:
                raise _Malformed(f"the summary has more than {MAX_EQNS} eqns")
            checked = []
            for raw in jaxpr["eqns"]:
                references -= len(raw.get("jaxprs", ())) if isinstance(raw, dict) else 0
                if references < 0:
                    raise _Malformed(f"the summary has more than {MAX_REFERENCES} references")
                checked.append(_check_eqn(raw, len(jaxprs)))
            self.eqns.append(checked)

    def reachable(self, starts: list[int]) -> list[int]:
        """The jaxprs reachable from `starts` (included), each once."""
        seen: set[int] = set()
        order: list[int] = []
        stack = list(reversed(starts))
        while stack:
            j = stack.pop()
            if j in seen:
                continue
            seen.add(j)
            order.append(j)
            for eqn in self.eqns[j]:
                stack.extend(reversed(eqn.get("jaxprs", [])))
        return order

    def holding(self, primitive: str) -> list[bool]:
        """For each jaxpr: whether it or a jaxpr nested in it has an eqn of `primitive`.
        Iterative post-order; an index met again while still open is a cycle."""
        done: list[bool | None] = [None] * len(self.eqns)
        open_: set[int] = set()
        for start in range(len(self.eqns)):
            if done[start] is not None:
                continue
            stack: list[tuple[int, bool]] = [(start, False)]
            while stack:
                j, expanded = stack.pop()
                if expanded:
                    open_.discard(j)
                    done[j] = any(e["primitive"] == primitive for e in self.eqns[j]) or any(
                        done[k] for e in self.eqns[j] for k in e.get("jaxprs", [])
                    )
                    continue
                if done[j] is not None:
                    continue
                if j in open_:
                    raise _Malformed("the summary's jaxprs refer to each other in a cycle")
                open_.add(j)
                stack.append((j, True))
                for e in self.eqns[j]:
                    for k in e.get("jaxprs", []):
                        if k in open_:
                            raise _Malformed("the summary's jaxprs refer to each other in a cycle")
                        if done[k] is None:
                            stack.append((k, False))
        return [bool(d) for d in done]


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
    if isinstance(summary, dict) and "omitted" in summary:
        reason = summary.get("omitted")
        why = f" ({reason[:MAX_REASON_CHARS]})" if isinstance(reason, str) and reason else ""
        return RuleOutcome(
            True,
            f"Not checked at this level: the traced program is too large to summarize{why}. "
            "The program-level requirement checks the exported program instead.",
        )
    try:
        table = _Table(summary)
        holds = table.holding(contains)
        regions: list[_Region] = []
        for j in table.reachable([table.root]):
            for eqn in table.eqns[j]:
                if eqn.get("checkpoint") is not True:
                    continue
                regions.append(
                    _Region(
                        differentiated=eqn.get("differentiated") is True,
                        policy=eqn.get("policy") or "?",
                        contains=any(holds[k] for k in eqn.get("jaxprs", [])),
                        live="live" not in eqn or contains in eqn["live"],
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
    elif not best.live:
        problems.append(
            f"the {contains} it holds never reaches what solve returns (its result is unused, "
            "or multiplied by 0), so the gradients are not computed through it: return the "
            "loss of the checkpointed block itself, and let jax.grad differentiate it rather "
            "than a backward pass of your own"
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


def at_every_signature(outcomes: list[tuple[list[str], RuleOutcome]]) -> RuleOutcome:
    """One spec-level requirement over the programs of every test signature: (where each
    distinct summary's program runs, e.g. ["B=3, D=4, H=5"] or [] for the one shape-
    polymorphic program, the rule's outcome on it). It holds only where it holds at every
    signature, since a Python branch on the shape (or a call counter) gives each its own
    program; a failure names the first signature it fails at and how many more."""
    failed = [(where, outcome) for where, outcome in outcomes if not outcome.passed]
    if not outcomes:
        return RuleOutcome(False, "No traced program was reported, so this could not be checked.")
    if not failed:
        return outcomes[0][1]
    where, first = failed[0]
    if not where:
        return first
    others = sum(len(w) for w, _ in failed) - 1
    also = f" (and at {others} other input shape{'s' if others > 1 else ''})" if others else ""
    held = [w[0] for w, outcome in outcomes if outcome.passed and w]
    differs = (f" It holds at {held[0]}: solve traces another program at other input shapes, "
               "and it must hold at every one." if held else "")
    return RuleOutcome(False, f"At {where[0]}{also}: {first.message}{differs}", first.region)
