"""Numeric comparison, done in the trusted parent on outputs decoded from stage B's JSON.

Order of checks mirrors what a learner should fix first: structure, then dtype/shape, then
finiteness, then closeness (|got - expected| <= atol + rtol * |expected| element-wise).

`ml_dtypes` (a dependency of jaxlib) gives names to JAX's extra dtypes (bfloat16, float8_*,
int4, ...): an output in one of them is decoded as such and reported as a wrong dtype, like any
dtype numpy does not know (see `ForeignArray`). It is imported only when an output names a dtype
numpy does not know by itself: importing it costs ~0.5 s of CPU (it registers hundreds of ufunc
loops), which a one-off `jaxjudge grade` of a float32 problem would otherwise pay for nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

MAX_DEPTH = 16
MAX_ELEMENTS = 4_000_000
MAX_DTYPE_CHARS = 64
_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


@cache
def _ml_dtypes() -> frozenset[np.dtype[Any]]:
    """ml_dtypes' dtypes (kind "V", so named one by one), importing it on first use: numpy
    only knows their names once it is imported."""
    import ml_dtypes

    return frozenset(
        np.dtype(t) for t in vars(ml_dtypes).values()
        if isinstance(t, type) and issubclass(t, np.generic)
    )


class DecodeError(ValueError):
    """Stage B's output did not have the documented shape (never trusted blindly)."""


class TooDeep(DecodeError):
    """The output is nested deeper than MAX_DEPTH: the program's fault, a wrong answer."""

    def __init__(self) -> None:
        super().__init__(
            f"the output is nested deeper than {MAX_DEPTH} levels; return the structure "
            "described in the statement"
        )


@dataclass(frozen=True)
class ForeignArray:
    """An output array whose dtype has no numpy equivalent here (an unknown name, strings,
    objects, records...): kept by name and shape so the comparison reports the dtype."""

    dtype: str
    shape: tuple[int, ...]

    def tolist(self) -> None:
        return None  # no values to show in a report


@dataclass(frozen=True)
class Comparison:
    passed: bool
    message: str
    max_abs_error: float | None = None


def decode_output(node: Any, _depth: int = 0, _budget: list[int] | None = None) -> Any:
    """Tagged JSON from stage B -> dicts, lists, None and numpy arrays, with size caps."""
    budget = _budget if _budget is not None else [MAX_ELEMENTS]
    if _depth > MAX_DEPTH:
        raise TooDeep()
    if not isinstance(node, dict) or "t" not in node:
        raise DecodeError("malformed output node")
    tag = node["t"]
    if tag == "dict":
        items = node.get("v")
        if not isinstance(items, dict):
            raise DecodeError("malformed dict node")
        return {str(k): decode_output(v, _depth + 1, budget) for k, v in items.items()}
    if tag == "list":
        items = node.get("v")
        if not isinstance(items, list):
            raise DecodeError("malformed list node")
        return [decode_output(v, _depth + 1, budget) for v in items]
    if tag == "none":
        return None
    if tag == "array":
        return _decode_array(node, budget)
    raise DecodeError(f"unknown output node type {tag!r}")


def _decode_array(node: dict[str, Any], budget: list[int]) -> np.ndarray | ForeignArray:
    dtype, shape, data = node.get("dtype"), node.get("shape"), node.get("data")
    if not isinstance(dtype, str) or not isinstance(shape, list) or not isinstance(data, list):
        raise DecodeError("malformed array node")
    if len(shape) > 8 or not all(
        isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_ELEMENTS for d in shape
    ):
        raise DecodeError("malformed array shape")
    size = math.prod(shape)
    budget[0] -= size
    if size != len(data) or budget[0] < 0:
        raise DecodeError("array data does not match its shape, or is too large")
    values = [_SPECIAL.get(v, v) if isinstance(v, str) else v for v in data]
    if not all(isinstance(v, (int, float)) for v in values):  # bool is an int
        raise DecodeError("array data must be numbers")
    np_dtype = _numeric_dtype(dtype)
    if np_dtype is None:
        name = "".join(c for c in dtype[:MAX_DTYPE_CHARS] if c.isprintable())
        return ForeignArray(name or "?", tuple(shape))
    try:
        with np.errstate(all="ignore"):
            return np.asarray(values, dtype=np_dtype).reshape(shape)
    except (ValueError, OverflowError, TypeError) as exc:  # e.g. NaN or 10**30 as an int32
        raise DecodeError(f"array data does not fit its dtype {np_dtype}") from exc


def _numeric_dtype(name: str) -> np.dtype[Any] | None:
    """The numpy dtype called `name` if its values decode from JSON numbers (numpy's own bool,
    ints, floats, complex, whose real part stage B writes; or ml_dtypes'), else None."""
    if len(name) > MAX_DTYPE_CHARS:
        return None
    np_dtype = _dtype_named(name)
    if np_dtype is not None and np_dtype.kind in "biufc" and np_dtype.names is None \
            and np_dtype.subdtype is None:
        return np_dtype
    known = _ml_dtypes()  # numpy knows ml_dtypes' names from here on
    np_dtype = _dtype_named(name)
    return np_dtype if np_dtype in known else None


def _dtype_named(name: str) -> np.dtype[Any] | None:
    try:
        return np.dtype(name)
    except Exception:  # numpy raises TypeError, ValueError, SyntaxError... on odd names
        return None


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "a dict"
    if isinstance(value, list):
        return "a list/tuple"
    if value is None:
        return "None"
    return "an array"


def _walk_structure(expected: Any, got: Any, path: str, problems: list[str]) -> None:
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            problems.append(f"{path or 'the result'} should be a dict with keys "
                            f"{sorted(expected)}, got {_describe(got)}")
            return
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        for k in missing:
            problems.append(f"missing key {_join(path, k)!r}")
        for k in extra:
            problems.append(f"unexpected key {_join(path, k)!r}")
        for k in sorted(set(expected) & set(got)):
            _walk_structure(expected[k], got[k], _join(path, k), problems)
    elif not isinstance(got, (np.ndarray, ForeignArray)):
        problems.append(f"{path!r} should be an array, got {_describe(got)}")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _leaves(expected: Any, got: Any, path: str = ""):
    if isinstance(expected, dict):
        for k in sorted(expected):
            yield from _leaves(expected[k], got[k], _join(path, k))
    else:
        yield path, np.asarray(expected, dtype=np.float64), got


def non_finite_output(value: Any, path: str = "") -> str | None:
    """The path of the first output (plain lists and dicts, as a report holds them) with a NaN
    or an infinity in it, else None: such an expected output compares with nothing."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k in sorted(v):
                found = non_finite_output(v[k], _join(path, str(k)))
                if found is not None:
                    return found
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, float) and not math.isfinite(v):
            return path or "the output"
    return None


def allowance(expected: Any, rtol: float, atol: float) -> Any:
    """How far an output may be from `expected`, element-wise: atol + rtol * |expected|. The one
    rule `compare` applies (authoring's margin check measures honest errors against it)."""
    return atol + rtol * np.abs(expected)


def compare(
    expected: Any,
    got: Any,
    *,
    rtol: float,
    atol: float,
    dtype: str = "float32",
    leaf: Callable[[str], tuple[str, float, float]] | None = None,
    reveal: bool = True,
) -> Comparison:
    """Compare one test's decoded output with the reference's expected output. `leaf(path)`
    gives an output's (dtype, rtol, atol) when they differ per output. `reveal=False` (a hidden
    test): a wrong value is named by its output and the size of its error only, never by an
    index, the expected value or the value got, which would leak the hidden test."""
    problems: list[str] = []
    _walk_structure(expected, got, "", problems)
    if problems:
        return Comparison(False, "wrong output structure: " + "; ".join(problems[:5]))
    worst: tuple[float, str, tuple[int, ...], float, float, float, float] | None = None
    max_err = 0.0
    default = (dtype, rtol, atol)
    for path, exp, arr in _leaves(expected, got):
        dtype, rtol, atol = leaf(path) if leaf is not None else default
        if str(arr.dtype) != dtype:
            return Comparison(False, f"{path!r} has dtype {arr.dtype}, expected {dtype}")
        if arr.shape != exp.shape:
            return Comparison(
                False, f"{path!r} has shape {tuple(arr.shape)}, expected {tuple(exp.shape)}"
            )
        val = arr.astype(np.float64)
        if not np.all(np.isfinite(val)):
            bad = "NaN" if np.any(np.isnan(val)) else "infinity"
            return Comparison(False, f"{path!r} contains {bad}")
        err = np.abs(val - exp)
        if err.size:
            max_err = max(max_err, float(err.max()))
            excess = err - allowance(exp, rtol, atol)
            idx = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.ndim else ()
            over = float(excess[idx]) if excess.ndim else float(excess)
            if over > 0 and (worst is None or over > worst[0]):
                worst = (over, path, tuple(int(i) for i in idx), float(val[idx]),
                         float(exp[idx]), rtol, atol)
    if worst is not None:
        _, path, idx, g, e, rtol, atol = worst
        if not reveal:
            return Comparison(
                False,
                f"{path} is off by {abs(g - e):.3g}, more than atol={atol:g} + "
                f"rtol={rtol:g}·|expected| allows",
                max_err,
            )
        where = f"[{', '.join(map(str, idx))}]" if idx else ""
        return Comparison(
            False,
            f"{path}{where} is {g:.7g}, expected {e:.7g} (error {abs(g - e):.3g} exceeds "
            f"atol={atol:g} + rtol={rtol:g}·|expected|)",
            max_err,
        )
    if leaf is not None:
        return Comparison(True, "matches within the tolerances", max_err)
    return Comparison(True, f"matches within rtol={rtol:g}, atol={atol:g}", max_err)
