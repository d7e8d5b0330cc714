"""Stage B (TRUSTED code, untrusted data): verify and run the programs stage A exported.

No user Python runs here: the exported StableHLO is deserialized, checked (platform, effects,
custom calls, input signature) and executed on every test's inputs. So the numbers the grader
compares come from the very program whose structure it checks. The input files still came from
an untrusted process, hence the sandbox. Self-contained (stdlib, numpy, jaxlib, and the
siblings exported.py and observe.py) like stage A. The artifact is read without jax
(exported.py); jax is imported only when a program runs on XLA, not on the interpreter.

JOB_DIR/job.json:
  {"arg_names": ["params", "x", "y"],
   "signatures": [{"id": "s0", "args": [<concrete spec tree>, ...]}, ...],
   "programs": [{"id": "poly", "export": "poly.jaxexport", "args": [<spec tree; str dims are
                 symbolic>], "signatures": ["s0", ...], "allowed_custom_calls": [...]}],
   "tests": [{"name": "example-1", "signature": "s0", "inputs": [<value tree>, ...]}],
   "allowed_custom_calls": [], "max_program_bytes": 8000000, "engine": "interpret"|"xla"}
Writes JOB_DIR/result.json and JOB_DIR/<program id>.mlir (generic op form) per program, and
JOB_DIR/<program id>.lines.json: the source location each op of that text records, as
[[op index in printed order, op name, file, line], ...] (bounded; the grader checks it).
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
import random
import re
import sys
import time
import traceback
from typing import Any

FORBIDDEN_OPS = (
    "stablehlo.infeed",
    "stablehlo.outfeed",
    "stablehlo.send",
    "stablehlo.recv",
    "mhlo.infeed",
    "mhlo.outfeed",
    "mhlo.send",
    "mhlo.recv",
)
_CUSTOM_CALL_RE = re.compile(
    r'"(?:stablehlo|mhlo)\.custom_call"\([^)]*\)\s*<\{[^}]*?call_target_name\s*=\s*"([^"]*)"'
)


RESULTS_CACHE_MAX_FILES = 5000

# The "interpret" engine runs each shape's program on the StableHLO reference interpreter that
# jaxlib bundles (stablehlo.eval_module) instead of compiling it with XLA: the per-shape XLA
# compile (~40 ms even with the fast flags) is what dominates a new program, while refining the
# shapes and interpreting these small programs costs a few ms. The interpreter is a slow
# element-by-element evaluator, and it aborts the process (LLVM fatal error) on anything it does
# not implement, so it only gets programs made of the ops below, with small tensors, no loops and
# no integer division; anything else, and any Python-level failure, runs on XLA as before. The
# grader reruns the stage on XLA if an interpreted run dies.
_INTERPRETABLE_STABLEHLO = (
    "abs", "add", "and", "atan2", "broadcast_in_dim", "cbrt", "ceil", "clamp", "compare",
    "concatenate", "constant", "convert", "cosine", "divide", "dot_general", "exponential",
    "exponential_minus_one", "floor", "iota", "is_finite", "log", "log_plus_one", "logistic",
    "maximum", "minimum", "multiply", "negate", "not", "optimization_barrier", "or", "pad",
    "power", "reduce", "reduce_precision", "remainder", "reshape", "return", "reverse",
    "round_nearest_afz", "round_nearest_even", "rsqrt", "select", "sign", "sine", "slice",
    "sqrt", "subtract", "tan", "tanh", "transpose", "xor",
)
INTERPRETABLE_OPS = frozenset(
    {"builtin.module", "func.func", "func.return", "func.call"}
    | {f"stablehlo.{op}" for op in _INTERPRETABLE_STABLEHLO}
)
INTEGER_UNSAFE_OPS = frozenset({"stablehlo.divide", "stablehlo.remainder", "stablehlo.power"})
INTERP_MAX_TENSOR = 1 << 14  # elements in any one tensor
INTERP_MAX_WORK = 1 << 21  # element operations: largest tensor per op, multiply-adds per dot
INTERP_MAX_OPS = 20_000
# Function calls one run of main makes in all (jax exports each jit/custom_vjp as a function;
# an honest program calls a few thousand at most, the nested-jit sample 2,046).
MAX_CALLS = 100_000
_MLIR_ELEMENT_TYPES = {"float32": "f32", "float64": "f64", "int32": "i32", "int64": "i64",
                       "bool": "i1"}
# Specialising (for the memory profile) is not running: every input type a problem declares.
_REFINE_ELEMENT_TYPES = {**_MLIR_ELEMENT_TYPES, "int8": "i8", "int16": "i16", "uint8": "ui8",
                         "uint32": "ui32", "float16": "f16", "bfloat16": "bf16"}
# Source locations: the first `"file":line:col` of an op's printed location is its innermost
# frame (stage A keeps one user frame). An op whose innermost one is odd (a file name over 256
# characters, a line over 10 digits) gets no entry: never an outer frame instead.
_FILE_LOC_RE = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):\d')
MAX_LOCATION_FILE = 256
MAX_LOCATED_OPS = 4096  # entries written
MAX_WALKED_OPS = 10_000  # ops looked at (a larger program has lines for its first ops only)
_OP_RE = re.compile(r'"([a-z_]+\.[a-z_0-9.]+)"\(')
_TENSOR_RE = re.compile(r"tensor<([^>]*)>")


RESULTS_FORMAT = "3"


def _results_key(job: dict, texts: list[str], metas: list[str], version: str) -> str:
    """Same verified programs (debug info stripped) with the same Exported metadata + same test
    inputs -> same outputs.

    Identical programs are common among correct submissions even when their sources differ
    (names, comments, layout), so they are executed once. The key covers everything that
    determines the stored outputs: an export that reuses a common program's text with, say,
    renamed output keys gets its own entry, so it cannot plant outputs for the real one. The
    metadata (`exported.Exported.meta`) is every field read but the module: trees, avals,
    kept inputs, platforms, effects, calling convention, disabled checks."""
    h = hashlib.sha256()
    # RESULTS_FORMAT: bumped when what is stored or keyed changes (2: each output's
    # "seconds"; 3: the metadata as exported.py reads it).
    for part in (RESULTS_FORMAT, version, os.environ.get("XLA_FLAGS", ""), *texts, *metas):
        h.update(part.encode() + b"\0")
    h.update(json.dumps([job["programs"], job["signatures"], job["tests"], _engine(job)],
                        sort_keys=True).encode())
    return h.hexdigest()


def _cache_read(cache_dir: str, key: str) -> dict | None:
    try:
        with open(os.path.join(cache_dir, f"results-{key}.json"), encoding="utf-8") as f:
            outputs = json.load(f)
    except (OSError, ValueError):
        return None
    return outputs if isinstance(outputs, dict) else None


def _cache_write(cache_dir: str, key: str, outputs: dict) -> None:
    """Best effort: a full or unwritable cache only costs speed."""
    try:
        tmp = os.path.join(cache_dir, f".results-{key}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(outputs))
        os.replace(tmp, os.path.join(cache_dir, f"results-{key}.json"))
        if random.random() < 1 / 64:  # bounded: drop the oldest entries now and then
            entries = [e for e in os.scandir(cache_dir) if e.name.startswith("results-")]
            if len(entries) > RESULTS_CACHE_MAX_FILES:
                entries.sort(key=lambda e: e.stat().st_mtime)
                for e in entries[: len(entries) - RESULTS_CACHE_MAX_FILES]:
                    os.unlink(e.path)
    except OSError:
        pass


def _engine(job: dict) -> str:
    return "interpret" if job.get("engine") == "interpret" else "xla"


_SYM_NAME_RE = re.compile(r'sym_name = "([^"]*)"')
_CALLEE_RE = re.compile(r'callee = @(?:"([^"]*)"|([\w$.\-]+))')


def _by_function(text: str):
    """(the enclosing function's name, line) for each line of a generic-form module."""
    current = ""
    for line in text.splitlines():
        if '"func.func"' in line:
            found = _SYM_NAME_RE.search(line)
            current = found.group(1) if found else ""
        yield current, line


def _calls(text: str) -> dict[str, list[str]]:
    """Each function of a generic-form module -> the functions its ops call, once per call."""
    graph: dict[str, list[str]] = {}
    for fn, line in _by_function(text):
        if '"func.func"' in line:
            graph.setdefault(fn, [])
        elif '"func.call"' in line:
            found = _CALLEE_RE.search(line)
            if found:
                graph.setdefault(fn, []).append(found.group(1) or found.group(2))
    return graph


def _call_order(graph: dict[str, list[str]]) -> list[str] | None:
    """Every function, each after the functions it calls (None: some function reaches itself
    through calls, which JAX never exports)."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    order: list[str] = []
    for root in graph:
        if root in state:
            continue
        state[root] = 1
        stack = [(root, iter(graph[root]))]
        while stack:
            fn, callees = stack[-1]
            callee = next(callees, None)
            if callee is None:
                state[fn] = 2
                order.append(fn)
                stack.pop()
            elif state.get(callee) == 1:
                return None
            elif callee not in state:
                state[callee] = 1
                stack.append((callee, iter(graph.get(callee, ()))))
    return order


def _runs(graph: dict[str, list[str]], order: list[str], cap: int) -> dict[str, int] | None:
    """How many times each function runs when main runs once, from `_call_order` (None: more
    than `cap` runs of one function): a few kB can call a function 2**40 times through a chain
    of functions that each call the next twice."""
    runs = dict.fromkeys(order, 0)
    runs["main"] = 1
    for fn in reversed(order):  # callers first
        for callee in graph.get(fn, ()):
            runs[callee] += runs[fn]
            if runs[callee] > cap:
                return None
    return runs


def _interpretable(text: str) -> bool:
    """True if the refined (static-shape) program is safe and cheap for the reference
    interpreter: only ops from INTERPRETABLE_OPS, small tensors, bounded total work, each
    function's work counted as often as it runs."""
    graph = _calls(text)
    order = _call_order(graph)
    runs = _runs(graph, order, INTERP_MAX_OPS) if order is not None else None
    if runs is None:
        return False
    work = 0
    ops = 0
    for current, line in _by_function(text):
        m = _OP_RE.search(line)
        if not m:
            continue
        ops += 1
        name = m.group(1)
        if name not in INTERPRETABLE_OPS or ops > INTERP_MAX_OPS:
            return False
        times = runs.get(current, 0)
        sizes = []
        for t in _TENSOR_RE.findall(line):
            dims, _, etype = t.rpartition("x") if "x" in t else ("", "", t)
            if not etype or etype[0] not in "fi" or etype.startswith("f8"):
                return False  # complex, quantized, f8 or unknown element types: XLA
            if name in INTEGER_UNSAFE_OPS and etype[0] == "i":
                return False
            n = 1
            for d in dims.split("x") if dims else ():
                if not d.isdigit():
                    return False  # a dimension left dynamic
                n *= int(d)
            if n > INTERP_MAX_TENSOR:
                return False
            sizes.append(n)
        if name == "stablehlo.dot_general" and len(sizes) >= 3:
            # multiply-adds = batch * lhs_free * rhs_free * contracting <= sqrt(lhs * rhs * out)
            work += times * math.isqrt(sizes[0] * sizes[1] * sizes[-1])
        else:
            work += times * max(sizes, default=1)
        if work > INTERP_MAX_WORK:
            return False
    return ops > 0


class _Specializer:
    """Makes static-shape copies of one exported program for the reference interpreter.

    For each input signature it wraps the exported `main` (renamed, made private) in a new
    static-typed `main` that converts the arguments to the exported (possibly dynamic) types and
    calls it, exactly as jax's own lowering of `Exported.call` does, then runs StableHLO shape
    refinement. Doing it here costs ~7 ms per shape instead of ~25 ms through `jax.jit(...)
    .lower()`. Any surprise (several platforms, tokens, a failed refinement) returns None and the
    caller uses XLA. `text` is the verified program (generic form), so the interpreter runs
    exactly what the program rules check."""

    def __init__(self, exp, text: str, np, context):
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import stablehlo

        if tuple(exp.platforms) != ("cpu",):
            raise LookupError("not a cpu-only program")
        self.np, self.ir, self.stablehlo = np, ir, stablehlo
        self.exp = exp
        self.done: dict[str, tuple[Any, str] | None] = {}
        self.kept = sorted(int(i) for i in exp.module_kept_var_idx)
        self.n_in = len(exp.in_avals)
        self.context = context
        with self.context:
            module = ir.Module.parse(text)  # the verified program the rules also read
            mains = [op for op in module.body.operations
                     if "sym_name" in op.attributes
                     and ir.StringAttr(op.attributes["sym_name"]).value == "main"]
            if len(mains) != 1:
                raise LookupError("no unique main")
            main = mains[0]
            main.attributes["sym_name"] = ir.StringAttr.get("_jaxjudge_exported")
            main.attributes["sym_visibility"] = ir.StringAttr.get("private")
            ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
            self.ins = [ir.RankedTensorType(t) for t in ftype.inputs]
            self.outs = [str(t) for t in ftype.results]
            if len(self.ins) != len(self.kept) or not self.outs:
                raise LookupError("the exported main takes extra arguments (platform, tokens)")
            if self.outs != [_declared_type(aval) for aval in exp.out_avals]:
                # XLA converts each result to its declared type (jax's calling convention);
                # the interpreter would return main's own: the same numbers only if they agree
                raise LookupError("main's results are not the declared outputs")
            self.body = module.operation.get_asm(enable_debug_info=False)

    def _wrapper(self, leaves: list[tuple[tuple[int, ...], str]]) -> str | None:
        """The module with a static-typed `main` for these input leaves, (shape, dtype) each
        (None: a dtype we do not map, e.g. bfloat16; XLA runs it)."""
        args, lines, call_args = [], [], []
        for i, (shape, dtype) in enumerate(leaves):
            if i not in self.kept:  # unused by the program, still passed: type it exactly
                etype = _REFINE_ELEMENT_TYPES.get(dtype)
                if etype is None:
                    return None
                args.append(f"%a{i}: {self._static(shape, etype)}")
                continue
            dyn = self.ins[self.kept.index(i)]
            if _REFINE_ELEMENT_TYPES.get(dtype) != str(dyn.element_type):
                return None  # the input's dtype is not the program's: let XLA say so
            st = self._static(shape, str(dyn.element_type))
            args.append(f"%a{i}: {st}")
            lines.append(f"    %c{i} = stablehlo.convert %a{i} : ({st}) -> {dyn}")
            call_args.append(f"%c{i}")
        n = len(self.outs)
        outs = ", ".join(self.outs)
        lines.append(f"    %r:{n} = func.call @_jaxjudge_exported({', '.join(call_args)}) : "
                     f"({', '.join(str(t) for t in self.ins)}) -> ({outs})")
        lines.append(f"    func.return {', '.join(f'%r#{k}' for k in range(n))} : {outs}")
        fn = (f"  func.func public @main({', '.join(args)}) -> ({outs}) {{\n"
              + "\n".join(lines) + "\n  }\n")
        cut = self.body.rstrip().rindex("}")
        return self.body[:cut] + fn + "}\n"

    @staticmethod
    def _static(shape: tuple[int, ...], etype: str) -> str:
        return "tensor<" + "".join(f"{d}x" for d in shape) + etype + ">"

    def at(self, spec_args) -> _Interpreted | None:
        """The program specialised to `spec_args`, run by the interpreter (None: XLA runs it)."""
        if not hasattr(self.stablehlo, "eval_module"):
            return None  # this jaxlib has no interpreter
        leaves = _spec_leaves(spec_args)
        if any(len(shape) == 0 for shape, _ in leaves):
            return None  # DenseElementsAttr.get would turn a 0-d input into tensor<1x..>
        if any(dtype not in _MLIR_ELEMENT_TYPES for _, dtype in leaves):
            return None  # e.g. bfloat16, int8: XLA runs it
        refined = self.refined(spec_args)
        if refined is None or not _interpretable(refined[1]):
            return None
        return _Interpreted(refined[0], self.exp.out_tree, self.ir, self.stablehlo, self.np)

    def refined(self, spec_args) -> tuple[Any, str] | None:
        """The program with static shapes for `spec_args`: its module and generic text (None
        when it cannot be refined, e.g. a failed shape assertion)."""
        key = json.dumps(spec_args, sort_keys=True)
        if key not in self.done:  # the memory profile's signature is also run by a test
            self.done[key] = self._refine(spec_args)
        return self.done[key]

    def _refine(self, spec_args) -> tuple[Any, str] | None:
        ir = self.ir
        leaves = _spec_leaves(spec_args)
        if len(leaves) != self.n_in:
            return None
        try:
            with self.context:
                text = self._wrapper(leaves)
                if text is None:
                    return None
                # The text itself, not its bytecode: jaxlib's parser reads either, and
                # parsing it here first only to print bytecode cost ~0.7 ms per shape.
                refine = _reader().native().mlir.refine_polymorphic_shapes
                try:
                    refined_text = refine(text.encode(), enable_shape_assertions=True,
                                          validate_static_shapes=True, enable_shardy=False)
                except TypeError:  # jaxlib < 0.5: no Shardy switch
                    refined_text = refine(text.encode(), enable_shape_assertions=True,
                                          validate_static_shapes=True)
                module = ir.Module.parse(refined_text)
            with module.context:
                text = module.operation.get_asm(print_generic_op_form=True,
                                                enable_debug_info=False)
        except Exception:
            return None  # e.g. a shape assertion fails: XLA reports it per test as before
        return module, text


class _Interpreted:
    """One program specialised to one input signature, run by the StableHLO interpreter."""

    def __init__(self, module, out_tree, ir, stablehlo, np):
        self.module, self.out_tree = module, out_tree
        self.ir, self.stablehlo, self.np = ir, stablehlo, np

    def __call__(self, *args):
        np, ir = self.np, self.ir
        leaves = _reader().leaves(args)
        with self.module.context:
            attrs = [ir.DenseElementsAttr.get(np.ascontiguousarray(a)) for a in leaves]
            outs = [_attr_to_array(r, ir, np)
                    for r in self.stablehlo.eval_module(self.module, attrs)]
        return self.out_tree.unflatten(outs)


def _attr_to_array(attr, ir, np):
    dense = ir.DenseElementsAttr(attr)
    return np.array(dense).reshape(tuple(ir.ShapedType(dense.type).shape))


def _declared_type(aval: tuple[tuple[str, ...], str]) -> str:
    """The tensor type main returns for a declared output: a symbolic dimension is dynamic."""
    shape, dtype = aval
    dims = "".join(f"{d}x" if d.isdigit() else "?x" for d in shape)
    return f"tensor<{dims}{_REFINE_ELEMENT_TYPES.get(dtype, dtype)}>"


def _specializer(exp, text: str, np, context) -> _Specializer | None:
    try:
        return _Specializer(exp, text, np, context)
    except Exception:
        return None  # not a cpu-only program, or a program shape we do not wrap


def _spec_leaves(spec) -> list[tuple[tuple[int, ...], str]]:
    """A concrete spec tree's leaves in flattening order, as (shape, numpy dtype name)."""
    specs = _reader().Tree.of(spec, is_leaf=_is_spec).leaves(spec)
    return [(tuple(int(d) for d in s["shape"]), str(s["dtype"])) for s in specs]


def _write_profiled(job_dir: str, pid: str, specializer: _Specializer | None, spec_args,
                    max_bytes: int, entry: dict) -> None:
    """A symbolic program specialised to one signature (`<pid>.profile.mlir`), for the memory
    profile: a shape-polymorphic program says "?" where the learner wants bytes. Best effort:
    without it the report has no byte figures, nothing else changes."""
    refined = specializer.refined(spec_args) if specializer is not None else None
    if refined is None or len(refined[1]) > max_bytes:
        return
    _write_whole(job_dir, f"{pid}.profile.mlir", refined[1])
    entry["profiled"] = True


class Rejected(Exception):
    """The exported program is not one the grader will run; the message says why."""


def _write_result(job_dir: str, result: dict) -> None:
    # dumps: C encoder, dump's is pure Python
    _write_whole(job_dir, "result.json", json.dumps(result, allow_nan=True))


def _write_whole(job_dir: str, name: str, text: str) -> None:
    """Write and rename: the file appears whole. The parent reads the program texts while this
    stage still runs its tests (jaxjudge.grading.prefetch)."""
    tmp = os.path.join(job_dir, f".{name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, os.path.join(job_dir, name))


def _is_spec(node) -> bool:
    return isinstance(node, dict) and set(node) == {"shape", "dtype"}


def _value_tree(value, spec, np):
    """Build numpy inputs shaped and typed exactly as the signature says."""
    if isinstance(spec, dict) and set(spec) == {"shape", "dtype"}:
        arr = np.asarray(value, dtype=np.dtype(spec["dtype"]))
        if list(arr.shape) != [int(d) for d in spec["shape"]]:
            raise ValueError(f"input shape {arr.shape} does not match {spec['shape']}")
        return arr
    if isinstance(spec, dict):
        return {k: _value_tree(value[k], s, np) for k, s in spec.items()}
    return [_value_tree(v, s, np) for v, s in zip(value, spec, strict=True)]


def _encode(value, np):
    """Outputs as plain JSON: containers tagged, arrays as dtype + shape + flat data."""
    if isinstance(value, dict):
        return {"t": "dict", "v": {str(k): _encode(v, np) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"t": "list", "v": [_encode(v, np) for v in value]}
    if value is None:
        return {"t": "none"}
    arr = np.asarray(value)
    data = arr.reshape(-1).tolist()
    if arr.dtype.kind == "f":
        data = [x if math.isfinite(x) else repr(x) for x in data]
    elif arr.dtype.kind not in "biu":
        data = [float(np.real(x)) for x in arr.reshape(-1)]
    return {"t": "array", "dtype": str(arr.dtype), "shape": list(arr.shape), "data": data}


def _path_name(path: tuple, arg_names: list[str]) -> str:
    """((params, x, y), {}) flatten path -> "params.w1" / "x"."""
    parts = [str(k) for k in path]
    # parts[0] is 0 (positional args tuple), parts[1] is the argument index.
    if len(parts) >= 2 and parts[0] == "0":
        idx = int(parts[1])
        head = arg_names[idx] if idx < len(arg_names) else f"arg{idx}"
        return ".".join([head, *parts[2:]])
    return ".".join(parts)


def _check_program(exp, spec_args, arg_names, allowed, max_bytes, context) -> dict:
    """Refuse anything but a pure, single-device CPU program with exactly the test's inputs.

    `spec_args` is the JSON spec tree; a dimension is an int, or a string naming a symbolic
    dimension of a shape-polymorphic export."""
    if "cpu" not in tuple(exp.platforms):
        raise Rejected(f"the program was exported for {list(exp.platforms)}, not for cpu")
    if tuple(exp.ordered_effects) or tuple(exp.unordered_effects):
        raise Rejected("the program has side effects (host callbacks, debug prints or I/O); "
                       "solve must be a pure JAX function")
    if int(getattr(exp, "nr_devices", 1)) != 1:
        raise Rejected("the program must run on a single device")
    tree = (tuple(spec_args), {})
    expected_tree = _reader().Tree.of(tree, is_leaf=_is_spec)
    leaves = expected_tree.leaves(tree)
    if exp.in_tree != expected_tree:
        raise Rejected(f"the program's inputs {exp.in_tree} are not the entry point's "
                       f"arguments ({', '.join(arg_names)})")
    want = [(tuple(str(d) for d in s["shape"]), str(s["dtype"])) for s in leaves]
    got = [(tuple(shape), dtype) for shape, dtype in exp.in_avals]
    if want != got:
        raise Rejected(f"the program's input shapes/dtypes {got} differ from the test's {want}")
    with context:
        module = exp.module(context)
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
        located = _located(module) if len(text) <= max_bytes else []  # never refuses
    if len(text) > max_bytes:
        raise Rejected(f"the program is too large ({len(text)} bytes of StableHLO)")
    for op in FORBIDDEN_OPS:
        if f'"{op}"' in text:
            raise Rejected(f"the program uses {op}, which the grader does not run")
    graph = _calls(text)
    order = _call_order(graph)
    if order is None:
        raise Rejected("the program's functions call themselves (recursion), which JAX never "
                       "exports")
    if _runs(graph, order, MAX_CALLS) is None:
        raise Rejected(f"the program's functions call each other more than {MAX_CALLS} times "
                       "in all (a tree of calls, each calling the next several times): "
                       "flatten it")
    targets = set(_CUSTOM_CALL_RE.findall(text))
    if text.count("custom_call\"") != len(_CUSTOM_CALL_RE.findall(text)):
        raise Rejected("the program has a custom_call the grader cannot identify")
    bad = sorted(t for t in targets if t not in allowed)
    if bad:
        raise Rejected(f"the program calls out to {bad} (host callbacks or custom kernels are "
                       "not allowed; use only jax.numpy / jax.lax operations)")
    names = [_path_name(p, arg_names) for p in expected_tree.paths()]
    kept = sorted(int(i) for i in exp.module_kept_var_idx)
    if len(set(kept)) != len(kept) or any(not 0 <= i < len(names) for i in kept):
        raise Rejected(f"the program's list of used inputs {kept[:10]} does not match its "
                       f"{len(names)} inputs")
    return {"text": text, "args": [names[i] for i in kept], "outs": _output_names(exp),
            "located": located}


def _located(module) -> list[list]:
    """[op index, op name, file, line] for the ops whose location names a file, in the order
    the generic form prints them (pre-order, the module op first): the grader's parser numbers
    ops the same way. The locations are whatever stage A's export recorded; they are optional,
    so anything odd while reading them (an MLIR binding that differs) only drops them."""
    try:
        return _walk_locations(module)
    except Exception:
        return []


def _walk_locations(module) -> list[list]:
    out: list[list] = []
    stack = [module.operation]
    index = 0
    while stack and len(out) < MAX_LOCATED_OPS and index < MAX_WALKED_OPS:
        op = stack.pop()
        op = getattr(op, "operation", op)
        found = _FILE_LOC_RE.search(str(op.location))
        if found and len(found.group(1)) <= MAX_LOCATION_FILE and len(found.group(2)) <= 10:
            out.append([index, op.name, found.group(1), int(found.group(2))])
        index += 1
        for region in reversed(list(op.regions)):
            for block in reversed(list(region.blocks)):
                stack.extend(reversed(list(block.operations)))
    return out


MAX_NAME_CHARS = 1 << 20  # all output names together (a long key over many leaves is a bomb)


def _output_names(exp) -> list[str]:
    """main's result i -> output path ("loss", "grads.w1"), from the tree the outputs are
    unflattened with: the very structure the grader compares, so a rule naming an output
    reads the value graded under that name."""
    names, total = [], 0
    for path in exp.out_tree.paths():
        names.append(".".join(str(k) for k in path))
        total += len(names[-1])
        if total > MAX_NAME_CHARS:
            raise Rejected("the program's output names are too long together "
                           f"(over {MAX_NAME_CHARS} characters)")
    return names


def _checked(exp, spec_args, arg_names, allowed, max_bytes, context) -> dict:
    """`_check_program`, where anything that goes wrong refuses the program: the serialized
    export is attacker-shaped (a valid flatbuffer around garbage StableHLO, impossible indices),
    so any exception while reading it is about the program, never a grader failure."""
    try:
        return _check_program(exp, spec_args, arg_names, allowed, max_bytes, context)
    except Rejected:
        raise
    except Exception as exc:
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise Rejected(
            f"the exported program could not be checked ({type(exc).__name__}"
            + (f": {detail}" if detail else "") + ")"
        ) from None


# Started ahead of its job (jaxjudge.isolation.sandbox.prestart, the one-off grade): import
# numpy and jaxlib while stage A runs, then wait for one byte on stdin before reading the job
# the grader writes meanwhile.
WAIT_ENV = "JAXJUDGE_STAGE_WAIT"
# Set by the grader (jaxjudge.grading.engine_hint) when a program that needs XLA is likely:
# jax is then imported while waiting, not after the job arrives.
JAX_ENV = "JAXJUDGE_STAGE_B_JAX"


_SIBLINGS: dict[str, Any] = {}  # sibling modules, loaded once per process (zygote)


def _sibling(name: str):
    """The sibling module `<name>.py` of this script (which runs as a file, not from the
    package): loaded through the import machinery, so the bytecode compiled at install time is
    used, and once per process (the warm pool's zygote loads them before it forks, see
    warm_zygote)."""
    if name not in _SIBLINGS:
        import importlib.util

        here = os.path.dirname(os.path.abspath(__file__))
        spec = importlib.util.spec_from_file_location(f"jaxjudge_{name}",
                                                      os.path.join(here, f"{name}.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _SIBLINGS[name] = module
    return _SIBLINGS[name]


def _observer() -> dict:
    """observe.py's namespace: the observer's runs."""
    return vars(_sibling("observe"))


def _reader():
    """exported.py: the artifact's reader, trees, jaxlib's MLIR context."""
    return _sibling("exported")


def warm_zygote() -> None:
    """Run by the warm pool's zygote before it forks: the siblings, loaded once for all."""
    _observer()
    _reader().schema()


class _Xla:
    """XLA's side of stage B, for what the interpreter does not run: jax imported, and each
    program deserialized by `jax.export` and jitted, on first use only. jax must read the
    artifact as exported.py did (the checks and the program rules used that reading), or the
    program does not run."""

    def __init__(self, blobs: dict[str, bytes], exported: dict, result: dict) -> None:
        self.blobs, self.exported, self.result = blobs, exported, result
        self.jax: Any = None
        self.fns: dict[str, Any] = {}

    def module(self):
        if self.jax is None:
            import jax

            self.jax = jax
            self.result["jax_version"] = jax.__version__
        return self.jax

    def callable(self, pid: str):
        if pid not in self.fns:
            jax = self.module()
            from jax import export

            exp = export.deserialize(bytearray(self.blobs[pid]))
            _same_reading(exp, self.exported[pid], jax)
            self.fns[pid] = jax.jit(exp.call)
        return self.fns[pid]


def _same_reading(exp, ours, jax) -> None:
    """Raise unless jax's `Exported` says what exported.py's reading says (the trees compared
    as jax's own tree structures, so no printed form matters)."""
    def structure(tree):
        return jax.tree_util.tree_structure(tree.unflatten([0] * tree.n_leaves))

    got = (exp.in_tree, exp.out_tree, tuple(exp.platforms),
           tuple(int(i) for i in exp.module_kept_var_idx),
           tuple((tuple(str(d) for d in a.shape), str(a.dtype)) for a in exp.in_avals))
    want = (structure(ours.in_tree), structure(ours.out_tree), ours.platforms,
            ours.module_kept_var_idx, ours.in_avals)
    if got != want:
        raise ValueError("jax reads the exported program differently from the grader")


class _Runners:
    """Per (program, signature), what runs a test: the interpreter on the program specialised
    to that signature when the job's engine is "interpret" and it can, else XLA. A run the
    interpreter fails is run again on XLA (which says what went wrong), and that signature
    stays on XLA."""

    def __init__(self, job: dict, specs: dict, specializers: dict, exported: dict,
                 texts: dict, xla: _Xla, np, context) -> None:
        self.interpret = _engine(job) == "interpret"
        self.specs, self.specializers, self.exported = specs, specializers, exported
        self.texts, self.xla, self.np = texts, xla, np
        self.context = context
        self.chosen: dict[tuple[str, str], tuple[Any, str]] = {}

    def _choose(self, pid: str, sid: str) -> tuple[Any, str]:
        if self.interpret:
            if pid not in self.specializers:
                self.specializers[pid] = _specializer(self.exported[pid], self.texts[pid],
                                                      self.np, self.context)
            if self.specializers[pid] is not None:
                fn = self.specializers[pid].at(self.specs[sid])
                if fn is not None:
                    return fn, "interpret"
        return self.xla.callable(pid), "xla"

    def run(self, pid: str, sid: str, args) -> Any:
        key = (pid, sid)
        if key not in self.chosen:
            self.chosen[key] = self._choose(pid, sid)
        fn, engine = self.chosen[key]
        try:
            out = fn(*args)
        except Exception:
            if engine != "interpret":
                raise
            fn, engine = self.chosen[key] = (self.xla.callable(pid), "xla")
            out = fn(*args)
        return self.xla.module().block_until_ready(out) if engine == "xla" else out

    def engines(self, pid: str | None = None) -> set[str]:
        return {e for (p, _), (_, e) in self.chosen.items() if pid is None or p == pid}


def _error(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()[-2000:]


def _leaf_at(tree, path: str):
    for key in path.split("."):
        tree = tree.get(key) if isinstance(tree, dict) else None
    return tree


def _part_diff(got, want, rtol: float, atol: float, np) -> dict | None:
    """Where the rules' `got` differs from solve's `want` beyond atol + rtol * |want| (a
    different shape: every element), or None."""
    want = np.asarray(want, dtype=np.float64)
    try:
        got = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        got = None
    if got is None or got.shape != want.shape:
        return {"differing": int(want.size), "total": int(want.size)}
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(got - want) <= atol + rtol * np.abs(want)) & ~(
            np.isnan(got) & np.isnan(want))
    if not bad.any():
        return None
    idx = tuple(int(i) for i in np.argwhere(bad)[0])
    return {"differing": int(bad.sum()), "total": int(want.size), "index": list(idx)[:8],
            "rule": float(got[idx]), "solve": float(want[idx])}


def _run_rules(job: dict, rules: dict, solved: dict, specs: dict, runners: _Runners,
               np) -> dict:
    """The custom_vjp's rules program (exported on its own by stage A) on every test of the
    signatures it serves that solve ran (`solved`: test -> solve's outputs), each part
    compared with the solve output `rules["compare"]` names at its tolerance."""
    pid, runs_on = rules["id"], set(rules["runs_on"])
    out: dict[str, dict] = {}
    for test in job["tests"]:
        sid = test["signature"]
        if sid not in runs_on or test["name"] not in solved:
            continue
        try:
            value = runners.run(pid, sid, _value_tree(test["inputs"], specs[sid], np))
            parts = {}
            for part, (path, rtol, atol) in rules["compare"].items():
                want = _leaf_at(solved[test["name"]], path)
                diff = None if want is None else _part_diff(
                    value.get(part) if isinstance(value, dict) else None, want, rtol, atol, np)
                if diff is not None:
                    parts[part] = diff
            out[test["name"]] = {"ok": True, "parts": parts}
        except Exception as exc:
            out[test["name"]] = {"ok": False, "error": _error(exc)}
    return out


def wait_for_job() -> bool:
    """Block until the grader says go (b"g") or gives up (EOF, or anything else)."""
    try:
        return os.read(0, 1) == b"g"
    except OSError:
        return False


def main(job_dir: str) -> int:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    result: dict = {"status": "internal", "message": "", "timings": timings}

    gc.disable()  # no cyclic collections while the imports load (as in trace.py)
    import numpy as np
    from jaxlib.mlir import ir
    from jaxlib.version import __version__ as jaxlib_version

    reader = _reader()
    reader.schema()
    # One MLIR context for the whole run (~2-3 ms to make one, with every dialect loaded):
    # verifying, specialising and observing the programs all parse into it.
    context = reader.make_context()
    timings["import"] = time.perf_counter() - t0
    waits = os.environ.get(WAIT_ENV) == "1"
    if waits and os.environ.get(JAX_ENV) == "1":  # this problem's programs ran on XLA last time
        t_jax = time.perf_counter()
        import jax  # noqa: F401
        timings["import_jax"] = time.perf_counter() - t_jax
    gc.freeze()
    gc.enable()
    if waits:
        t_wait = time.perf_counter()
        if not wait_for_job():
            return 0  # the grader gave up on this run (stage A failed): nothing to do
        timings["wait"] = time.perf_counter() - t_wait
    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as f:
        job = json.load(f)
    arg_names = list(job.get("arg_names", []))
    allowed = set(job.get("allowed_custom_calls", []))
    max_bytes = int(job.get("max_program_bytes", 8_000_000))

    programs: dict[str, dict] = {}
    blobs: dict[str, bytes] = {}
    exported = {}
    specs = {sig["id"]: sig["args"] for sig in job["signatures"]}
    program_of: dict[str, str] = {}
    texts: dict[str, str] = {}
    t1 = time.perf_counter()
    for prog in job["programs"]:
        pid = prog["id"]
        path = os.path.join(job_dir, os.path.basename(prog["export"]))
        try:
            with open(path, "rb") as f:
                blob = f.read(64 * 1024 * 1024 + 1)
            if len(blob) > 64 * 1024 * 1024:
                raise Rejected("the exported program is larger than 64 MiB")
            try:
                exp = reader.read(blob)
            except ValueError as exc:
                raise Rejected(f"the exported program could not be loaded ({exc})") from None
            ok_calls = allowed | set(prog.get("allowed_custom_calls", []))
            info = _checked(exp, prog["args"], arg_names, ok_calls, max_bytes, context)
        except Rejected as exc:
            result.update(status="rejected", message=str(exc), program=pid)
            _write_result(job_dir, result)
            return 0
        text_name = f"{pid}.mlir"
        _write_whole(job_dir, text_name, info["text"])
        _write_whole(job_dir, f"{pid}.lines.json", json.dumps(info["located"]))
        programs[pid] = {"text_file": text_name, "args": info["args"], "outs": info["outs"]}
        texts[pid] = info["text"]
        blobs[pid] = blob
        exported[pid] = exp
        for sid in prog["signatures"]:
            program_of[sid] = pid
    timings["verify"] = time.perf_counter() - t1
    result["programs"] = programs
    specializers: dict[str, _Specializer | None] = {}
    t_profile = time.perf_counter()
    for prog in job["programs"]:
        if prog.get("profile") in specs:  # a symbolic program, sized at that signature
            pid = prog["id"]
            specializers[pid] = _specializer(exported[pid], texts[pid], np, context)
            _write_profiled(job_dir, pid, specializers[pid], specs[prog["profile"]],
                            max_bytes, programs[pid])
    timings["profile"] = time.perf_counter() - t_profile
    if job.get("observe"):
        t_observe = time.perf_counter()
        result["observed"] = _observer()["observe_all"](job, specs, programs, texts,
                                                        exported, reader.leaves, ir, context,
                                                        _value_tree)
        timings["observe"] = time.perf_counter() - t_observe

    # The custom_vjp's rules run on their own (jaxjudge.grading.rules_run): compared with
    # solve's outputs, so those are computed here, not read from the results cache.
    rules = [p for p in job["programs"] if p.get("runs_on")]
    solved: dict = {}
    cache_dir = os.environ.get("JAXJUDGE_RESULTS_CACHE")
    key = ""
    if cache_dir and not rules:
        key = _results_key(job, [texts[p] for p in sorted(texts)],
                           [exported[p].meta for p in sorted(texts)], jaxlib_version)
        cached = _cache_read(cache_dir, key)
        if cached is not None and set(cached) == {t["name"] for t in job["tests"]}:
            result.update(status="ok", outputs=cached, cached=True)
            _write_result(job_dir, result)
            return 0

    t2 = time.perf_counter()
    runners = _Runners(job, specs, specializers, exported, texts,
                       _Xla(blobs, exported, result), np, context)
    outputs: dict[str, dict] = {}
    for test in job["tests"]:
        sid = test["signature"]
        started = time.perf_counter()  # the test's own time (a shape's first also compiles)
        try:
            out = runners.run(program_of[sid], sid, _value_tree(test["inputs"], specs[sid], np))
            seconds = round(time.perf_counter() - started, 6)
            if rules:
                solved[test["name"]] = out
            outputs[test["name"]] = {"ok": True, "value": _encode(out, np),
                                     "seconds": seconds}
        except Exception as exc:
            outputs[test["name"]] = {"ok": False, "error": _error(exc),
                                     "seconds": round(time.perf_counter() - started, 6)}
    timings["execute"] = time.perf_counter() - t2
    result["engines"] = sorted(runners.engines())  # solve's programs' only
    if rules:
        t_rules = time.perf_counter()
        result["rule_outputs"] = {}
        for program in rules:  # one symbolic program, or one per signature
            result["rule_outputs"].update(_run_rules(job, program, solved, specs, runners, np))
        timings["rules_run"] = time.perf_counter() - t_rules
    if key and all(o.get("ok") for o in outputs.values()):
        _cache_write(cache_dir, key, outputs)
    result.update(status="ok", outputs=outputs)
    _write_result(job_dir, result)
    return 0


if __name__ == "__main__":
    rc = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
