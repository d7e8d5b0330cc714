"""jaxjudge.grading.compare: decoding stage B's tagged JSON and comparing with the reference."""

from __future__ import annotations

import json
import subprocess
import sys

import ml_dtypes  # noqa: F401 - this file's own encoder (`arr`) names bfloat16 and friends
import numpy as np
import pytest

from jaxjudge.grading.compare import (
    MAX_DEPTH,
    DecodeError,
    ForeignArray,
    TooDeep,
    compare,
    decode_output,
)

EXPECTED = {"loss": 0.5, "grads": {"w": [[1.0, 2.0]], "b": [0.0]}}


def arr(values, dtype="float32"):
    """Stage B's encoding: numbers as JSON floats/ints (complex: the real part)."""
    a = np.asarray(values, dtype=dtype)
    data = [float(np.real(v)) if a.dtype.kind == "c" else v for v in a.reshape(-1).tolist()]
    return {"t": "array", "dtype": dtype, "shape": list(a.shape), "data": data}


def tagged(loss=0.5, w=((1.0, 2.0),), b=(0.0,), dtype="float32"):
    return {
        "t": "dict",
        "v": {
            "loss": arr(loss, dtype),
            "grads": {
                "t": "dict",
                "v": {"w": arr([list(r) for r in w], dtype), "b": arr(list(b), dtype)},
            },
        },
    }


def check(node, **kw):
    return compare(EXPECTED, decode_output(node), rtol=1e-4, atol=1e-5, **kw)


def test_exact_match_passes() -> None:
    c = check(tagged())
    assert c.passed and c.max_abs_error == 0.0


def test_within_tolerance_passes_and_outside_fails() -> None:
    assert check(tagged(w=((1.0 + 5e-5, 2.0),))).passed
    c = check(tagged(w=((1.5, 2.0),)))
    assert not c.passed
    assert "grads.w[0, 0]" in c.message and "1.5" in c.message
    assert c.max_abs_error == pytest.approx(0.5)


def test_a_hidden_test_names_the_output_and_the_error_size_only() -> None:
    """The expected value, the value got and the index would leak the hidden test."""
    got = decode_output(tagged(w=((1.8125, 2.0),)))
    c = compare(EXPECTED, got, rtol=1e-4, atol=1e-4, reveal=False)
    assert not c.passed
    assert c.message.startswith("grads.w is off by 0.812"), c.message
    assert "1.8125" not in c.message and "expected 1" not in c.message
    assert "[0, 0]" not in c.message
    assert c.max_abs_error == pytest.approx(0.8125)


def test_missing_and_extra_keys_are_named() -> None:
    node = tagged()
    del node["v"]["grads"]["v"]["b"]
    node["v"]["grads"]["v"]["c"] = arr([1.0])
    c = check(node)
    assert not c.passed
    assert "missing key 'grads.b'" in c.message and "unexpected key 'grads.c'" in c.message


def test_wrong_dtype_and_shape() -> None:
    assert "dtype float64" in check(tagged(dtype="float64")).message
    node = tagged()
    node["v"]["loss"] = arr([0.5])
    assert "shape (1,), expected ()" in check(node).message


def test_non_finite_values_fail() -> None:
    node = tagged()
    node["v"]["loss"] = {"t": "array", "dtype": "float32", "shape": [], "data": ["nan"]}
    assert "NaN" in check(node).message
    node["v"]["loss"]["data"] = ["inf"]
    assert "infinity" in check(node).message


def test_result_not_a_dict() -> None:
    c = compare(EXPECTED, decode_output({"t": "list", "v": [arr(1.0)]}), rtol=0, atol=0)
    assert not c.passed and "should be a dict" in c.message


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        {"t": "array", "dtype": "float32", "shape": [2], "data": [1.0]},
        {"t": "array", "dtype": "float32", "shape": [-1], "data": []},
        {"t": "array", "dtype": "int32", "shape": [1], "data": ["nan"]},
        {"t": "array", "dtype": "int8", "shape": [1], "data": [10**30]},
        {"t": "array", "dtype": "float32", "shape": [1], "data": [10**400]},
        {"t": "array", "dtype": "float32", "shape": [True], "data": [1.0]},
        {"t": "array", "dtype": "float32", "shape": [1], "data": ["rm -rf"]},
        {"t": "dict", "v": []},
        {"t": "pickle", "v": "x"},
        {"t": "array", "dtype": "float32", "shape": [10**7], "data": []},
    ],
)
def test_malformed_outputs_are_rejected(bad) -> None:
    with pytest.raises(DecodeError):
        decode_output(bad)


def test_deep_nesting_is_rejected() -> None:
    node: dict = arr(1.0)
    for _ in range(100):
        node = {"t": "list", "v": [node]}
    with pytest.raises(TooDeep, match=f"nested deeper than {MAX_DEPTH} levels"):
        decode_output(node)


def test_nesting_up_to_the_cap_decodes() -> None:
    node: dict = arr(1.0)
    for _ in range(MAX_DEPTH):
        node = {"t": "list", "v": [node]}
    value = decode_output(node)
    for _ in range(MAX_DEPTH):
        value = value[0]
    assert value.dtype == np.float32


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float16", "int4", "complex64"])
def test_other_float_dtypes_decode_and_are_wrong_dtypes(dtype: str) -> None:
    """JAX's extra dtypes (ml_dtypes) decode as themselves; the learner hears which one."""
    c = check(tagged(w=((1.0, 2.0),), dtype=dtype))
    assert not c.passed
    assert c.message == f"'grads.b' has dtype {dtype}, expected float32"


def test_extra_dtypes_decode_in_a_process_that_never_imported_ml_dtypes() -> None:
    """The parent imports ml_dtypes only for an output numpy cannot name by itself (a one-off
    grade saves ~0.5 s), yet a bfloat16 output still decodes as bfloat16 and is reported as a
    wrong dtype, not as an unknown one; a float32 grade never imports it."""
    code = """
import json, sys
from jaxjudge.grading.compare import compare, decode_output
f32 = {"t": "array", "dtype": "float32", "shape": [], "data": [0.5]}
ok = compare({"loss": 0.5}, decode_output({"t": "dict", "v": {"loss": f32}}),
             rtol=1e-4, atol=1e-5)
before = "ml_dtypes" in sys.modules
bf16 = {"t": "array", "dtype": "bfloat16", "shape": [], "data": [0.5]}
got = decode_output({"t": "dict", "v": {"loss": bf16}})
c = compare({"loss": 0.5}, got, rtol=1e-4, atol=1e-5)
print(json.dumps([ok.passed, before, str(got["loss"].dtype), c.message]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    passed, imported_before, dtype, message = json.loads(out)
    assert passed and not imported_before
    assert dtype == "bfloat16"
    assert message == "'loss' has dtype bfloat16, expected float32"


@pytest.mark.parametrize("dtype", ["nonsense", "object", "<U3", "f4,f4", "(2,)f4", "V8",
                                   "datetime64[s]", "x" * 10_000, "\x00\n"])
def test_unknown_dtypes_are_wrong_answers(dtype: str) -> None:
    node = tagged()
    node["v"]["loss"] = {"t": "array", "dtype": dtype, "shape": [], "data": [0.5]}
    got = decode_output(node)
    assert isinstance(got["loss"], ForeignArray)
    c = check(node)
    assert not c.passed and "'loss' has dtype" in c.message and "expected float32" in c.message
    assert len(c.message) < 200
