"""Small integer arrays a loop's gates are computed from, run exactly (`small`).

`jaxjudge.analysis.stepgates` runs a loop body's control values step by step; the folds it uses
hold one value per node (a splat). A guard built from an index vector,
`jnp.any(4 * j + jnp.arange(4) < T)` or `jnp.bitwise_or.reduce(2 * t + jnp.arange(2))`, holds
several: this module evaluates such arrays when they are small (MAX_ELEMENTS) and computed
exactly from known integers (1-d iota, broadcasts that add axes of size 1 or spread a
scalar, integer elementwise ops, compare, select, and a reduce to a scalar), as XLA would:
`or`, `and` and `xor` bitwise, a value past its type unknown (None), anything else unknown.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from jaxjudge.analysis.dataflow import Graph, Kind, Step
from jaxjudge.analysis.folding import COMPARE, Value, fits, is_int
from jaxjudge.analysis.stablehlo import Op, tensor_types

MAX_ELEMENTS = 1024  # elements of an array run this way (as stepgates' constant tables)


def _reducer(op: Op) -> str | None:
    """The one op a `stablehlo.reduce`'s body applies to its two arguments and returns
    (`stablehlo.or` for `jnp.any`); None for any other body (`maximum(a, a)` returns the
    init, not the maximum)."""
    if len(op.regions) != 1 or len(op.regions[0]) != 1:
        return None
    block = op.regions[0][0]
    if len(block.args) != 2 or len(block.ops) != 2:
        return None
    body, ret = block.ops
    if (ret.name != "stablehlo.return" or len(body.results) != 1
            or ret.operands != body.results
            or sorted(body.operands) != sorted(block.args)):
        return None
    return body.name


_ARRAY_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "stablehlo.add": np.add, "stablehlo.subtract": np.subtract,
    "stablehlo.multiply": np.multiply, "stablehlo.maximum": np.maximum,
    "stablehlo.minimum": np.minimum, "stablehlo.and": np.bitwise_and,
    "stablehlo.or": np.bitwise_or, "stablehlo.xor": np.bitwise_xor,
}
# A reduce to a scalar, init included; `or`, `and` and `xor` are bitwise, as XLA runs them
# (on i1, whose values are 0 and 1, that is any / all / parity).
_REDUCERS: dict[str, Callable[[np.ndarray, int], int]] = {
    "stablehlo.or": lambda a, init: int(np.bitwise_or.reduce(a, initial=init)),
    "stablehlo.and": lambda a, init: int(np.bitwise_and.reduce(a, initial=init)),
    "stablehlo.xor": lambda a, init: int(np.bitwise_xor.reduce(a, initial=init)),
    "stablehlo.maximum": lambda a, init: max(int(a.max()), init),
    "stablehlo.minimum": lambda a, init: min(int(a.min()), init),
    "stablehlo.add": lambda a, init: int(a.sum()) + init,
}


def _array_op(op: Op, args: list[np.ndarray], shape: tuple[int, ...],
              element: str) -> np.ndarray | None:
    """One integer op on small arrays (0-d for a known scalar), exactly; None when not one
    `small` covers. Only what needs no attribute the graph does not keep: a 1-d iota, a
    broadcast of a scalar or one that only adds size-1 axes, a reduce to a scalar."""
    name = op.name
    if name == "stablehlo.iota":
        return np.arange(shape[0], dtype=np.int64) if len(shape) == 1 else None
    a = args[0] if args else None
    if name in ("stablehlo.broadcast_in_dim", "stablehlo.broadcast", "stablehlo.reshape"):
        if a is None:
            return None
        if a.ndim == 0 and name != "stablehlo.reshape":
            return np.broadcast_to(a, shape)
        kept = [d for d in a.shape if d != 1]
        return a.reshape(shape) if kept == [d for d in shape if d != 1] else None
    if name == "stablehlo.convert" and a is not None:
        return (a != 0).astype(np.int64) if element == "i1" else a
    if name == "stablehlo.reduce" and len(args) == 2 and shape == () and args[1].ndim == 0:
        reduce = _REDUCERS.get(_reducer(op) or "")
        return None if reduce is None or not a.size else np.asarray(reduce(a, int(args[1])))
    if name == "stablehlo.not" and a is not None:
        return 1 - a if element == "i1" else np.invert(a)
    if name == "stablehlo.negate" and a is not None:
        return -a
    if name == "stablehlo.select" and len(args) == 3:
        return np.where(args[0] != 0, args[1], args[2])
    if len(args) != 2:
        return None
    if name == "stablehlo.compare":
        test = COMPARE.get(op.attrs.get("comparison_direction", ""))
        return None if test is None else np.asarray(test(args[0], args[1]), np.int64)
    binary = _ARRAY_BINARY.get(name)
    return None if binary is None else binary(args[0], args[1])


def small(g: Graph, i: int, step: Step, env: dict[int, Value], values: list[Value],
          arrays: dict[int, np.ndarray]) -> np.ndarray | None:
    """Step `i`'s integer result as an array, when it is small and computed exactly from small
    integer arrays and known scalars (`j * 4 + jnp.arange(4) < T`, then `jnp.any` of it): a
    gate built from an index vector is then run like one built from the counter. None when
    the step is not one of those (the scalar folds then read it as before)."""
    op = g.ops[i] if i < len(g.ops) else None
    op = op if op is not None else g.region_ops.get(i)
    if op is None or len(step.results) != 1 or step.kind is Kind.TUPLE:
        return None
    if op.name != "stablehlo.iota" and not any(o in arrays for o in step.operands):
        return None
    out = tensor_types(op.type.rpartition("->")[2])
    if len(out) != 1 or not is_int(out[0].element) or None in out[0].dims:
        return None
    shape = tuple(int(d) for d in out[0].dims)  # type: ignore[arg-type]
    if int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
        return None
    args = []
    for o in step.operands:
        v = arrays[o] if o in arrays else env.get(o, values[o])
        if isinstance(v, np.ndarray):
            args.append(v)
        elif isinstance(v, int):
            args.append(np.asarray(int(v), np.int64))
        else:
            return None
    element = out[0].element
    with np.errstate(all="ignore"):
        res = _array_op(op, args, shape, element)
    if res is None:
        return None
    res = np.asarray(res, np.int64)
    if res.shape != shape:
        return None
    if res.size and not (fits(int(res.min()), element) and fits(int(res.max()), element)):
        return None  # wrapped around, or too large for int64: not exact
    return res
