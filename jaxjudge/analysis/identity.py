"""Steps that give an operand back: a product with an identity matrix, `x * 1`, `x + 0`.

The dataflow rules tell copies (a reshape, a convert, a slice of x is still x) from values
computed anew (a product of x is not x). A product that only gives its operand back would
hide a copy as a computation: `x.astype(bf16) @ jnp.eye(D, dtype=bf16)`, converted back to
float32, is x rounded, not the result of a bfloat16 product; `x[t] @ jnp.eye(D)` written into
a buffer is x rebuilt row by row. So, read from the program (never from what the source says),
a step *passes* an operand when:

- it multiplies by a splat 1, divides by a splat 1, or adds or subtracts a splat 0 (folded by
  `jaxjudge.analysis.folding`): the other operand, unchanged;
- it is a `dot_general` (or `dot`) with a two-dimensional operand that is a shifted identity
  (1 where `i - j == k`, 0 elsewhere: `jnp.eye(n, m, k)`), contracted over one of its two
  dimensions, without batch dimensions: every element of the result is one of the other
  operand's, or 0 (a copy, re-laid-out and padded). A diagonal of another constant `c` is
  the other operand scaled by `c` (`scale`).

An identity matrix is recognised by what the program computes, element by element, from
`iota` (which is how `jnp.eye` lowers on every JAX this grader supports: iota, compare, convert)
or from a dense literal (`np.eye` captured as a constant). Each node has a *form*: `("at", d,
c)`, the index along dimension d plus c (an iota, shifted), or `("diag", a, b, k, on, off)`,
the value `on` where `index[a] - index[b] == k` and `off` elsewhere (None: not one constant
there). Comparing two iotas along different dimensions makes a diagonal; elementwise steps
(convert, select, add, multiply, compare...) evaluate each region with the folded scalars, so
`where(i == j, 1, where(i != j, 0, b))` is the identity even though it reads b (b is masked
out everywhere). Forms are found by the same optimistic worklist as constant folding (a
loop-carried value keeps its form only if every step gives it the same one), at one
evaluation per step and change, spent from the graph's `Budget`, and only for programs with
a product.
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple

from jaxjudge.analysis.dataflow import Graph, Step
from jaxjudge.analysis.folding import COMPARE, UNSET, Value, evaluate, fixpoint
from jaxjudge.analysis.stablehlo import Op

MAX_LITERAL_CHARS = 1 << 16  # a dense literal read for an identity matrix (about 64 x 64 f32)
_ELEMENTWISE = frozenset({
    "stablehlo.add", "stablehlo.subtract", "stablehlo.multiply", "stablehlo.divide",
    "stablehlo.remainder", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.and",
    "stablehlo.or", "stablehlo.xor", "stablehlo.negate", "stablehlo.abs", "stablehlo.sign",
    "stablehlo.not", "stablehlo.convert", "stablehlo.compare", "stablehlo.select",
    "stablehlo.clamp",
})
_IOTAS = frozenset({"stablehlo.iota", "stablehlo.dynamic_iota"})
_BROADCASTS = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim"})
_DOTS = frozenset({"stablehlo.dot_general", "stablehlo.dot"})
_ONE_BYTES = {
    "f64": struct.pack("<d", 1.0), "f32": struct.pack("<f", 1.0),
    "f16": struct.pack("<e", 1.0), "bf16": struct.pack("<f", 1.0)[2:],
}
Form = tuple  # ("at", dim, offset) or ("diag", a, b, k, on, off); see the module docstring
FormValue = object  # a Form, UNSET (not evaluated yet) or None (no form)


class Passed(NamedTuple):
    """What a step gives back: the operand node whose values its result holds, times `scale`."""

    node: int
    scale: int | float


def _attr_text(op: Op, text: str, cap: int = 4096) -> str:
    return " ".join(text[a:b] for a, b in op.spans if b - a <= cap)


def _int_list(attrs: str, pattern: str) -> list[int] | None:
    found = re.search(pattern, attrs)
    if found is None:
        return None
    try:
        return [int(v) for v in (found.group(1) or "").split(",") if v.strip()]
    except ValueError:
        return None


def _literal_form(op: Op, text: str) -> Form | None:
    """A dense 2-D literal that is the identity matrix (`np.eye(n)` captured as a constant)."""
    types = op.result_types()
    if len(types) != 1 or len(types[0].dims) != 2 or None in types[0].dims:
        return None
    rows, cols = types[0].dims  # type: ignore[misc]
    element = types[0].element
    attrs = _attr_text(op, text, MAX_LITERAL_CHARS)
    found = re.search(r'value = dense<("0x[0-9A-Fa-f]*"|\[[-+0-9a-z.,\[\] ]*\])>', attrs)
    if found is None or rows * cols == 0:
        return None
    body = found.group(1)
    if body.startswith('"'):
        width = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i1": 1}.get(element)
        if width is None and element.startswith(("i", "ui")) and element.lstrip("ui").isdigit():
            width = max(1, int(element.lstrip("ui")) // 8)
        if width is None:
            return None
        try:
            raw = bytes.fromhex(body[3:-1])
        except ValueError:
            return None
        one = _ONE_BYTES.get(element, (1).to_bytes(width, "little"))
        if len(raw) != rows * cols * width:
            return None
        cells = [raw[i:i + width] for i in range(0, len(raw), width)]
        is_one = [c == one for c in cells]
        ok = all(c == one or not any(c) for c in cells)
    else:
        words = [w for w in re.split(r"[\[\], ]+", body) if w]
        if len(words) != rows * cols:
            return None
        try:
            numbers = [1.0 if w == "true" else 0.0 if w == "false" else float(w) for w in words]
        except ValueError:
            return None
        is_one = [v == 1 for v in numbers]
        ok = all(v in (0, 1) for v in numbers)
    if ok and all(is_one[r * cols + c] == (r == c) for r in range(rows) for c in range(cols)):
        return ("diag", 0, 1, 0, 1, 0)
    return None


def _moved(form: Form, where: list[int]) -> Form | None:
    """The form with its dimensions renumbered (operand dim d -> result dim where[d])."""
    if form[0] == "at":
        return ("at", where[form[1]], form[2]) if form[1] < len(where) else None
    a, b = form[1], form[2]
    if max(a, b) >= len(where):
        return None
    na, nb = where[a], where[b]
    return ("diag", na, nb, *form[3:]) if na < nb else ("diag", nb, na, -form[3], *form[4:])


def _broadcast(op: Op, form: Form, attrs: str) -> Form | None:
    dims = _int_list(attrs, r"broadcast_dimensions = array<i64(?::([-0-9, ]*))?>")
    ins, outs = op.operand_types(), op.result_types()
    if dims is None or not ins or not outs:
        return None
    for d in form[1:3] if form[0] == "diag" else form[1:2]:
        # A size-1 dimension stretched holds one index only: not the form any more.
        if d >= len(dims) or d >= len(ins[0].dims) or dims[d] >= len(outs[0].dims) or (
                ins[0].dims[d] == 1 and outs[0].dims[dims[d]] != 1):
            return None
    return _moved(form, dims)


def _compare(op: Op, x: Form, y: Form) -> Form | None:
    """Two iotas along different dimensions compared: a diagonal."""
    if x[0] != "at" or y[0] != "at" or x[1] == y[1]:
        return None
    direction = op.attrs.get("comparison_direction", "")
    test = COMPARE.get(direction)
    if test is None:
        return None
    on, off = int(test(0, 0)), {"EQ": 0, "NE": 1}.get(direction)
    # index[x1] + x2 == index[y1] + y2 on the diagonal: index[x1] - index[y1] == y2 - x2.
    if x[1] < y[1]:
        return ("diag", x[1], y[1], y[2] - x[2], on, off)
    return ("diag", y[1], x[1], x[2] - y[2], on, off)


def _regions(op: Op, forms: list[FormValue], values: list[Value], step: Step) -> FormValue:
    """An elementwise step over diagonals and splats: each region evaluated on its own."""
    key: tuple | None = None
    on_args: list[Value] = []
    off_args: list[Value] = []
    for o in step.operands:
        f, v = forms[o], values[o]
        if v is not None:
            on_args.append(v)
            off_args.append(v)
            continue
        if f is UNSET:
            return UNSET
        if f is None or f[0] != "diag" or (key is not None and f[1:4] != key):
            on_args.append(None)
            off_args.append(None)
            continue
        key = f[1:4]
        on_args.append(f[4])
        off_args.append(f[5])
    if key is None:
        return None
    on, off = evaluate(op, on_args), evaluate(op, off_args)
    on = None if on is UNSET else on
    off = None if off is UNSET else off
    return None if on is None and off is None else ("diag", *key, on, off)


def _shifted(op: Op, step: Step, forms: list[FormValue], values: list[Value]) -> FormValue:
    """An iota plus or minus a splat, or times 1 (`jnp.arange` with symbolic dimensions is
    `0 + 1 * iota`): the same index, shifted."""
    a, b = step.operands[0], step.operands[1]
    fa, fb, va, vb = forms[a], forms[b], values[a], values[b]
    if fa is UNSET or fb is UNSET:
        return UNSET
    if op.name == "stablehlo.multiply":
        return fa if vb == 1 and isinstance(fa, tuple) and fa[0] == "at" else (
            fb if va == 1 and isinstance(fb, tuple) and fb[0] == "at" else
            _regions(op, forms, values, step))
    if isinstance(fa, tuple) and fa[0] == "at" and isinstance(vb, int | float):
        return ("at", fa[1], fa[2] + (vb if op.name == "stablehlo.add" else -vb))
    if isinstance(fb, tuple) and fb[0] == "at" and isinstance(va, int | float) and (
            op.name == "stablehlo.add"):
        return ("at", fb[1], fb[2] + va)
    return _regions(op, forms, values, step)


def _form(op: Op, step: Step, forms: list[FormValue], values: list[Value], text: str
          ) -> FormValue:
    """One op's form from its operands' (UNSET: wait for them; None: no form)."""
    name, ops = op.name, step.operands
    if name in _IOTAS:
        found = re.search(r"iota_dimension = (\d+)", _attr_text(op, text))
        return ("at", int(found.group(1)), 0) if found else None
    if name == "stablehlo.constant":
        return _literal_form(op, text) if values[step.results[0]] is None else None
    if not ops:
        return None
    first = forms[ops[0]]
    if name in _BROADCASTS or name == "stablehlo.transpose" or name == "stablehlo.reshape":
        if not isinstance(first, tuple):
            return first
        if name == "stablehlo.reshape":
            ins, outs = op.operand_types(), op.result_types()
            same = ins and outs and ins[0].dims == outs[0].dims and None not in ins[0].dims
            return first if same else None
        attrs = _attr_text(op, text)
        if name == "stablehlo.transpose":
            perm = _int_list(attrs, r"permutation = array<i64(?::([-0-9, ]*))?>")
            if perm is None or sorted(perm) != list(range(len(perm))):
                return None
            return _moved(first, [perm.index(d) for d in range(len(perm))])
        return _broadcast(op, first, attrs)
    if name in ("stablehlo.add", "stablehlo.subtract", "stablehlo.multiply") and len(ops) == 2:
        return _shifted(op, step, forms, values)
    if name == "stablehlo.compare" and len(ops) == 2:
        x, y = forms[ops[0]], forms[ops[1]]
        if x is UNSET or y is UNSET:
            return UNSET
        if isinstance(x, tuple) and isinstance(y, tuple) and x[0] == y[0] == "at":
            return _compare(op, x, y)
    if name in _ELEMENTWISE:
        return _regions(op, forms, values, step)
    return None


def find_forms(g: Graph, values: list[Value], text: str) -> list[FormValue]:
    """Every node's form (None: none), by `jaxjudge.analysis.folding.fixpoint` (a node goes from
    UNSET to a form to None); a dense literal's text is spent from the budget too."""

    def one(op: Op, step: Step, forms: list[FormValue]) -> FormValue:
        if op.name == "stablehlo.constant":
            g.budget.spend(sum(b - a for a, b in op.spans) // 64)
        return _form(op, step, forms, values, text)

    return fixpoint(g, one)


def _contracted(op: Op, text: str) -> tuple[list[int], list[int]] | None:
    """(lhs, rhs) contracting dimensions of a dot without batch dimensions (None: others)."""
    if op.name == "stablehlo.dot":
        types = op.operand_types()
        return ([len(types[0].dims) - 1], [0]) if len(types) >= 2 else None
    attrs = _attr_text(op, text)
    if "batching_dimensions = [" in attrs:
        return None
    lhs = _int_list(attrs, r"lhs_contracting_dimensions = \[([-0-9, ]*)\]")
    rhs = _int_list(attrs, r"rhs_contracting_dimensions = \[([-0-9, ]*)\]")
    return None if lhs is None or rhs is None else (lhs, rhs)


def _identity_dot(op: Op, step: Step, forms: list[FormValue], text: str) -> Passed | None:
    """A dot with a shifted (scaled) identity matrix: the other operand, scaled."""
    dims = _contracted(op, text)
    types = op.operand_types()
    if dims is None or len(step.operands) != 2 or len(types) < 2:
        return None
    for side in (0, 1):
        f = forms[step.operands[side]]
        if (isinstance(f, tuple) and f[0] == "diag" and f[1:3] == (0, 1) and f[5] == 0
                and f[4] not in (None, 0) and len(types[side].dims) == 2
                and len(dims[side]) == 1 and dims[side][0] in (0, 1)):
            return Passed(step.operands[1 - side], f[4])
    return None


def passes(g: Graph, values: list[Value], text: str,
           forms: list[FormValue] | None = None) -> dict[int, Passed]:
    """id() of every step that gives an operand back (see the module docstring) -> what it
    gives; `values` are the folded constants, `text` the program's (its ops' attributes);
    `forms`: `find_forms` of the same, when the caller has them (found here otherwise)."""
    out: dict[int, Passed] = {}
    for step, op in zip(g.steps, g.ops, strict=True):
        if op is None or len(step.operands) != 2 or len(step.results) != 1:
            continue
        a, b = step.operands
        if values[step.results[0]] is not None:
            continue
        name = op.name
        if name == "stablehlo.multiply" and (values[a] == 1 or values[b] == 1):
            out[id(step)] = Passed(b if values[a] == 1 else a, 1)
        elif name == "stablehlo.divide" and values[b] == 1:
            out[id(step)] = Passed(a, 1)
        elif name == "stablehlo.add" and (values[a] == 0 or values[b] == 0):
            out[id(step)] = Passed(b if values[a] == 0 else a, 1)
        elif name == "stablehlo.subtract" and values[b] == 0:
            out[id(step)] = Passed(a, 1)
        elif name in _DOTS:
            if forms is None:
                forms = find_forms(g, values, text)  # only programs with a product pay for it
            found = _identity_dot(op, step, forms, text)
            if found is not None:
                out[id(step)] = found
    return out


def copies_of(found: dict[int, Passed]) -> dict[int, int]:
    """The steps that give an operand back unscaled -> that operand (a copy, like a convert)."""
    return {k: p.node for k, p in found.items() if p.scale == 1}
