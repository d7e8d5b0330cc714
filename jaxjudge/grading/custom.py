"""Run on my own input: a learner's inputs, checked against the problem's declared arguments and
constraints before anything runs.

A custom input is a test without an expected output: the trusted reference computes it (the
reference graded like a submission on the same inputs, jaxjudge.grading.pipeline), and the
report shows got against expected for it, worth no points. The checks here make sure the input
is one the problem promises to handle: every argument present with its declared keys, ranks and
element types, named dimensions consistent across arguments and allowed by the constraints
(their ranges and steps: jaxjudge.analysis.dimrange), finite numbers, and at most MAX_ELEMENTS
numbers in all.
"""

from __future__ import annotations

import math
import sys
from typing import Any

from jaxjudge.problems.package import Problem, TestCase

MAX_CUSTOM = 3
MAX_ELEMENTS = 4096
CUSTOM_PREFIX = "custom-"
_SLACK = 2.0**-20  # relative: declared value bounds hold at float32's precision
# Each float type's largest finite value (ml_dtypes.finfo's, written out: importing ml_dtypes
# costs a one-off grade ~10 ms of CPU while its stages import jax).
_LARGEST = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38,
            "float32": 3.4028234663852886e38, "float64": sys.float_info.max}
_INT_RANGE = {"int8": 2**7, "int16": 2**15, "int32": 2**31, "int64": 2**63, "uint8": 2**8,
              "uint16": 2**16, "uint32": 2**32}


class CustomInputError(ValueError):
    """The input is not one the problem accepts (a caller error: HTTP 422, CLI exit 2)."""


class _TooDeep(Exception):
    """Lists nested deeper than the argument's declared number of dimensions."""


def _shape(value: Any, where: str, budget: list[int], rank: int) -> list[int]:
    """The shape of a rectangular nested list of numbers (a number: []), nested at most
    `rank` deep: deeper nesting is refused before it is walked (a JSON body may nest a
    thousand lists, which would otherwise exhaust the recursion limit)."""
    if isinstance(value, list):
        if rank == 0:
            raise _TooDeep
        if not value:
            return [0]
        shapes = [_shape(v, where, budget, rank - 1) for v in value]
        if any(s != shapes[0] for s in shapes):
            raise CustomInputError(f"{where}: the nested lists are not rectangular")
        return [len(value), *shapes[0]]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CustomInputError(f"{where}: {type(value).__name__} is not a number")
    try:  # an integer beyond a float's range (JSON allows 1e400 written out) is not finite
        finite = math.isfinite(value)
    except OverflowError:
        finite = False
    if not finite:
        raise CustomInputError(f"{where}: every number must be finite")
    budget[0] += 1
    if budget[0] > MAX_ELEMENTS:
        raise CustomInputError(f"an input holds more than {MAX_ELEMENTS} numbers")
    return []


def _leaves(value: Any) -> list[Any]:
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            stack.extend(v)
        else:
            out.append(v)
    return out


def _check_leaf(value: Any, declared: list[str | int], dtype: str, where: str,
                dims: dict[str, int], budget: list[int]) -> None:
    expected = (f"{where}: expected {len(declared)} dimensions "
                f"({', '.join(map(str, declared)) or 'a scalar'}), got")
    try:
        shape = _shape(value, where, budget, len(declared))
    except _TooDeep:
        raise CustomInputError(f"{expected} more") from None
    if len(shape) != len(declared):
        raise CustomInputError(f"{expected} {len(shape)}")
    for name, size in zip(declared, shape, strict=True):
        if isinstance(name, int) and size != name:
            raise CustomInputError(f"{where}: a dimension must be {name}, got {size}")
        if isinstance(name, str) and dims.setdefault(name, size) != size:
            raise CustomInputError(f"{where}: {name} is {size} here but {dims[name]} elsewhere")
    if dtype in _INT_RANGE or dtype == "bool":
        bound = _INT_RANGE.get(dtype, 2)
        low = 0 if dtype.startswith("uint") or dtype == "bool" else -bound
        high = bound
        for v in _leaves(value):
            if not low <= v < high or not float(v).is_integer():
                raise CustomInputError(f"{where}: {dtype} values must be integers in "
                                       f"[{low}, {high})")
    elif dtype in _LARGEST:
        # Finite as a Python float is not enough: 1e39 is inf in float32.
        largest = _LARGEST[dtype]
        if any(abs(v) > largest for v in _leaves(value)):
            raise CustomInputError(f"{where}: every number must be finite in {dtype} "
                                   f"(at most {largest:.4g} in magnitude)")


def _as_lists(value: Any) -> Any:
    """A numpy or JAX array or scalar (what a library caller has at hand) as the nested lists
    and numbers JSON gives; anything else as it is, for the checks to judge."""
    if isinstance(value, list | int | float):
        return value
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _check_values(problem: Problem, plain: dict[str, Any], dims: dict[str, int],
                  where: str) -> None:
    """Every number within its input's declared values (`constraints.values`): outside them
    the reference computes what the statement does not promise, and a correct program may
    differ."""
    for path, (low, high) in problem.constraints.values.items():
        name, _, key = path.partition(".")
        lo, hi = (dims.get(b) if isinstance(b, str) else b for b in (low, high))
        if lo is None or hi is None:  # a dimension this input does not have
            continue
        value = plain[name][key] if key else plain[name]
        # At float32's precision: 1e-6 given for a scale bounded by 1e-6 is 9.99999997e-07.
        lo, hi = lo - abs(lo) * _SLACK, hi + abs(hi) * _SLACK
        bad = next((v for v in _leaves(value) if not lo <= v <= hi), None)
        if bad is not None:
            shown = " <= ".join(b if isinstance(b, str) else f"{b:g}" for b in (low, path, high))
            raise CustomInputError(f"{where}: {path} holds {bad:g}, outside the constraints "
                                   f"({shown})")


def custom_cases(problem: Problem, inputs: list[dict[str, Any]]) -> list[TestCase]:
    """The learner's inputs as visible tests "custom-1", ... (expected filled in later), or
    CustomInputError saying what is wrong with which one."""
    if not isinstance(inputs, list) or not 1 <= len(inputs) <= MAX_CUSTOM:
        raise CustomInputError(f"give between 1 and {MAX_CUSTOM} custom inputs")
    default = problem.constraints.dtype
    out = []
    for i, given in enumerate(inputs, 1):
        where = f"custom input {i}"
        names = [a.name for a in problem.arguments]
        if (not isinstance(given, dict) or not all(isinstance(k, str) for k in given)
                or sorted(given) != sorted(names)):
            raise CustomInputError(f"{where}: give exactly the arguments {', '.join(names)}")
        dims: dict[str, int] = {}
        budget = [0]
        plain: dict[str, Any] = {}
        for arg in problem.arguments:
            value = given[arg.name]
            if arg.shapes is not None:
                if (not isinstance(value, dict) or not all(isinstance(k, str) for k in value)
                        or sorted(value) != sorted(arg.shapes)):
                    raise CustomInputError(f"{where}: {arg.name} must be a dict with keys "
                                           f"{', '.join(sorted(arg.shapes))}")
                plain[arg.name] = {key: _as_lists(v) for key, v in value.items()}
                for key, declared in arg.shapes.items():
                    _check_leaf(plain[arg.name][key], declared, arg.leaf_dtype(key, default),
                                f"{where}: {arg.name}[{key!r}]", dims, budget)
            else:
                plain[arg.name] = _as_lists(value)
                _check_leaf(plain[arg.name], arg.shape or [], arg.leaf_dtype(None, default),
                            f"{where}: {arg.name}", dims, budget)
        broken = problem.constraints.violations(dims)
        if broken:
            raise CustomInputError(f"{where}: {broken[0]}")
        _check_values(problem, plain, dims, where)
        out.append(TestCase(name=f"{CUSTOM_PREFIX}{i}", visible=True, inputs=plain,
                            expected=None, note="your own input"))
    return out
