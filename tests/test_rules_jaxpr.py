"""The spec-level checkpoint rule on hand-written summaries and on real ones.

`summarize` below is a reference implementation of the summary format stage A produces (the
production one lives in jaxjudge/stages/trace.py); it runs jax.make_jaxpr in-process on the
prototype solutions of tests/data/programs/make_fixtures.py.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxjudge.rules import SPEC_RULES, RuleOutcome, check_checkpoint_region

OPTIONS = {"policy": "dots_saveable", "contains": "tanh"}

# -- the reference summarizer ---------------------------------------------------------------------

# Canonical names first, so aliases (checkpoint_dots is dots_saveable) report the usual name.
_PREFERRED = [
    "dots_saveable",
    "dots_with_no_batch_dims_saveable",
    "nothing_saveable",
    "everything_saveable",
]


@cache
def checkpoint_primitive() -> Any:
    """The checkpoint primitive by identity (printed `checkpoint` or `remat2`, by release)."""
    return jax.make_jaxpr(jax.checkpoint(lambda v: v))(1.0).eqns[0].primitive


def policy_name(policy: object) -> str:
    if policy is None:
        return "none"
    cp = jax.checkpoint_policies
    names = _PREFERRED + sorted(n for n in dir(cp) if not n.startswith("_") and n not in _PREFERRED)
    for name in names:
        member = getattr(cp, name, None)
        if member is not None and (policy is member or policy == member):
            return name
    return "custom"


def _sub_jaxprs(params: dict[str, Any]) -> Iterator[Any]:
    for value in params.values():
        for item in value if isinstance(value, tuple | list) else [value]:
            if hasattr(item, "eqns"):
                yield item
            elif hasattr(getattr(item, "jaxpr", None), "eqns"):
                yield item.jaxpr


def summarize(jaxpr: Any) -> dict[str, Any]:
    """The table format: each distinct jaxpr object once, eqns refer to children by index."""
    index: dict[int, int] = {id(jaxpr): 0}
    queue = [jaxpr]
    table: list[dict[str, Any]] = []
    while len(table) < len(queue):
        eqns = []
        for eqn in queue[len(table)].eqns:
            entry: dict[str, Any] = {"primitive": eqn.primitive.name}
            if eqn.primitive is checkpoint_primitive():
                entry["checkpoint"] = True
                entry["policy"] = policy_name(eqn.params.get("policy"))
                entry["differentiated"] = eqn.params.get("differentiated")
                entry["prevent_cse"] = eqn.params.get("prevent_cse")
            children = []
            for sub in _sub_jaxprs(eqn.params):
                if id(sub) not in index:
                    index[id(sub)] = len(queue)
                    queue.append(sub)
                children.append(index[id(sub)])
            if children:
                entry["jaxprs"] = children
            eqns.append(entry)
        table.append({"eqns": eqns})
    return {"root": 0, "jaxprs": table}


@cache
def prototypes() -> ModuleType:
    path = Path(__file__).parent / "data" / "programs" / "make_fixtures.py"
    spec = importlib.util.spec_from_file_location("make_fixtures", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def summary_of(solve: Callable[..., Any]) -> dict[str, Any]:
    m = prototypes()
    params = {
        "w1": np.ones((m.D, m.H), np.float32),
        "b1": np.ones((m.H,), np.float32),
        "w2": np.ones((m.H, m.D), np.float32),
        "b2": np.ones((m.D,), np.float32),
    }
    x = np.ones((m.B, m.D), np.float32)
    return summarize(jax.make_jaxpr(solve)(params, x, x).jaxpr)


# -- real summaries --------------------------------------------------------------------------------

PASS = "holding the tanh"
OUTSIDE = "outside the function you differentiate"
NO_TANH = "does not contain the tanh: wrap the whole block"
NO_REGION = "No jax.checkpoint region was found"
EXPECTED: dict[str, tuple[bool, str]] = {
    "dots_saveable": (True, PASS),
    "dots_saveable_nocse": (True, PASS),
    "remat_checkpoint_dots": (True, PASS),
    "separate_loss_grad": (True, PASS),
    "einsum": (True, PASS),
    "inner_jit": (True, PASS),
    "inner_jit_matmul": (True, PASS),
    "scan": (True, PASS),
    "transposed_matmul": (True, PASS),
    "no_matmul": (True, PASS),
    # Spec level reads what was asked for; the program rule is what rejects the decoy.
    "decoy": (True, PASS),
    "dots_no_batch_dims": (False, "its policy is dots_with_no_batch_dims_saveable"),
    "nothing_saveable": (False, "its policy is nothing_saveable"),
    "everything_saveable": (False, "its policy is everything_saveable"),
    "no_policy": (False, "it has no policy"),
    "no_checkpoint": (False, NO_REGION),
    "double_tanh_no_checkpoint": (False, NO_REGION),
    "checkpoint_outside_grad": (False, OUTSIDE),
    "checkpoint_without_tanh": (False, NO_TANH),
    "tanh_formula": (False, NO_TANH),
    # The review's attacks: a decoy region that passes here is not paid unless the program rule
    # corroborates it (it does not; see test_rules_program.py).
    "decoy_duplicate_forward": (True, PASS),
    "decoy_nothing_saveable": (True, PASS),
    "decoy_paired": (False, NO_REGION),
    "decoy_separate_plain_grad": (False, NO_REGION),
    "scan_rows": (True, PASS),
    "fori_rows": (True, PASS),
    "map_rows": (True, PASS),
    "vmap_rows": (True, PASS),
    "jacrev": (True, PASS),
    "float64_block": (True, PASS),
    "real_with_decoy": (True, PASS),
    "launder_clamp": (False, NO_REGION),
    "launder_sigmoid": (False, NO_REGION),
    "launder_scaled_w1": (False, NO_REGION),
    "launder_manual_backward": (False, NO_REGION),
    "hidden_layer_only": (True, PASS),
    "clipped_preactivation": (True, PASS),
    "python_rows": (True, PASS),
}


def test_every_prototype_has_an_expectation() -> None:
    assert set(prototypes().CASES) == set(EXPECTED)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_prototype(case: str) -> None:
    passed, phrase = EXPECTED[case]
    outcome = SPEC_RULES["checkpoint_region"](summary_of(prototypes().CASES[case]), **OPTIONS)
    assert outcome.passed is passed
    assert phrase in outcome.message


def test_failure_messages_name_a_single_problem_and_the_fix() -> None:
    cases = prototypes().CASES
    outside = check_checkpoint_region(summary_of(cases["checkpoint_outside_grad"]), **OPTIONS)
    assert "policy" not in outside.message and "tanh" not in outside.message
    wrong = check_checkpoint_region(summary_of(cases["nothing_saveable"]), **OPTIONS)
    assert "policy=jax.checkpoint_policies.dots_saveable" in wrong.message
    assert OUTSIDE not in wrong.message and NO_TANH not in wrong.message


def test_custom_policy_is_named() -> None:
    m = prototypes()
    solve = m.with_block(jax.checkpoint(m.block, policy=lambda *_, **__: False))
    outcome = check_checkpoint_region(summary_of(solve), **OPTIONS)
    assert not outcome.passed and "hand-written policy function" in outcome.message


def test_checkpoint_inside_grad_layout() -> None:
    """The facts the rule relies on: forward tanh outside, recomputed tanh in a differentiated
    region; checkpoint(value_and_grad(...)) is one undifferentiated region."""
    inside = summary_of(prototypes().CASES["dots_saveable"])
    eqns = inside["jaxprs"][inside["root"]]["eqns"]
    regions = [e for e in eqns if e.get("checkpoint")]
    assert [r["differentiated"] for r in regions] == [True]
    assert any(e["primitive"] == "tanh" for e in eqns)  # the forward one, outside
    outside = summary_of(prototypes().CASES["checkpoint_outside_grad"])
    top = outside["jaxprs"][outside["root"]]["eqns"]
    assert [e["differentiated"] for e in top if e.get("checkpoint")] == [False]


def test_a_shared_helper_is_summarized_once() -> None:
    """A jitted helper called many times is one entry of the table, referred to by index."""
    keep = jax.jit(lambda v: v * 1.0)

    def solve(params: Any, x: Any, y: Any) -> Any:
        for _ in range(200):
            x = keep(x)
        return prototypes().CASES["dots_saveable"](params, x, y)

    summary = summary_of(solve)
    root = summary["jaxprs"][summary["root"]]["eqns"]
    calls = [e["jaxprs"] for e in root if e["primitive"] in ("pjit", "jit")]
    assert len(calls) == 200 and len({tuple(c) for c in calls}) == 1
    assert len(summary["jaxprs"]) < 20
    assert check_checkpoint_region(summary, **OPTIONS).passed


def test_policy_name_resolves_aliases() -> None:
    cp = jax.checkpoint_policies
    assert policy_name(cp.checkpoint_dots) == "dots_saveable"
    assert policy_name(None) == "none"
    assert policy_name(jnp.sin) == "custom"


# -- hand-written summaries ------------------------------------------------------------------------
# Written nested (an eqn holds its sub-summaries) for readability; `table` turns them into the
# format stage A writes, one table entry per distinct dict object.


def eqn(primitive: str, *jaxprs: dict[str, Any], **ckpt: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"primitive": primitive, "jaxprs": list(jaxprs)}
    if ckpt:
        out.update(checkpoint=True, policy=None, differentiated=None, prevent_cse=None)
        out.update(ckpt)
    return out


def region(policy: str, differentiated: bool, *inner: str) -> dict[str, Any]:
    body = {"eqns": [eqn(p) for p in inner]}
    return eqn("remat2", body, policy=policy, differentiated=differentiated, prevent_cse=True)


def table(root: dict[str, Any]) -> dict[str, Any]:
    index: dict[int, int] = {id(root): 0}
    queue = [root]
    out: list[dict[str, Any]] = []
    while len(out) < len(queue):
        eqns = []
        for e in queue[len(out)]["eqns"]:
            children = []
            for sub in e["jaxprs"]:
                if id(sub) not in index:
                    index[id(sub)] = len(queue)
                    queue.append(sub)
                children.append(index[id(sub)])
            eqns.append({**e, "jaxprs": children})
        out.append({"eqns": eqns})
    return {"root": 0, "jaxprs": out}


def check(*eqns: dict[str, Any]) -> RuleOutcome:
    return check_checkpoint_region(table({"eqns": list(eqns)}), **OPTIONS)


def test_region_nested_in_a_jit_body_passes() -> None:
    pjit = eqn("pjit", {"eqns": [region("dots_saveable", True, "dot_general", "add", "tanh")]})
    assert check(eqn("tanh"), pjit).passed


def test_tanh_deep_inside_the_region_counts() -> None:
    inner = {"eqns": [eqn("pjit", {"eqns": [eqn("tanh")]})]}
    deep = eqn("remat2", inner, policy="dots_saveable", differentiated=True)
    assert check(deep).passed


def test_the_closest_region_decides_the_message() -> None:
    outcome = check(
        region("nothing_saveable", False, "tanh"),  # two problems
        region("dots_saveable", True, "sin"),  # one problem: no tanh
    )
    assert not outcome.passed
    assert "2 jax.checkpoint regions" in outcome.message and NO_TANH in outcome.message
    assert "nothing_saveable" not in outcome.message


def test_several_problems_are_all_named() -> None:
    outcome = check(region("none", False, "sin"))
    assert OUTSIDE in outcome.message and "no policy" in outcome.message
    assert NO_TANH in outcome.message


def test_unknown_differentiated_is_not_differentiated() -> None:
    outcome = check(eqn("remat2", {"eqns": [eqn("tanh")]}, policy="dots_saveable"))
    assert not outcome.passed and OUTSIDE in outcome.message


def test_a_checkpoint_named_like_one_but_not_flagged_is_ignored() -> None:
    fake = eqn("remat2", {"eqns": [eqn("tanh")]})
    fake["policy"], fake["differentiated"] = "dots_saveable", True
    assert NO_REGION in check(fake).message


def test_untraceable_function() -> None:
    outcome = check_checkpoint_region(None, **OPTIONS)
    assert not outcome.passed and "could not be traced" in outcome.message


def test_a_shared_body_is_walked_once_per_table_entry() -> None:
    """One body of 50,000 eqns referred to by 50,000 eqns (copied at each reference it would be
    2.5e9 eqns): the walk is linear in the table."""
    body = {"eqns": [eqn("tanh")] * 50_000}
    summary = table({"eqns": [eqn("pjit", body)] * 49_999 + [region("dots_saveable", True)]})
    last = summary["jaxprs"][0]["eqns"][-1]
    last["jaxprs"] = [1]  # the region's body is the shared one
    assert len(summary["jaxprs"]) == 3
    assert check_checkpoint_region(summary, **OPTIONS).passed


def test_a_long_chain_of_nested_jaxprs_is_walked_without_recursion() -> None:
    """20,000 jaxprs, each calling the next: the region at the top holds the tanh at the end."""
    n = 20_000
    jaxprs: list[dict[str, Any]] = [
        {"eqns": [{"primitive": "pjit", "jaxprs": [k + 1]}]} for k in range(n)
    ]
    jaxprs.append({"eqns": [{"primitive": "tanh"}]})
    jaxprs[0]["eqns"][0].update(checkpoint=True, policy="dots_saveable", differentiated=True)
    assert check_checkpoint_region({"root": 0, "jaxprs": jaxprs}, **OPTIONS).passed


def test_an_omitted_summary_leaves_the_decision_to_the_program_level() -> None:
    """Stage A leaves out a summary that is too large: the grade must not fail over it."""
    outcome = check_checkpoint_region({"omitted": "the summary would take 999 bytes"}, **OPTIONS)
    assert outcome.passed
    assert "Not checked" in outcome.message and "999 bytes" in outcome.message
    assert "program-level" in outcome.message
    odd = check_checkpoint_region({"omitted": ["x" * 10_000]}, **OPTIONS)
    assert odd.passed and len(odd.message) < 400


def _cyclic() -> dict[str, Any]:
    return {"root": 0, "jaxprs": [{"eqns": [eqn("pjit", jaxprs=[1])]},
                                  {"eqns": [eqn("pjit", jaxprs=[0])]}]}


def _self_loop() -> dict[str, Any]:
    return {"root": 0, "jaxprs": [{"eqns": [region("dots_saveable", True) | {"jaxprs": [0]}]}]}


def _wide() -> dict[str, Any]:
    return {"root": 0, "jaxprs": [{"eqns": [{"primitive": "add"}]}] * 60_000}


@pytest.mark.parametrize(
    "summary",
    [
        "text",
        [],
        {"eqns": [eqn("tanh")]},  # the old nested format
        {"root": 0, "jaxprs": []},
        {"root": 1, "jaxprs": [{"eqns": []}]},
        {"root": True, "jaxprs": [{"eqns": []}]},
        {"root": "0", "jaxprs": [{"eqns": []}]},
        {"root": 0, "jaxprs": "x"},
        {"root": 0, "jaxprs": [{"eqns": "x"}]},
        {"root": 0, "jaxprs": [{"eqns": [1]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": 3}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "remat2", "checkpoint": "yes"}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "r", "checkpoint": True, "policy": 5}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "r", "differentiated": "no"}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "pjit", "jaxprs": {"eqns": []}}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "pjit", "jaxprs": [None]}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "pjit", "jaxprs": [1]}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "pjit", "jaxprs": [-1]}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "pjit", "jaxprs": [0.0]}]}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "pjit", "jaxprs": [0] * 600_000}] * 2}]},
        {"root": 0, "jaxprs": [{"eqns": [{"primitive": "x" * 10_000}]}]},
        {"root": 0, "jaxprs": [{"eqns": [eqn("add")] * 300_000}]},
        _wide(),
        _cyclic(),
        _self_loop(),
    ],
    ids=[
        "string",
        "list",
        "old-format",
        "empty-table",
        "root-out-of-range",
        "root-bool",
        "root-string",
        "jaxprs-string",
        "eqns-string",
        "eqn-int",
        "primitive-int",
        "checkpoint-str",
        "policy-int",
        "differentiated-str",
        "child-dict",
        "child-none",
        "child-out-of-range",
        "child-negative",
        "child-float",
        "too-many-references",
        "long-name",
        "too-many-eqns",
        "too-many-jaxprs",
        "cyclic",
        "self-loop",
    ],
)
def test_malformed_summaries_fail_cleanly(summary: object) -> None:
    outcome = check_checkpoint_region(summary, **OPTIONS)
    assert isinstance(outcome, RuleOutcome) and not outcome.passed
    assert outcome.message
    assert "malformed" in outcome.message or "No jax.checkpoint" in outcome.message


def test_a_cycle_is_malformed_not_a_hang() -> None:
    assert "cycle" in check_checkpoint_region(_cyclic(), **OPTIONS).message
    assert "cycle" in check_checkpoint_region(_self_loop(), **OPTIONS).message


def test_misconfigured_options_fail_cleanly() -> None:
    good = table({"eqns": [region("dots_saveable", True, "tanh")]})
    assert check_checkpoint_region(good, **OPTIONS).passed
    assert not check_checkpoint_region(good, policy=None, contains="tanh").passed  # type: ignore[arg-type]


# -- a region counts when the tanh in it is live (issue #30) -------------------------------------

DEAD = "never reaches what solve returns"


def test_a_region_whose_tanh_is_not_live_fails() -> None:
    dead = {**region("dots_saveable", True, "dot_general", "tanh"), "live": ["dot_general"]}
    outcome = check(dead)
    assert not outcome.passed and DEAD in outcome.message
    live = {**region("dots_saveable", True, "tanh"), "live": ["tanh", "mul"]}
    assert check(dead, live).passed
    assert check(region("dots_saveable", True, "tanh")).passed  # no "live": read as before


def test_a_malformed_live_list_is_reported() -> None:
    bad = {**region("dots_saveable", True, "tanh"), "live": "tanh"}
    outcome = check(bad)
    assert not outcome.passed and "malformed" in outcome.message


def _stage_a_summary(solve: Callable[..., Any]) -> dict[str, Any]:
    from jaxjudge.stages import trace

    m = prototypes()
    params = {
        "w1": np.ones((m.D, m.H), np.float32), "b1": np.ones((m.H,), np.float32),
        "w2": np.ones((m.H, m.D), np.float32), "b2": np.ones((m.D,), np.float32),
    }
    x = np.ones((m.B, m.D), np.float32)
    checkpoint, policies = trace.prepare()
    return trace.summarize_jaxpr(jax.make_jaxpr(solve)(params, x, x).jaxpr, checkpoint, policies)


def _block(p: Any, x: Any) -> Any:
    return x + jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


_CKPT = jax.checkpoint(_block, policy=jax.checkpoint_policies.dots_saveable)


@pytest.mark.parametrize("combine", [
    lambda honest, dead: honest + 0.0 * dead,
    lambda honest, dead: honest + dead - dead,
    lambda honest, dead: jnp.where(False, dead, honest),
    lambda honest, dead: honest + jnp.sum(jnp.zeros_like(dead) * dead),
])
def test_stage_a_marks_a_checkpoint_nothing_uses(combine: Callable[..., Any]) -> None:
    def solve(params: Any, x: Any, y: Any) -> Any:
        def loss(p: Any) -> Any:
            honest = jnp.mean((_block(p, x) - y) ** 2)  # no checkpoint
            return combine(honest, jnp.mean((_CKPT(p, x) - y) ** 2))
        return jax.value_and_grad(loss)(params)

    outcome = check_checkpoint_region(_stage_a_summary(solve), **OPTIONS)
    assert not outcome.passed and DEAD in outcome.message


def test_stage_a_marks_the_honest_checkpoint_live() -> None:
    def solve(params: Any, x: Any, y: Any) -> Any:
        def loss(p: Any) -> Any:
            value = jnp.mean((_CKPT(p, x) - y) ** 2)
            return jnp.where(jnp.isfinite(value), value, 0.0)
        return jax.value_and_grad(loss)(params)

    summary = _stage_a_summary(solve)
    assert check_checkpoint_region(summary, **OPTIONS).passed
    lives = [e["live"] for j in summary["jaxprs"] for e in j["eqns"] if e.get("checkpoint")]
    assert lives and all("tanh" in names for names in lives)


def test_a_spec_rule_over_every_signature() -> None:
    """`at_every_signature`: one program for every shape reads as before; per-signature
    programs pass only together, and a failure names its first shape and how many more."""
    from jaxjudge.rules.jaxpr import at_every_signature

    ok, bad = RuleOutcome(True, "fine."), RuleOutcome(False, "missing.")
    assert at_every_signature([([], bad)]) is bad
    assert at_every_signature([(["B=1"], ok), (["B=2", "B=3"], ok)]) is ok
    out = at_every_signature([(["B=1"], ok), (["B=2", "B=3"], bad), (["B=4"], bad)])
    assert not out.passed
    assert out.message.startswith("At B=2 (and at 2 other input shapes): missing.")
    assert "It holds at B=1" in out.message
    assert not at_every_signature([]).passed
