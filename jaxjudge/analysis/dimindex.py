"""Which loops visit a dimension one slice at a time (`no_loop_over_dim`).

Comparing trip counts between programs misses a loop of a constant number of steps that reads
the dimension slice by slice: `fori_loop(0, 16, ...)` reading row `min(i, N - 1)` of `x`, a
`scan` over the heads padded to the largest H. Such a loop reads an input along the
dimension's axis at an index computed from its counter. So, over the inlined dataflow:

- **Which axis is the dimension**: axis a of an argument runs along dimension X when, in every
  program, its size is X's value there, X takes at least two values among the programs (the
  judge's probe sizes), and no other dimension fits the axis as well (`dim_axes`).
- **Copies keep their axes**: the tags (X, axis) follow the values through layout ops
  (transpose, broadcast, a reshape that keeps the axis in one group, pad, slices, concatenate,
  convert, reverse, sort, scatter, a windowed reduction), elementwise ops, dot_general's batch
  and free dimensions, a reduction's kept dimensions, gathers' offset dimensions and the links
  of calls, loops and conditionals. Any other op drops them (a convolution, a custom op). A
  reshape that splits a tagged axis tags its parts of X's size (`[v, -v].reshape(2, n)`: the
  part n), else its outermost part.
- **At the counter**: a `dynamic_slice`, `gather` or `dynamic_update_slice` (or `scatter`)
  inside a loop of at least two steps, on a value whose axis a is tagged with X, whose index
  along a depends on a value that loop changes from step to step (its counter, or anything
  else it carries that is not passed along unchanged) and which takes at most half of the
  axis per step (one row, one example, one head), visits X one slice at a time, whatever the
  trip count. A window of an axis that merges several (`x.T.reshape(-1)`, D*N) holding whole
  copies of X's part (a chunk of N where N is the inner part: all the points of feature k) is
  not a slice along X (`_whole_parts`).
- **What a step really takes**: of a window, only the rows static slices read (through
  elementwise ops; `dynamic_slice(x2, r, B + 1)[0]` takes one); of a gather, one row per
  different index vector (`x[jnp.full((N,), r)]` holds one number,
  `_distinct`); an input written at the counter into another buffer (`dynamic_update_slice`
  of v at `n - r`, then element n read) takes the rows of it the buffer is read at.

An index counts whatever it is computed through (`min(i, N - 1)`, a table looked up at `i`, a
row number the loop carries and advances by `minimum(r + 1, N - 1)`). What is not seen: a row
selected with no indexing op (a one-hot matmul, a mask and a sum, a roll, a `lax.switch`
on the counter among a fixed number of static slices); a window's row, a shifted write's
element read by anything but static slices (a reshape, a product, the next step); repeated
index vectors computed otherwise than by broadcasting and elementwise ops of one number; an
input moved by a `scatter` at the counter. Work is counted against the graph's `Budget` (two
propagations over the program, one attribute read per op that moves axes and one unit per tag
moved, one per value followed back or forward from an indexing op in a loop).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from jaxjudge.analysis.dataflow import Graph, Kind, Step, full_transfer, propagate
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.folding import Value
from jaxjudge.analysis.stablehlo import Op, TensorType, tensor_types
from jaxjudge.analysis.stepslices import ELEMENTWISE
from jaxjudge.analysis.tripcount import origin

MAX_RANK = 16  # axes tagged per value (a higher axis is never tagged)
MAX_ATTR_CHARS = 4096  # attribute text read from one op
MAX_CHAIN = 256  # values followed back to bound how many numbers an index holds
MAX_SHARE = 0.5  # the largest share of the axis one step may take and still be "a slice"
_INDEXING = frozenset({"stablehlo.dynamic_slice", "stablehlo.gather",
                       "stablehlo.dynamic_update_slice", "stablehlo.scatter"})
_SAME_AXES = frozenset({"stablehlo.convert", "stablehlo.copy", "stablehlo.reduce_precision",
                        "stablehlo.pad", "stablehlo.slice", "stablehlo.dynamic_slice",
                        "stablehlo.concatenate", "stablehlo.select", "stablehlo.bitcast_convert",
                        "stablehlo.dynamic_update_slice", "stablehlo.scatter",
                        "stablehlo.reverse", "stablehlo.sort", "stablehlo.reduce_window",
                        "mhlo.copy"}) | ELEMENTWISE
# Ops that spread one operand's numbers over a result of another shape (no new numbers).
_SPREAD = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.reshape", "stablehlo.broadcast"})
# Ops whose result element i along an axis comes from element i of their operands' axis.
_ORDERED = frozenset({"stablehlo.convert", "stablehlo.copy", "stablehlo.reduce_precision",
                      "stablehlo.dynamic_slice", "stablehlo.reverse", "stablehlo.select",
                      "mhlo.copy"}) | ELEMENTWISE
_SAME_KINDS = frozenset({Kind.ADD, Kind.NEGATE, Kind.MULTIPLY, Kind.DIVIDE})


def dim_axes(programs: Sequence[ProgramInfo], arg_types: Sequence[Sequence[str]],
             dims: Sequence[str]) -> dict[tuple[str, str], set[int]]:
    """(argument path, dimension) -> the argument's axes that run along it (see the module
    docstring): `arg_types[i]` are program i's main argument types, in `args` order."""
    sizes: dict[tuple[str, int], list[tuple[dict[str, int], int | None]]] = {}
    for p, types in zip(programs, arg_types, strict=True):
        for path, type_ in zip(p.args, types, strict=False):
            found = tensor_types(type_)
            for a, size in enumerate(found[0].dims[:MAX_RANK] if found else ()):
                sizes.setdefault((path, a), []).append((p.dims, size))
    out: dict[tuple[str, str], set[int]] = {}
    for (path, a), seen in sizes.items():
        fits = [x for x in dims
                if len({d.get(x) for d, _ in seen}) >= 2
                and all(x in d and d[x] == size for d, size in seen)]
        if len(fits) == 1:
            out.setdefault((path, fits[0]), set()).add(a)
    return out


@dataclass(frozen=True)
class Visit:
    """A loop (its index in `g.loops`, its trip count) indexing argument `path`'s copy along
    dimension `dim` at its counter: `op` takes `taken` of the axis's `size` per step."""

    loop: int
    count: int
    dim: str
    path: str
    op: Op
    taken: int
    size: int


def visits(g: Graph, values: list[Value], counts: Sequence[int | None],
           arg_paths: Sequence[str], axes: Mapping[tuple[str, str], set[int]],
           dims: Sequence[str], text: str, sizes: Mapping[str, int]) -> list[Visit]:
    """Every indexing op that makes a loop visit a dimension one slice at a time, in program
    order (see the module docstring): `counts` are the loops' trip counts (None: unknown),
    `text` is the program's (its ops' attributes), `sizes` its dimensions' values."""
    seeds: dict[int, int] = {}
    for ai, (node, path) in enumerate(zip(g.main_args, arg_paths, strict=False)):
        for xi, x in enumerate(dims):
            for a in axes.get((path, x), ()):
                seeds[node] = seeds.get(node, 0) | 1 << _bit(ai, xi, a, len(dims))
    if not seeds or not g.loops:
        return []
    tags = _tag(g, seeds, text, [sizes.get(x) for x in dims])
    counter_seeds: dict[int, int] = {}
    for k, loop in enumerate(g.loops):
        for p, arg in enumerate(loop.body_args):
            if all(p < len(ret) and origin(g, ret[p]) == arg for ret in loop.body_returns):
                continue  # passed along unchanged: the same at every step
            for heads in (loop.body_args, loop.cond_args):
                if p < len(heads):
                    counter_seeds[heads[p]] = counter_seeds.get(heads[p], 0) | 1 << k
    if not counter_seeds:
        return []
    counters = propagate(g, counter_seeds, full_transfer)
    found: list[Visit] = []

    def report(node: int, a: int, window: int, hit: list[int], op: Op, taken: int,
               size: int) -> None:
        for ai, path in enumerate(arg_paths[:len(g.main_args)]):
            for xi, x in enumerate(dims):
                bit = _bit(ai, xi, 0, len(dims))
                if tags[node] >> (bit + a) & 1 and not _whole_parts(g, tags, node, bit, a,
                                                                    window, text):
                    found.extend(Visit(k, counts[k] or 0, x, path, op, taken, size)
                                 for k in hit)

    memo: dict[int, int | None] = {}
    for i, step in enumerate(g.steps):
        op = g.ops[i] or g.region_ops.get(i)
        ops = step.operands
        written = step.name == "stablehlo.dynamic_update_slice" and len(ops) > 1 and tags[ops[1]]
        if step.name not in _INDEXING or op is None or not ops or not (tags[ops[0]] or written):
            continue
        inside = [k for k, loop in enumerate(g.loops) if loop.first <= i < loop.end
                  and (counts[k] or 0) >= 2]
        if not inside:
            continue
        g.budget.spend(len(ops) + len(g.loops))
        for a, index, taken, size, window in _indexed_axes(
                step, op, text, counters, lambda n: _distinct(g, values, n, memo)):
            hit = [k for k in inside if index >> k & 1]
            if not hit:
                continue
            if step.name == "stablehlo.dynamic_slice":  # the rows of the window read
                taken, window = _read(g, step.results[0], a, taken, text) if taken > 1 else (
                    taken, window)
            if tags[ops[0]] and taken <= MAX_SHARE * size:
                report(ops[0], a, window, hit, op, taken, size)
            update = op.operand_types()[1].dims if written else ()
            if a < len(update) and update[a]:
                # the update written at the counter: how many of its rows the result is read at
                seen, _ = _read(g, step.results[0], a, size, text)
                if 0 < seen <= MAX_SHARE * (update[a] or 0):
                    report(ops[1], a, 0, hit, op, seen, update[a] or 0)
    return found


def _bit(arg: int, dim: int, axis: int, n_dims: int) -> int:
    """The tag "axis `axis` of this value runs along dimension `dim` of argument `arg`"."""
    return (arg * n_dims + dim) * MAX_RANK + axis


def _indexed_axes(step: Step, op: Op, text: str, counters: list[int],
                  distinct: Callable[[int], int | None]
                  ) -> list[tuple[int, int, int, int, int]]:
    """(axis, the counters its index depends on, elements of the axis taken per step, the
    axis's size, the elements of one contiguous window) for each axis of the indexed operand
    that the op indexes; `distinct(node)` bounds the different values a node holds (a
    gather's index vectors that repeat one row take one row)."""
    types = op.operand_types()
    if not types or any(d is None for d in types[0].dims):
        return []
    shape = types[0].dims
    ops = step.operands
    out: list[tuple[int, int, int, int, int]] = []
    if step.name in ("stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"):
        first = 1 if step.name == "stablehlo.dynamic_slice" else 2
        if step.name == "stablehlo.dynamic_slice":
            taken = _ints(_attrs(op, text), "slice_sizes")
        else:
            taken = list(types[1].dims) if len(types) > 1 else None
        if taken is None or len(taken) != len(shape) or len(ops) < first + len(shape):
            return []
        for a, size in enumerate(shape[:MAX_RANK]):
            out.append((a, counters[ops[first + a]], taken[a] or 0, size or 0, taken[a] or 0))
        return out
    attrs = _attrs(op, text)
    if step.name == "stablehlo.gather" and len(types) > 1:
        sizes = _ints(attrs, "slice_sizes")
        mapped = _list(attrs, "start_index_map")
        if sizes is None or mapped is None or len(sizes) != len(shape):
            return []
        vector_dim = _int(attrs, "index_vector_dim")
        batch = _batch(types[1], vector_dim)
        values = distinct(ops[1])
        if values is not None:
            width = types[1].dims[vector_dim] if vector_dim is not None and vector_dim < len(
                types[1].dims) else 1
            batch = min(batch, values ** min(width or 1, 8))
        return [(a, counters[ops[1]], sizes[a] * batch, shape[a] or 0, sizes[a])
                for a in mapped if a < min(len(shape), MAX_RANK)]
    if step.name == "stablehlo.scatter" and len(ops) >= 3:
        inserted = _list(attrs, "inserted_window_dims") or []
        mapped = _list(attrs, "scatter_dims_to_operand_dims") or []
        index_type = tensor_types(op.type.rpartition("->")[0])
        k = (len(ops) - 1) // 2
        batch = _batch(index_type[k], _int(attrs, "index_vector_dim")) if len(
            index_type) > k else 0
        return [(a, counters[ops[k]], batch, shape[a] or 0, 1)
                for a in mapped if a in inserted and a < min(len(shape), MAX_RANK)]
    return []


def _distinct(g: Graph, values: list[Value], node: int, memo: dict[int, int | None]
              ) -> int | None:
    """At most how many different numbers `node` holds (None: not bounded): 1 for a constant
    or a broadcast scalar, the product of its operands' for an elementwise op (`jnp.full(N,
    r)`, and the `where(r < 0, r + N, r)` indexing adds, hold one)."""
    todo = [node]
    while todo:
        n = todo[-1]
        if n in memo:
            todo.pop()
            continue
        g.budget.spend()
        found = g.producers()[n]
        step = g.steps[found[0][0]] if len(found) == 1 and found[0][1] < 0 else None
        op = g.ops[found[0][0]] if step is not None else None
        one = op is not None and (_holds_one(op.result_types()) or (
            step is not None and step.name in _SPREAD and _holds_one(op.operand_types())))
        if values[n] is not None or one:
            memo[n] = 1
        elif step is None or not (step.name in _SPREAD or step.name in _ORDERED
                                  or step.kind in _SAME_KINDS) or step.name in (
                                      "stablehlo.dynamic_slice", "stablehlo.reverse"):
            memo[n] = None
        else:
            ops = step.operands[:1] if step.name in _SPREAD else step.operands
            if todo_ops := [o for o in ops if o not in memo]:
                todo.extend(todo_ops)
                if len(todo) > MAX_CHAIN:
                    return None
                continue
            bound: int | None = 1
            for o in ops:
                got = memo[o]
                bound = None if got is None or bound is None else min(bound * got, 1 << 30)
            memo[n] = bound
        todo.pop()
    return memo[node]


def _holds_one(types: list[TensorType]) -> bool:
    """The first type is of one element (a scalar: one number)."""
    return bool(types) and types[0].elements() == 1


def _read(g: Graph, node: int, axis: int, size: int, text: str) -> tuple[int, int]:
    """How many of the `size` positions along `axis` of `node` are read (by static slices,
    through elementwise ops), and that count again if they are one contiguous run, else 0;
    (size, size) when something reads it whole or otherwise (a link, a reshape, a sum)."""
    consumers, read = g.consumers(), set()
    todo, seen = [node], {node}
    while todo:
        n = todo.pop()
        if n in g.main_results:
            return size, size
        for si in consumers[n]:
            g.budget.spend()
            step = g.steps[si]
            op = g.ops[si] or g.region_ops.get(si)
            if op is None or step.kind is Kind.TUPLE:
                return size, size
            if step.name == "stablehlo.slice":
                attrs = _attrs(op, text)
                start, limit = _ints(attrs, "start_indices"), _ints(attrs, "limit_indices")
                stride = _ints(attrs, "strides") or [1] * (axis + 1)
                if not start or not limit or axis >= min(len(start), len(limit), len(stride)):
                    return size, size
                span = range(start[axis], min(limit[axis], size), max(stride[axis], 1))
                g.budget.spend(len(span))
                read.update(span)
            elif step.name in ELEMENTWISE or step.kind in _SAME_KINDS or step.name in (
                    "stablehlo.convert", "stablehlo.select", "stablehlo.copy"):
                for r in step.results:
                    if r not in seen:
                        seen.add(r)
                        todo.append(r)
            else:
                return size, size
    if not read:
        return size, size  # not read here at all: counted as before
    return len(read), len(read) if max(read) - min(read) + 1 == len(read) else 0


def _batch(indices: TensorType, vector_dim: int | None) -> int:
    """How many index vectors a gather's or scatter's indices hold (0: unknown)."""
    n = 1
    at = len(indices.dims) if vector_dim is None else vector_dim
    for j, d in enumerate(indices.dims):
        if d is None:
            return 0
        n *= d if j != at else 1
    return n


def _whole_parts(g: Graph, tags: list[int], node: int, bit: int, axis: int, window: int,
                 text: str) -> bool:
    """Whether every source of tag `bit + axis` on `node` is an inner part of a merged axis
    (a reshape of several axes into one: `x.T.reshape(-1)`) of which a contiguous `window`
    holds whole copies: such a window reads every index of the part alike (all N points of
    feature k), wherever it starts. Followed back through links and ops that keep the axis's
    order (elementwise ops, slices of stride 1, reverse); anything else is a plain source."""
    if window <= 0:
        return False
    producers = g.producers()
    todo, seen = [(node, axis)], {(node, axis)}
    while todo:
        node, axis = todo.pop()
        if not producers[node] or node in g.main_args:
            return False
        for si, pos in producers[node]:
            g.budget.spend()
            step = g.steps[si]
            op = g.ops[si] or g.region_ops.get(si)
            if step.kind is Kind.TUPLE:
                sources = [(step.operands[pos], axis)] if pos < len(step.operands) else []
            elif op is None:
                return False
            elif step.name == "stablehlo.reshape":
                found = _merged_parts(op, axis)
                if found is None or any(span and window % span and tags[
                        step.operands[0]] >> (bit + k) & 1 for k, span in found):
                    return False
                sources = [(step.operands[0], k) for k, span in found if not span]
            elif step.name == "stablehlo.slice" and any(
                    v != 1 for v in _ints(_attrs(op, text), "strides") or [1]):
                return False
            elif step.name in _ORDERED or step.kind in _SAME_KINDS:
                first = 1 if step.name == "stablehlo.select" else 0
                last = 1 if step.name == "stablehlo.dynamic_slice" else len(step.operands)
                sources = [(o, axis) for o in step.operands[first:last]]
            else:
                return False
            for o, a in sources:
                if tags[o] >> (bit + a) & 1 and (o, a) not in seen:
                    seen.add((o, a))
                    todo.append((o, a))
    return True


def _merged_parts(op: Op, axis: int) -> list[tuple[int, int]] | None:
    """For a reshape's result axis `axis`: the source axes a tag may come from, each with the
    elements one whole copy of it spans there (its size times the inner parts' sizes) when the
    axis merges several, 0 when it is the same axis unsplit; None for a split axis."""
    types, res = op.operand_types(), op.result_types()
    if not types or not res:
        return None
    src, dst = types[0].dims, res[0].dims
    for gi, gj in _groups(src, dst):
        if axis not in gj:
            continue
        if [k for k in gj if (dst[k] or 1) > 1] != [axis]:
            return None
        ks = [k for k in gi if (src[k] or 1) > 1]
        if len(ks) == 1:
            return [(ks[0], 0)]
        out, span = [], 1
        for k in reversed(ks):
            span *= src[k] or 1
            out.append((k, span))
        return out
    return None


# -- the axes' tags through the program -------------------------------------------------------

def _tag(g: Graph, seeds: dict[int, int], text: str, sizes: list[int | None]) -> list[int]:
    """Per node, its (dimension, axis) tags: bit `dim index * MAX_RANK + axis`; `sizes` are
    the dimensions' values, in order (which part of a split axis a tag goes to)."""
    op_of = {id(s): o for s, o in zip(g.steps, g.ops, strict=True) if o is not None}
    op_of.update((id(g.steps[i]), o) for i, o in g.region_ops.items())
    moves: dict[int, dict[int, dict[int, tuple[int, ...]]] | None] = {}  # read once per op

    def transfer(step: Step, bits: list[int]) -> list[int] | None:
        ops, n = step.operands, len(step.results)
        if step.kind is Kind.TUPLE:
            return [bits[o] for o in ops[:n]]
        op = op_of.get(id(step))
        if op is None or not any(bits[o] for o in ops):
            return None
        types, res = op.operand_types(), op.result_types()
        if not res or len(types) != len(ops):
            return None
        if step.name in _SAME_AXES or step.kind in _SAME_KINDS:
            acc = 0
            for o, t in zip(ops, types, strict=True):
                if len(t.dims) == len(res[0].dims):
                    acc |= bits[o]
            return [acc] * n if acc else None
        if id(step) not in moves:
            g.budget.spend(len(op.spans))
            moves[id(step)] = _moves(step.name, _attrs(op, text), types, res[0])
        mapping = moves[id(step)]
        if mapping is None:
            return None
        out = 0
        for j, o in enumerate(ops):
            if j in mapping:
                g.budget.spend(bits[o].bit_count())  # one unit per tag moved
                out |= _remap(bits[o], mapping[j], res[0].dims, sizes)
        return [out] * n if out else None

    return propagate(g, seeds, transfer)


def _moves(name: str, attrs: str, types: list[TensorType], res: TensorType
           ) -> dict[int, dict[int, tuple[int, ...]]] | None:
    """Operand -> (its axis -> the result's axes it may go to) for ops that move axes, else
    None."""
    if name == "stablehlo.reshape":
        return {0: _reshaped(types[0].dims, res.dims)}
    moved = _moved(name, attrs, types)
    return None if moved is None else {j: {a: (b,) for a, b in m.items()}
                                       for j, m in moved.items()}


def _moved(name: str, attrs: str, types: list[TensorType]) -> dict[int, dict[int, int]] | None:
    """Operand -> (its axis -> the result's axis) for ops that move axes one to one."""
    if name == "stablehlo.transpose":
        perm = _ints(attrs, "permutation") or []
        return {0: {a: j for j, a in enumerate(perm)}}
    if name == "stablehlo.broadcast_in_dim":
        return {0: dict(enumerate(_ints(attrs, "broadcast_dimensions") or []))}
    if name == "stablehlo.dot_general" and len(types) == 2:
        lb, rb = _list(attrs, "lhs_batching_dimensions") or [], _list(
            attrs, "rhs_batching_dimensions") or []
        lc, rc = _list(attrs, "lhs_contracting_dimensions") or [], _list(
            attrs, "rhs_contracting_dimensions") or []
        lhs = {a: j for j, a in enumerate(lb)}
        rhs = {a: j for j, a in enumerate(rb)}
        at = len(lb)
        for a in range(len(types[0].dims)):
            if a not in lb and a not in lc:
                lhs[a], at = at, at + 1
        for a in range(len(types[1].dims)):
            if a not in rb and a not in rc:
                rhs[a], at = at, at + 1
        return {0: lhs, 1: rhs}
    if name == "stablehlo.reduce":
        reduced = _ints(attrs, "dimensions") or []
        kept = [a for a in range(len(types[0].dims)) if a not in reduced]
        return {j: {a: r for r, a in enumerate(kept)} for j in range(len(types) // 2)}
    if name == "stablehlo.gather":
        dropped = set(_list(attrs, "collapsed_slice_dims") or []) | set(
            _list(attrs, "operand_batching_dims") or [])
        kept = [a for a in range(len(types[0].dims)) if a not in dropped]
        return {0: dict(zip(kept, _list(attrs, "offset_dims") or [], strict=False))}
    return None


def _reshaped(src: tuple[int | None, ...], dst: tuple[int | None, ...]
              ) -> dict[int, tuple[int, ...]]:
    """A reshape's source axis -> the destination axes of its group (axes whose sizes' running
    products meet at the same boundaries), those of size > 1 first, outermost first: a merged
    axis keeps the tag, a split one gives it to a part (`_remap`)."""
    out: dict[int, tuple[int, ...]] = {}
    for gi, gj in _groups(src, dst):
        parts = tuple(sorted(gj, key=lambda k: (dst[k] or 1) == 1))
        for k in gi:
            if (src[k] or 1) > 1:
                out[k] = parts
    return out


def _groups(src: tuple[int | None, ...], dst: tuple[int | None, ...]
            ) -> list[tuple[list[int], list[int]]]:
    """A reshape's groups of source and destination axes whose sizes' running products meet at
    the same boundaries, outermost first (up to the first that cannot be matched); unit axes
    join the group before them (`(2N,) -> (2, N)` at N = 1 is one group `(2,) -> (2, 1)`)."""
    if None in src or None in dst:
        return []
    out: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) and j < len(dst):
        gi, gj = [i], [j]
        a, b = src[i] or 1, dst[j] or 1
        while a != b:
            if a < b and gi[-1] + 1 < len(src):
                gi.append(gi[-1] + 1)
                a *= src[gi[-1]] or 1
            elif b < a and gj[-1] + 1 < len(dst):
                gj.append(gj[-1] + 1)
                b *= dst[gj[-1]] or 1
            else:
                return out
        while gj[-1] + 1 < len(dst) and dst[gj[-1] + 1] == 1:  # a new unit axis: this group's
            gj.append(gj[-1] + 1)
        while gi[-1] + 1 < len(src) and src[gi[-1] + 1] == 1:
            gi.append(gi[-1] + 1)
        out.append((gi, gj))
        i, j = gi[-1] + 1, gj[-1] + 1
    return out


def _remap(b: int, mapping: Mapping[int, tuple[int, ...]], dst: tuple[int | None, ...],
           sizes: Sequence[int | None]) -> int:
    """Tags moved from axis a to the axes mapping[a] (every argument and dimension alike) of a
    result shaped `dst`; unmapped ones drop. Of several (the parts of a split axis), a tag of
    dimension X goes to those of X's size (`[v, -v].reshape(2, n)`: to n), else to the
    outermost."""
    out = 0
    while b:
        low = b & -b
        which, a = divmod(low.bit_length() - 1, MAX_RANK)
        parts = mapping.get(a, ())
        size = sizes[which % len(sizes)] if sizes else None
        for p in [k for k in parts if k < len(dst) and dst[k] == size] or parts[:1]:
            if p < MAX_RANK:
                out |= 1 << (which * MAX_RANK + p)
        b ^= low
    return out


def _attrs(op: Op, text: str) -> str:
    return " ".join(text[a:b] for a, b in op.spans if b - a <= MAX_ATTR_CHARS)


def _ints(attrs: str, key: str) -> list[int] | None:
    found = re.search(key + r" = array<i64(?::([-0-9, ]*))?>", attrs)
    if not found:
        return None
    return [int(v) for v in found.group(1).split(",")] if found.group(1) else []


def _list(attrs: str, key: str) -> list[int] | None:
    found = re.search(key + r" = \[([-0-9, ]*)\]", attrs)
    if not found:
        return None
    return [int(v) for v in found.group(1).split(",") if v.strip()]


def _int(attrs: str, key: str) -> int | None:
    found = re.search(key + r" = (-?\d+)", attrs)
    return int(found.group(1)) if found else None
