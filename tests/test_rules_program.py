"""The StableHLO dataflow rule on real exported programs (both ends of the JAX range) and on
hostile text. Fixtures: tests/data/programs/, made by make_fixtures.py there."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.stablehlo import (
    ParseError,
    TensorType,
    parse_module,
    parsed_once,
    tensor_types,
)
from jaxjudge.rules import PROGRAM_RULES, RuleOutcome, check_rematerialized_activation
from jaxjudge.rules.program import analyze_program

FIXTURES = Path(__file__).parent / "data" / "programs"
VERSIONS = ["0.10.2", "0.4.38"]
OPTIONS = {"activation": "tanh", "product": ["x", "params.w1"], "primal": ["loss"],
           "gradients": ["grads"], "policy": "dots_saveable"}
ANALYZE = {k: OPTIONS[k] for k in ("activation", "product", "primal", "gradients")}

# case -> (expected kind, a phrase the learner-facing message must contain)
OK = ("ok", "recomputes the tanh from the saved product")
SAVED = ("saved_read", "reads the forward tanh")
RECOMPUTED = ("recomputed", "recomputes x @ params['w1'] too")
EXPECTED: dict[str, tuple[str, str]] = {
    "dots_saveable": OK,
    "dots_saveable_poly": OK,
    "dots_saveable_nocse": OK,
    "remat_checkpoint_dots": OK,
    "separate_loss_grad": OK,
    "einsum": OK,
    "dots_no_batch_dims": OK,
    "inner_jit": OK,
    "inner_jit_matmul": OK,
    "scan": OK,
    "transposed_matmul": OK,
    # Honest styles: loops over the batch (also with a symbolic batch: real_dynamic_slice),
    # per-example gradients, jacrev, float64 inside the block, a decoy beside a real one.
    "scan_rows": OK,
    "scan_rows_poly": OK,
    "fori_rows": OK,
    "fori_rows_poly": OK,
    "map_rows": OK,
    "map_rows_poly": OK,
    "vmap_rows": OK,
    "vmap_rows_poly": OK,
    "jacrev": OK,
    "float64_block": OK,
    "real_with_decoy": OK,
    # Two tanh of one product and no rematerialization: the backward pass reads a forward one.
    "double_tanh_no_checkpoint": SAVED,
    # The review's attacks: forward duplicates and decoys next to a block that is not
    # rematerialized, or next to one that recomputes the product.
    "decoy_duplicate_forward": SAVED,
    "decoy_paired": SAVED,
    "decoy_separate_plain_grad": SAVED,
    "decoy_nothing_saveable": RECOMPUTED,
    "nothing_saveable": RECOMPUTED,
    "no_policy": RECOMPUTED,
    "everything_saveable": SAVED,
    "no_checkpoint": SAVED,
    "checkpoint_outside_grad": SAVED,
    "checkpoint_without_tanh": SAVED,
    "decoy": SAVED,
    # Disguises of the saved forward activation (clamped, a sigmoid spelling of tanh, a scaled
    # W1, a hand-written backward), each beside a fake pair; a checkpoint around the tanh alone.
    "launder_clamp": SAVED,
    "launder_sigmoid": SAVED,
    "launder_scaled_w1": SAVED,
    "launder_manual_backward": SAVED,
    "hidden_layer_only": ("saved_read", "put the whole block"),
    # Honest: a clipped pre-activation, the block applied row by row in a Python loop.
    "clipped_preactivation": OK,
    "python_rows": OK,
    "no_matmul": ("no_product", "No matrix product of x and params['w1']"),
    "tanh_formula": ("no_activation", "no tanh is applied"),
}


def load(case: str, version: str, signature: str | None = None) -> ProgramInfo:
    stem = FIXTURES / f"{case}-jax{version}"
    meta = json.loads(Path(f"{stem}.json").read_text(encoding="utf-8"))
    text = gzip.decompress(Path(f"{stem}.mlir.gz").read_bytes()).decode("utf-8")
    return ProgramInfo(signature or meta["signature"], text, meta["args"], meta["outs"])


def check(programs: list[ProgramInfo], **options: object) -> RuleOutcome:
    return check_rematerialized_activation(programs, **{**OPTIONS, **options})  # type: ignore[arg-type]


def test_every_case_has_fixtures_for_both_versions() -> None:
    made = {p.name.removesuffix(".mlir.gz") for p in FIXTURES.glob("*.mlir.gz")}
    wanted = {f"{case}-jax{v}" for case in EXPECTED for v in VERSIONS}
    assert wanted == made
    total = sum(p.stat().st_size for p in FIXTURES.iterdir() if p.is_file())
    assert total < 200_000


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_fixture(case: str, version: str) -> None:
    kind, phrase = EXPECTED[case]
    program = load(case, version)
    assert program.args == ["params.b1", "params.b2", "params.w1", "params.w2", "x", "y"]
    assert program.outs == ["grads.b1", "grads.b2", "grads.w1", "grads.w2", "loss"]
    finding = analyze_program(program, **ANALYZE)  # type: ignore[arg-type]
    assert finding.kind == kind, finding
    outcome = PROGRAM_RULES["rematerialized_activation"]([program], **OPTIONS)
    assert outcome.passed is (kind == "ok")
    assert phrase in outcome.message


def test_the_recomputed_tanh_is_read_against_the_forward_one() -> None:
    """dots_saveable: two tanh of one product; the second (recomputed) meets the cotangent
    that flowed through the first, and the first meets nothing of its own continuation."""
    finding = analyze_program(load("dots_saveable", "0.10.2"), **ANALYZE)  # type: ignore[arg-type]
    assert (finding.products, finding.activations, finding.reads) == (1, 2, {1: [0]})
    # Computing the loss separately adds a forward-only tanh (of its own product).
    separate = analyze_program(load("separate_loss_grad", "0.10.2"), **ANALYZE)  # type: ignore[arg-type]
    assert (separate.products, separate.activations) == (2, 3)


def test_primal_and_gradient_outputs_are_named_by_options() -> None:
    program = load("dots_saveable", "0.10.2")
    # If the recomputed tanh had to stay out of every output's ancestry, nothing passes.
    assert analyze_program(program, **{**ANALYZE, "primal": ["grads"]}).kind == "not_recomputed"  # type: ignore[arg-type]
    assert analyze_program(program, **{**ANALYZE, "gradients": ["loss"]}).kind == "not_recomputed"  # type: ignore[arg-type]
    assert check([program], primal=["loss"], gradients=["grads.w1", "grads.b1"]).passed


def test_outputs_must_match_main_results() -> None:
    good = load("dots_saveable", "0.10.2")
    short = ProgramInfo(good.signature, good.text, good.args, good.outs[:-1])
    assert analyze_program(short, **ANALYZE).kind == "parse_error"  # type: ignore[arg-type]


def test_failure_messages_say_what_to_do() -> None:
    single = check([load("no_checkpoint", "0.10.2")]).message
    assert "dots_saveable" in single and "jax.grad" in single
    recomputed = check([load("nothing_saveable", "0.10.2")]).message
    assert "dots_saveable" in recomputed and "nothing_saveable" in recomputed
    # The fix names the policy the problem asks for.
    other = check([load("no_checkpoint", "0.10.2")], policy="checkpoint_dots").message
    assert "checkpoint_policies.checkpoint_dots" in other and "dots_saveable" not in other


def test_every_program_must_pass_and_the_failing_signature_is_named() -> None:
    good = load("dots_saveable", "0.10.2", "B=2,D=3,H=4")
    bad = load("everything_saveable", "0.10.2", "B=1,D=2,H=2")
    assert check([good, load("scan", "0.4.38", "B=4,D=4,H=5")]).passed
    outcome = check([good, bad])
    assert not outcome.passed
    assert outcome.message.startswith("For input shapes B=1,D=2,H=2:")
    # Every signature failing the same way: no need to single one out.
    same = check([bad, load("no_checkpoint", "0.10.2", "B=3,D=3,H=3")])
    assert not same.passed and not same.message.startswith("For input shapes")


def test_argument_names_decide_what_the_product_is() -> None:
    program = load("dots_saveable", "0.10.2")
    renamed = ProgramInfo(program.signature, program.text, ["a", "b", "c", "d", "e", "f"],
                          program.outs)
    assert analyze_program(renamed, **ANALYZE).kind == "no_product"  # type: ignore[arg-type]
    # Other arguments: the backward pass multiplies a value computed elementwise from x (the
    # cotangent of out = x + ...) by W2, but no tanh is computed from that product.
    w2 = analyze_program(program, **{**ANALYZE, "product": ["params.w2", "x"]})
    assert w2.kind == "no_activation"


# -- hand-written modules: call-site sensitivity, parser corners --------------------------------

HELPER = (FIXTURES / "helper_calls.mlir").read_text(encoding="utf-8")


def helper(second: str) -> ProgramInfo:
    text = HELPER.replace("SECOND", second)
    return ProgramInfo("B=2,D=3,H=4", text, ["x", "params.w1"], ["loss"])


def test_a_helper_called_twice_is_analyzed_per_call_site() -> None:
    # act(x·W1) + act(constant): one tanh of the product, not two.
    assert analyze_program(helper("%2"), **ANALYZE).activations == 1  # type: ignore[arg-type]
    # act(x·W1) twice: two tanh of the product.
    assert analyze_program(helper("%0"), **ANALYZE).activations == 2  # type: ignore[arg-type]


def test_parser_reads_result_groups_successors_and_blocks() -> None:
    text = (FIXTURES / "parser_corners.mlir").read_text(encoding="utf-8")
    main = parse_module(text).functions()["main"]
    entry, second = main.regions[0]
    assert entry.args == ["%a", "%b"]
    assert entry.ops[0].results == ["%p#0", "%p#1", "%q"]
    assert entry.ops[1].operands == ["%p#1"]
    assert second.args == ["%c"] and second.ops[0].name == "func.return"


# -- hostile input: always a failed outcome, never an exception ---------------------------------

DEEP_REGIONS = '"a.b"() ({\n' * 5000
DEEP_BRACKETS = '"a.b"() {x = ' + "[" * 100_000 + "]" * 100_000 + "} : () -> ()"
RECURSIVE = """
"builtin.module"() ({
  "func.func"() <{sym_name = "main"}> ({
  ^bb0(%x: tensor<f32>):
    %0 = "func.call"(%x) <{callee = @main}> : (tensor<f32>) -> tensor<f32>
    "func.return"(%0) : (tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
"""
HOSTILE = {
    "empty": "",
    "garbage": "this is not MLIR at all } ) ]",
    "binary": "\x00\x01\x02 %%% ^^^",
    "unterminated string": '"builtin.module"() ({ "func.func"() <{sym_name = "main}> ({',
    "deep regions": DEEP_REGIONS,
    "deep brackets": DEEP_BRACKETS,
    "huge result count": '%0:9999999 = "a.b"() : () -> ()',
    "unicode result count": '%0:\u00b2 = "a.b"() : () -> ()',
    "too long": "%" * 9_000_000,
    "recursive call": RECURSIVE,
    "unknown callee": RECURSIVE.replace("@main}", "@nowhere}"),
    "no main": '"builtin.module"() ({ }) : () -> ()',
    "truncated": HELPER.replace("SECOND", "%0")[: len(HELPER) // 2],
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_text_fails_cleanly(name: str) -> None:
    program = ProgramInfo("B=2,D=3,H=4", HOSTILE[name], ["x", "params.w1"], ["loss"])
    assert analyze_program(program, **ANALYZE).kind == "parse_error"  # type: ignore[arg-type]
    outcome = check([program])
    assert not outcome.passed
    assert "could not be analyzed" in outcome.message or "too large to verify" in outcome.message


def test_parse_module_raises_only_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_module(DEEP_REGIONS)
    with pytest.raises(ParseError):
        parse_module(123)  # type: ignore[arg-type]


def test_parsed_once_parses_each_text_once_within_its_scope() -> None:
    text = load("dots_saveable", "0.10.2").text
    assert parse_module(text) is not parse_module(text)  # outside: every call parses
    with parsed_once():
        first = parse_module(text)
        assert parse_module(text[:1] + text[1:]) is first  # an equal text, another object
        with pytest.raises(ParseError):
            parse_module(DEEP_REGIONS)
        with pytest.raises(ParseError):  # a failure is not remembered as a module
            parse_module(DEEP_REGIONS)
    assert parse_module(text) is not first  # nothing outlives the scope


@pytest.mark.parametrize(
    "programs",
    [[], "text", None, [object()], [load("dots_saveable", "0.10.2")] * 65],
    ids=["empty", "string", "none", "not-programs", "too-many"],
)
def test_malformed_program_lists_fail_cleanly(programs: object) -> None:
    outcome = check_rematerialized_activation(programs, **OPTIONS)  # type: ignore[arg-type]
    assert isinstance(outcome, RuleOutcome) and not outcome.passed


def test_malformed_fields_and_options_fail_cleanly() -> None:
    good = load("dots_saveable", "0.10.2")
    bad_text = ProgramInfo("s", None, good.args, good.outs)  # type: ignore[arg-type]
    bad_args = ProgramInfo("s", good.text, "x", good.outs)  # type: ignore[arg-type]
    bad_outs = ProgramInfo("s", good.text, good.args, [1, 2])  # type: ignore[arg-type]
    assert not check([bad_outs]).passed
    assert not check([bad_text]).passed
    assert not check([bad_args]).passed
    assert not check([good], product=["x"]).passed
    # One input path per main argument, or the mapping is ambiguous: refuse rather than guess.
    short = ProgramInfo("s", good.text, good.args[:-1], good.outs)
    assert analyze_program(short, **ANALYZE).kind == "parse_error"  # type: ignore[arg-type]
    assert not check([good], activation=7).passed
    assert check([good]).passed  # the same program with good thresholds passes
    for bad in ({"local_share": 0}, {"fed_share": 2.0}, {"fed_share": True},
                {"local_share": "0.5"}):
        outcome = check([good], **bad)
        assert not outcome.passed and "misconfigured" in outcome.message, bad


def test_parser_keeps_each_ops_tensor_types() -> None:
    text = gzip.decompress((FIXTURES / "dots_saveable-jax0.10.2.mlir.gz").read_bytes()).decode()
    main = parse_module(text).functions()["main"]
    dot = next(op for op in main.regions[0][0].ops if op.name == "stablehlo.dot_general")
    assert dot.operand_types() == [TensorType((2, 3), "f32"), TensorType((3, 4), "f32")]
    assert dot.result_types() == [TensorType((2, 4), "f32")]
    assert dot.result_types()[0].elements() == 8
    assert tensor_types("(tensor<?x4xi8>, tensor<i32>)") == [
        TensorType((None, 4), "i8"), TensorType((), "i32")]
    assert TensorType((None, 4), "i8").elements() is None
