"""Stage B's evaluator (TRUSTED code, untrusted data): a verified StableHLO module run in
numpy, every value with a leading variant axis, every loop's steps seen.

Used by the observer (observe.py beside this file, which says why). Ops it does not know, or a
run past its budget, raise `Unobservable`; gather, scatter, convolution and FFT live in
evaluator_regions.py, loops and cases in evaluator_loops.py, a variant that follows another's
decisions (`Evaluator.shadow`) in evaluator_follow.py. Run by path (runpy) with numpy
and jaxlib's MLIR bindings only.
"""

from __future__ import annotations

import math
import re
from collections import ChainMap
from typing import Any

import numpy as np

MAX_VARIANTS = 168
# Element operations, all variants counted, plus OP_COST per op run: what a run is given when
# no budget comes with it (observe.py gives each run its own, priced from the reference).
MAX_WORK = 60_000_000
OP_COST = 2_000  # an op's fixed cost in element operations (numpy's per-call overhead)
MAX_STEPS = 100_000  # loop iterations, all loops
MAX_ELEMENTS = 1 << 20  # elements of one value, all variants counted
MAX_CALL_DEPTH = 64
MAX_RECORDS = 256  # loop runs recorded; one more ends the run (RecordsFull): nothing unseen
MAX_RECORDED_STEPS = 1024


class OverBudget(Exception):
    """The run needs more work than the observer gives one program (deterministic: counted in
    element operations and steps, never in seconds, so the verdict does not follow the load)."""


class RecordsFull(OverBudget):
    """More loop runs than the observer records: what ran past them would go unseen, so the
    run ends here and its requirement fails closed (a junk loop cannot fill the records and
    hide the loop that matters behind them)."""


class Unobservable(Exception):
    """The program holds an op we do not evaluate, or exceeds a budget (the reason says)."""


_DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
    "complex<f32>": np.complex64, "complex<f64>": np.complex128,
}


def _bf16():
    try:
        import ml_dtypes  # shipped with jax
    except ImportError:  # pragma: no cover - jax always brings it
        return None
    return ml_dtypes.bfloat16


_UNARY = {
    "abs": np.abs, "negate": np.negative, "exponential": np.exp, "exponential_minus_one": np.expm1,
    "log": np.log, "log_plus_one": np.log1p, "sqrt": np.sqrt, "cbrt": np.cbrt,
    "tanh": np.tanh, "sine": np.sin, "cosine": np.cos, "tan": np.tan, "floor": np.floor,
    "ceil": np.ceil, "round_nearest_even": np.rint, "sign": np.sign, "real": np.real,
    "imag": np.imag, "is_finite": np.isfinite,
}
_BINARY = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "power": np.power, "atan2": np.arctan2, "xor": np.bitwise_xor,
}
_COMPLEX_SPLAT = re.compile(r"dense<\(([^,()]+),([^,()]+)\)>")
_ARITHMETIC = frozenset({"add", "subtract", "multiply"})  # counted as work, like a dot's
_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
            "GT": np.greater, "GE": np.greater_equal}
_WORK_OPS = {"dot_general": "multiply-adds", "convolution": "multiply-adds"}
# Ops that only move or copy values: every other op computes, and its result says which group
# variants its work depends on (observe.Owners). A list of what computes would miss one.
_MOVES = frozenset({f"stablehlo.{n}" for n in (
    "slice", "dynamic_slice", "real_dynamic_slice", "reshape", "dynamic_reshape",
    "broadcast_in_dim", "dynamic_broadcast_in_dim", "concatenate", "transpose", "convert",
    "bitcast_convert", "constant", "iota", "dynamic_iota", "gather", "pad", "dynamic_pad",
    "reverse", "dynamic_update_slice", "get_dimension_size", "get_tuple_element", "tuple",
    "optimization_barrier")})


# element type name -> (exponent bits, mantissa bits, unsigned type of its width)
_FLOAT_LAYOUT = {"float16": (5, 10, np.uint16), "bfloat16": (8, 7, np.uint16),
                 "float32": (8, 23, np.uint32), "float64": (11, 52, np.uint64)}


class Evaluator:
    """Runs one module's main on V variants at once (every value has a leading variant axis),
    recording each outermost loop's steps."""

    def __init__(self, module, ir, hlo, variants: int, inject: dict[tuple[int, int], int],
                 groups: int = 0, whole: int | None = None, recorder=None) -> None:
        self.ir = ir
        self.hlo = hlo
        self.V = variants
        # (level, step) -> the variant changed there: level 0 for outermost loops, 1 for
        # nested ones
        self.inject = inject
        # while op index -> per variant, the steps each run of that loop takes at most (a
        # trajectory run stops the loop after k steps in variant k: observe_trajectory.py)
        self.stops: dict[int, np.ndarray] = {}
        # while op index -> step k -> (variant, carried slot, sign): the slot's value after k
        # steps of the op's first run changed in that variant (observe_trajectory.py's kicks)
        self.kicks: dict[int, dict[int, list[tuple[int, int, int]]]] = {}
        self.kicked: set[int] = set()
        self.kick_seed = 0  # the installation's secret the kicks are drawn from
        # Per variant, the variant whose decisions it follows (None: each its own). A kicked
        # variant follows its unkicked twin: every boolean (a comparison, a loop condition, a
        # predicate) and every integer that steers (a branch index, a slice's or a gather's
        # start) is the twin's (evaluator_follow.py). It runs the twin's program path with its
        # own numbers, so no test in the program can tell a kick happened: what a kick shows
        # is how the steps the unkicked run executes respond to it.
        self.shadow: np.ndarray | None = None
        self.work = 0
        self.max_work = MAX_WORK  # observe's caller may give a run less (its extra runs)
        self.steps = 0
        self.depth = 0  # loops we are inside
        self.funcs: dict[str, Any] = {}
        self.index: dict[Any, int] = {}  # op -> printed pre-order index (module op is 0)
        self.loops: list[dict[str, Any]] = []  # every loop run, in the order they start
        self.active: list[dict[str, Any]] = []  # the records of the loops running now
        self.groups = groups
        self.whole = whole  # the variant with every watched input changed
        self.recorder = recorder  # makes each loop run's record (observe.LoopRecord)
        # op -> the variant whose result of it is changed, the ones changed at one element
        # each, and where their elements start (a seed)
        self.taps: dict[Any, tuple[int, range, int]] = {}
        self.tapped_once: set[Any] = set()  # ops whose one-element variant was changed
        self.owner = None  # called with (op, result) for each computing op (observe.Owners)
        n = [0]

        def number(op) -> None:
            self.index[op] = n[0]
            n[0] += 1
            for region in op.regions:
                for block in region.blocks:
                    for inner in block.operations:
                        number(inner.operation)

        number(module.operation)
        for op in module.body.operations:
            op = op.operation
            if op.name == "func.func":
                name = self._str_attr(op, "sym_name")
                self.funcs.setdefault(name, op)
        self.rng = np.random.default_rng(20261205)

    # -- helpers --------------------------------------------------------------------------
    @staticmethod
    def _str_attr(op, key: str) -> str:
        attr = op.attributes[key]
        value = getattr(attr, "value", None)
        return value if isinstance(value, str) else str(attr).strip('"@')

    def _i64s(self, op, key: str) -> list[int]:
        attr = op.attributes[key]
        try:
            return [int(v) for v in self.ir.DenseI64ArrayAttr(attr)]
        except (TypeError, ValueError):
            return [int(v) for v in np.array(attr).reshape(-1)]

    def _has(self, op, key: str) -> bool:
        return key in op.attributes

    def _type(self, value) -> tuple[tuple[int, ...], Any]:
        t = self.ir.RankedTensorType(value.type)
        et = str(t.element_type)
        dtype = _DTYPES.get(et)
        if dtype is None and et == "bf16":
            dtype = _bf16()
        if dtype is None:
            raise Unobservable(f"element type {et}")
        # a dimension of a shape-polymorphic program is -1 here: the values give its size
        shape = tuple(max(int(d), -1) for d in t.shape)
        return shape, dtype

    def _static(self, value) -> tuple[tuple[int, ...], Any]:
        """A result type whose sizes the op needs to know (a symbolic one cannot say)."""
        shape, dtype = self._type(value)
        if -1 in shape:
            raise Unobservable("an op whose result size is symbolic")
        return shape, dtype

    def _spend(self, elements: int) -> None:
        self.work += elements
        if self.work > self.max_work:
            raise OverBudget(f"more than {self.max_work:,} element operations")

    def _out(self, arr: np.ndarray, value) -> np.ndarray:
        shape, dtype = self._type(value)
        if -1 in shape:  # symbolic: the op computed the size; only the rank is checked
            if arr.ndim != len(shape) + 1:
                raise Unobservable("a value of the wrong rank")
            shape = tuple(n if d < 0 else d for d, n in zip(shape, arr.shape[1:], strict=True))
        if arr.shape[1:] != shape:
            arr = np.broadcast_to(arr, (self.V, *shape))
        if arr.size > MAX_ELEMENTS:
            raise Unobservable("a value too large to observe")
        self._spend(arr.size)
        return np.ascontiguousarray(arr, dtype=dtype) if arr.dtype != dtype else arr

    # -- functions and blocks -------------------------------------------------------------
    def call(self, name: str, args: list[np.ndarray]) -> list[np.ndarray]:
        fn = self.funcs.get(name)
        if fn is None:
            raise Unobservable(f"a call to an unknown function {name}")
        self.call_depth = getattr(self, "call_depth", 0) + 1
        if self.call_depth > MAX_CALL_DEPTH:
            raise Unobservable("calls nested too deep")
        try:
            return self.block(fn.regions[0].blocks[0], args)
        finally:
            self.call_depth -= 1

    def block(self, block, args: list[np.ndarray],
              outer: dict[Any, np.ndarray] | None = None) -> list[np.ndarray]:
        """Run a block; a loop's or branch's region may read values of the block around it
        (`outer`), a function's body may not."""
        # a view over the block around it, not a copy: a loop body runs once per step
        env: Any = ChainMap({}, outer) if outer else {}
        for a, v in zip(block.arguments, args, strict=True):
            env[a] = v
        return self.ops(block, env)

    def ops(self, block, env: dict[Any, np.ndarray]) -> list[np.ndarray]:
        for op in block.operations:
            op = op.operation
            name = op.name
            if name in ("func.return", "stablehlo.return", "mhlo.return"):
                return [self._get(env, v) for v in op.operands]
            ins = [self._get(env, v) for v in op.operands]
            if self.shadow is not None:
                ins = self._control(name, ins)
            self._spend(OP_COST)
            self.env = env
            try:
                outs = self.op(op, name, ins)
            except (Unobservable, OverBudget, RecursionError, MemoryError):
                raise
            except Exception as exc:  # an op read in a way we did not foresee
                raise Unobservable(f"the op {name} ({type(exc).__name__})") from None
            if self.taps and op in self.taps and outs and outs[0].dtype.kind in "fc":
                outs = [self._perturbed_all(outs[0], op, *self.taps[op]), *outs[1:]]
            if self.shadow is not None:
                outs = [self._shadowed(o, name) for o in outs]
            if self.owner is not None and outs and name not in _MOVES:
                self.owner(op, outs[0])
            for r, o in zip(op.results, outs, strict=True):
                env[r] = o
        raise Unobservable("a block without a return")

    def _perturbed_all(self, x: np.ndarray, op: Any, v: int, ones: range = range(0),
                       seed: int = 0) -> np.ndarray:
        """Variant v of an op's result changed everywhere (a tapped activation), and each of
        the variants `ones` at a single element of the op's first run only (one element of
        one run, wherever a loop runs the op again): the elements from `seed` on, modulo the
        size, every one when there are no more elements than variants."""
        out = np.array(np.broadcast_to(x, (self.V, *x.shape[1:])))
        out[v] = _changed(out[v], self.rng)
        if ones and out[v].size and op not in self.tapped_once:
            self.tapped_once.add(op)
            size = out[v].size
            for j, w in enumerate(ones[:size]):
                flat = out[w].reshape(-1).copy()
                at = (seed + j) % size
                flat[at:at + 1] = _changed(flat[at:at + 1], self.rng)
                out[w] = flat.reshape(out[w].shape)
        return out

    def _get(self, env, v) -> np.ndarray:
        try:
            return env[v]
        except KeyError:
            raise Unobservable("a value captured from an enclosing region") from None

    # -- one op ---------------------------------------------------------------------------
    def op(self, op, name: str, ins: list[np.ndarray]) -> list[np.ndarray]:
        dialect, _, short = name.partition(".")
        if name == "func.call":
            return self.call(self._str_attr(op, "callee"), ins)
        if dialect not in ("stablehlo", "mhlo", "chlo"):
            raise Unobservable(f"the op {name}")
        if short == "while":
            return self.while_(op, ins)
        if short in ("case", "if"):
            return self.case(op, short, ins)
        if short == "optimization_barrier":
            return ins
        if short == "custom_call":
            return self.custom_call(op, ins)
        res = op.results[0] if len(op.results) == 1 else None
        if res is None:
            raise Unobservable(f"the op {name} with {len(op.results)} results")
        fn = getattr(self, "op_" + short, None)
        if fn is not None:
            out = fn(op, ins, res)
        elif short in _UNARY:
            with np.errstate(all="ignore"):
                out = _UNARY[short](ins[0])
        elif short in _BINARY:
            with np.errstate(all="ignore"):
                out = _BINARY[short](ins[0], ins[1])
            if short in _ARITHMETIC and np.asarray(out).dtype.kind in "fc":
                self._count(int(np.asarray(out)[0].size))  # a product spelled elementwise
        else:
            raise Unobservable(f"the op {name}")
        return [self._out(np.asarray(out), res)]

    def custom_call(self, op, ins):
        target = self._str_attr(op, "call_target_name")
        if target == "shape_assertion":
            return []
        raise Unobservable(f"the custom call {target}")

    # elementwise with a twist
    def op_constant(self, op, ins, res):
        shape, dtype = self._static(res)
        if np.issubdtype(np.dtype(dtype), np.complexfloating):
            found = _COMPLEX_SPLAT.search(str(op))
            if found is None:
                raise Unobservable("a complex constant that is not one value")
            value = complex(float(found.group(1)), float(found.group(2)))
            return np.full(shape, value, dtype=dtype)[None]
        try:
            arr = np.asarray(np.array(op.attributes["value"]))
        except Exception:
            raise Unobservable("a constant we cannot read") from None
        if arr.size == math.prod(shape):
            return arr.astype(dtype).reshape(shape)[None]
        if arr.size == 1:  # a splat
            return np.broadcast_to(arr.astype(dtype).reshape(()), shape)[None]
        raise Unobservable("a constant of an unexpected size")

    def op_iota(self, op, ins, res):
        shape, dtype = self._static(res)
        dim = int(self.ir.IntegerAttr(op.attributes["iota_dimension"]).value)
        idx = np.arange(shape[dim], dtype=dtype)
        view = [1] * len(shape)
        view[dim] = shape[dim]
        return np.broadcast_to(idx.reshape(view), shape)[None]

    def op_divide(self, op, ins, res):
        a, b = ins
        if np.issubdtype(a.dtype, np.integer):
            safe = np.where(b == 0, 1, b)
            q = np.trunc(a.astype(np.float64) / safe).astype(a.dtype)
            return np.where(b == 0, -1, q)
        with np.errstate(all="ignore"):
            return a / b

    def op_remainder(self, op, ins, res):
        a, b = ins
        if np.issubdtype(a.dtype, np.integer):
            safe = np.where(b == 0, 1, b)
            return np.where(b == 0, a, np.fmod(a, safe))
        with np.errstate(all="ignore"):
            return np.fmod(a, b)

    def op_rsqrt(self, op, ins, res):
        with np.errstate(all="ignore"):
            return 1 / np.sqrt(ins[0])

    def op_logistic(self, op, ins, res):
        with np.errstate(all="ignore"):
            return 1 / (1 + np.exp(-ins[0]))

    def op_round_nearest_afz(self, op, ins, res):
        x = ins[0]
        return np.sign(x) * np.floor(np.abs(x) + 0.5)

    def op_not(self, op, ins, res):
        x = ins[0]
        return np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)

    def op_and(self, op, ins, res):
        a, b = ins
        return np.logical_and(a, b) if a.dtype == np.bool_ else np.bitwise_and(a, b)

    def op_or(self, op, ins, res):
        a, b = ins
        return np.logical_or(a, b) if a.dtype == np.bool_ else np.bitwise_or(a, b)

    def op_shift_left(self, op, ins, res):
        a, b = ins
        bits = a.dtype.itemsize * 8
        return np.where((b < 0) | (b >= bits), 0, np.left_shift(a, np.clip(b, 0, bits - 1)))

    def op_shift_right_logical(self, op, ins, res):
        a, b = ins
        bits = a.dtype.itemsize * 8
        u = a.view(np.dtype(f"u{a.dtype.itemsize}"))
        out = np.right_shift(u, np.clip(b, 0, bits - 1).astype(u.dtype)).view(a.dtype)
        return np.where((b < 0) | (b >= bits), 0, out)

    def op_shift_right_arithmetic(self, op, ins, res):
        a, b = ins
        bits = a.dtype.itemsize * 8
        return np.right_shift(a, np.clip(b, 0, bits - 1))

    def op_compare(self, op, ins, res):
        direction = str(self.hlo.ComparisonDirectionAttr(
            op.attributes["comparison_direction"]).value)
        return _COMPARE[direction](ins[0], ins[1])

    def op_select(self, op, ins, res):
        pred, a, b = ins
        if pred.ndim < a.ndim:  # a scalar predicate
            pred = pred.reshape(pred.shape + (1,) * (a.ndim - pred.ndim))
        return np.where(pred, a, b)

    def op_clamp(self, op, ins, res):
        lo, x, hi = ins
        with np.errstate(all="ignore"):
            return np.minimum(np.maximum(x, lo), hi)

    def op_complex(self, op, ins, res):
        return ins[0] + 1j * ins[1]

    def op_convert(self, op, ins, res):
        _, dtype = self._type(res)
        x = ins[0]
        if np.issubdtype(x.dtype, np.complexfloating) and not np.issubdtype(
                np.dtype(dtype), np.complexfloating):
            x = np.real(x)
        if np.issubdtype(np.dtype(dtype), np.integer) and np.issubdtype(x.dtype, np.floating):
            info = np.iinfo(dtype)
            with np.errstate(all="ignore"):
                x = np.clip(np.nan_to_num(np.trunc(x), nan=0), info.min, info.max)
        with np.errstate(all="ignore"):
            return x.astype(dtype)

    def op_bitcast_convert(self, op, ins, res):
        shape, dtype = self._static(res)
        x = np.ascontiguousarray(ins[0])
        if np.dtype(dtype).itemsize != x.dtype.itemsize:
            raise Unobservable("a bitcast between widths")
        return x.view(dtype).reshape((self.V, *shape))

    def op_reduce_precision(self, op, ins, res):
        """XLA's rounding to fewer exponent and mantissa bits, bit for bit (round to nearest
        even, overflow to a signed infinity, underflow to a signed zero, NaN kept): a program
        that branches on it sees here what it sees when XLA runs it."""
        x = np.asarray(ins[0])
        layout = _FLOAT_LAYOUT.get(x.dtype.name)
        if layout is None:
            raise Unobservable(f"reduce_precision of {x.dtype.name}")
        src_exp, src_man, uint = layout
        exp_bits = int(self.ir.IntegerAttr(op.attributes["exponent_bits"]).value)
        man_bits = int(self.ir.IntegerAttr(op.attributes["mantissa_bits"]).value)
        bits = np.ascontiguousarray(x).view(uint).astype(np.uint64)
        nbits = 8 * x.dtype.itemsize
        if man_bits < src_man:
            shift = src_man - man_bits
            last = np.uint64(1 << shift)
            bias = (bits & last) >> np.uint64(shift)
            bias = bias + np.uint64((1 << (shift - 1)) - 1)
            bits = (bits + bias) & ~np.uint64((1 << shift) - 1)
            bits &= np.uint64((1 << nbits) - 1)
        if exp_bits < src_exp:
            exp_mask = np.uint64(((1 << src_exp) - 1) << src_man)
            bias = (1 << (src_exp - 1)) - 1
            reduced = (1 << (exp_bits - 1)) - 1
            exponent = bits & exp_mask
            sign = bits & np.uint64(1 << (nbits - 1))
            bits = np.where(exponent > np.uint64((bias + reduced) << src_man), sign | exp_mask,
                            np.where(exponent <= np.uint64((bias - reduced) << src_man), sign,
                                     bits))
        out = bits.astype(uint).view(x.dtype)
        if man_bits < src_man:
            out = np.where(np.isnan(x), x, out)
        return out

    # shapes
    def op_reshape(self, op, ins, res):
        shape, _ = self._static(res)
        return ins[0].reshape((ins[0].shape[0], *shape))

    def op_broadcast_in_dim(self, op, ins, res):
        shape, _ = self._static(res)
        dims = self._i64s(op, "broadcast_dimensions")
        x = ins[0]
        view = [x.shape[0]] + [1] * len(shape)
        for i, d in enumerate(dims):
            view[d + 1] = x.shape[i + 1]
        return np.broadcast_to(x.reshape(view), (x.shape[0], *shape))

    def op_transpose(self, op, ins, res):
        perm = self._i64s(op, "permutation")
        return np.transpose(ins[0], [0] + [p + 1 for p in perm])

    def op_reverse(self, op, ins, res):
        dims = self._i64s(op, "dimensions")
        return np.flip(ins[0], [d + 1 for d in dims]) if dims else ins[0]

    def op_slice(self, op, ins, res):
        lo = self._i64s(op, "start_indices")
        hi = self._i64s(op, "limit_indices")
        st = self._i64s(op, "strides") if self._has(op, "strides") else [1] * len(lo)
        return ins[0][(slice(None), *(slice(a, b, s) for a, b, s in zip(lo, hi, st,
                                                                     strict=True)))]

    def op_concatenate(self, op, ins, res):
        dim = int(self.ir.IntegerAttr(op.attributes["dimension"]).value)
        parts = [np.broadcast_to(x, (self.V, *x.shape[1:])) for x in ins]
        return np.concatenate(parts, axis=dim + 1)

    def _starts(self, idx: list[np.ndarray], shape, sizes) -> np.ndarray:
        """(V, rank) clamped start indices."""
        starts = np.stack([np.broadcast_to(i.reshape(-1), (self.V,)) for i in idx], axis=1)
        hi = np.array([d - s for d, s in zip(shape, sizes, strict=True)])
        return np.clip(starts.astype(np.int64), 0, hi)

    def op_dynamic_slice(self, op, ins, res):
        x, idx = ins[0], ins[1:]
        sizes = self._i64s(op, "slice_sizes")
        starts = self._starts(idx, x.shape[1:], sizes)
        x = np.broadcast_to(x, (self.V, *x.shape[1:]))
        if (starts == starts[0]).all():
            return x[(slice(None), *(slice(a, a + s) for a, s in zip(starts[0], sizes,
                                                                        strict=True)))]
        return x[self._windows(starts, sizes)]

    def op_dynamic_update_slice(self, op, ins, res):
        x, upd, idx = ins[0], ins[1], ins[2:]
        sizes = upd.shape[1:]
        starts = self._starts(idx, x.shape[1:], sizes)
        out = np.array(np.broadcast_to(x, (self.V, *x.shape[1:])))
        upd = np.broadcast_to(upd, (self.V, *sizes))
        if (starts == starts[0]).all():
            out[(slice(None), *(slice(a, a + s) for a, s in zip(starts[0], sizes,
                                                                  strict=True)))] = upd
            return out
        out[self._windows(starts, sizes)] = upd
        return out

    def _windows(self, starts, sizes, rows=None) -> tuple:
        """An index that takes, in every variant v (or in the variants `rows`, one start row
        each), the window of `sizes` at `starts[v]` (in bounds): one numpy operation instead
        of one per variant."""
        rank = len(sizes)
        lead = [-1] + [1] * rank
        return (np.asarray(np.arange(self.V) if rows is None else rows).reshape(lead),
                *(starts[:, d].reshape(lead)
                  + np.arange(n).reshape([1] * (d + 1) + [n] + [1] * (rank - d - 1))
                  for d, n in enumerate(sizes)))

    # arithmetic with structure
    def op_dot_general(self, op, ins, res):
        a, b = ins
        dn = self.hlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
        lb, rb = list(dn.lhs_batching_dimensions), list(dn.rhs_batching_dimensions)
        lc, rc = list(dn.lhs_contracting_dimensions), list(dn.rhs_contracting_dimensions)
        letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        v = next(letters)
        la = [next(letters) for _ in range(a.ndim - 1)]
        ra = [None] * (b.ndim - 1)
        for i, j in zip(lb, rb, strict=True):
            ra[j] = la[i]
        for i, j in zip(lc, rc, strict=True):
            ra[j] = la[i]
        ra = [r if r is not None else next(letters) for r in ra]
        out = ([v] + [la[i] for i in lb] + [la[i] for i in range(a.ndim - 1)
                                             if i not in lb and i not in lc]
               + [ra[j] for j in range(b.ndim - 1) if j not in rb and j not in rc])
        spec = f"{v}{''.join(la)},{v}{''.join(ra)}->{''.join(out)}"
        _, dtype = self._type(res)
        acc = np.float64 if np.issubdtype(np.dtype(dtype), np.floating) else None
        if np.issubdtype(np.dtype(dtype), np.integer):
            acc = np.int64
        if np.issubdtype(np.dtype(dtype), np.complexfloating):
            acc = np.complex128
        a = np.broadcast_to(a, (self.V, *a.shape[1:])).astype(acc)
        b = np.broadcast_to(b, (self.V, *b.shape[1:])).astype(acc)
        out = np.einsum(spec, a, b)
        macs = math.prod(out.shape[1:]) * max(1, math.prod(a.shape[i + 1] for i in lc))
        self._count(macs)
        self._spend(macs * self.V)
        return out

    def _count(self, macs: int) -> None:
        """Executed multiply-adds (or reduced elements), booked to the running step of every
        loop the op runs in."""
        for rec in self.active:
            if rec.work:
                rec.work[-1] += macs

    # -- gather, scatter, convolution, fft -------------------------------------------------
    def run(self, args: list[np.ndarray]) -> list[np.ndarray]:
        main = self.funcs.get("main")
        if main is None:
            raise Unobservable("no main function")
        return self.call("main", args)


def _patch_dispatch() -> None:
    """Ops with several results or regions go through their own methods."""
    orig = Evaluator.op

    def op(self, op_, name, ins):
        short = name.partition(".")[2]
        if short == "reduce":
            return self.reduce(op_, ins)
        if short in ("gather", "dynamic_gather", "scatter", "sort", "reduce_window",
                     "select_and_scatter",
                     "convolution", "fft", "rng", "rng_bit_generator", "tuple",
                     "get_tuple_element", "all_reduce", "cholesky", "triangular_solve"):
            fn = getattr(self, "region_" + short, None)
            if fn is None:
                raise Unobservable(f"the op {name}")
            return fn(op_, ins)
        return orig(self, op_, name, ins)

    Evaluator.op = op  # type: ignore[method-assign]


_patch_dispatch()


def _changed(x: np.ndarray, rng) -> np.ndarray:
    """A clearly different value of the same sign pattern's magnitude (finite in, finite out)."""
    noise = rng.uniform(0.5, 1.0, size=x.shape)
    sign = rng.choice([-1.0, 1.0], size=x.shape)
    with np.errstate(all="ignore"):
        moved = x + sign * noise * (0.25 * np.abs(x).astype(np.float64) + 0.125)
    return moved.astype(x.dtype)


def _moved(a: np.ndarray, base: np.ndarray) -> np.ndarray:
    """Per element: does a differ from base (NaN equals NaN)."""
    same = (a == base) | (np.isnan(a) & np.isnan(base)) if a.dtype.kind in "fc" else a == base
    return ~same


