"""Stage B's reader of jax.export artifacts (jaxjudge/stages/exported.py), without jax.

Whatever jax's own `export.deserialize` reads from an honest artifact, the reader must read the
same (trees, shapes, dtypes, kept inputs, the module's text), on every supported jax; an
attacker-shaped artifact must end in ValueError, never in another exception; and a stage B
that runs every test on the interpreter must not import jax at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jax import export

from jaxjudge.grading.stage_common import STAGES_DIR
from jaxjudge.stages import exported as reader


def _s(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)


def _mlp(params, x, y):
    h = jnp.tanh(x @ params["w1"])
    return {"loss": jnp.sum((h @ params["w2"] - y) ** 2), "grads": [h, None, (x,)]}


def _ints_and_halves(a, b, c):
    del c  # unused
    return a * 2, b.astype(jnp.float32).sum()


def _cases():
    (b,) = export.symbolic_shape("b")
    params = {"w1": _s((4, 8)), "w2": _s((8, 2))}
    return [
        (_mlp, (params, _s((3, 4)), _s((3, 2)))),
        (_mlp, (params, _s((b, 4)), _s((b, 2)))),
        (_ints_and_halves, (_s((2 * b, 3), jnp.int32), _s((5,), jnp.bfloat16),
                            _s((2,), jnp.float16))),
        (lambda t: (t[0] > 0, None), ((_s((2,)), _s((3,), jnp.int32)),)),
    ]


def _jax_text(exp) -> str:
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        return module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)


@pytest.mark.parametrize("case", range(4))
def test_reads_what_jax_reads(case: int) -> None:
    fn, args = _cases()[case]
    blob = export.export(jax.jit(fn))(*args).serialize()
    want = export.deserialize(bytearray(blob))
    got = reader.read(blob)
    assert got.platforms == tuple(want.platforms)
    assert got.nr_devices == want.nr_devices
    assert got.module_kept_var_idx == tuple(want.module_kept_var_idx)
    assert list(got.in_avals) == [(tuple(str(d) for d in a.shape), str(a.dtype))
                                  for a in want.in_avals]
    assert repr(got.in_tree) == str(want.in_tree)
    assert repr(got.out_tree) == str(want.out_tree)
    assert got.out_tree.n_leaves == len(want.out_avals)
    assert not got.ordered_effects and not got.unordered_effects
    context = reader.make_context()
    with context:
        text = got.module(context).operation.get_asm(print_generic_op_form=True,
                                                     enable_debug_info=False)
    assert text == _jax_text(want)


def test_symbolic_dims_and_dtypes_read_as_declared() -> None:
    fn, args = _cases()[2]
    got = reader.read(export.export(jax.jit(fn))(*args).serialize())
    assert got.in_avals[0] == (("2*b", "3"), "int32")
    assert [dtype for _, dtype in got.in_avals] == ["int32", "bfloat16", "float16"]


_trees = st.recursive(
    st.one_of(st.just(None), st.integers(0, 9)),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
                           st.dictionaries(st.text("abcxyz_", min_size=1, max_size=3), kids,
                                           max_size=3)),
    max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(_trees)
def test_tree_flattens_like_jax(value) -> None:
    tree = reader.Tree.of(value)
    assert repr(tree) == str(jax.tree_util.tree_structure(value))
    leaves = tree.leaves(value)
    assert leaves == jax.tree_util.tree_leaves(value)
    assert tree.unflatten(leaves) == jax.tree_util.tree_unflatten(
        jax.tree_util.tree_structure(value), leaves)
    keys = [tuple(getattr(k, "key", getattr(k, "idx", None)) for k in path)
            for path, _ in jax.tree_util.tree_flatten_with_path(value)[0]]
    assert tree.paths() == keys


def test_a_value_of_another_structure_is_refused() -> None:
    tree = reader.Tree.of({"a": 1, "b": [2, 3]})
    for other in ({"a": 1}, {"a": 1, "b": [2]}, {"a": 1, "b": (2, 3, 4)}, [1, 2]):
        with pytest.raises(ValueError):
            tree.leaves(other)
    with pytest.raises(ValueError):
        tree.unflatten([1, 2])


@pytest.fixture(scope="module")
def honest_blob() -> bytes:
    fn, args = _cases()[1]
    return export.export(jax.jit(fn))(*args).serialize()


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_damaged_artifact_is_a_value_error(honest_blob: bytes, data) -> None:
    """Flipped, cut or extended bytes: read() gives an Exported or a ValueError, nothing else
    (stage B reports a ValueError as a program it cannot load)."""
    blob = bytearray(honest_blob)
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(blob) - 1))
        blob[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.sampled_from([None, 8, len(blob) // 2, len(blob) - 3]))
    if cut is not None:
        blob = blob[:cut]
    try:
        exp = reader.read(bytes(blob))
    except ValueError:
        return
    assert isinstance(exp.in_tree, reader.Tree)


def test_garbage_is_a_value_error() -> None:
    for blob in (b"", b"\0" * 3, b"\xff" * 64, os.urandom(512)):
        with pytest.raises(ValueError):
            reader.read(blob)


def _custom_node_blob() -> bytes:
    """An honest artifact whose output tree is a registered custom pytree node: the grader
    cannot rebuild that type (it would need the submission's class)."""
    from typing import NamedTuple

    class Pair(NamedTuple):
        a: jax.Array
        b: jax.Array

    export.register_namedtuple_serialization(Pair, serialized_name="jaxjudge_test.Pair")
    return export.export(jax.jit(lambda x: Pair(x, x + 1)))(_s((2,))).serialize()


def test_a_custom_tree_node_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot rebuild"):
        reader.read(_custom_node_blob())


def _run_stage_b(tmp_path, engine: str, env: dict[str, str] | None = None) -> dict:
    (b,) = export.symbolic_shape("b")

    def fn(params, x):
        return {"y": jnp.tanh(x @ params["w"]), "n": jnp.sum(x)}

    exp = export.export(jax.jit(fn))({"w": _s((3, 2))}, _s((b, 3)))
    (tmp_path / "poly.jaxexport").write_bytes(exp.serialize())
    w = np.arange(6, dtype=np.float32).reshape(3, 2) / 10
    xs = [np.ones((n, 3), np.float32) * n for n in (1, 2)]
    spec = [{"w": {"shape": [3, 2], "dtype": "float32"}}, {"shape": ["b", 3], "dtype": "float32"}]
    job = {
        "arg_names": ["params", "x"],
        "signatures": [{"id": f"s{n}", "args": [spec[0], {"shape": [n, 3], "dtype": "float32"}]}
                       for n in (1, 2)],
        "programs": [{"id": "poly", "export": "poly.jaxexport", "args": spec,
                      "signatures": ["s1", "s2"]}],
        "tests": [{"name": f"t{n}", "signature": f"s{n}",
                   "inputs": [{"w": w.tolist()}, x.tolist()]} for n, x in zip((1, 2), xs,
                                                                          strict=True)],
        "allowed_custom_calls": ["shape_assertion"], "engine": engine,
    }
    (tmp_path / "job.json").write_text(json.dumps(job))
    script = str(STAGES_DIR / "execute.py")
    code = ("import importlib.util, json, sys\n"
            f"spec = importlib.util.spec_from_file_location('stage_b', {script!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "m.main(sys.argv[1])\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] == 'jax')))\n")
    out = subprocess.run([sys.executable, "-I", "-c", code, str(tmp_path)], capture_output=True,
                         text=True, timeout=120, check=True, input="g",
                         env={**os.environ, **(env or {})})
    result = json.loads((tmp_path / "result.json").read_text())
    result["jax_modules"] = json.loads(out.stdout.strip().splitlines()[-1])
    want = [fn({"w": w}, x) for x in xs]
    for n, expect in zip((1, 2), want, strict=True):
        got = result["outputs"][f"t{n}"]
        assert got["ok"], got
        y = got["value"]["v"]["y"]
        assert y["shape"] == [n, 2]
        np.testing.assert_allclose(np.asarray(y["data"]).reshape(n, 2), expect["y"], rtol=1e-6)
    return result


def test_an_interpreted_stage_b_never_imports_jax(tmp_path) -> None:
    result = _run_stage_b(tmp_path, "interpret")
    assert result["status"] == "ok" and result["engines"] == ["interpret"]
    assert result["jax_modules"] == [] and "jax_version" not in result


def test_a_waiting_stage_b_imports_jax_when_asked(tmp_path) -> None:
    """Started ahead with the grader's guess that the program needs XLA, stage B imports jax
    while it waits; the interpreter still runs what it can."""
    result = _run_stage_b(tmp_path, "interpret", {"JAXJUDGE_STAGE_WAIT": "1",
                                                  "JAXJUDGE_STAGE_B_JAX": "1"})
    assert result["status"] == "ok" and result["engines"] == ["interpret"]
    assert "jax" in result["jax_modules"] and result["timings"]["import_jax"] > 0
    assert result["timings"]["wait"] >= 0


def test_stage_b_imports_jax_for_xla(tmp_path) -> None:
    result = _run_stage_b(tmp_path, "xla")
    assert result["status"] == "ok" and result["engines"] == ["xla"]
    assert "jax" in result["jax_modules"] and result["jax_version"] == jax.__version__


def _execute_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("jaxjudge_test_execute",
                                                  STAGES_DIR / "execute.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_jax_must_read_an_artifact_as_the_grader_did() -> None:
    """Stage B's XLA path deserializes with jax and runs only what the reader's checks saw."""
    execute = _execute_module()
    blobs = [export.export(jax.jit(fn))(*args).serialize() for fn, args in _cases()[:3]]
    for blob in blobs:
        execute._same_reading(export.deserialize(bytearray(blob)), reader.read(blob), jax)
    with pytest.raises(ValueError, match="differently"):
        execute._same_reading(export.deserialize(bytearray(blobs[0])), reader.read(blobs[1]),
                              jax)
    with pytest.raises(ValueError, match="differently"):
        execute._same_reading(export.deserialize(bytearray(blobs[1])), reader.read(blobs[2]),
                              jax)


# -- crafted artifacts (red-team findings of 2026-12-06) --------------------------------------


def _crafted(*, unique_avals: int = 0, shardings: bool = True, name: bool = True) -> bytes:
    """An artifact of one f32[2] input and output, built field by field with jax's generated
    builders: `unique_avals` offsets to one aval table, the shardings or the function name left
    out on request."""
    import flatbuffers

    s = reader.schema()
    b = flatbuffers.Builder(1024)

    def leaf() -> int:
        s.PyTreeDefStart(b)
        s.PyTreeDefAddKind(b, s.PyTreeDefKind.leaf)
        return s.PyTreeDefEnd(b)

    def vector(start, items: list[int]) -> int:
        start(b, len(items))
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()

    dim = b.CreateString("2")
    s.AbstractValueStartShapeVector(b, 1)
    b.PrependUOffsetTRelative(dim)
    shape = b.EndVector()
    s.AbstractValueStart(b)
    s.AbstractValueAddShape(b, shape)
    s.AbstractValueAddDtype(b, s.DType.f32)
    aval = s.AbstractValueEnd(b)
    in_tree, out_tree = leaf(), leaf()
    in_avals = vector(s.ExportedStartInAvalsVector, [aval])
    out_avals = vector(s.ExportedStartOutAvalsVector, [aval])
    uniques = vector(s.ExportedStartUniqueAvalsVector, [aval] * unique_avals) if (
        unique_avals) else None
    s.ShardingStart(b)
    none = s.ShardingEnd(b)
    in_sh = vector(s.ExportedStartInShardingsVector, [none])
    out_sh = vector(s.ExportedStartOutShardingsVector, [none])
    cpu = b.CreateString("cpu")
    platforms = vector(s.ExportedStartPlatformsVector, [cpu])
    fun = b.CreateString("f")
    s.ExportedStart(b)
    if name:
        s.ExportedAddFunctionName(b, fun)
    s.ExportedAddInTree(b, in_tree)
    s.ExportedAddOutTree(b, out_tree)
    s.ExportedAddInAvals(b, in_avals)
    s.ExportedAddOutAvals(b, out_avals)
    if uniques is not None:
        s.ExportedAddUniqueAvals(b, uniques)
    if shardings:
        s.ExportedAddInShardings(b, in_sh)
        s.ExportedAddOutShardings(b, out_sh)
    s.ExportedAddPlatforms(b, platforms)
    s.ExportedAddNrDevices(b, 1)
    b.Finish(s.ExportedEnd(b))
    return bytes(b.Output())


def test_a_crafted_artifact_of_the_right_shape_is_read() -> None:
    exp = reader.read(_crafted())
    assert exp.in_avals == exp.out_avals == ((("2",), "float32"),)
    assert exp.platforms == ("cpu",) and exp.nr_devices == 1


def test_long_vectors_are_refused_before_they_are_read() -> None:
    """A 64 MiB artifact could list 16M offsets to one small table: 14 s of CPU to read 1M of
    them before the counts were checked first."""
    if not hasattr(reader.schema().Exported, "UniqueAvalsLength"):
        pytest.skip("this jax's format has no unique avals")
    blob = _crafted(unique_avals=200_000)
    with pytest.raises(ValueError, match="distinct shapes"):
        reader.read(blob)


def test_missing_shardings_or_name_are_refused_as_jax_refuses_them() -> None:
    for blob in (_crafted(shardings=False), _crafted(name=False)):
        with pytest.raises(Exception):  # noqa: B017 - jax's own error types differ by version
            export.deserialize(bytearray(blob))
        with pytest.raises(ValueError):
            reader.read(blob)


def test_output_names_too_long_together_are_refused() -> None:
    execute = _execute_module()
    long_key = "k" * 5000
    tree = reader.Tree("dict", (reader.Tree("list", (reader.Tree("leaf"),) * 300),), (long_key,))
    bomb = type("Exp", (), {"out_tree": tree})()
    with pytest.raises(execute.Rejected, match="too long"):
        execute._output_names(bomb)
    fine = type("Exp", (), {"out_tree": reader.Tree.of({"loss": 0, "grads": [1, 2]})})()
    assert execute._output_names(fine) == ["grads.0", "grads.1", "loss"]


def test_the_interpreter_runs_only_what_main_declares() -> None:
    """XLA converts each result to its declared type; the interpreter returns main's own. So a
    program whose declared outputs are not main's results goes to XLA."""
    execute = _execute_module()
    fn, args = _cases()[1]
    blob = export.export(jax.jit(fn))(*args).serialize()
    exp, context = reader.read(blob), reader.make_context()
    with context:
        text = exp.module(context).operation.get_asm(print_generic_op_form=True,
                                                     enable_debug_info=False)
    assert execute._specializer(exp, text, np, context) is not None
    exp.out_avals = tuple((shape, "int32" if not shape else dtype)
                          for shape, dtype in exp.out_avals)
    assert execute._specializer(exp, text, np, context) is None
