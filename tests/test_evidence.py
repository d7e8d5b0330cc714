"""The program part a requirement refers to (`RequirementResult.evidence`) and what the
program holds in memory next to the reference (`Report.memory`), on every problem.

For each problem in problems/ (new ones included without changes here): the reference and one
sample that fails a program-level requirement are graded for real, and every program-level
requirement carries a bounded excerpt of the verified program whose marked ops are the ones the
rule decided on; a spec-level requirement shows its corroborating requirement's excerpt, never
one of its own (stage A is not believed). Then the excerpt itself: bounded and inert whatever
the program's text holds.
"""

from __future__ import annotations

import functools
import json
import tomllib

import pytest

from jaxjudge import Grader, grade, list_problems
from jaxjudge.analysis.exported import ProgramInfo, Region
from jaxjudge.analysis.region import MAX_REGION_OPS, region_of
from jaxjudge.analysis.stablehlo import Op, parse_module
from jaxjudge.grading.evidence import MAX_EVIDENCE_CHARS, MAX_LINE_CHARS, excerpt
from jaxjudge.grading.memory import compare, profile
from jaxjudge.grading.report import Report, Verdict
from jaxjudge.grading.srclines import located, source_line_count

PROBLEMS = {p.id: p for p in list_problems()}


def _failing_sample(problem_id: str) -> str | None:
    """The first sample (by name) expected to fail a program-level requirement."""
    problem = PROBLEMS[problem_id]
    expected = problem.submissions_dir / "expected.toml"
    if not expected.is_file():
        return None
    program = {r.name for r in problem.requirements if r.level == "program"}
    table = tomllib.loads(expected.read_text(encoding="utf-8")).get("files", {})
    for name, spec in sorted(table.items()):
        if spec.get("verdict") == "requirement_failed" and program & set(spec.get("failed", [])):
            return str(name)
    return None


@functools.cache
def graded(problem_id: str, sample: str | None) -> Report:
    """One real grade (submit mode: every test shape), kept for the module's tests."""
    problem = PROBLEMS[problem_id]
    path = problem.reference_path if sample is None else problem.submissions_dir / sample
    return grade(problem, path.read_bytes(), "submit", filename=path.name)


def _check_evidence(problem_id: str, report: Report) -> None:
    problem = PROBLEMS[problem_id]
    by_name = {r.name: r for r in report.requirements}
    for req in problem.requirements:
        res = by_name[req.name]
        ran = any(t.verdict is not Verdict.SKIPPED for t in report.tests)
        if req.level == "program" and not ran:
            # No program was exported (e.g. a trace that needed a traced value in Python,
            # decided by the rule's untraceable hook): there is no program part to show.
            assert res.evidence is None
        elif req.level == "program":
            ev = res.evidence
            assert ev is not None, f"{problem_id}/{req.name}: no program part in the report"
            assert ev.text.strip() and ev.program
            assert len(ev.text) <= MAX_EVIDENCE_CHARS
            lines = ev.text.splitlines()
            assert all(len(line) <= MAX_LINE_CHARS for line in lines)
            # The ops decided on are marked, or the excerpt is a remark about the program.
            assert all(lines[i].startswith("> ") for i in ev.focus)
            assert ev.focus or all(line.startswith("  //") for line in lines)
        else:
            lenders = [by_name[n] for n in problem.corroborators(req)
                       if by_name[n].evidence is not None]
            if lenders:
                assert res.evidence == lenders[0].evidence
            else:
                assert res.evidence is None, "a spec-level requirement's own excerpt"


def _check_source_lines(problem_id: str, report: Report) -> None:
    """Every requirement whose excerpt marks ops names the reference's lines they came from,
    each a line of the file (the spec-level ones lend theirs)."""
    path = PROBLEMS[problem_id].reference_path
    n_lines = len(path.read_text(encoding="utf-8").splitlines())
    for res in report.requirements:
        ev = res.evidence
        if ev is None or not ev.focus:
            assert ev is None or not ev.source_lines
            continue
        assert ev.source_lines, f"{problem_id}/{res.name}: no source line for its marked ops"
        assert ev.source_file == path.name
        assert all(1 <= n <= n_lines for n in ev.source_lines)


@pytest.mark.parametrize("problem_id", sorted(PROBLEMS))
def test_every_program_requirement_shows_its_program_part(problem_id: str) -> None:
    report = graded(problem_id, None)
    assert report.verdict is Verdict.ACCEPTED, report.summary
    _check_evidence(problem_id, report)
    _check_source_lines(problem_id, report)
    sample = _failing_sample(problem_id)
    if sample is None:
        assert not any(r.level == "program" for r in PROBLEMS[problem_id].requirements)
        return
    failed = graded(problem_id, sample)
    assert failed.verdict is Verdict.REQUIREMENT_FAILED, failed.summary
    _check_evidence(problem_id, failed)
    _check_memory(report, failed)


def _check_memory(reference: Report, sample: Report) -> None:
    """Every problem's programs are profiled in bytes (a symbolic one as stage B specialised it
    to the largest test shape) beside the reference's at the same shapes (the reference next to
    itself: equal)."""
    assert reference.memory is not None and reference.memory.yours.peak_bytes is not None
    for report in (reference, sample):
        if report.memory is None:
            continue
        mem = report.memory
        # The reference is profiled at the same shapes when it has a program for them (it may
        # be one symbolic program where the sample's were exported per shape).
        assert mem.reference is None or mem.reference.program == mem.yours.program
        assert mem.yours.peak_arrays >= len(mem.yours.held) and mem.summary
    if reference.memory is not None:  # the reference next to itself
        assert reference.memory.yours == reference.memory.reference


def test_memory_shows_the_score_matrix_the_reference_never_builds() -> None:
    """Item 2 of #23 on blockwise attention: the full softmax holds a T x T matrix."""
    mem = graded("blockwise-attention-online-softmax", "req_full_softmax.py").memory
    assert mem is not None and mem.reference is not None and mem.yours.largest is not None
    assert mem.reference.largest is not None
    t = mem.yours.program.split("(")[1].split(",")[0]  # q(T, d): T
    assert mem.yours.largest.shape == f"{t}x{t}xf32"
    assert mem.yours.largest.bytes == int(t) * int(t) * 4 > 4 * mem.reference.largest.bytes
    assert f"Largest intermediate: {t}x{t}xf32" in mem.summary


def test_the_rematerialization_excerpt_marks_the_forward_tanh_it_reads() -> None:
    """The seed problem's failure shows the tanh of the product, the op the rule decided on."""
    report = graded("rematerialized-mlp-block", "req_no_checkpoint.py")
    ev = {r.name: r.evidence for r in report.requirements}["tanh-rematerialized"]
    assert ev is not None
    marked = [ev.text.splitlines()[i] for i in ev.focus]
    assert marked and all("stablehlo.tanh" in line for line in marked)
    assert any("stablehlo.dot_general" in line for line in ev.text.splitlines())


def test_profile_counts_what_is_live_at_once() -> None:
    """exp(x) and tanh(exp(x)) are both live when the add reads them: 2 arrays, 16 bytes."""
    text = _module(
        '    %0 = "stablehlo.exponential"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n'
        '    %1 = "stablehlo.tanh"(%0) : (tensor<2xf32>) -> tensor<2xf32>\n'
        '    %2 = "stablehlo.add"(%1, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n'
        '    "func.return"(%2) : (tensor<2xf32>) -> ()')
    mem = profile(ProgramInfo(signature="x(2)", text=text, args=["x"], outs=["y"]))
    assert mem is not None
    assert (mem.peak_arrays, mem.peak_bytes) == (2, 16)
    assert [a.op for a in mem.held] == ["stablehlo.exponential", "stablehlo.tanh"]
    assert compare(mem, mem).summary.startswith("At most 2 arrays, 16 B held at once")


# -- the excerpt: bounded and inert ----------------------------------------------------------
def _module(body: str) -> str:
    return ('"builtin.module"() ({\n  "func.func"() <{function_type = (tensor<2xf32>) -> '
            'tensor<2xf32>, sym_name = "main", sym_visibility = "public"}> ({\n'
            '  ^bb0(%arg0: tensor<2xf32>):\n' + body + '\n  }) : () -> ()\n}) : () -> ()\n')


def test_region_of_adds_producers_and_names_main_arguments() -> None:
    text = _module(
        '    %0 = "stablehlo.exponential"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n'
        '    %1 = "stablehlo.tanh"(%0) : (tensor<2xf32>) -> tensor<2xf32>\n'
        '    %2 = "stablehlo.add"(%1, %0) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n'
        '    "func.return"(%2) : (tensor<2xf32>) -> ()')
    module = parse_module(text)
    program = ProgramInfo(signature="x(2)", text=text, args=["x"], outs=["y"])
    main = module.functions()["main"]
    tanh = next(op for op in main.regions[0][0].ops if op.name == "stablehlo.tanh")
    region = region_of(module, [tanh], program)
    assert region is not None
    assert [op.name for op in region.ops] == ["stablehlo.exponential", "stablehlo.tanh"]
    ev = excerpt(region)
    assert ev.program == "x(2)"
    lines = ev.text.splitlines()
    assert "%arg0 = x" in ev.text
    assert [lines[i] for i in ev.focus] == ["> %1 = stablehlo.tanh(%0) : tensor<2xf32>"]


def test_excerpt_is_bounded_and_inert_whatever_the_program_holds() -> None:
    hostile = Op(name="stablehlo.\x1b[2Jtanh\u202e", results=["%0"], operands=["%arg0"] * 50,
                 attrs={"callee": "x\x07"}, type="() -> tensor<" + "9x" * 5000 + "f32>")
    region = Region(signature="s\x1b]0;title\x07", ops=(hostile,) * 100,
                    focus=frozenset(range(100)), note="\x1b[31mred")
    ev = excerpt(region)
    assert len(ev.text) <= MAX_EVIDENCE_CHARS
    assert all(len(line) <= MAX_LINE_CHARS for line in ev.text.splitlines())
    for text in (ev.text, ev.program):
        assert not any(c in text for c in "\x1b\x07\u202e")
    assert "more ops" in ev.text
    assert MAX_REGION_OPS <= 16  # what a rule hands over stays a few lines


def test_a_long_function_name_leaves_room_for_the_ops() -> None:
    """Red team of #23: a jitted function named with 3,000 characters made the `// in func @…`
    header use up the budget, and every op became "… more ops"."""
    op = Op(name="stablehlo.tanh", results=["%0"], operands=["%arg0"], attrs={},
            type="(tensor<2xf32>) -> tensor<2xf32>")
    ev = excerpt(Region(signature="s", ops=(op,) * 4, focus=frozenset({0}),
                        note="in func @" + "f" * 3000))
    assert sum("stablehlo.tanh" in line for line in ev.text.splitlines()) == 4
    assert "more ops" not in ev.text


def test_the_reference_profile_is_kept_for_later_processes(tmp_path, monkeypatch) -> None:
    """Profiling the reference costs a second grade (~1.7 s of a one-off `jaxjudge grade`), so
    the trusted parent keeps it in its private state directory: a later Grader reads it
    instead of grading the reference again, and ignores a file it cannot read."""
    monkeypatch.setenv("JAXJUDGE_STATE_DIR", str(tmp_path))
    problem = PROBLEMS["hessian-vector-product"]
    source = problem.reference_path.read_bytes()
    first = Grader().grade(problem, source, "run")
    assert first.memory is not None and first.memory.reference is not None
    kept = list((tmp_path / "reference-memory").glob("*.json"))
    assert len(kept) == 1

    planted = first.memory.reference.model_copy(update={"peak_arrays": 12345})
    kept[0].write_text(planted.model_dump_json())
    second = Grader().grade(problem, source + b"\n# again\n", "run")
    assert second.memory is not None and second.memory.reference == planted

    kept[0].write_text("{not json")
    third = Grader().grade(problem, source + b"\n# once more\n", "run")
    assert third.memory is not None and third.memory.reference == first.memory.reference


def test_memory_names_the_tanh_a_symbolic_program_keeps() -> None:
    """Item 2 of #23 on the seed problem, whose programs are shape-polymorphic: sized at the
    largest test shape, and the array kept beyond the reference's named by what it is."""
    ref = graded("rematerialized-mlp-block", None).memory
    assert ref is not None and ref.yours.peak_bytes and "?" not in ref.yours.program
    kept = graded("rematerialized-mlp-block", "req_no_checkpoint.py").memory
    assert kept is not None and kept.reference == ref.yours
    assert kept.yours.peak_arrays == ref.yours.peak_arrays + 1
    assert "you also keep a 4x5xf32 tanh result, which the reference does not" in kept.summary
    saved = graded("rematerialized-mlp-block", "req_everything_saveable.py").memory
    assert saved is not None and "computed from a tanh" in saved.summary
    fewer = graded("rematerialized-mlp-block", "req_nothing_saveable.py").memory
    assert fewer is not None and "you also keep" not in fewer.summary


def test_the_profiled_shape_is_the_problems_not_a_learners_input() -> None:
    """A learner's own, larger input must not move the shapes the memory is compared at (the
    reference is profiled without it)."""
    from jaxjudge.grading.plan import plan_for
    from jaxjudge.problems.package import TestCase

    problem = PROBLEMS["rematerialized-mlp-block"]
    plan = plan_for(problem, "run")
    first = problem.cases("run")[0]
    big = {k: v for k, v in first.inputs.items()}
    big["x"] = big["y"] = [[0.5] * len(first.inputs["x"][0])] * 40
    mine = plan_for(problem, "run", [TestCase(name="custom-1", visible=True, inputs=big,
                                              expected=None)])
    assert plan.profile_sig is not None and mine.profile_sig == plan.profile_sig


def test_forged_source_locations_show_no_line() -> None:
    """Locations past the end of the file, under a 200 KB file name or another file's path:
    the honest verdict, and none of them reaches the report."""
    report = graded("rematerialized-mlp-block", "forge_source_locations.py")
    assert report.verdict is Verdict.ACCEPTED, report.summary
    for res in report.requirements:
        assert res.evidence is not None and res.evidence.focus
        assert res.evidence.source_lines == [] and res.evidence.source_file == ""


def test_a_location_table_is_read_never_believed() -> None:
    """Only entries that name the file, at a line inside it, for an op index: anything else in
    the table (not JSON, other shapes, huge numbers, a megabyte file name) is skipped."""
    good = [3, "stablehlo.tanh", "solution.py", 7]
    tanh = "stablehlo.tanh"
    table = [good, [4, tanh, "solution.py", 10**12], [5, tanh, "x" * 1_000_000, 2],
             [6, tanh, "/usr/lib/jax/core.py", 2], [7, "a", "solution.py", 0],
             [-1, "a", "solution.py", 1], [8, "a", "solution.py", True], "junk", [9], {}]
    assert located(json.dumps(table), "solution.py", 20) == {3: ("stablehlo.tanh", 7)}
    assert located(json.dumps([good]), "solution.py", 6) == {}  # past the end of the file
    for raw in ("", "not json", "{}", "[" * 100_000, json.dumps([good] * 10) + "x"):
        assert located(raw, "solution.py", 20) == {}
    assert source_line_count(b"a\nb") == source_line_count(b"a\r\nb\n") == 2


def test_a_line_counts_only_for_the_op_it_names() -> None:
    """A table that does not match the program (another op at that index) gives no line."""
    text = (
        '"builtin.module"() ({\n  "func.func"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>,'
        ' sym_name = "main"}> ({\n  ^bb0(%arg0: tensor<2xf32>):\n'
        '    %0 = "stablehlo.tanh"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>\n'
        '    "func.return"(%0) : (tensor<2xf32>) -> ()\n  }) : () -> ()\n}) : () -> ()\n'
    )
    module = parse_module(text)
    tanh = next(op for op in _walk_all(module) if op.name == "stablehlo.tanh")
    assert tanh.index == 2  # the module, main, then the tanh: stage B's numbering

    def lines(table: dict[int, tuple[str, int]]) -> tuple[int, ...]:
        program = ProgramInfo(signature="B=2", text=text, args=["x"], outs=["y"],
                              located=table)
        region = region_of(module, [tanh], program)
        assert region is not None
        return region.lines

    assert lines({2: ("stablehlo.tanh", 4)}) == (4,)
    assert lines({2: ("stablehlo.exponential", 4)}) == ()
    assert lines({3: ("stablehlo.tanh", 4)}) == ()


def _walk_all(module) -> list[Op]:
    out, stack = [], list(reversed(module.ops))
    while stack:
        op = stack.pop()
        out.append(op)
        stack.extend(o for region in reversed(op.regions) for block in reversed(region)
                     for o in reversed(block.ops))
    return out


def test_a_memory_shape_is_bounded_whatever_the_rank() -> None:
    """A rank-600 intermediate must not flood the report (red team of #23)."""
    from jaxjudge.grading.memory import MAX_SHAPE_CHARS

    dims = "x".join(["1"] * 600)
    t = f"tensor<{dims}xf32>"
    text = f"""
"builtin.module"() ({{
  "func.func"() <{{function_type = ({t}) -> {t}, sym_name = "main"}}> ({{
  ^bb0(%arg0: {t}):
    %0 = "stablehlo.tanh"(%arg0) : ({t}) -> {t}
    %1 = "stablehlo.add"(%0, %arg0) : ({t}, {t}) -> {t}
    "func.return"(%1) : ({t}) -> ()
  }}) : () -> ()
}}) : () -> ()
"""
    mem = profile(ProgramInfo(signature="x", text=text, args=[], outs=[], dims={}))
    assert mem is not None and mem.largest is not None
    assert len(mem.largest.shape) <= MAX_SHAPE_CHARS and "600 dims" in mem.largest.shape
    assert len(compare(mem, mem).summary) < 400
