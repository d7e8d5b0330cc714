"""The "rematerialized-mlp-block" problem package is complete, consistent and reproducible.

These tests never grade a submission (tests/test_samples.py does that with grade()); they check
the package's own files: metadata, the reference against the published examples, the generated
test cases, and the sample submissions' expected.toml.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np
import pytest

from jaxjudge import ProblemError, Verdict, load_problem

PROBLEM_ID = "rematerialized-mlp-block"
PROBLEM = load_problem(PROBLEM_ID)
ROOT = PROBLEM.root
SUBMISSIONS = PROBLEM.submissions_dir
EXPECTED_TOML = tomllib.loads((SUBMISSIONS / "expected.toml").read_text(encoding="utf-8"))["files"]
EXAMPLES = json.loads((ROOT / "tests" / "examples.json").read_text(encoding="utf-8"))["examples"]
CASES = PROBLEM.cases("submit")
PARAM_KEYS = ("w1", "b1", "w2", "b2")
REQUIREMENT_NAMES = {"differentiated-checkpoint", "tanh-rematerialized"}
# Samples that change process-wide state at import (x64 mode, patched numpy/jax) or never return
# are not imported here; the sandboxed sample suite covers them.
UNSAFE_TO_IMPORT = {
    "wrong_float64_output.py",
    "forge_patch_allclose.py",
    "accepted_float64_block.py",
}


def _import_file(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"rmb_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _f32_inputs(inputs: dict[str, Any]) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    params = {k: np.asarray(inputs["params"][k], np.float32) for k in PARAM_KEYS}
    return params, np.asarray(inputs["x"], np.float32), np.asarray(inputs["y"], np.float32)


def _leaves(tree: Any) -> list[tuple[str, Any]]:
    """(name, value) for loss and each gradient, in a fixed order."""
    return [("loss", tree["loss"])] + [(f"grads.{k}", tree["grads"][k]) for k in PARAM_KEYS]


def _matches_contract(got: Any, expected: Any) -> bool:
    """The same check the grader's comparison makes: exact keys, float32, shapes, tolerance."""
    tol = PROBLEM.tolerance
    if not isinstance(got, dict) or set(got) != {"loss", "grads"}:
        return False
    if not isinstance(got["grads"], dict) or set(got["grads"]) != set(PARAM_KEYS):
        return False
    for (_, g), (_, e) in zip(_leaves(got), _leaves(expected), strict=True):
        g_arr, e_arr = np.asarray(g), np.asarray(e, np.float64)
        if g_arr.dtype != np.float32 or g_arr.shape != e_arr.shape:
            return False
        g64 = g_arr.astype(np.float64)
        if not np.all(np.isfinite(g64)):
            return False
        if np.any(np.abs(g64 - e_arr) > tol.atol + tol.rtol * np.abs(e_arr)):
            return False
    return True


def _float64_truth(params: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> dict:
    """Loss and gradients derived by hand, in float64, without jax."""
    w1, b1, w2, b2 = (params[k].astype(np.float64) for k in PARAM_KEYS)
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    h = np.tanh(x64 @ w1 + b1)
    err = x64 + h @ w2 + b2 - y64
    d_out = 2.0 * err / err.size
    d_pre = (d_out @ w2.T) * (1.0 - h**2)
    grads = {"w1": x64.T @ d_pre, "b1": d_pre.sum(0), "w2": h.T @ d_out, "b2": d_out.sum(0)}
    return {"loss": np.mean(err**2), "grads": grads}


@pytest.fixture(scope="module")
def reference_solve():
    return jax.jit(_import_file(PROBLEM.reference_path).solve)


# -- metadata and files ----------------------------------------------------------------------
def test_problem_loads_with_its_files() -> None:
    assert PROBLEM.id == PROBLEM_ID
    assert {r.name for r in PROBLEM.requirements} == REQUIREMENT_NAMES
    assert PROBLEM.statement.startswith("# Rematerialized MLP Block")
    assert "dots_saveable" in PROBLEM.statement
    starter = ast.parse(PROBLEM.starter)
    assert any(isinstance(n, ast.FunctionDef) and n.name == "solve" for n in starter.body)
    assert PROBLEM.fingerprint()


def test_statement_prints_the_published_examples() -> None:
    for example in EXAMPLES:
        out = example["output"]
        assert f"loss = {out['loss']}" in PROBLEM.statement, example["name"]


# -- reference --------------------------------------------------------------------------------
@pytest.mark.parametrize("example", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
def test_reference_reproduces_published_numbers(reference_solve, example: dict) -> None:
    got = jax.device_get(reference_solve(*_f32_inputs(example["inputs"])))
    for (name, value), (_, printed) in zip(_leaves(got), _leaves(example["output"]), strict=True):
        value64 = np.asarray(value, np.float64)
        printed64 = np.asarray(printed, np.float64)
        assert value64.shape == printed64.shape, name
        close = (np.round(value64, 6) == printed64) | (np.abs(value64 - printed64) <= 6e-7)
        assert close.all(), f"{example['name']} {name}: {value64} vs published {printed64}"


def test_generate_check_reproduces_cases_json() -> None:
    script = ROOT / "tests" / "generate.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- test cases -------------------------------------------------------------------------------
def _shape_of(case) -> tuple[int, int, int]:
    b, d = np.asarray(case.inputs["x"]).shape
    return b, d, np.asarray(case.inputs["params"]["b1"]).shape[0]


def test_cases_file_layout() -> None:
    raw = json.loads((ROOT / "tests" / "cases.json").read_text(encoding="utf-8"))
    assert raw["generator"] == "tests/generate.py" and isinstance(raw["seed"], int)
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names)
    visible = [c for c in CASES if c.visible]
    hidden = [c for c in CASES if not c.visible]
    assert [c.name for c in visible] == ["example-1", "example-2", "example-3"]
    assert [c.name for c in hidden] == [f"hidden-{i:02d}" for i in range(1, len(hidden) + 1)]
    assert len(hidden) >= 40
    assert all(c.note for c in CASES)


def test_visible_cases_are_the_published_examples() -> None:
    for case, example in zip(PROBLEM.examples(), EXAMPLES, strict=True):
        want = _f32_inputs(example["inputs"])
        got = _f32_inputs(case.inputs)
        for w, g in zip(jax.tree.leaves(want), jax.tree.leaves(got), strict=True):
            np.testing.assert_array_equal(g, w)


def test_case_inputs_respect_constraints_and_are_exact_float32() -> None:
    limits = PROBLEM.constraints.model_extra or {}
    (b_lo, b_hi), (d_lo, d_hi), (h_lo, h_hi) = limits["B"], limits["D"], limits["H"]
    for case in CASES:
        b, d, h = _shape_of(case)
        assert b_lo <= b <= b_hi and d_lo <= d <= d_hi and h_lo <= h <= h_hi, case.name
        params, x, y = _f32_inputs(case.inputs)
        want = {"w1": (d, h), "b1": (h,), "w2": (h, d), "b2": (d,)}
        assert {k: v.shape for k, v in params.items()} == want, case.name
        assert x.shape == y.shape == (b, d), case.name
        for value in jax.tree.leaves(case.inputs):
            assert float(np.float32(value)) == value, f"{case.name}: {value} is not a float32"
            assert np.isfinite(value), case.name


def test_cases_cover_every_corner_with_few_shapes() -> None:
    shapes = {_shape_of(c) for c in CASES}
    hidden_shapes = {_shape_of(c) for c in CASES if not c.visible}
    corners = {(b, d, h) for b in (1, 4) for d in (2, 4) for h in (2, 5)}
    assert corners <= hidden_shapes
    assert len(shapes) <= 12, "each distinct shape costs one XLA compile per grade"
    assert {s[0] for s in shapes} == {1, 2, 3, 4}
    assert {s[1] for s in shapes} == {2, 3, 4}
    assert {s[2] for s in shapes} == {2, 3, 4, 5}


def test_cases_include_the_special_regimes() -> None:
    zero_loss = [c for c in CASES if c.expected["loss"] == 0.0]
    assert zero_loss, "a case with y == out (exactly zero loss)"
    saturated = [c for c in CASES if np.max(np.abs(c.expected["grads"]["b1"])) < 1e-3]
    assert len(saturated) >= 3
    biggest = max(np.max(np.abs(np.asarray(c.inputs["x"]))) for c in CASES)
    assert biggest >= 100.0
    assert any(np.all(np.asarray(c.inputs["x"]) < 0) for c in CASES)


def test_expected_outputs_are_finite_float32_and_match_float64_math() -> None:
    tol = PROBLEM.tolerance
    for case in CASES:
        truth = _float64_truth(*_f32_inputs(case.inputs))
        for (name, got), (_, want) in zip(_leaves(case.expected), _leaves(truth), strict=True):
            got64 = np.asarray(got, np.float64)
            assert got64.shape == np.shape(want), f"{case.name} {name}"
            assert np.all(np.isfinite(got64)), f"{case.name} {name}"
            assert np.all(got64.astype(np.float32).astype(np.float64) == got64), case.name
            # Half the grading tolerance: room left for other correct float32 programs.
            limit = 0.5 * (tol.atol + tol.rtol * np.abs(want))
            assert np.all(np.abs(got64 - want) <= limit), f"{case.name} {name}"


# -- sample submissions -----------------------------------------------------------------------
def test_expected_toml_is_consistent() -> None:
    verdicts = {v.value for v in Verdict if v is not Verdict.SKIPPED}
    on_disk = {p.name for p in SUBMISSIONS.iterdir() if p.suffix == ".py"}
    assert set(EXPECTED_TOML) == on_disk, "every sample listed, every listed sample present"
    for name, spec in EXPECTED_TOML.items():
        assert set(spec) <= {"verdict", "failed", "mode"}, name
        assert spec["verdict"] in verdicts, name
        assert spec.get("mode", "submit") in {"run", "submit"}, name
        assert set(spec.get("failed", [])) <= REQUIREMENT_NAMES, name
        if spec["verdict"] == "requirement_failed":
            assert spec.get("failed"), f"{name}: say which requirements fail"
    seen = {spec["verdict"] for spec in EXPECTED_TOML.values()}
    assert seen == verdicts - {"internal_error"}


def test_sample_files_parse_except_the_syntax_error() -> None:
    for name in EXPECTED_TOML:
        source = (SUBMISSIONS / name).read_text(encoding="utf-8")
        if name == "compile_error_syntax.py":
            with pytest.raises(SyntaxError):
                ast.parse(source)
        else:
            ast.parse(source, filename=name)
        if source.strip():
            assert source.startswith("# "), f"{name}: start with a comment saying what it shows"


SAFE_NUMERIC = sorted(
    name
    for name, spec in EXPECTED_TOML.items()
    if spec["verdict"] in {"accepted", "wrong_answer", "requirement_failed"}
    and name not in UNSAFE_TO_IMPORT
    and not name.startswith("forge_")
)


# Wrong answers that only show on other shapes (example 1 has B = 1).
RIGHT_ON_EXAMPLE_1 = {"wrong_nan_for_even_batch.py"}


@pytest.mark.parametrize("name", SAFE_NUMERIC)
def test_sample_numbers_on_example_1(name: str) -> None:
    """Accepted and requirement-failed samples compute the reference numbers; wrong answers do
    not. Plain in-process jax, no sandbox: only for files that are safe to import."""
    example = PROBLEM.examples()[0]
    module = _import_file(SUBMISSIONS / name)
    got = jax.device_get(jax.jit(module.solve)(*_f32_inputs(example.inputs)))
    right = _matches_contract(got, example.expected)
    if EXPECTED_TOML[name]["verdict"] == "wrong_answer" and name not in RIGHT_ON_EXAMPLE_1:
        assert not right, f"{name} should be wrong on example 1"
    elif name in RIGHT_ON_EXAMPLE_1:
        assert right, f"{name} is only wrong on other shapes"
    else:
        assert right, f"{name} should reproduce the reference on example 1"


def _with_requirements(tmp_path: Path, requirements: str) -> Path:
    """A copy of the seed package whose requirements tables are replaced."""
    import shutil

    src = PROBLEM.root
    dst = tmp_path / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("submissions"))
    toml = (dst / "problem.toml").read_text(encoding="utf-8")
    toml = toml[: toml.index("[[requirements]]")] + requirements
    (dst / "problem.toml").write_text(toml, encoding="utf-8")
    return dst


SPEC = (
    '[[requirements]]\nname = "ck"\nlevel = "spec"\nrule = "checkpoint_region"\n'
    'policy = "dots_saveable"\ncontains = "tanh"\n'
)
PROGRAM = (
    '[[requirements]]\nname = "rm"\nlevel = "program"\nrule = "rematerialized_activation"\n'
    'activation = "tanh"\nproduct = ["x", "params.w1"]\nprimal = ["loss"]\n'
    'gradients = ["grads"]\npolicy = "dots_saveable"\n'
)


def test_spec_requirements_need_a_program_level_corroborator(tmp_path: Path) -> None:
    # The jaxpr summary comes from the untrusted stage: a spec-level requirement alone could be
    # forged into points, so such a package does not load.
    with pytest.raises(ProblemError, match="no program-level requirement to corroborate"):
        load_problem(_with_requirements(tmp_path, SPEC))
    bad = SPEC + 'corroborated_by = ["nope"]\n' + PROGRAM
    with pytest.raises(ProblemError, match="not program-level requirements"):
        load_problem(_with_requirements(tmp_path / "b", bad))
    on_program = SPEC + PROGRAM + 'corroborated_by = ["ck"]\n'
    with pytest.raises(ProblemError, match="only spec-level"):
        load_problem(_with_requirements(tmp_path / "c", on_program))
    ok = load_problem(_with_requirements(tmp_path / "d", SPEC + PROGRAM))
    assert ok.corroborators(ok.requirements[0]) == ["rm"]


@pytest.mark.parametrize(
    ("requirements", "error"),
    [
        (SPEC.replace("checkpoint_region", "checkpoint_regoin") + PROGRAM,
         "requirement 'ck': unknown rule 'checkpoint_regoin' (known rules: "),
        (SPEC.replace('level = "spec"', 'level = "program"') + PROGRAM,
         "rule 'checkpoint_region' reads the jaxpr summary: use level = 'spec'"),
        (SPEC.replace('contains = "tanh"', 'contians = "tanh"') + PROGRAM,
         "contains: Field required; contians: Extra inputs are not permitted"),
        (SPEC + PROGRAM.replace('product = ["x", "params.w1"]', 'product = ["x"]'),
         "bad options for rule 'rematerialized_activation': product"),
        (SPEC + PROGRAM.replace('gradients = ["grads"]', "gradients = []"),
         "gradients: List should have at least 1 item"),
        (SPEC.replace('"dots_saveable"', '"dots saveable!"') + PROGRAM,
         "policy: String should match pattern"),
        (SPEC + PROGRAM + "local_share = 0\n", "local_share: Input should be greater than 0"),
        (SPEC + PROGRAM + "fed_share = 1.5\n",
         "fed_share: Input should be less than or equal to 1"),
    ],
    ids=["unknown-rule", "wrong-level", "typo-option", "bad-product", "no-gradients", "bad-name",
         "no-local-share", "fed-share-over-1"],
)
def test_rule_errors_are_the_authors_at_load_time(
    tmp_path: Path, requirements: str, error: str
) -> None:
    """An unknown rule or a bad option stops the package from loading, naming the file, the
    requirement and the key, instead of failing every learner's submission later."""
    with pytest.raises(ProblemError) as info:
        load_problem(_with_requirements(tmp_path, requirements))
    assert "problem.toml" in str(info.value)
    assert error in str(info.value)


def test_dtypes_and_per_output_tolerances_are_declared(tmp_path: Path) -> None:
    """A problem states each input's and output's element type and may loosen the tolerance per
    output; the grader takes both from problem.toml, not from float32 assumptions."""
    import shutil

    dst = tmp_path / PROBLEM.root.name
    shutil.copytree(PROBLEM.root, dst, ignore=shutil.ignore_patterns("submissions"))
    toml = (dst / "problem.toml").read_text(encoding="utf-8")
    x_arg = 'name = "x"\nkind = "array"\n'
    toml = toml.replace(x_arg, x_arg + 'dtype = "int8"\n')
    toml = toml.replace("[returns]\nloss = []", '[returns]\nloss = {shape = [], dtype = "float64"}')
    toml = toml.replace("[scoring]", '[tolerance.outputs]\n"grads" = {rtol = 0.1, atol = 0.2}\n'
                                     '"grads.w1" = {rtol = 0.3, atol = 0.4}\n\n[scoring]')
    (dst / "problem.toml").write_text(toml, encoding="utf-8")
    p = load_problem(dst)
    assert p.input_dtype("x") == "int8" and p.input_dtype("params", "w1") == "float32"
    assert p.output_dtypes()["loss"] == "float64" and p.output_dtypes()["grads.w2"] == "float32"
    assert p.tolerance.for_output("grads.w1") == (0.3, 0.4)
    assert p.tolerance.for_output("grads.b1") == (0.1, 0.2)
    assert p.tolerance.for_output("loss") == (p.tolerance.rtol, p.tolerance.atol)
    bad = toml.replace('dtype = "int8"', 'dtype = "int7"')
    (dst / "problem.toml").write_text(bad, encoding="utf-8")
    with pytest.raises(ProblemError, match=r"arguments\.1\.dtype"):
        load_problem(dst)


GROWTH = ('[[requirements]]\nname = "g"\nlevel = "program"\nrule = "independent_of_dim"\n'
          'dim = "B"\n')


def test_the_growth_check_needs_ranges_for_its_probe_shapes(tmp_path: Path) -> None:
    """independent_of_dim exports at probe shapes chosen from [constraints]: every dimension
    needs a range, and the probed one room for two sizes two apart."""
    ok = load_problem(_with_requirements(tmp_path / "a", GROWTH))
    assert list(ok.probes().values()) == [{"B": b, "D": 3, "H": 3} for b in (1, 2, 3, 4)]
    no_range = _with_requirements(tmp_path / "b", GROWTH)
    toml = (no_range / "problem.toml").read_text(encoding="utf-8").replace("\nH = [2, 5]", "")
    (no_range / "problem.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(ProblemError, match=r"requirement 'g': .*range \[low, high\].*\['H'\]"):
        load_problem(no_range)
    narrow = _with_requirements(tmp_path / "c", GROWTH.replace('"B"', '"D"'))
    toml = (narrow / "problem.toml").read_text(encoding="utf-8").replace("D = [2, 4]", "D = [2, 3]")
    (narrow / "problem.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(ProblemError, match="two allowed sizes of D at least 2 apart"):
        load_problem(narrow)


@pytest.mark.parametrize(("declared", "error"), [
    ("{ range = [2, 4], multiple_of = 0 }", "multiple_of: Input should be greater than or equal"),
    ("{ range = [2, 4], step = 2 }", "step: Extra inputs are not permitted"),
    ("{ range = [4, 2] }", "range = [4, 2] needs 0 <= low <= high"),
    ("{ range = [5, 7], multiple_of = 4 }", "no multiple of 4 lies in [5, 7]"),
    ("{ range = [2, 4.5] }", "range.1: Input should be a valid integer"),
    ("{ multiple_of = 2 }", "range: Field required"),
])
def test_a_dimension_step_is_checked_at_load_time(
        tmp_path: Path, declared: str, error: str) -> None:
    """`D = { range = [low, high], multiple_of = k }` is data every dimension choice honours:
    a malformed one stops the package from loading, naming the dimension and the key."""
    folder = _with_requirements(tmp_path, GROWTH)
    toml = (folder / "problem.toml").read_text(encoding="utf-8")
    (folder / "problem.toml").write_text(toml.replace("D = [2, 4]", f"D = {declared}"),
                                         encoding="utf-8")
    with pytest.raises(ProblemError) as info:
        load_problem(folder)
    assert "constraints.D: " in str(info.value) and error in str(info.value)


def test_probe_shapes_honour_a_dimension_step(tmp_path: Path) -> None:
    folder = _with_requirements(tmp_path, GROWTH)
    toml = (folder / "problem.toml").read_text(encoding="utf-8")
    toml = toml.replace("D = [2, 4]", "D = { range = [2, 9], multiple_of = 4 }")
    (folder / "problem.toml").write_text(toml, encoding="utf-8")
    stepped = load_problem(folder)
    assert stepped.constraints.dims()["D"].multiple_of == 4
    assert stepped.constraints.ranges()["D"] == (2, 9)
    assert list(stepped.probes().values()) == [{"B": b, "D": 4, "H": 3} for b in (1, 2, 3, 4)]
    assert stepped.constraints.violations({"B": 2, "D": 6}) == [
        "D = 6 is not a multiple of 4, as the constraints require (2 <= D <= 9, D a multiple "
        "of 4)"]
    blocks = load_problem("blockwise-attention-online-softmax")
    assert sorted(d["T"] for d in blocks.probes().values()) == [16, 20, 24, 28, 32]


def test_the_plan_exports_only_the_probe_shapes_no_test_has() -> None:
    from jaxjudge.grading.plan import plan_for

    problem = load_problem("per-example-gradient-clipping")
    plan = plan_for(problem, "submit")
    # B = 1 and B = 3 with D = 3 are test shapes: their programs are probes too, not exported
    # twice.
    extra = {p["id"]: plan.sig_dims[p["id"]] for p in plan.probes}
    assert extra == {f"p{b - 1}": {"B": b, "D": 3} for b in (2, 4, 5, 6)}
    reused = plan.probe_ids - set(extra)
    assert sorted(plan.sig_dims[i]["B"] for i in reused) == [1, 3]
    assert [a["shape"] for a in plan.probes[0]["args"][1:3]] == [[2, 3], [2]]


@pytest.mark.parametrize(("old", "new", "said"), [
    ('name = "g"\nkind = "array"\nshape = ["N"]', 'name = "g"\nkind = "array"\nshape = [4]',
     "cotangent = 'g' ([4])"),
    ('name = "g"\nkind = "array"\nshape = ["N"]', 'name = "g"\nkind = "scalar"',
     "cotangent = 'g' (no shape)"),
])
def test_the_rules_runs_arguments_share_a_declared_shape(tmp_path: Path, old: str, new: str,
                                                         said: str) -> None:
    """The custom_vjp rules run at other shapes lays x and g out side by side: a problem whose
    cotangent has another shape is the author's error at load, not a run that quietly checks
    the rules at one shape only."""
    import shutil

    src = ROOT.parent / "straight-through-estimator"
    ok = tmp_path / "ok" / src.name
    shutil.copytree(src, ok, ignore=shutil.ignore_patterns("submissions"))
    assert load_problem(ok).requirements  # the bundled problem loads as it is
    bad = tmp_path / "bad" / src.name
    shutil.copytree(ok, bad)
    toml = (bad / "problem.toml").read_text(encoding="utf-8")
    assert old in toml
    (bad / "problem.toml").write_text(toml.replace(old, new), encoding="utf-8")
    with pytest.raises(ProblemError) as info:
        load_problem(bad)
    assert "needs argument and cotangent to be array arguments of one declared shape" in str(
        info.value)
    assert said in str(info.value)


@pytest.mark.parametrize(("restart", "error"), [
    ('{ input = "v", output = "u" }', "trajectory_restart names input 'v'"),
    ('{ input = "u", output = "sigma" }', "trajectory_restart's output 'sigma' has shape []"),
    ('{ input = "w", output = "w_sn", any_scale = true }', None),
])
def test_a_restart_names_an_input_and_an_output_of_one_shape(
        tmp_path: Path, restart: str, error: str | None) -> None:
    """trajectory_restart starts the program from one of its outputs: an input or output the
    problem lacks, or two shapes, stop the package at load time; w and w_sn share one."""
    import shutil

    src = load_problem("spectral-norm-power-iteration").root
    dst = tmp_path / src.name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("submissions"))
    toml = dst / "problem.toml"
    text = toml.read_text(encoding="utf-8")
    old = 'trajectory_restart = { input = "u", output = "u", any_scale = true }'
    assert old in text
    toml.write_text(text.replace(old, f"trajectory_restart = {restart}"), encoding="utf-8")
    if error is None:
        assert load_problem(dst).requirements
        return
    with pytest.raises(ProblemError) as info:
        load_problem(dst)
    assert error in str(info.value)
