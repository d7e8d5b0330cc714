"""Stage A (UNTRUSTED): load a submission, trace it for the requirement report, export it.

Runs inside the sandbox as `python -I trace.py JOB_DIR`, next to user code, so nothing it writes
is believed by the grader without checking: the jaxpr summary only feeds learner messages and the
exported programs are verified and executed by stage B. It must stay self-contained (stdlib,
numpy, jax only): the sandbox shows it this one file, not the grader package.

JOB_DIR/job.json:
  {"entry_point": "solve", "source": "submission.py",
   "signatures": [{"id": "s0", "args": [<pytree of {"shape": [..], "dtype": ".."}>, ...]}, ...],
   "symbolic": {"dims": ["B", "D", "H"], "args": [<same, dims named by strings>]},  (optional)
   "probes": [{"id": "p0", "args": [<as signatures>]}, ...]}  (optional)
Writes JOB_DIR/result.json and either JOB_DIR/poly.jaxexport (one shape-polymorphic program)
or one JOB_DIR/<id>.jaxexport per signature and per probe. Probes are shapes the judge chose
for its growth check (jaxjudge.rules.growth), exported only on the per-signature path: one
shape-polymorphic program needs none.

Decisions on symbolic dimensions. The graded program must be what `solve` computes at each
test's concrete shapes. Traced with symbolic B, D, H, Python code can ask questions about a
dimension that jax cannot decide; jax then answers by a default (`B % 2 == 0` and `B == 1` are
False, `bool(B - 1)` is True, a dict lookup by `hash(B)` misses) or raises (`B > 1`, `int(B)`,
which the submission may catch). The one shape-polymorphic program is then right for no
concrete B, or for other ones than `solve`. `_ShapeDecisions` watches the dimension type
(`_DimExpr`, the same methods in jax 0.4.38 and 0.10.2) while the symbolic trace and export run
and records every such question asked by the submission's own code; one of them sends the stage
to the per-signature exports, where every question has its concrete answer. Who asked is the
nearest frame that is either the submission's (its file name) or jax's (files under the jax and
jaxlib packages, and this file): jax's own questions (broadcasting checks,
`core.definitely_equal`, which treats False as "not known equal") are sound and keep the fast
path, and frames of other libraries (numpy, opt_einsum, functools, ...) count for whoever
called them. A question jax decides soundly (`x.shape == y.shape` for equal symbols, `B >= 1`,
`bool(B)`, `x.shape[1] == w1.shape[0]`) is not a decision here. Not seen: what Python answers
without asking the dimension (`isinstance(B, int)`, `type(B)`, `str(B)` ...), and a TypeError
of an unsupported operation (`range(B)`, `float(B)`) that the submission catches: at concrete
shapes these do not raise and ints are ints, so only code that inspects how it is traced
branches on them.

The detection runs here, beside user code, so a submission can disable it (patch the type,
the stage's functions, sys._getframe). That gains it nothing: a submission that steers its
symbolic trace gets graded on the program that trace produced, a program it could have
written directly as `solve`, and stage B still verifies and runs that program on every test.
The detection is there so that honest shape-dependent code is graded on what it computes.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import inspect
import json
import numbers
import operator
import os
import re
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, ClassVar

MAX_EQNS = 200_000  # eqns of distinct jaxprs looked at by summarize_jaxpr
MAX_SUMMARY_ENTRIES = 20_000  # eqn entries in a summary, after folding runs
# result.json must stay under the sandbox's file-size cap (256 KB at least, see
# jaxjudge/grading/grade.py): the summary, the message and poly_fallback (4000 characters each) and
# the timings.
MAX_SUMMARY_BYTES = 160_000
MAX_MESSAGE = 4000


_EXIT = os._exit  # before any submission runs (see the end of this file)

def _write_result(job_dir: str, result: dict) -> None:
    tmp = os.path.join(job_dir, "result.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:  # dumps: C encoder, dump's is pure Python
        f.write(json.dumps(result, separators=(",", ":")))
    os.replace(tmp, os.path.join(job_dir, "result.json"))


def _short_traceback(exc: BaseException, filename: str) -> str:
    """The traceback frames that belong to the submission, plus the error line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    lines = traceback.format_list(frames[-8:]) if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip()
    return text[-MAX_MESSAGE:]


def _to_spec_tree(node, jax, np, dims=None):
    """Spec JSON -> ShapeDtypeStructs; string dims name symbolic dimensions in `dims`."""
    if isinstance(node, dict) and set(node) == {"shape", "dtype"}:
        shape = tuple(dims[d] if isinstance(d, str) else int(d) for d in node["shape"])
        return jax.ShapeDtypeStruct(shape, np.dtype(node["dtype"]))
    if isinstance(node, dict):
        return {k: _to_spec_tree(v, jax, np, dims) for k, v in node.items()}
    if isinstance(node, list):
        return [_to_spec_tree(v, jax, np, dims) for v in node]
    raise ValueError(f"bad signature node {node!r}")


def _write_blob(job_dir: str, name: str, blob) -> None:
    with open(os.path.join(job_dir, name), "wb") as f:
        f.write(bytes(blob))


def _policy_names(jax) -> list[tuple[str, object]]:
    """(name, policy) for every policy jax ships, canonical names before their aliases."""
    cp = jax.checkpoint_policies
    preferred = [
        "dots_saveable",
        "dots_with_no_batch_dims_saveable",
        "nothing_saveable",
        "everything_saveable",
    ]
    names = preferred + sorted(n for n in dir(cp) if not n.startswith("_") and n not in preferred)
    out = []
    for n in names:
        obj = getattr(cp, n, None)
        if obj is not None and callable(obj):
            out.append((n, obj))
    return out


def _name_policy(policy, policies) -> str:
    if policy is None:
        return "none"
    for name, obj in policies:
        if policy is obj:
            return name
    for name, obj in policies:
        try:
            same_kind = type(policy) is type(obj)
            if same_kind and not hasattr(obj, "__code__") and policy == obj:
                return name
        except Exception:
            continue
    return "custom"


def _sub_jaxprs(value):
    """Nested jaxprs held by one eqn param (Jaxpr, ClosedJaxpr, or sequences of them)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if hasattr(v, "eqns") and hasattr(v, "invars"):
            yield v
        elif hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
            yield v.jaxpr
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(v))


def _facts(eqn) -> dict:
    """The parameters of an eqn that rules ask about, as plain JSON: a scan's length and
    direction, the element types a dot_general multiplies and returns. Best effort: a value
    jax does not give is left out (the summary only explains)."""
    facts: dict = {}
    name = eqn.primitive.name
    try:
        if name == "scan":
            length = eqn.params.get("length")
            if type(length) is int:  # a symbolic length (a scan over B) is not a number
                facts["length"] = length
            if eqn.params.get("reverse") is True:
                facts["reverse"] = True
        elif name == "dot_general":
            facts["dtypes"] = [str(v.aval.dtype) for v in eqn.invars[:2]] + [
                str(v.aval.dtype) for v in eqn.outvars[:1]]
    except Exception:
        pass
    return facts


MAX_LIVE_NAMES = 32  # distinct primitive names listed as live in one checkpoint region
MAX_LIVE_VISITS = 400_000  # eqn visits listing them, over all regions of one summary


def _live_eqns(jaxpr) -> set[int] | None:
    """id() of every eqn of `jaxpr` (sub-jaxprs included) whose result the outputs depend on
    (`_Reach`: a product with a constant 0 or an unchosen select case does not count), or None
    when the walk is over its budget."""
    try:
        reach = _Reach(_marker())
        reach.outputs_of(jaxpr)
    except _FlowTooLarge:
        return None
    return reach.live_eqns


def _live_names(subs: list, live: set[int], budget: list[int]) -> list[str] | None:
    """The primitive names of the live eqns in `subs` and the jaxprs nested in them (sorted, at
    most MAX_LIVE_NAMES), or None once `budget[0]` visits are spent."""
    names: set[str] = set()
    seen: set[int] = set()
    stack = list(subs)
    while stack:
        sub = stack.pop()
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        for eqn in sub.eqns:
            budget[0] -= 1
            if budget[0] < 0:
                return None
            if id(eqn) in live and len(names) < MAX_LIVE_NAMES:
                names.add(str(eqn.primitive.name)[:MAX_LIVE_NAME_CHARS])
            for value in eqn.params.values():
                stack.extend(_sub_jaxprs(value))
    return sorted(names)


MAX_LIVE_NAME_CHARS = 64


def summarize_jaxpr(jaxpr, checkpoint_prim, policies) -> dict:
    """Plain-JSON summary of the traced program, for the spec-level rule (jaxjudge/rules/jaxpr.py):

        {"root": 0, "jaxprs": [{"eqns": [eqn, ...]}, ...]}
        eqn = {"primitive": str, "jaxprs": [index, ...], "count": int,
               "checkpoint": true, "policy": str, "differentiated": bool, "prevent_cse": bool,
               "live": [name, ...],     (checkpoint: the primitives in it whose results reach
                                         the outputs; absent when that walk is over budget)
               "length": int, "reverse": true,          (scan)
               "dtypes": [lhs, rhs, result]}            (dot_general)
        plus "called": ["custom_vjp_call", ...] beside the table (see _CustomRuleCalls)

    `_summary` adds "custom_rules" (see _CustomRuleCalls.report):
        {"functions": [{"kind": "custom_vjp" | "custom_jvp", "name": str, "library": bool,
                        "output_used": bool, "bwd_run": bool, "bwd_used": bool}, ...],
         "dropped": int}                                       (the last three: custom_vjp only)
        | {"omitted": reason}

    Each distinct sub-jaxpr object is summarized once and referred to by its index in the table
    (a jitted helper called 2,000 times is one entry, not 2,000 copies); "jaxprs" is absent when
    empty, the checkpoint keys are present only on checkpoint eqns, and "count" (absent: 1)
    folds a run of identical consecutive eqns. When the program is still too large, the result
    is {"omitted": reason}: the summary only explains, so it must never cost the grade (nor
    overflow result.json, which the sandbox caps)."""
    live = _live_eqns(jaxpr)
    live_budget = [MAX_LIVE_VISITS]
    index = {id(jaxpr): 0}
    queue = [jaxpr]  # breadth-first; ids stay valid because the root holds every sub-jaxpr
    table: list[dict] = []
    visited = 0
    entries = 0
    while len(table) < len(queue):
        eqns: list[dict] = []
        for eqn in queue[len(table)].eqns:
            if eqn.primitive is _MARK:  # stage A's own marks (_CustomRuleCalls) are not shown
                continue
            visited += 1
            if visited > MAX_EQNS:
                return {"omitted": f"the traced program has more than {MAX_EQNS} distinct eqns"}
            entry: dict = {"primitive": str(eqn.primitive.name)}
            entry.update(_facts(eqn))
            if eqn.primitive is checkpoint_prim:
                entry["checkpoint"] = True
                entry["policy"] = _name_policy(eqn.params.get("policy"), policies)
                entry["differentiated"] = bool(eqn.params.get("differentiated", False))
                entry["prevent_cse"] = bool(eqn.params.get("prevent_cse", True))
                names = None if live is None else _live_names(
                    [sub for value in eqn.params.values() for sub in _sub_jaxprs(value)],
                    live, live_budget)
                if names is not None:
                    entry["live"] = names
            children = []
            for value in eqn.params.values():
                for sub in _sub_jaxprs(value):
                    k = index.get(id(sub))
                    if k is None:
                        k = index[id(sub)] = len(queue)
                        queue.append(sub)
                    children.append(k)
            if children:
                entry["jaxprs"] = children
            last = eqns[-1] if eqns else None
            if last is not None and {k: v for k, v in last.items() if k != "count"} == entry:
                last["count"] = last.get("count", 1) + 1
                continue
            entries += 1
            if entries > MAX_SUMMARY_ENTRIES:
                return {"omitted": f"the summary would have more than {MAX_SUMMARY_ENTRIES} eqns"}
            eqns.append(entry)
        table.append({"eqns": eqns})
    summary = {"root": 0, "jaxprs": table}
    size = len(json.dumps(summary, separators=(",", ":")))
    if size > MAX_SUMMARY_BYTES:
        return {"omitted": f"the summary would take {size} bytes (limit {MAX_SUMMARY_BYTES})"}
    return summary


def _summary(jaxpr, calls: _CustomRuleCalls, checkpoint_prim, policies) -> dict:
    """`summarize_jaxpr`, with what `calls` saw while `jaxpr` was traced: "called" beside the
    table, and "custom_rules" (kept when the table is omitted: it is small and bounded)."""
    summary = summarize_jaxpr(jaxpr, checkpoint_prim, policies)
    if calls.found and "jaxprs" in summary:
        summary["called"] = sorted(calls.found)
    summary["custom_rules"] = calls.report(jaxpr)
    return summary


class _ShapeDecisions:
    """While active (a `with` block), records the questions the submission's code asks about a
    symbolic dimension that jax cannot decide (see the module docstring). Answers are unchanged:
    a recorded question only makes the caller fall back to the per-signature exports."""

    MAX_KEPT = 8
    _COMPARISONS: ClassVar[dict[str, str]] = {
        "__lt__": "<", "__le__": "<=", "__gt__": ">", "__ge__": ">=", "__int__": ""
    }

    def __init__(self, dim_type: type, user_file: str, trusted_dirs: tuple[str, ...]) -> None:
        self.dim_type = dim_type
        self.user_file = user_file
        self.trusted = trusted_dirs
        self.found: list[str] = []
        self._kinds: dict[object, int] = {}  # code object -> 0 other, 1 submission, 2 jax
        self._saved: dict[str, Any] = {}

    # -- who asked, and was the answer decided? ---------------------------------------------
    def _user_line(self) -> int | None:
        """The submission's line that asked, when the nearest frame (outward from the caller of
        the dimension's method) that is the submission's or jax's is the submission's."""
        frame = sys._getframe(2)  # 0: this method, 1: a wrapper below, 2: who called it
        for _ in range(256):
            if frame is None:
                return None
            code = frame.f_code
            kind = self._kinds.get(code)
            if kind is None:
                name = code.co_filename
                kind = 1 if name == self.user_file else 2 if name.startswith(self.trusted) else 0
                self._kinds[code] = kind
            if kind == 1:
                return frame.f_lineno
            if kind == 2:
                return None
            frame = frame.f_back
        return None

    def _record(self, line: int, question: str) -> None:
        entry = f"line {line}: {question}"
        if len(self.found) < self.MAX_KEPT and entry not in self.found:
            self.found.append(entry)

    def _nonzero(self, dim: Any) -> bool:
        """Whether jax proves `dim != 0` (from its bounds: every symbol is >= 1)."""
        ge, le = self._saved["__ge__"], self._saved["__le__"]
        for proves in (lambda: ge(dim, 1), lambda: le(dim, -1)):
            try:
                if proves() is True:
                    return True
            except Exception:
                continue
        return False

    def _unequal(self, dim: Any, other: Any) -> bool:
        """Whether `dim != other` holds at every value of the symbols."""
        if isinstance(other, self.dim_type):
            if getattr(other, "scope", None) is not getattr(dim, "scope", None):
                return False
        else:
            try:
                other = operator.index(other)
            except Exception:
                # A string or None never equals a size; a float or an array might.
                return not _numberlike(other)
        try:
            diff = dim - other
        except Exception:
            return False
        if not isinstance(diff, self.dim_type):
            return isinstance(diff, int) and diff != 0
        return self._nonzero(diff)

    # -- the watched methods -----------------------------------------------------------------
    def _wrap_equality(self, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        claims_equal = name == "__eq__"

        def equality(dim: Any, other: Any) -> Any:
            answer = orig(dim, other)
            if answer is not claims_equal:  # "equal" is only answered when it is syntactic
                line = self._user_line()
                if line is not None and not self._unequal(dim, other):
                    op = "==" if claims_equal else "!="
                    self._record(line, f"`{dim} {op} {_show(other)}` (answered {answer})")
            return answer

        return equality

    def _wrap_raising(self, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        def comparison(dim: Any, *args: Any) -> Any:
            try:
                return orig(dim, *args)
            except BaseException:
                line = self._user_line()
                if line is not None:
                    op = self._COMPARISONS[name]
                    what = f"{dim} {op} {_show(args[0])}" if op and args else f"int({dim})"
                    self._record(line, f"`{what}` (undecidable: raised)")
                raise

        return comparison

    def _wrap_hash(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        def hashing(dim: Any) -> Any:
            line = self._user_line()
            if line is not None:
                self._record(line, f"`hash({dim})` (a dict or set lookup by a symbolic size)")
            return orig(dim)

        return hashing

    def _truth(self) -> Callable[[Any], bool]:
        def truth(dim: Any) -> bool:
            """What Python answers for `bool(dim)` without a __bool__ (True), watched."""
            line = self._user_line()
            if line is not None and not self._nonzero(dim):
                self._record(line, f"`bool({dim})` (answered True)")
            return True

        return truth

    def __enter__(self) -> _ShapeDecisions:
        cls = self.dim_type
        wrappers: dict[str, Callable[..., Any]] = {}
        for name in ("__eq__", "__ne__", *self._COMPARISONS, "__hash__", "__bool__"):
            self._saved[name] = cls.__dict__.get(name)
        for name in ("__eq__", "__ne__"):
            if self._saved[name] is not None:
                wrappers[name] = self._wrap_equality(name, self._saved[name])
        for name in self._COMPARISONS:
            if self._saved[name] is not None:
                wrappers[name] = self._wrap_raising(name, self._saved[name])
        if self._saved["__hash__"] is not None:
            wrappers["__hash__"] = self._wrap_hash(self._saved["__hash__"])
        if self._saved["__bool__"] is None and "__len__" not in cls.__dict__:
            wrappers["__bool__"] = self._truth()
        if self._saved["__ge__"] is None or self._saved["__le__"] is None:
            raise RuntimeError("the dimension type has no __ge__/__le__: cannot watch it")
        for name, fn in wrappers.items():
            setattr(cls, name, fn)
        return self

    def __exit__(self, *exc: object) -> None:
        cls = self.dim_type
        for name, orig in self._saved.items():
            if orig is not None:
                setattr(cls, name, orig)
            elif name in cls.__dict__:
                delattr(cls, name)


_ADDRESS_RE = re.compile(r" at 0x[0-9a-fA-F]+")


class _PrimalBox:
    """A CustomVJPPrimal (value, perturbed) as a pytree node: the value is its child."""

    def __init__(self, value: Any, perturbed: Any) -> None:
        self.value, self.perturbed = value, perturbed


@functools.cache  # once per process: jax refuses a second registration
def _register_box(jax: Any) -> None:
    jax.tree_util.register_pytree_node(
        _PrimalBox, lambda b: ((b.value,), bool(b.perturbed)),
        lambda perturbed, children: _PrimalBox(children[0], perturbed))


def _digest(value: Any) -> str:
    """A value's whole text, hashed: two arguments that differ past any cut differ here."""
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__} {id(value)}>"
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def _consts_digest(closed: Any) -> str:
    """A traced program's constants (not printed in its text): a rule that closes over a
    global it changes between calls traces to the same text with other numbers."""
    import numpy as np

    h = hashlib.sha256()
    for c in getattr(closed, "consts", ()):
        try:
            h.update(np.ascontiguousarray(np.asarray(c)).tobytes())
        except Exception:
            h.update(type(c).__name__.encode())
    return h.hexdigest()


def _positional(obj: Any, args: tuple, kwargs: dict) -> list | None:
    """A custom function's call arguments, all positional (`quantize(x=x)` as `quantize(x)`),
    bound to its function's parameters as JAX binds them; None when a keyword-only one is
    given or they do not bind."""
    if not kwargs:
        return list(args)
    try:
        bound = inspect.signature(obj.fun).bind(*args, **kwargs)
    except (TypeError, ValueError, AttributeError):
        return None
    return None if bound.kwargs else list(bound.args)


def _at_shape(jax: Any, one: Any, kind: tuple, x: Any, g: Any) -> dict[str, Any]:
    """`one(x, g)`'s parts with the rules run at `kind`, another (shape, dtype) the function
    was called at: x's and g's elements laid out as whole shapes (repeated from the start to
    fill the last one) of that dtype, the rules vmapped over them, and the results taken back
    to x's shape and dtype (a complex result's real part: a call on x.astype(complex64)).
    No size arithmetic needs a divisor, so it exports at symbolic shapes too. Exact for
    elementwise rules, which the quantisation and its clipped gradient are; rules that act
    differently at that shape (on the rank, on a size) give other values, which the parent
    compares with solve's."""
    jnp = jax.numpy
    shape, dtype = kind
    n, m = x.size, 1
    for d in shape:
        m = m * d
    if isinstance(m, int) and m == 0:  # nothing to run the rules on
        return one(x, g)
    count = (n + m - 1) // m
    index = jnp.arange(count * m) % n
    laid = [v.reshape(-1)[index].reshape((count, *shape)).astype(dtype) for v in (x, g)]
    out = jax.vmap(one)(*laid)

    def back(v: Any) -> Any:
        v = v.reshape(-1)[:n].reshape(x.shape)
        if jnp.iscomplexobj(v) and not jnp.iscomplexobj(x):
            v = jnp.real(v)
        return v.astype(x.dtype)

    return {name: back(v) for name, v in out.items()}


def _is_literal(v: Any) -> bool:
    return type(v).__name__ == "Literal"


def _param_names(obj: Any) -> Any:
    """`name(position)`: a custom function's parameter at `position`, for messages."""
    try:
        params = list(inspect.signature(obj.fun).parameters)
    except (TypeError, ValueError, AttributeError):
        params = []

    def name(position: int) -> str:
        if position < len(params) and params[position].isidentifier():
            return f"`{params[position][:40]}`"
        return f"number {position + 1}"

    return name


class _RuleTraces:
    """Each call of a custom_vjp's rule while solve is traced, traced once on its own
    (`jax.make_jaxpr`) and replayed: solve computes with the replayed program, and the rules
    exported for stage B replay the same one, so a rule whose Python acts differently from call
    to call (a call counter, a flag) cannot show the export another program than solve used.
    Two calls with the same arguments' shapes that trace to different programs mark the
    function `stateful`. A rule that cannot be traced on its own is called as it is, and
    marks the function `untraced`: what it computed for solve was never seen."""

    MAX_TEXT = 1 << 20  # characters of a program kept to compare

    def __init__(self, jax: Any) -> None:
        self._jax = jax
        self.recorded: dict[tuple, tuple[Any, Any]] = {}  # key -> (closed jaxpr, output tree)
        self.texts: dict[tuple, str] = {}
        self.stateful: set[int] = set()
        self.untraced: set[int] = set()
        # defvjp(..., symbolic_zeros=True) gives the forward rule CustomVJPPrimal pairs, which
        # are not pytrees: boxed, their values are traced as the rule's arguments
        self.primal = getattr(jax.custom_derivatives, "CustomVJPPrimal", None)
        _register_box(jax)

    def box(self, tree: Any) -> Any:
        """`tree` with each CustomVJPPrimal as a `_PrimalBox` (its value a pytree child)."""
        primal = self.primal
        if primal is None:
            return tree
        return self._jax.tree_util.tree_map(
            lambda v: _PrimalBox(v.value, v.perturbed) if isinstance(v, primal) else v, tree,
            is_leaf=lambda v: isinstance(v, primal))

    def unbox(self, tree: Any) -> Any:
        if self.primal is None:
            return tree
        return self._jax.tree_util.tree_map(
            lambda v: self.primal(v.value, v.perturbed) if isinstance(v, _PrimalBox) else v,
            tree, is_leaf=lambda v: isinstance(v, _PrimalBox))

    def flatten(self, args: Any, kwargs: Any) -> tuple[list, Any, list[int]]:
        """A rule call's arguments as leaves, their tree, and where the arrays are."""
        jax = self._jax
        leaves, tree = jax.tree_util.tree_flatten(self.box((args, kwargs)))
        return leaves, tree, [i for i, v in enumerate(leaves) if isinstance(v, jax.Array)]

    def rebuild(self, leaves: list, tree: Any, where: list[int], arrays: Any) -> Any:
        """`flatten`'s (args, kwargs), with `arrays` in place of the array leaves."""
        full = list(leaves)
        for i, a in zip(where, arrays, strict=True):
            full[i] = a
        return self.unbox(self._jax.tree_util.tree_unflatten(tree, full))

    def _split(self, args: Any, kwargs: Any) -> tuple[list, Any, list[int], tuple]:
        leaves, tree, where = self.flatten(args, kwargs)
        shapes = tuple((str(leaves[i].shape), str(leaves[i].dtype)) for i in where)
        statics = tuple(_digest(v) for i, v in enumerate(leaves) if i not in where)
        return leaves, tree, where, (tree, shapes, statics)

    def call(self, rule: Any, args: Any, kwargs: Any, k: int, role: str) -> Any:
        """`rule(*args, **kwargs)`, computed through the program it traces to here."""
        jax = self._jax
        try:
            leaves, tree, where, sig = self._split(args, kwargs)

            def alone(*arrays: Any) -> Any:
                a_args, a_kwargs = self.rebuild(leaves, tree, where, arrays)
                return rule(*a_args, **a_kwargs)

            arrays = [leaves[i] for i in where]
            closed, shape = jax.make_jaxpr(alone, return_shape=True)(*arrays)
        except Exception:
            self.untraced.add(k)
            return rule(*args, **kwargs)  # its own error, if it has one, is raised here
        key = (k, role, sig)
        # Python objects in the program's parameters (a nested custom_vjp's rules) print
        # with their addresses, which differ from one trace to the next
        text = _ADDRESS_RE.sub("", str(closed)[: self.MAX_TEXT]) + _consts_digest(closed)
        if self.texts.setdefault(key, text) != text:
            self.stateful.add(k)
        traced = (closed, jax.tree_util.tree_structure(shape))
        self.recorded.setdefault(key, traced)
        return self._run(traced, arrays)  # this call's own program, whatever was recorded

    def _run(self, traced: tuple[Any, Any], arrays: list) -> Any:
        jax = self._jax
        closed, out_tree = traced
        outs = jax.core.eval_jaxpr(closed.jaxpr, closed.consts, *arrays)
        return jax.tree_util.tree_unflatten(out_tree, outs)

    def replay(self, rule: Any, k: int, role: str) -> Any:
        """`rule`, as the program recorded for the same shapes when there is one."""
        def replayed(*args: Any, **kwargs: Any) -> Any:
            leaves, _, where, sig = self._split(args, kwargs)
            if (k, role, sig) not in self.recorded:
                return rule(*args, **kwargs)
            return self._run(self.recorded[(k, role, sig)], [leaves[i] for i in where])

        return replayed


class _CustomRuleCalls:
    """Which custom-derivative functions (`jax.custom_vjp`, `jax.custom_jvp`) are called while
    `solve` is traced, and, for each custom_vjp function, whether its output and its backward
    rule's output reach what `solve` returns (see `custom_rules`). Untrusted like everything
    here: a spec-level rule reads it to explain, never to pay points.

    A jaxpr keeps no trace of a custom_vjp that was only differentiated (through `jax.vjp` or
    `jax.grad` its rules are applied and the call disappears), so the calls are watched at
    `__call__`: `found` holds the primitive names newer JAX prints, and a custom_vjp defined
    outside jax's own packages gets marks: its result, and its backward rule's result whenever
    that rule runs (the backward rule is swapped for a wrapper for the duration of the call;
    JAX keeps the wrapper it read then), pass through `_marker()`, an identity primitive with a
    tag ("out" or "bwd", the function's index). The marks are eqns of the traced jaxpr, so the
    dataflow from them to the outputs (`_Reach`) says which were used; they lower to nothing,
    so the exported program is the same as without them."""

    NAMES = (("custom_vjp", "custom_vjp_call"), ("custom_jvp", "custom_jvp_call"))
    MAX_FUNCTIONS = 32  # distinct custom functions recorded; later ones are counted as dropped
    MAX_PROBES = 8  # rule runs traced again on their own, per function
    # Shapes of a function's calls whose rules are run besides the argument's own: a vmap over
    # x calls it per element, a jax.vjp on x at x's shape, so two shapes are honest; rules that
    # decide on the rank (honest at the call that is differentiated, trivial at the one
    # returned) are run at both.
    EXTRA_SHAPES = 2
    MAX_SHAPES = 1 + EXTRA_SHAPES

    def __init__(self, jax: Any) -> None:
        self.found: set[str] = set()
        self.functions: list[dict[str, Any]] = []  # {"kind", "name", "library"} per function
        self.bwd_run: set[int] = set()  # indices of functions whose backward rule ran
        # Indices of functions whose function (or forward rule) returned its arguments, and
        # whose backward rule returned its cotangent, unchanged: identity wrappers.
        self.fwd_identity: set[int] = set()
        self.bwd_identity: set[int] = set()
        # Per function, what its rules compute (see `_probe`): "fwd_ops" / "bwd_ops", the
        # primitives computed from the argument (the residuals) that reach the rule's result,
        # kept across runs as the ones every run had; "bwd_ct_used", whether the cotangent
        # reaches it in every run; "probe_failed" when a rule could not be traced on its own.
        self.rule_ops: dict[int, dict[str, Any]] = {}
        self._probing = False
        self.traces = _RuleTraces(jax)
        # Per function, its first call: (the one array's position, the positional arguments),
        # or None when the call had keywords or not exactly one array.
        self.first_call: dict[int, tuple[int, list[Any]] | None] = {}
        # Per function, each different way it was called (arrays' shapes and types, the other
        # arguments' text): the rules run replays the first one only.
        self.call_kinds: dict[int, set[tuple]] = {}
        # Per function, the (shape, dtype) of its one array argument, in the order first called
        # at: the rules run also runs the rules at each one other than the argument's own.
        self.call_shapes: dict[int, list[tuple]] = {}
        # Per function called first with several arrays (or arrays inside pytrees): that call
        # (see `_several`), and the traced program of solve it was made in (`closed`, set by
        # whoever traced solve) in which its traced arguments carry marks ("arg<i>", k).
        self.several: dict[int, dict[str, Any]] = {}
        self.closed: Any = None
        self._inside: dict[int, int] = {}  # per function, how deep its own rules are running
        self.dropped = 0
        self._jax = jax
        self._mark = _marker()
        self._index: dict[int, int] = {}
        self._keep: list[Any] = []  # the recorded functions, alive so their ids stay unique
        self._targets = [(getattr(jax, attr), attr, name) for attr, name in self.NAMES
                         if isinstance(getattr(jax, attr, None), type)]
        self._saved: list[tuple[type, Any]] = []

    def _record(self, obj: Any, kind: str) -> int | None:
        k = self._index.get(id(obj))
        if k is None:
            if len(self.functions) >= self.MAX_FUNCTIONS:
                self.dropped += 1
                return None
            k = self._index[id(obj)] = len(self.functions)
            self._keep.append(obj)
            fun = getattr(obj, "fun", None)
            name = getattr(fun, "__name__", None) or getattr(obj, "__name__", None)
            module = getattr(fun, "__module__", None)
            library = isinstance(module, str) and module.split(".")[0] in ("jax", "jaxlib")
            self.functions.append({"kind": kind, "name": str(name)[:64] if name else "",
                                   "library": library})
        return k

    def _marked(self, tree: Any, role: str, k: int) -> Any:
        """`tree` with every array leaf passed through the marker (tag (role, k))."""
        jax, mark = self._jax, self._mark
        try:
            return jax.tree_util.tree_map(
                lambda v: mark.bind(v, tag=(role, k)) if isinstance(v, jax.Array) else v, tree)
        except Exception:
            return tree

    def _passes(self, out: Any, given: Any) -> bool:
        """Every array leaf of `out` is one of `given`'s leaves, unchanged (the same object)."""
        try:
            leaves = self._jax.tree_util.tree_leaves(out)
            ids = {id(v) for v in self._jax.tree_util.tree_leaves(given)}
        except Exception:
            return False
        return bool(leaves) and all(id(v) in ids for v in leaves)

    def _marking_bwd(self, bwd: Any, k: int) -> Any:
        @functools.wraps(bwd)
        def marked_bwd(*args: Any, **kwargs: Any) -> Any:
            if self._probing:
                return bwd(*args, **kwargs)
            self.bwd_run.add(k)
            out = self.traces.call(bwd, args, kwargs, k, "bwd")
            self._probe(self.traces.replay(bwd, k, "bwd"), args, kwargs, k, backward=True)
            if args and self._passes(out, args[-1]):  # (..., residuals, cotangent)
                self.bwd_identity.add(k)
            return self._marked(out, "bwd", k)

        marked_bwd._jaxjudge_marks = k  # type: ignore[attr-defined]
        return marked_bwd

    def _watching(self, rule: Any, k: int, forward: bool) -> Any:
        """`rule` (the function, or its forward rule when `forward`), noting when its primal
        result is its arguments unchanged."""
        @functools.wraps(rule)
        def watched(*args: Any, **kwargs: Any) -> Any:
            if self._probing:
                return rule(*args, **kwargs)
            role = "fwd" if forward else "fun"
            self._inside[k] = self._inside.get(k, 0) + 1
            try:  # a forward rule calling its own function: not another way of calling it
                out = self.traces.call(rule, args, kwargs, k, role)
            finally:
                self._inside[k] -= 1
            self._probe(self.traces.replay(rule, k, role), args, kwargs, k, forward=forward)
            primal = out[0] if forward and isinstance(out, tuple) and len(out) == 2 else out
            if self._passes(primal, (args, kwargs)):
                self.fwd_identity.add(k)
            return out

        watched._jaxjudge_marks = k  # type: ignore[attr-defined]
        return watched

    def _probe(self, rule: Any, args: Any, kwargs: Any, k: int, *, forward: bool = False,
               backward: bool = False) -> None:
        """Trace `rule` on its own, at the avals it was just called with, and note in
        `rule_ops[k]` the primitives computed from its argument (for a backward rule: from
        the residuals, not the cotangent) that reach its (primal) result (`_Reach`: not through
        a product with a constant 0 or an unchosen case), and for a backward rule whether the
        cotangent reaches it. A rule that cannot be traced again marks `probe_failed`."""
        jax = self._jax
        entry = self.rule_ops.setdefault(k, {})
        if entry.get("probes", 0) >= self.MAX_PROBES:
            return
        entry["probes"] = entry.get("probes", 0) + 1
        primal_live: tuple[bool, ...] = ()
        try:
            leaves, tree, where = self.traces.flatten(args, kwargs)
            n_ct = 0
            if backward and args:
                n_ct = sum(isinstance(v, jax.Array) for v in jax.tree_util.tree_leaves(args[-1]))

            def alone(*arrays: Any) -> Any:
                a_args, a_kwargs = self.traces.rebuild(leaves, tree, where, arrays)
                out = rule(*a_args, **a_kwargs)
                res: Any = ()
                if forward and isinstance(out, tuple) and len(out) == 2:
                    out, res = out  # a forward rule's (primal, residuals)
                arrays = [[v for v in jax.tree_util.tree_leaves(t) if isinstance(v, jax.Array)]
                          for t in (out, res)]
                n_primal.append(len(arrays[0]))
                return arrays[0] + arrays[1]

            n_primal: list[int] = []
            specs = [jax.ShapeDtypeStruct(leaves[i].shape, leaves[i].dtype) for i in where]
            self._probing = True
            try:
                closed = jax.make_jaxpr(alone)(*specs)
            finally:
                self._probing = False
            jaxpr = closed.jaxpr
            n_in = len(jaxpr.invars)
            seeds = [i < n_in - n_ct for i in range(n_in)]
            found = {}
            n_out, split = len(jaxpr.outvars), n_primal[0]
            for key, outs in (("bwd_ops" if backward else "fwd_ops", range(split)),
                              ("res_ops", range(split, n_out))):
                if not outs:
                    continue
                reach = _Reach(_marker())
                live_in = reach.live_inputs(jaxpr, tuple(i in outs for i in range(n_out)), 0)
                found[key] = _computed_from(jaxpr, seeds, reach.live_eqns)
                if key != "res_ops":
                    primal_live = live_in
        except Exception:
            entry["probe_failed"] = True
            return
        for key, ops in found.items():
            entry[key] = ops if key not in entry else entry[key] & ops
        live_in = primal_live
        if backward:
            used = n_ct > 0 and any(live_in[n_in - n_ct:])
            entry["bwd_ct_used"] = used and entry.get("bwd_ct_used", True)

    def _call_vjp(self, orig: Any, obj: Any, args: Any, kwargs: Any) -> Any:
        k = self._record(obj, "custom_vjp")
        if k is None or self.functions[k]["library"]:
            return orig(obj, *args, **kwargs)
        given = _positional(obj, args, kwargs)
        kinds = self.call_kinds.setdefault(k, set())
        # the other arguments' values; arrays may differ in shape (vmap). A call from inside
        # its own rule is not counted: jax gives a rule a Python number as its own type.
        if len(kinds) < 8 and not self._inside.get(k):
            kinds.add(tuple(None if isinstance(a, self._jax.Array) else _digest(a)
                            for a in given or (kwargs,)))
        held = [a for a in given or () if isinstance(a, self._jax.Array)]
        shapes = self.call_shapes.setdefault(k, [])
        if len(held) == 1 and len(shapes) <= self.MAX_SHAPES:
            with contextlib.suppress(Exception):  # a symbolic dimension that cannot compare
                kind = (tuple(held[0].shape), held[0].dtype)
                if kind not in shapes:
                    shapes.append(kind)
        if k not in self.first_call:  # how rules_function calls the rules on x
            arrays = [isinstance(a, self._jax.Array) for a in given or ()]
            with contextlib.suppress(Exception):  # an array inside a pytree argument too
                if sum(isinstance(v, self._jax.Array)
                       for v in self._jax.tree_util.tree_leaves(given)) != sum(arrays):
                    arrays = []
            self.first_call[k] = (None if given is None or sum(arrays) != 1 else  # no tracer
                                  (arrays.index(True), [None if is_array else a for is_array, a
                                                        in zip(arrays, given, strict=True)]))
            if given is not None and self.first_call[k] is None:
                marked = self._several(obj, given, k)
                if marked is not None:
                    args, kwargs = tuple(marked), {}
        swapped: list[tuple[str, Any]] = []
        wrappers = (("bwd", lambda f: self._marking_bwd(f, k)),
                    ("fun", lambda f: self._watching(f, k, False)),
                    ("fwd", lambda f: self._watching(f, k, True)))
        for attr, wrap in wrappers:
            rule = getattr(obj, attr, None)
            # Not again when a rule calls its own function (the reference's fwd does): one mark.
            if callable(rule) and getattr(rule, "_jaxjudge_marks", None) is None:
                try:
                    setattr(obj, attr, wrap(rule))
                    swapped.append((attr, rule))
                except Exception:
                    pass
        try:
            out = orig(obj, *args, **kwargs)
        finally:
            for attr, rule in swapped:
                with contextlib.suppress(Exception):
                    setattr(obj, attr, rule)
        return self._marked(out, "out", k)

    def _several(self, obj: Any, given: list, k: int) -> list | None:
        """A first call with several arrays (or arrays inside pytree arguments): record, per
        leaf of its arguments, the value of each leaf that is not a tracer (a Python number, an
        array computed outside solve) and the shape of each traced one, and return the
        arguments with each traced leaf passed through a mark ("arg<leaf>", k), so that the
        rules run can find, in solve's program, what it was computed from (`_extra_args`)."""
        jax = self._jax
        try:
            leaves, tree = jax.tree_util.tree_flatten(given)
            top = [i for i, a in enumerate(given) for _ in jax.tree_util.tree_leaves(a)]
        except Exception:
            return None
        if len(top) != len(leaves):
            return None
        nondiff = set(getattr(obj, "nondiff_argnums", ()) or ())
        traced: dict[int, tuple] = {}
        for i, v in enumerate(leaves):
            if isinstance(v, jax.core.Tracer) and top[i] not in nondiff:
                traced[i] = (tuple(v.shape), v.dtype)
                leaves[i] = self._mark.bind(v, tag=(f"arg{i}", k))
        self.several[k] = {"tree": tree, "top": top, "traced": traced,
                           "values": [None if i in traced else v for i, v in enumerate(leaves)]}
        return jax.tree_util.tree_unflatten(tree, leaves)

    def _extra_args(self, k: int, ix: int) -> dict[str, Any] | str:
        """How the rules run gives the first call's traced arguments (see `_several`): x (the
        problem's argument, `ix`), solve's own arguments passed as they are, and values solve
        computed from none of its arguments (`jnp.ones_like(x)`, a constant), computed again
        in the rules program by the same steps of solve's program. An argument computed from
        solve's arguments is refused: the work it carries (a clipped gradient, a mask) would
        be done outside the rules. The marks are looked for among the top-level steps of
        solve's program (not inside an inner jit or a loop)."""
        call, closed = self.several[k], self.closed
        jaxpr = getattr(closed, "jaxpr", None)
        if jaxpr is None:
            return "its arguments could not be followed to solve's"
        made = {v: eqn for eqn in jaxpr.eqns for v in eqn.outvars}
        marks = {}
        for eqn in jaxpr.eqns:
            tag = eqn.params.get("tag") if eqn.primitive is self._mark else None
            if isinstance(tag, tuple) and tag[1:] == (k,) and str(tag[0]).startswith("arg"):
                marks.setdefault(tag[0], eqn.invars[0])
        invars = list(jaxpr.invars)
        names = _param_names(self._keep[k])
        how: dict[int, tuple] = {}
        steps: set = set()
        for i, (shape, _dtype) in call["traced"].items():
            name = names(call["top"][i])
            v = marks.get(f"arg{i}")
            if v is not None and _is_literal(v):
                how[i] = ("value", v)
                continue
            if v is None:
                return (f"its argument {name} could not be followed to solve's arguments (call "
                        "it in solve itself, not inside an inner jax.jit, a loop or jax.vmap)")
            if tuple(getattr(v.aval, "shape", ())) != shape:
                return (f"its argument {name} was given at another shape than solve computed "
                        "it at (under jax.vmap): with several arrays, call it on x itself")
            if v in invars:
                how[i] = ("input", invars.index(v))
                continue
            needed: set = set()
            todo = [v]
            while todo:
                w = todo.pop()
                if w in invars:
                    return (f"its argument {name} is computed from solve's arguments outside "
                            "the rules, so the work it carries would not be the rules': pass "
                            "x itself, solve's own arguments, or values computed from none of "
                            "them (a Python number, jnp.ones_like(x))")
                eqn = None if _is_literal(w) else made.get(w)
                if eqn is not None and id(eqn) not in needed:
                    needed.add(id(eqn))
                    todo.extend(a for a in eqn.invars if not _is_literal(a))
            steps |= needed
            how[i] = ("value", v)
        xs = [i for i, h in how.items() if h == ("input", ix) and call["top"].count(
            call["top"][i]) == 1]
        if not xs:
            return ("none of its array arguments is x itself as solve received it (with "
                    "several arrays, x must be one of them, whole)")
        return {"how": how, "x": xs[0], "steps": [e for e in jaxpr.eqns if id(e) in steps],
                "consts": dict(zip(jaxpr.constvars, closed.consts, strict=False))}

    def _several_rules(self, k: int, request: dict) -> Any:
        """`rules_function` for a first call with several arrays: fwd and bwd run with x in its
        place, solve's arguments and the constants in theirs (see `_extra_args`); the backward
        rule's cotangent for x is the one compared. At x's own shape only."""
        jax, obj, call = self._jax, self._keep[k], self.several[k]
        ix, ig = int(request["argument"]), int(request["cotangent"])
        extra = self._extra_args(k, ix)
        if isinstance(extra, str):
            return extra
        nondiff = tuple(getattr(obj, "nondiff_argnums", ()) or ())
        at = call["top"][extra["x"]]
        pos = [i for i in range(max(call["top"]) + 1) if i not in nondiff].index(at)
        fun, fwd, bwd = (self.traces.replay(getattr(obj, role), k, role)
                         for role in ("fun", "fwd", "bwd"))
        primal = self.traces.primal if getattr(obj, "symbolic_zeros", False) else None

        def rules(*args: Any) -> dict[str, Any]:
            env = dict(extra["consts"])
            for eqn in extra["steps"]:  # the constants, by solve's own steps
                bound = eqn.primitive.get_bind_params(eqn.params)  # (subfuns, params) in old
                subfuns, params = bound if isinstance(bound, tuple) else ((), bound)  # jax
                outs = eqn.primitive.bind(*subfuns, *[
                    a.val if _is_literal(a) else env[a] for a in eqn.invars], **params)
                outs = outs if eqn.primitive.multiple_results else [outs]
                env.update(zip(eqn.outvars, outs, strict=False))
            leaves = list(call["values"])
            for i, (kind, v) in extra["how"].items():
                leaves[i] = args[v] if kind == "input" else (
                    v.val if _is_literal(v) else env[v])
            leaves[extra["x"]] = args[ix]
            given = jax.tree_util.tree_unflatten(call["tree"], leaves)
            wrapped = given if primal is None else [
                a if i in nondiff else jax.tree_util.tree_map(
                    lambda v, p=(i == at): primal(v, p), a) for i, a in enumerate(given)]
            out = fwd(*wrapped)
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("the forward rule must return (output, residuals)")
            grads = bwd(*[given[i] for i in nondiff if i < len(given)], out[1], args[ig])
            first = (grads[pos] if isinstance(grads, (tuple, list)) and len(grads) > pos
                     else grads)
            own = {"function": fun(*given), "forward": out[0], "backward": first}
            return {**own, **{f"{n}@{j}": v for j in (1, 2) for n, v in own.items()}}

        return rules

    def rules_function(self, request: dict) -> Any:
        """The submission's custom_vjp rules on their own, as a function of solve's arguments:
        `fun(x)`, `fwd(x)` and `bwd(residuals, g)` with x and g solve's positional arguments
        `request` numbers ("argument", "cotangent"). Stage B runs it on the tests, so the
        parent sees what the rules compute, not where solve applies them. The function is
        the first of the submission's custom_vjp functions whose backward rule ran (else the
        first one called); a string says why there is none. A function of several arrays is
        run with the other arguments of its first call (`_several_rules`)."""
        own = [k for k, f in enumerate(self.functions)
               if f["kind"] == "custom_vjp" and not f["library"]]
        if not own:
            return "no jax.custom_vjp function of yours is called"
        k = next((k for k in own if k in self.bwd_run), own[0])
        obj = self._keep[k]
        call = self.first_call.get(k)
        nondiff = tuple(getattr(obj, "nondiff_argnums", ()) or ())
        if call is None and k not in self.several:
            return "it was called with keywords that do not bind to its parameters, or no array"
        at, given_args = call if call is not None else (None, [])
        if at in nondiff:
            return "its array argument is one of its nondiff_argnums"
        fun, fwd, bwd = (getattr(obj, a, None) for a in ("fun", "fwd", "bwd"))
        if not (callable(fun) and callable(fwd) and callable(bwd)):
            return "its rules were not defined with .defvjp(fwd, bwd)"
        if k in self.traces.stateful:
            return ("its rules computed different programs on two calls with the same "
                    "arguments' shapes: a rule must depend on its arguments only")
        if k in self.traces.untraced:
            return ("a rule of it ran when called but failed when traced on its own at the same "
                    "arguments: a rule must depend on its arguments only")
        if len(self.call_kinds.get(k, ())) > 1:
            return ("it was called with different values of its other arguments (a nondiff "
                    "bound, say), and its rules are checked as one call made them: call it "
                    "the same way each time")
        ran = [j for j in own if j in self.bwd_run]
        if len(ran) > 1:
            return (f"the backward rules of {len(ran)} custom_vjp functions of yours ran, and "
                    "the rules are checked for one of them: use one custom_vjp")
        if call is None:
            return self._several_rules(k, request)
        shapes = self.call_shapes.get(k, [])
        if len(shapes) > self.MAX_SHAPES:
            return (f"it was called at more than {self.MAX_SHAPES} shapes (or dtypes) of its "
                    "array argument, and its rules are run at each one it was called at: call "
                    "it on x itself, or under jax.vmap")
        # the programs solve computed with, not the Python functions called once more
        fun, fwd, bwd = (self.traces.replay(f, k, role) for f, role in
                         ((fun, "fun"), (fwd, "fwd"), (bwd, "bwd")))
        ix, ig = int(request["argument"]), int(request["cotangent"])
        statics = [given_args[i] for i in nondiff if i < len(given_args)]
        # the array's place among the arguments the backward rule returns cotangents for
        pos = [i for i in range(len(given_args)) if i not in nondiff].index(at)

        # defvjp(..., symbolic_zeros=True): JAX gives the forward rule CustomVJPPrimal pairs
        primal = self.traces.primal if getattr(obj, "symbolic_zeros", False) else None

        def one(x: Any, g: Any) -> dict[str, Any]:
            """The three parts, with the rules run at x's own shape."""
            given = [x if i == at else a for i, a in enumerate(given_args)]
            out = fwd(*([primal(a, i == at) if i not in nondiff else a
                         for i, a in enumerate(given)] if primal is not None else given))
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError("the forward rule must return (output, residuals)")
            grads = bwd(*statics, out[1], g)
            first = (grads[pos] if isinstance(grads, (tuple, list)) and len(grads) > pos
                     else grads)
            return {"function": fun(*given), "forward": out[0], "backward": first}

        jax = self._jax

        def rules(*args: Any) -> dict[str, Any]:
            x, g = args[ix], args[ig]
            own = one(x, g)
            parts = dict(own)
            # x and g are laid out side by side: the problem declares them of one shape
            # (checked at load), so g differs only for inputs outside that signature, whose
            # rules are then checked at x's shape alone.
            others = ([kind for kind in shapes if kind != (tuple(x.shape), x.dtype)]
                      if g.shape == x.shape else [])
            for i in range(self.EXTRA_SHAPES):  # the argument's own parts again when none
                here = _at_shape(jax, one, others[i], x, g) if i < len(others) else own
                parts.update({f"{name}@{i + 1}": v for name, v in here.items()})
            return parts

        return rules

    def __enter__(self) -> _CustomRuleCalls:
        for cls, kind, name in self._targets:
            orig = cls.__call__

            def call(obj: Any, *args: Any, _orig: Any = orig, _kind: str = kind,
                     _name: str = name, **kwargs: Any) -> Any:
                self.found.add(_name)
                if _kind == "custom_vjp":
                    return self._call_vjp(_orig, obj, args, kwargs)
                self._record(obj, _kind)
                return _orig(obj, *args, **kwargs)

            self._saved.append((cls, orig))
            cls.__call__ = call  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        while self._saved:
            cls, orig = self._saved.pop()
            cls.__call__ = orig  # type: ignore[method-assign]

    def report(self, jaxpr: Any) -> dict:
        """The summary's "custom_rules": per recorded function, whether its output and its
        backward rule's output reach `jaxpr`'s outputs, or {"omitted": why} when the dataflow
        is too large to follow."""
        reached: set = set()
        if any(f["kind"] == "custom_vjp" and not f["library"] for f in self.functions):
            try:
                reached = _Reach(self._mark).outputs_of(jaxpr)
            except _FlowTooLarge as exc:
                return {"omitted": str(exc)[:200]}
        functions = []
        for k, f in enumerate(self.functions):
            entry = dict(f)
            if f["kind"] == "custom_vjp" and not f["library"]:
                entry["output_used"] = ("out", k) in reached
                entry["bwd_run"] = k in self.bwd_run
                entry["bwd_used"] = ("bwd", k) in reached
                if k in self.fwd_identity:
                    entry["fwd_identity"] = True
                if k in self.bwd_identity:
                    entry["bwd_identity"] = True
                probed = self.rule_ops.get(k, {})
                for key in ("fwd_ops", "bwd_ops", "res_ops"):
                    if key in probed:
                        entry[key] = sorted(probed[key])[:MAX_LIVE_NAMES]
                if "bwd_ct_used" in probed:
                    entry["bwd_ct_used"] = probed["bwd_ct_used"]
                if probed.get("probe_failed"):
                    entry["probe_failed"] = True
            functions.append(entry)
        result: dict = {"functions": functions}
        if self.dropped:
            result["dropped"] = self.dropped
        return result


_MARK: Any = None


def _marker() -> Any:
    """The identity primitive that tags a custom_vjp's values (see _CustomRuleCalls): the same
    rules as `jax.ad_checkpoint.checkpoint_name`'s (the tangent is not marked, it lowers to its
    operand), under a name of its own so that no remat policy selects it by name."""
    global _MARK
    if _MARK is None:
        from jax.extend.core import Primitive
        from jax.interpreters import ad, batching, mlir

        mark = Primitive("jaxjudge_mark")
        mark.def_impl(lambda x, *, tag: x)
        mark.def_abstract_eval(lambda x, *, tag: x)
        ad.primitive_jvps[mark] = lambda xs, ts, *, tag: (mark.bind(xs[0], tag=tag), ts[0])
        batching.primitive_batchers[mark] = (
            lambda xs, dims, *, tag: (mark.bind(xs[0], tag=tag), dims[0]))
        mlir.register_lowering(mark, lambda ctx, x, *, tag: [x])
        _MARK = mark
    return _MARK


MAX_TAINT_STEPS = 200_000


def _computed_from(jaxpr: Any, seeds: list[bool], live: set[int]) -> set[str]:
    """The primitive names of the eqns of `jaxpr` (and of the calls in it with one sub-jaxpr,
    followed positionally) that are computed from the invars marked in `seeds` and are in
    `live` (their result reaches the outputs). Another eqn with sub-jaxprs counts as one step
    whose every output is computed from every input."""
    names: set[str] = set()
    steps = [MAX_TAINT_STEPS]
    work = [(jaxpr, seeds, 0)]
    while work:
        sub, marks, depth = work.pop()
        tainted = {v for v, m in zip(sub.invars, marks, strict=False) if m}
        for eqn in sub.eqns:
            steps[0] -= 1
            if steps[0] < 0:
                raise _FlowTooLarge("the rule has too many eqns to follow")
            ins = [not hasattr(v, "val") and v in tainted for v in eqn.invars]
            if not any(ins):
                continue
            tainted.update(eqn.outvars)
            if id(eqn) in live:
                names.add(str(eqn.primitive.name)[:MAX_LIVE_NAME_CHARS])
            subs = [j for v in eqn.params.values() for j in _sub_jaxprs(v)]
            if (len(subs) == 1 and len(subs[0].invars) == len(eqn.invars)
                    and depth < _Reach.MAX_FLOW_DEPTH):
                work.append((subs[0], ins, depth + 1))
    return names


class _FlowTooLarge(Exception):
    """The dataflow walk ran out of its budget (steps or nesting depth)."""


class _Reach:
    """Which marks (`_marker()` eqns) the outputs of a jaxpr depend on: a backward liveness
    walk from the outputs, into sub-jaxprs with their own outputs' liveness (positional for
    calls such as pjit, closed_call, checkpoint and custom_vjp_call; per branch for cond; to a
    fixed point over the carry for scan and while, whose condition counts whole). An eqn whose
    sub-jaxprs it does not know is taken whole: every output of every sub-jaxpr is live. Each
    (jaxpr, live outputs, known constants) is walked once; bounded by MAX_FLOW_STEPS and
    MAX_FLOW_DEPTH.

    A value kept only to be cancelled is not used: an operand of a product (`mul`,
    `dot_general`) with a constant 0 (`0 * q`, `jnp.zeros_like(q) * q`) and the case a constant
    predicate does not choose (`jnp.where(True, a, q)`) are not live. Constants are scalars
    from literals, through broadcasts, conversions and reshapes, and into calls (pjit) whose
    arguments they are."""

    MAX_FLOW_STEPS = 2_000_000
    MAX_FLOW_DEPTH = 200
    # Ops whose result holds their first operand's (scalar) value everywhere.
    CALLS = frozenset({"pjit", "jit", "closed_call", "core_call"})
    MAX_CONST_CALLS = 10_000
    ARITHMETIC: ClassVar[dict[str, Callable[..., Any]]] = {
        "neg": lambda a: -a, "add": lambda a, b: a + b, "add_any": lambda a, b: a + b,
        "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
    }
    SAME_VALUE = frozenset({"broadcast_in_dim", "convert_element_type", "reshape", "squeeze",
                            "expand_dims", "copy", "copy_p"})

    def __init__(self, mark: Any) -> None:
        from jax.extend.core import Literal

        self.mark = mark
        self.literal = Literal
        self.reached: set = set()
        self.live_eqns: set[int] = set()  # id() of the eqns some live output depends on
        self.const_memo: dict[tuple, dict] = {}  # (call's jaxpr, constant args) -> its consts
        self.const_depth = 0
        self.steps = 0
        self.memo: dict[tuple[int, tuple[bool, ...], tuple], tuple[bool, ...]] = {}

    def outputs_of(self, jaxpr: Any) -> set:
        self.live_inputs(jaxpr, (True,) * len(jaxpr.outvars), 0)
        return self.reached

    def _const(self, v: Any, consts: dict) -> Any:
        """The scalar constant `v` holds (a literal, or a var in `consts`), else None."""
        if isinstance(v, self.literal):
            val = getattr(v, "val", None)
            if isinstance(val, bool | int | float):
                return val
            try:
                return val.item() if getattr(val, "ndim", None) == 0 else None
            except Exception:
                return None
        return consts.get(v)

    def _consts(self, jaxpr: Any, known: tuple) -> dict:
        """The vars of `jaxpr` that hold one scalar constant (from `known` invars, literals,
        broadcasts and conversions of them, and products with a constant 0)."""
        consts = {v: c for v, c in zip(jaxpr.invars, known, strict=False) if c is not None}
        for eqn in jaxpr.eqns:
            self.steps += 1
            name = eqn.primitive.name
            if not eqn.invars:
                continue
            if len(eqn.outvars) != 1 or name in self.CALLS:
                self._call_consts(eqn, consts)
                continue
            if name in self.SAME_VALUE:
                c = self._const(eqn.invars[0], consts)
                if c is not None:
                    consts[eqn.outvars[0]] = c
            elif name in ("mul", "dot_general") and any(
                    self._const(v, consts) == 0 for v in eqn.invars[:2]):
                consts[eqn.outvars[0]] = 0
            elif name == "select_n" and len(eqn.invars) >= 2:
                pred = self._const(eqn.invars[0], consts)
                if isinstance(pred, bool | int) and 0 <= int(pred) < len(eqn.invars) - 1:
                    c = self._const(eqn.invars[1 + int(pred)], consts)
                    if c is not None:
                        consts[eqn.outvars[0]] = c
            elif name in self.ARITHMETIC:
                # Scalar arithmetic on constants: the cotangent of `loss + s - s` is 1 - 1.
                args = [self._const(v, consts) for v in eqn.invars]
                if all(isinstance(a, int | float) and not isinstance(a, bool) for a in args):
                    with contextlib.suppress(ArithmeticError, TypeError, ValueError):
                        value = self.ARITHMETIC[name](*args)
                        if abs(value) < 1e300:
                            consts[eqn.outvars[0]] = value
        return consts

    def _call_consts(self, eqn: Any, consts: dict) -> None:
        """The outputs of a call (pjit, closed_call: `jnp.where` is one) that hold a scalar
        constant given the constants it is called with, added to `consts`."""
        subs = [s for v in eqn.params.values() for s in _sub_jaxprs(v)]
        if eqn.primitive.name not in self.CALLS or len(subs) != 1:
            return
        sub = subs[0]
        if len(sub.invars) != len(eqn.invars) or len(sub.outvars) != len(eqn.outvars):
            return
        known = tuple(self._const(v, consts) for v in eqn.invars)
        key = (id(sub), known)
        inner = self.const_memo.get(key)
        if inner is None:
            if len(self.const_memo) >= self.MAX_CONST_CALLS:
                return
            self.const_memo[key] = inner = {}  # a call of itself (none in jax) finds nothing
            if self.const_depth >= self.MAX_FLOW_DEPTH:  # deeper calls: no constants known
                return
            self.const_depth += 1
            try:
                inner.update(self._consts(sub, known))
            finally:
                self.const_depth -= 1
        for out, v in zip(eqn.outvars, sub.outvars, strict=True):
            c = self._const(v, inner)
            if c is not None:
                consts[out] = c

    def live_inputs(self, jaxpr: Any, live_out: tuple[bool, ...], depth: int,
                    known: tuple = ()) -> tuple[bool, ...]:
        """For each invar of `jaxpr`: whether a live output depends on it (`known`: the scalar
        constant each invar holds, or None)."""
        key = (id(jaxpr), live_out, known)
        found = self.memo.get(key)
        if found is not None:
            return found
        if depth > self.MAX_FLOW_DEPTH:
            raise _FlowTooLarge(f"sub-jaxprs nest more than {self.MAX_FLOW_DEPTH} deep")
        consts = self._consts(jaxpr, known)
        live = {v for v, on in zip(jaxpr.outvars, live_out, strict=False)
                if on and not isinstance(v, self.literal)}
        for eqn in reversed(jaxpr.eqns):
            self.steps += 1
            if self.steps > self.MAX_FLOW_STEPS:
                raise _FlowTooLarge(f"more than {self.MAX_FLOW_STEPS} eqns to follow")
            outs = tuple(v in live for v in eqn.outvars)
            if not any(outs):
                continue
            self.live_eqns.add(id(eqn))
            ins = self.eqn_inputs(eqn, outs, depth, consts)
            for v, on in zip(eqn.invars, ins, strict=False):
                if on and not isinstance(v, self.literal):
                    live.add(v)
        result = tuple(v in live for v in jaxpr.invars)
        self.memo[key] = result
        return result

    def _cancelled(self, eqn: Any, consts: dict) -> tuple[bool, ...] | None:
        """The live invars of a product with a constant 0 (none) or of a select whose
        predicate is a constant (it and the chosen case); None for any other eqn."""
        name, n = eqn.primitive.name, len(eqn.invars)
        if name in ("mul", "dot_general") and any(
                self._const(v, consts) == 0 for v in eqn.invars[:2]):
            return (False,) * n
        if name == "select_n" and n >= 2:
            pred = self._const(eqn.invars[0], consts)
            if isinstance(pred, bool | int) and 0 <= int(pred) < n - 1:
                return tuple(i == 0 or i == 1 + int(pred) for i in range(n))
        return None

    def eqn_inputs(self, eqn: Any, outs: tuple[bool, ...], depth: int,
                   consts: dict | None = None) -> tuple[bool, ...]:
        """Which invars of `eqn` its live outputs `outs` depend on."""
        every = (True,) * len(eqn.invars)
        consts = {} if consts is None else consts
        cancelled = self._cancelled(eqn, consts)
        if cancelled is not None:
            return cancelled
        if eqn.primitive is self.mark:
            tag = eqn.params.get("tag")
            if isinstance(tag, tuple):
                self.reached.add(tag)
            return every
        subs = [s for v in eqn.params.values() for s in _sub_jaxprs(v)]
        if not subs:
            return every
        name, params, n_in, n_out = eqn.primitive.name, eqn.params, len(eqn.invars), len(outs)
        d = depth + 1
        if name == "cond" and all(len(b.invars) == n_in - 1 and len(b.outvars) == n_out
                                  for b in subs):
            ins = [False] * (n_in - 1)
            for branch in subs:
                ins = [a or b for a, b in zip(ins, self.live_inputs(branch, outs, d), strict=True)]
            return (True, *ins)
        if name == "scan" and len(subs) == 1 and len(subs[0].invars) == n_in:
            nc, nk = params.get("num_consts"), params.get("num_carry")
            if type(nc) is int and type(nk) is int and len(subs[0].outvars) == n_out:
                carry = list(outs[:nk])
                ins = self._loop(subs[0], carry, list(outs[nk:]), nc, d)
                return (*ins[:nc], *carry, *ins[nc + nk:])
        if name == "while":
            cond = next(_sub_jaxprs(params.get("cond_jaxpr")), None)
            body = next(_sub_jaxprs(params.get("body_jaxpr")), None)
            cn, bn = params.get("cond_nconsts"), params.get("body_nconsts")
            if (cond is not None and body is not None and type(cn) is int and type(bn) is int
                    and len(cond.invars) == cn + n_out and len(body.outvars) == n_out
                    and len(body.invars) == bn + n_out == n_in - cn):
                in_cond = self.live_inputs(cond, (True,) * len(cond.outvars), d)
                carry = [a or b for a, b in zip(outs, in_cond[cn:], strict=True)]
                in_body = self._loop(body, carry, [], bn, d)
                return (*in_cond[:cn], *in_body[:bn], *carry)
        if len(subs) == 1 and len(subs[0].invars) == n_in and len(subs[0].outvars) == n_out:
            known = tuple(self._const(v, consts) for v in eqn.invars)
            return self.live_inputs(subs[0], outs, d, known if any(
                k is not None for k in known) else ())
        for sub in subs:
            self.live_inputs(sub, (True,) * len(sub.outvars), d)
        return every

    def _loop(self, body: Any, carry: list[bool], rest: list[bool], n_consts: int,
              depth: int) -> tuple[bool, ...]:
        """A loop body whose outputs are the carry then `rest`, and whose inputs are
        `n_consts` consts, the carry, then the rest: its live inputs once the live `carry`
        (updated in place) no longer grows. The carry's initial values are live where the
        carry is: a loop may run zero times."""
        while True:
            ins = self.live_inputs(body, (*carry, *rest), depth)
            grown = False
            for i, on in enumerate(ins[n_consts:n_consts + len(carry)]):
                if on and not carry[i]:
                    carry[i] = grown = True
            if not grown:
                return ins


class _NeedsConcreteShapes(Exception):
    """The submission decided something on a symbolic dimension (the recorded questions)."""

    def __init__(self, found: list[str]) -> None:
        super().__init__("solve decides on a symbolic dimension: " + "; ".join(found))


def _trusted_files(jax: Any) -> tuple[str, ...]:
    """File-name prefixes of code whose questions about dimensions are jax's own: the jax and
    jaxlib packages, and this file (the watcher's helpers)."""
    import jaxlib

    dirs = [os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (jax, jaxlib)]
    return (*dirs, _ShapeDecisions.__init__.__code__.co_filename)


def _numberlike(value: Any) -> bool:
    """Whether a value might compare equal to a size (a float, an array, a tracer...)."""
    if isinstance(value, numbers.Number):
        return True
    return any(hasattr(value, a) for a in ("__array__", "__jax_array__", "__float__", "__index__"))


def _show(value: Any) -> str:
    """A short text for a compared value (sizes and numbers as themselves, else the type)."""
    if isinstance(value, (int, float)) or type(value).__name__ == "_DimExpr":
        return str(value)[:80]
    return type(value).__name__


_PREPARED: tuple | None = None


def prepare() -> tuple:
    """(checkpoint primitive, named policies), found by identity before any user code runs.
    The warm pool's zygote calls this before forking, so children inherit the answer."""
    global _PREPARED
    if _PREPARED is None:
        import jax
        import numpy as np

        closed = jax.make_jaxpr(jax.checkpoint(lambda v: v))(np.float32(1))
        _marker()
        _PREPARED = (closed.eqns[0].primitive, _policy_names(jax))
    return _PREPARED


def _remat_mlp():
    """A value_and_grad'ed residual tanh MLP under checkpoint(dots_saveable), jitted, with
    symbolic shapes: the paths a typical submission takes. Warm-up only, never graded."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import export

    def block(p, x):
        return x + jnp.tanh(x @ p["w"] + p["b"]) @ p["w"].T

    def loss(p, x, y):
        out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    b, d, h = export.symbolic_shape("b, d, h")
    params = {"w": jax.ShapeDtypeStruct((d, h), np.float32),
              "b": jax.ShapeDtypeStruct((h,), np.float32)}
    xs = jax.ShapeDtypeStruct((b, d), np.float32)
    return jax.jit(jax.value_and_grad(loss)), (params, xs, xs)


def warm_zygote() -> None:
    """What the pool's zygote does once before forking: `prepare()` and a trace of `_remat_mlp`
    (tracing creates no backend and no thread, so the zygote stays fork-safe)."""
    prepare()
    fn, args = _remat_mlp()
    fn.trace(*args)


def warm_spare(stop) -> list[str]:
    """Pre-pay, in a forked spare child before its request arrives, what a child otherwise pays
    on its first trace and export (~30 ms): the CPU backend (lowering asks for a default
    device, so it cannot be made in the fork-safe zygote), then a trace and an export of
    `_remat_mlp`. No user code or data is involved. `stop()` is asked before each step, so a
    waiting run waits for one step at most. Returns the steps done (for tests and logs)."""
    import jax
    from jax import export

    fn, args = _remat_mlp()  # builds functions and specs only: nothing traced yet
    steps = (
        ("backend", jax.devices),
        ("trace", lambda: fn.trace(*args)),
        ("export", lambda: export.export(fn)(*args).serialize()),
    )
    done: list[str] = []
    for name, step in steps:
        if stop():
            break
        step()
        done.append(name)
    return done


# Started ahead of its job (jaxjudge.isolation.sandbox.prestart, the one-off grade): import jax
# while the grader is still starting, then wait for one byte on stdin before reading the job and the
# submission, which the grader writes meanwhile. No user code runs before that byte.
WAIT_ENV = "JAXJUDGE_STAGE_WAIT"


def wait_for_job() -> bool:
    """Block until the grader says go (b"g") or gives up (EOF, or anything else)."""
    try:
        return os.read(0, 1) == b"g"
    except OSError:
        return False


def _export_rules(job_dir: str, job: dict, calls: _CustomRuleCalls, poly: tuple | None,
                  per_signature: list, export_fn: Any, jit: Any, result: dict) -> None:
    """When the job asks (`rules_run`), export the custom_vjp's rules on their own
    (`_CustomRuleCalls.rules_function`): once at the symbolic signature when `poly` ((args,
    shape-question guard)) exports cleanly, as rules.jaxexport; else at every test signature
    of `per_signature` ((id, args, the calls its own trace recorded, or None for `calls`)), as
    rules-<id>.jaxexport each: the rules solve used at that shape, so rules (or a custom_vjp)
    that do the work at some shapes only are run, and seen, at every shape. Else say why in
    `rules_error`. Never fatal: the requirement that asked fails with the reason."""
    request = job.get("rules_run")
    if not request:
        return
    rules = calls.rules_function(request)
    if isinstance(rules, str):
        result["rules_error"] = rules[:MAX_MESSAGE]
        return
    if poly is not None:
        args, guard = poly
        try:
            with guard:
                blob = export_fn(jit(rules))(*args).serialize()
            if not guard.found:
                _write_blob(job_dir, "rules.jaxexport", blob)
                result["exports"]["rules"] = "rules.jaxexport"
                result["rules_signature"] = "poly"
                return
        except BaseException:
            pass  # a test shape's export below says what fails, if anything does
    blobs = {}
    for sig_id, args, own in per_signature:
        here = rules if own is None else own.rules_function(request)
        if isinstance(here, str):
            result["rules_error"] = f"at the input shapes of signature {sig_id}: {here}"[
                :MAX_MESSAGE]
            return
        try:
            blobs[sig_id] = export_fn(jit(here))(*args).serialize()
        except BaseException as exc:
            result["rules_error"] = (f"at the input shapes of signature {sig_id}: "
                                     f"{type(exc).__name__}: {exc}")[:MAX_MESSAGE]
            return
    for sig_id, blob in blobs.items():
        name = f"rules-{sig_id}"
        _write_blob(job_dir, f"{name}.jaxexport", blob)
        result["exports"][name] = f"{name}.jaxexport"
    result["rules_signatures"] = list(blobs)


MAX_SUMMARIES_BYTES = 1_000_000  # every test signature's distinct summaries together


class _Summaries:
    """One summary per test signature (the per-signature path), each distinct one written
    once: result["jaxprs"] (the distinct ones) and result["jaxpr_at"] (signature id -> index).
    Past MAX_SUMMARIES_BYTES together, a new summary is replaced by {"omitted": why}: the
    summaries explain, so their size must never cost the grade."""

    def __init__(self) -> None:
        self.distinct: list[dict] = []
        self.at: dict[str, int] = {}
        self._index: dict[str, int] = {}
        self._size = 0

    def add(self, sig_id: str, summary: dict) -> None:
        text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
        if text not in self._index and self._size + len(text) > MAX_SUMMARIES_BYTES:
            summary = {"omitted": f"the summaries at every input shape would take more than "
                                  f"{MAX_SUMMARIES_BYTES} bytes"}
            text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
        k = self._index.get(text)
        if k is None:
            k = self._index[text] = len(self.distinct)
            self.distinct.append(summary)
            self._size += len(text)
        self.at[sig_id] = k


class _RetryTimeout(BaseException):
    """The retry with a concrete argument ran past its time (`_concrete_retry`)."""


def _replaced(tree: Any, path: list, value: Any) -> Any:
    """`tree` (positional arguments, nested lists and dicts) with the leaf at `path` (list
    indices and dict keys) replaced by `value`; KeyError/IndexError/TypeError when absent."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {**tree, head: _replaced(tree[head], rest, value)}
    out = list(tree)
    out[head] = _replaced(out[head], rest, value)
    return type(tree)(out) if isinstance(tree, tuple) else out


def _concrete_retry(job: dict, sig: dict, fn: Any, np: Any, jax: Any, jit: Any, export_fn: Any,
                    seconds: float) -> list[dict]:
    """After `solve` failed to trace or export at signature `sig`: the same trace and export
    again, once per argument the job names in "traced_arguments" ({"argument", "path",
    "value"}), with that argument made concrete (a numpy value of its dtype and shape: `value`,
    a visible example's, or zeros). Each entry says whether that worked ("concrete_ok"): if so,
    the failure came from the argument being traced (an `int()`, an f-string or a table index
    on it), which the requirement naming it decides. Each retry has `seconds` (SIGALRM);
    past them, or when the argument is not at `path`, the entry has no "concrete_ok"."""
    import signal

    out = []
    for entry in job.get("traced_arguments") or []:
        answer: dict = {"argument": str(entry.get("argument", ""))[:128]}
        out.append(answer)
        try:
            path = list(entry["path"])
            leaf = sig["args"]
            for key in path:
                leaf = leaf[key]
            dtype = np.dtype(leaf["dtype"])
            given = entry.get("value")
            value = (np.asarray(given, dtype) if isinstance(given, (int, float, bool))
                     and not leaf["shape"] else np.zeros(leaf["shape"], dtype))
            value = value[()] if value.ndim == 0 else value  # a numpy scalar
            args = _to_spec_tree(sig["args"], jax, np)
        except Exception:
            continue

        def concrete(*traced: Any, _path: list = path, _value: Any = value) -> Any:
            return fn(*_replaced(list(traced), _path, _value))

        def on_alarm(signum: int, frame: Any) -> None:
            raise _RetryTimeout

        previous = signal.signal(signal.SIGALRM, on_alarm)
        # As solve ran, then with jax.disable_jit(): a jitted helper that solve passes the
        # argument to traces it again whatever solve was given, unless it runs inline.
        for inline in (False, True):
            try:
                try:
                    signal.setitimer(signal.ITIMER_REAL, seconds)
                    with jax.disable_jit() if inline else contextlib.nullcontext():
                        export_fn(jit(concrete))(*args)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                answer["concrete_ok"] = True
                answer.pop("error_type", None)
                break
            except _RetryTimeout:
                answer.pop("concrete_ok", None)  # undecided: the exception-name path decides
                break
            except BaseException as exc:  # the submission's own failure, whatever it is
                answer["concrete_ok"] = False
                answer["error_type"] = type(exc).__name__[:100]
        signal.signal(signal.SIGALRM, previous)
    return out


def main(job_dir: str) -> int:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    result: dict = {"status": "internal", "message": "", "timings": timings}
    # No cyclic collections while jax's ~1,000 modules load: ~8% off the import, the longest
    # step of a one-off grade. On again before the job, so the submission runs as usual.
    gc.disable()

    # Import everything we rely on BEFORE user code can patch it.
    import jax
    import numpy as np
    from jax import export as jax_export

    # One source frame per op in the exported program (the innermost of the submission's own):
    # stage B reads them back so a report can name the line an op came from. Stage B's verified
    # text has no locations, so its results cache still serves every layout of one program.
    with contextlib.suppress(Exception):
        jax.config.update("jax_traceback_in_locations_limit", 1)
    jit = jax.jit
    export_fn = jax_export.export
    checkpoint_prim, policies = prepare()
    trusted = _trusted_files(jax)
    result["jax_version"] = jax.__version__
    timings["import_jax"] = time.perf_counter() - t0
    gc.freeze()  # what the imports made stays: later collections skip it (trace -13 ms)
    gc.enable()
    if os.environ.get(WAIT_ENV) == "1":
        t_wait = time.perf_counter()
        if not wait_for_job():
            return 0  # the grader gave up on this run: no job, no submission
        timings["wait"] = time.perf_counter() - t_wait
    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as f:
        job = json.load(f)
    source_path = os.path.join(job_dir, os.path.basename(job.get("source", "submission.py")))
    # The name the learner knows the file by, for tracebacks (sanitized by the grader).
    source_name = str(job.get("display_name") or "submission.py")

    # 1. Load the submission.
    with open(source_path, "rb") as f:
        raw = f.read()
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.update(status="compile_error", message=f"the file is not valid UTF-8 ({exc})")
        _write_result(job_dir, result)
        return 0
    if not source.strip():
        result.update(status="compile_error", message="the file is empty: define solve(...)")
        _write_result(job_dir, result)
        return 0
    try:
        code = compile(source, source_name, "exec")
    except (SyntaxError, ValueError) as exc:
        result.update(status="compile_error", message=_short_traceback(exc, source_name))
        _write_result(job_dir, result)
        return 0
    module_globals: dict = {"__name__": "submission", "__file__": source_name}
    t1 = time.perf_counter()
    try:
        exec(code, module_globals)
    except BaseException as exc:  # SystemExit included: the submission ended its own import
        result.update(
            status="runtime_error",
            message="importing your file failed:\n" + _short_traceback(exc, source_name),
        )
        _write_result(job_dir, result)
        return 0
    timings["load"] = time.perf_counter() - t1
    entry = job.get("entry_point", "solve")
    fn = module_globals.get(entry)
    if not callable(fn):
        result.update(
            status="compile_error",
            message=f"no function named {entry!r} is defined at the top level of your file",
        )
        _write_result(job_dir, result)
        return 0

    signatures = job["signatures"]
    symbolic = job.get("symbolic")
    jitted = jit(fn)
    # 2+3 fast path: one shape-polymorphic trace feeds both the requirement report and the
    #    export (jax caches the trace, so exporting the same jitted function does not trace
    #    again): one trace, one program, one verification; stage B still specialises per shape.
    if symbolic:
        t2 = time.perf_counter()
        decisions: _ShapeDecisions | None = None
        try:
            names = list(symbolic["dims"])
            dims = dict(zip(names, jax_export.symbolic_shape(", ".join(names)), strict=True))
            args = _to_spec_tree(symbolic["args"], jax, np, dims)
            decisions = _ShapeDecisions(type(dims[names[0]]), source_name, trusted)
            calls = _CustomRuleCalls(jax)
            with decisions, calls:
                closed = jitted.trace(*args).jaxpr  # jax >= 0.4.38 (pyproject's floor)
            calls.closed = closed
            if decisions.found:
                raise _NeedsConcreteShapes(decisions.found)
            summary = _summary(closed.jaxpr, calls, checkpoint_prim, policies)
            timings["trace"] = time.perf_counter() - t2
            t3 = time.perf_counter()
            with decisions:  # the trace is cached, but lowering may call back into user code
                exported = export_fn(jitted)(*args)
            if decisions.found:
                raise _NeedsConcreteShapes(decisions.found)
            _write_blob(job_dir, "poly.jaxexport", exported.serialize())
            timings["export"] = time.perf_counter() - t3
            result.update(status="ok", jaxpr=summary, exports={"poly": "poly.jaxexport"})
            if job.get("rules_run"):
                t4 = time.perf_counter()
                guard = _ShapeDecisions(type(dims[names[0]]), source_name, trusted)
                each = [(sig["id"], _to_spec_tree(sig["args"], jax, np), None)
                        for sig in signatures]  # one program for all: one custom_vjp
                _export_rules(job_dir, job, calls, (args, guard), each, export_fn, jit, result)
                timings["export_rules"] = time.perf_counter() - t4
            _write_result(job_dir, result)
            return 0
        except BaseException as exc:  # SystemExit too: the per-signature path below reports it
            # Needs concrete shapes (or fails): the per-signature path reports errors.
            if decisions is not None and decisions.found:
                reason = str(_NeedsConcreteShapes(decisions.found))
            else:
                reason = f"the symbolic trace raised {type(exc).__name__}"
            result["poly_fallback"] = reason[:MAX_MESSAGE]

    return _per_signature(job_dir, job, fn, result, timings, source_name, jit, export_fn)


def _per_signature(job_dir: str, job: dict, fn: Any, result: dict, timings: dict[str, float],
                   source_name: str, jit: Any, export_fn: Any) -> int:
    """2+3 per signature: at each test signature one trace, summarised for the requirement
    report (result["jaxprs"], result["jaxpr_at"]) and exported from the same jitted object, so
    jax reuses that trace: solve runs once per shape, and the report reads the very program
    that runs there (a branch on the shape or a call counter cannot show the report one program
    and the tests another). Then one export per probe shape (no test runs there)."""
    import jax
    import numpy as np

    checkpoint_prim, policies = prepare()
    signatures = job["signatures"]
    probes = list(job.get("probes") or [])
    summaries = _Summaries()
    # Per test signature, the custom_vjp calls its own trace recorded (solve may pick another
    # custom_vjp at another shape): the rules exported there are the ones solve used there.
    calls_of: dict[str, _CustomRuleCalls] = {}
    exports = {}
    spent = {"trace": 0.0, "export": 0.0, "export_probes": 0.0}
    for k, sig in enumerate(signatures + probes):
        tested = k < len(signatures)
        step = "trace"
        t = time.perf_counter()
        try:
            args = _to_spec_tree(sig["args"], jax, np)
            jitted = jit(fn)
            if tested:
                if k:  # an inner jit's trace kept from an earlier shape calls no custom_vjp
                    jax.clear_caches()  # again: its calls would be missing from `calls`
                calls = _CustomRuleCalls(jax)
                with calls:
                    closed = jitted.trace(*args).jaxpr
                calls.closed = closed
                summaries.add(sig["id"], _summary(closed.jaxpr, calls, checkpoint_prim, policies))
                calls_of[sig["id"]] = calls
                spent["trace"] += time.perf_counter() - t
            step = "export"
            t_export = time.perf_counter()
            blob = export_fn(jitted)(*args).serialize()  # the cached trace: no new call
            spent["export" if tested else "export_probes"] += time.perf_counter() - t_export
        except BaseException as exc:
            result.update(status=f"{step}_error", message=_short_traceback(exc, source_name),
                          error_type=type(exc).__name__[:100], signature=sig["id"])
            _write_result(job_dir, result)  # what stands if the retry below never returns
            if tested and job.get("traced_arguments"):
                seconds = max(2.0, 4 * (time.perf_counter() - t))
                result["traced_cause"] = _concrete_retry(job, sig, fn, np, jax, jit, export_fn,
                                                          seconds)
                _write_result(job_dir, result)
            return 0
        name = f"{sig['id']}.jaxexport"
        _write_blob(job_dir, name, blob)
        exports[sig["id"]] = name
    timings.update({key: v for key, v in spent.items() if v or key != "export_probes"})
    result.update(status="ok", exports=exports, jaxprs=summaries.distinct,
                  jaxpr_at=summaries.at)
    if job.get("rules_run") and signatures:
        t4 = time.perf_counter()
        each = [(sig["id"], _to_spec_tree(sig["args"], jax, np), calls_of[sig["id"]])
                for sig in signatures]
        _export_rules(job_dir, job, calls_of[signatures[0]["id"]], None, each, export_fn, jit,
                      result)
        timings["export_rules"] = time.perf_counter() - t4
    _write_result(job_dir, result)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown (jax's atexit work): the result is already on disk. The exit
    # captured before the submission ran: it may have rebound os._exit to rewrite its result.
    _EXIT(code)
