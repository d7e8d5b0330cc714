"""Run on my own input: a learner's inputs, checked against the problem's declared arguments and
constraints before anything runs.

A custom input is a test without an expected output: the trusted reference computes it (the
reference graded like a submission on the same inputs, jaxjudge.grading.pipeline), and the
report shows got against expected for it, worth no points. The checks here make sure the input
is one the problem promises to handle: every argument present with its declared keys, ranks and
element types, named dimensions consistent across arguments and within the constraints'
ranges, finite numbers, and at most MAX_ELEMENTS numbers in all.
"""

from __future__ import annotations

import math
from typing import Any

from jaxjudge.problems.package import Problem, TestCase

MAX_CUSTOM = 3
MAX_ELEMENTS = 4096
CUSTOM_PREFIX = "custom-"
_INT_RANGE = {"int8": 2**7, "int16": 2**15, "int32": 2**31, "int64": 2**63, "uint8": 2**8,
              "uint16": 2**16, "uint32": 2**32}


class CustomInputError(ValueError):
    """The input is not one the problem accepts (a caller error: HTTP 422, CLI exit 2)."""


def _shape(value: Any, where: str, budget: list[int]) -> list[int]:
    """The shape of a rectangular nested list of numbers (a number: [])."""
    if isinstance(value, list):
        if not value:
            return [0]
        shapes = [_shape(v, where, budget) for v in value]
        if any(s != shapes[0] for s in shapes):
            raise CustomInputError(f"{where}: the nested lists are not rectangular")
        return [len(value), *shapes[0]]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CustomInputError(f"{where}: {type(value).__name__} is not a number")
    if not math.isfinite(value):
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
    shape = _shape(value, where, budget)
    if len(shape) != len(declared):
        raise CustomInputError(f"{where}: expected {len(declared)} dimensions "
                               f"({', '.join(map(str, declared)) or 'a scalar'}), got "
                               f"{len(shape)}")
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
            if not float(v).is_integer() or not low <= v < high:
                raise CustomInputError(f"{where}: {dtype} values must be integers in "
                                       f"[{low}, {high})")


def _check_ranges(problem: Problem, dims: dict[str, int], where: str) -> None:
    extra = problem.constraints.model_extra or {}
    for name, size in dims.items():
        bounds = extra.get(name)
        if (isinstance(bounds, list) and len(bounds) == 2
                and all(isinstance(b, int) for b in bounds)
                and not bounds[0] <= size <= bounds[1]):
            raise CustomInputError(f"{where}: {name} = {size} is outside the constraints "
                                   f"({bounds[0]} <= {name} <= {bounds[1]})")


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
        if not isinstance(given, dict) or sorted(given) != sorted(names):
            raise CustomInputError(f"{where}: give exactly the arguments {', '.join(names)}")
        dims: dict[str, int] = {}
        budget = [0]
        for arg in problem.arguments:
            value = given[arg.name]
            if arg.shapes is not None:
                if not isinstance(value, dict) or sorted(value) != sorted(arg.shapes):
                    raise CustomInputError(f"{where}: {arg.name} must be a dict with keys "
                                           f"{', '.join(sorted(arg.shapes))}")
                for key, declared in arg.shapes.items():
                    _check_leaf(value[key], declared, arg.leaf_dtype(key, default),
                                f"{where}: {arg.name}[{key!r}]", dims, budget)
            else:
                _check_leaf(value, arg.shape or [], arg.leaf_dtype(None, default),
                            f"{where}: {arg.name}", dims, budget)
        _check_ranges(problem, dims, where)
        out.append(TestCase(name=f"{CUSTOM_PREFIX}{i}", visible=True, inputs=dict(given),
                            expected=None, note="your own input"))
    return out
