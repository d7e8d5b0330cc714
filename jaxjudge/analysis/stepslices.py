"""Whether a loop reads an input one step's slice at a time (`loop_over_dim`'s `sliced`).

A loop that does the work reads its input a step's share at a time: a scan's row, `x[t]`, a
block of keys. One that computes the whole result at one step from all of the input (`w @ x`
under `jnp.where(t == 0, ...)`) and carries it along reads the input whole. So, over the
inlined dataflow, each named argument has three bits:

- *copy*: the argument's values re-laid-out (reshape, transpose, concatenation, a loop's
  links) or transformed elementwise (`alpha * x`, a `jnp.where` on `x > 0`), or given back by
  a product with a (scaled) identity matrix (`x[t] @ jnp.eye(D)`, `jnp.eye(4) @ block`: see
  `jaxjudge.analysis.identity`): every element still is one of its own;
- *whole*: computed from it otherwise (a product, a reduction, a cumulative sum, a scatter
  that adds updates larger than one step's share, a slice of something already whole);
- *piece*: one step's slice of a copy, kept through the same layout and elementwise work.

A slice (`slice`, `dynamic_slice`, `gather`) of a copy that holds at most one step's share of
the arguments it copies (their elements divided by the trip count, summed; a static slice of a
concatenation copies only the parts it overlaps; a window of an input joined with constants
counts only the input's elements, so a block of `[v | 1]` is one of `v`) is a piece: what is
computed from it across elements (`q @ kj.T`, `p @ vj`) reads nothing whole. A larger slice is
still a copy. The pieces a loop carries around to its next step and out as its results (not the
values it passes along unchanged, a scan's `xs`) are the input reassembled, one step's slice
after another: a copy again. So the running average `alpha * x[t] + (1 - alpha) * m` a loop
carries and stacks is a copy of `x`, which may reach the outputs as it is, transposed,
concatenated or scaled; a product or a sum over it, after the loop or at a later step, reads
`x` whole (`x` copied row by row into a buffer, the weight matrix applied to it after the
loop). A product with a piece ends it: blockwise attention's `acc`, a sum of `p @ vj`, holds no
piece.

The program's outputs must then hold no whole bit: what they are computed from the named
arguments, across elements, is computed from step-sized slices of them, taken at the counter
(`x[t]`) or at a constant (`jnp.where(t == 0, x[0], ...)`): in a loop that reads one step's
share per step, with `only_through_loop`. A copy may reach them (an output buffer that starts
as `x` and is overwritten row by row), and so may anything elementwise (`alpha * x` scanned
over). What is whole: the average computed from all of `x` at one step and carried along, or
before the loop as its starting carry, or after it from a copy of `x` the loop carried or
rebuilt. A value folded to a constant carries nothing (see `jaxjudge.analysis.folding`). An
argument sliced to one step's share at more than MAX_STEP_SLICES places of the program (rows
read one by one, as many as the largest test has, and combined at one step) is read whole:
its slices stay copies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jaxjudge.analysis.dataflow import Graph, Kind, Step, TooComplex, combining_scatters, propagate
from jaxjudge.analysis.folding import Bits, Value
from jaxjudge.analysis.identity import passes
from jaxjudge.analysis.stablehlo import Op, TensorType, tensor_types
from jaxjudge.analysis.tripcount import origin

MAX_SLICED = 16  # arguments tracked
_BITS = 3  # per tracked argument: copy, whole, piece (see the module docstring)
# One-step slices of one argument, anywhere in the program: honest loops take one to three
# (`x[t]`, `x[0]`); a fixed number of rows read apart, as many as the largest test has, and
# combined at one step would otherwise read all of it. More count as reading it whole.
MAX_STEP_SLICES = 8
# Slices whose result axes are their operand's, each a window of it.
WINDOWS = frozenset({"stablehlo.slice", "stablehlo.dynamic_slice", "stablehlo.real_dynamic_slice"})
MAX_ATTR_CHARS = 4096  # attribute text read from a slice or a concatenation
SLICES = frozenset({"stablehlo.slice", "stablehlo.dynamic_slice", "stablehlo.real_dynamic_slice",
                    "stablehlo.gather", "stablehlo.dynamic_gather"})
# Elementwise ops (every result element from the same element of each operand) that are not
# linear: they keep an argument's values one element each, like ADD or MULTIPLY do.
ELEMENTWISE = frozenset({
    "stablehlo.abs", "stablehlo.atan2", "stablehlo.cbrt", "stablehlo.ceil", "stablehlo.clamp",
    "stablehlo.compare", "stablehlo.cosine", "stablehlo.exponential",
    "stablehlo.exponential_minus_one", "stablehlo.floor", "stablehlo.is_finite",
    "stablehlo.log", "stablehlo.log_plus_one", "stablehlo.logistic", "stablehlo.maximum",
    "stablehlo.minimum", "stablehlo.not", "stablehlo.and", "stablehlo.or", "stablehlo.xor",
    "stablehlo.power", "stablehlo.remainder", "stablehlo.round_nearest_afz",
    "stablehlo.round_nearest_even", "stablehlo.rsqrt", "stablehlo.sign", "stablehlo.sine",
    "stablehlo.sqrt", "stablehlo.tan", "stablehlo.tanh",
    # a complex value's parts, and one made of two (a running average carried as complex64)
    "stablehlo.real", "stablehlo.imag", "stablehlo.complex",
})
_LINEAR = frozenset({Kind.ADD, Kind.NEGATE, Kind.MULTIPLY, Kind.DIVIDE})


def _elements(type_: str) -> int | None:
    """The element count of a step's first result (None: unknown)."""
    _, arrow, results = type_.rpartition("->")
    found = tensor_types(results) if arrow else []
    return found[0].elements() if found else None


def _elementwise_select(step: Step) -> bool:
    """A select whose predicate is as large as its result (`jnp.where(jnp.isnan(prev), row,
    mix)`): each element picked by its own, so the predicate's values stay one element each,
    as a comparison's do. A scalar predicate decides for every element at once."""
    head, arrow, res = step.type.rpartition("->")
    if step.name != "stablehlo.select" or not arrow:
        return False
    pred, out = tensor_types(head), tensor_types(res)
    return bool(pred and out) and pred[0].dims == out[0].dims


def _attr_text(op: Op, text: str) -> str:
    return " ".join(text[a:b] for a, b in op.spans if b - a <= MAX_ATTR_CHARS)


def _ints(attrs: str, key: str) -> list[int] | None:
    found = re.search(key + r" = array<i64(?::([-0-9, ]*))?>", attrs)
    return [int(v) for v in found.group(1).split(",")] if found and found.group(1) else None


def _parts_sliced(g: Graph, text: str) -> dict[int, list[int]]:
    """Static slices of a concatenation (`jnp.stack([q, k, v])[1]`): the slice's result ->
    the concatenated operands it overlaps, so that it copies only those."""
    producers = g.producers()
    out: dict[int, list[int]] = {}
    for step, op in zip(g.steps, g.ops, strict=True):
        if op is None or step.name != "stablehlo.slice" or len(step.results) != 1:
            continue
        found = producers[step.operands[0]] if step.operands else []
        concat = g.ops[found[0][0]] if len(found) == 1 and found[0][1] < 0 else None
        if concat is None or concat.name != "stablehlo.concatenate":
            continue
        concat_attrs, attrs = _attr_text(concat, text), _attr_text(op, text)
        g.budget.spend(len(concat.operands) + (len(concat_attrs) + len(attrs)) // 64)
        dim = re.search(r"dimension = (\d+)", concat_attrs)
        start, limit = _ints(attrs, "start_indices"), _ints(attrs, "limit_indices")
        types = concat.operand_types()
        if dim is None or start is None or limit is None or len(types) != len(
                g.steps[found[0][0]].operands):
            continue
        d, at, parts = int(dim.group(1)), 0, []
        for node, t in zip(g.steps[found[0][0]].operands, types, strict=True):
            size = t.dims[d] if d < len(t.dims) else None
            if size is None or d >= len(start):
                break
            if at < limit[d] and start[d] < at + size:
                parts.append(node)
            at += size
        else:
            out[step.results[0]] = parts
    return out


def _kept_box(g: Graph, values: list[Value], text: str, n: int, depth: int = 0
              ) -> tuple[int, ...] | None:
    """Per axis of `n`, at most how many of its positions hold other than constants, when `n`
    is an input joined with constants (`jnp.concatenate([v, ones])`, `jnp.pad(v, ...)`), then
    passed along unchanged (loop links, a loop carrying it as it is), transposed or reshaped
    keeping the joined axis; None otherwise."""
    producers = g.producers()
    for _ in range(64):
        g.budget.spend()
        if any(pos >= len(g.steps[i].operands) for i, pos in producers[n]):
            return None
        found = [(i, pos) for i, pos in producers[n]
                 if pos < 0 or origin(g, g.steps[i].operands[pos]) != n]
        if len(found) != 1:
            return None
        i, pos = found[0]
        if pos < 0:
            break
        n = g.steps[i].operands[pos]
    else:
        return None
    step, op = g.steps[i], g.ops[i]
    types = op.operand_types() if op is not None else []
    res = op.result_types() if op is not None else []
    if op is None or len(res) != 1 or len(types) != len(step.operands) or None in res[0].dims:
        return None
    attrs, dims = _attr_text(op, text), tuple(d or 0 for d in res[0].dims)
    if step.name == "stablehlo.concatenate":
        axis = re.search(r"dimension = (\d+)", attrs)
        d = int(axis.group(1)) if axis else len(dims)
        if d >= len(dims) or any(len(t.dims) != len(dims) for t in types):
            return None
        kept = sum(t.dims[d] or 0 for t, o in zip(types, step.operands, strict=True)
                   if values[o] is None)
        return (*dims[:d], kept, *dims[d + 1:])
    if step.name == "stablehlo.pad" and len(types) == 2 and values[step.operands[1]] is not None:
        return tuple(min(a or 0, b) for a, b in zip(types[0].dims, dims, strict=False))
    inner = (_kept_box(g, values, text, step.operands[0], depth + 1)
             if depth < 8 and len(types) == 1 else None)
    if inner is None:
        return None
    if step.name == "stablehlo.transpose":
        perm = _ints(attrs, "permutation") or []
        return tuple(inner[a] for a in perm) if sorted(perm) == list(range(len(inner))) else None
    if step.name == "stablehlo.reshape":
        return _reshaped_box(types[0], dims, inner)
    return None


def _reshaped_box(src: TensorType, dst: tuple[int, ...], box: tuple[int, ...]
                  ) -> tuple[int, ...] | None:
    """A reshape's box: each axis the box narrows must be one of `dst` too (same size, same
    stride), so that the narrowed positions stay those of one axis."""
    if len(src.dims) != len(box):
        return None
    out = list(dst)
    for a, (size, kept) in enumerate(zip(src.dims, box, strict=True)):
        if size is None or kept >= size:
            continue
        stride = _product(src.dims[a + 1:])
        found = [b for b, s in enumerate(dst) if s == size and _product(dst[b + 1:]) == stride]
        if stride is None or not found:
            return None
        out[found[0]] = kept
    return tuple(out)


def _product(dims: Sequence[int | None]) -> int | None:
    n = 1
    for d in dims:
        if d is None:
            return None
        n *= d
    return n


def _own_elements(g: Graph, values: list[Value], text: str) -> dict[int, int]:
    """Slices of an input joined with constants (see `_kept_box`): the slice's result -> at most
    how many of its elements are not the constants. A block of `[v | 1]` (flash attention's
    row sums) is one step's share of `v`, counted in `v`'s elements, not the block's."""
    out: dict[int, int] = {}
    for step, op in zip(g.steps, g.ops, strict=True):
        if op is None or step.name not in WINDOWS:
            continue
        res = op.result_types()
        box = _kept_box(g, values, text, step.operands[0]) if step.operands else None
        if box is None or len(res) != 1 or len(res[0].dims) != len(box):
            continue
        n = 1
        for size, kept in zip(res[0].dims, box, strict=True):
            n *= min(size if size is not None else kept, kept)
        out[step.results[0]] = n
    return out


def _combined_updates(g: Graph) -> dict[int, list[int | None]]:
    """The scatters that combine (`.at[i].add`, `segment_sum`), by id: each update operand's
    element count (None: unknown)."""
    sums = combining_scatters(g)
    out: dict[int, list[int | None]] = {}
    for i, op in g.region_ops.items():
        step = g.steps[i]
        if id(step) in sums:
            k = (len(step.operands) - 1) // 2
            types = op.operand_types()
            out[id(step)] = ([t.elements() for t in types[k + 1:]]
                             if len(types) == len(step.operands) else [None] * k)
    return out


def _back_edges(g: Graph) -> dict[int, frozenset[int]]:
    """The link steps that carry a loop's body results around (to its next step and to its
    results; `build_graph` emits them right after the loop's steps), by id: the positions they
    pass along unchanged (a scan's `xs`, closed-over inputs), which the loop did not build."""
    out: dict[int, frozenset[int]] = {}
    for loop in g.loops:
        kept = frozenset(p for p, a in enumerate(loop.body_args) if all(
            p < len(ret) and origin(g, ret[p]) == a for ret in loop.body_returns))
        for i in range(max(loop.end, 0), len(g.steps)):
            step = g.steps[i]
            g.budget.spend(max(1, len(step.operands)) * max(1, len(loop.body_returns)))
            if step.name != "link" or not any(
                    step.operands == back[:len(step.operands)] for back in loop.body_returns):
                break
            out[id(step)] = kept
    return out


def whole_reads(g: Graph, values: list[Value], arg_paths: Sequence[str], names: Sequence[str],
                trip: int, text: str) -> list[int]:
    """Per node, the copy, whole and piece bits (3i, 3i + 1, 3i + 2) of the named arguments
    (see the module docstring), for a loop of `trip` steps; `text` is the program's (its ops'
    attributes)."""
    parts = _parts_sliced(g, text)
    own = _own_elements(g, values, text)
    backs = _back_edges(g)
    sums = _combined_updates(g)
    gives = {k: found.node for k, found in passes(g, values, text).items()}
    shares: list[int] = []
    seeds: dict[int, int] = {}
    for node, path, type_ in zip(g.main_args, arg_paths, g.main_arg_types, strict=False):
        if any(path == n or path.startswith(n + ".") for n in names):
            if len(shares) == MAX_SLICED:
                raise TooComplex(f"more than {MAX_SLICED} sliced arguments to track")
            found = tensor_types(type_)
            size = found[0].elements() if found else None
            seeds[node] = 1 << (_BITS * len(shares))
            shares.append((size or 0) // max(trip, 1))
    copies = sum(1 << (_BITS * i) for i in range(len(shares)))
    wholes, pieces = copies << 1, copies << 2

    def wholly(b: int) -> int:
        return (b & wholes) | ((b & copies) << 1)

    capped: set[int] = set()  # arguments sliced at more than MAX_STEP_SLICES places
    places: list[set[int]] = [set() for _ in shares]

    def share(b: int) -> int:
        return sum(s for i, s in enumerate(shares) if b >> (_BITS * i) & 1 and i not in capped)

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        if step.kind is not Kind.TUPLE and step.results and all(
                values[r] is not None for r in step.results):
            return None
        ops, n = step.operands, len(step.results)
        kept = backs.get(id(step))
        if kept is not None:  # what the loop reassembled from its steps' slices: a copy
            return [bits[o] if p in kept else (bits[o] & ~pieces) | ((bits[o] & pieces) >> 2)
                    for p, o in enumerate(ops[:n])]
        given = gives.get(id(step))
        if given is not None:  # a product with the identity, `x * 1`: its operand, scaled
            return [bits[given]] * n
        if step.name == "stablehlo.select" and len(ops) == 3 and values[ops[0]] is not None:
            return [bits[ops[1] if values[ops[0]] else ops[2]]] * n
        if step.name in SLICES and ops:
            src = bits[ops[0]]
            if step.results and step.results[0] in parts:
                src = 0
                for o in parts[step.results[0]]:
                    src |= bits[o]
            size = own.get(step.results[0], _elements(step.type)) if step.results else None
            if size is None or size > share(src):
                out = src
            else:
                out = (src & ~copies) | ((src & copies) << 2)
                for i in range(len(shares)):
                    if src >> (_BITS * i) & 1:
                        places[i].add(step.results[0])
            for o in ops[1:]:
                out |= wholly(bits[o])
            return [out] * n if out else None
        if step.name == "stablehlo.scatter" and len(ops) >= 3 and step.kind is not Kind.OTHER:
            # (inputs..., indices, updates...): each result holds its input and its updates,
            # written element by element (`.at[t].set`). One that combines (`.at[t].add`,
            # `segment_sum`) may sum many updates into one element: a sum over an axis, so
            # updates larger than one step's share of what they copy are read whole.
            k = (len(ops) - 1) // 2
            index = wholly(bits[ops[k]])
            sizes = sums.get(id(step))
            out = []
            for j, (a, u) in enumerate(zip(ops[:k], ops[k + 1:], strict=False)):
                b = bits[u]
                size = sizes[j] if sizes is not None and j < len(sizes) else None
                if sizes is not None and (size is None or size > share(b)):
                    b = wholly(b) | (b & pieces)
                out.append(bits[a] | b | index)
            return out
        if step.kind in _LINEAR or step.name in ELEMENTWISE or _elementwise_select(step):
            acc = 0
            for o in ops:
                acc |= bits[o]
            return [acc] * n if acc else None
        pairs = step.pass_sources()
        if pairs:
            index = {r: i for i, r in enumerate(step.results)}
            out = [0] * n
            passed = set()
            for o, r in pairs:
                out[index[r]] |= bits[o]
                passed.add(o)
            rest = 0
            for o in ops:
                if o not in passed:
                    rest |= wholly(bits[o])
            return [b | rest for b in out]
        acc = 0
        for o in ops:
            acc |= bits[o]
        return [wholly(acc)] * n if acc else None

    bits = propagate(g, seeds, transfer)
    capped.update(i for i, found in enumerate(places) if len(found) > MAX_STEP_SLICES)
    return propagate(g, seeds, transfer) if capped else bits


_WHOLE = sum(2 << (_BITS * i) for i in range(MAX_SLICED))


def reads_whole(bits: list[int], nodes: Sequence[int]) -> bool:
    """Whether one of the nodes (the program's outputs) is computed from a named argument read
    whole."""
    return any(bits[n] & _WHOLE for n in nodes)
