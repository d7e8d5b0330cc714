"""Stage B's evaluator, the ops with structure: gather, scatter, convolution, FFT.

Installed onto evaluator.Evaluator by `install` (both files are run by path, never imported):
each takes (evaluator, op, operands) with a leading variant axis and returns the results.
"""

from __future__ import annotations

import math

import numpy as np

MAX_SORT_PAIRS = 4_000_000  # comparator runs of one sort, all variants counted


class Unobservable(Exception):  # replaced by install(): the evaluator's own
    pass



# What one index of a gather or scatter costs beside its elements, in element operations: a
# Python iteration with a few numpy calls (~10 us, where the budget's 60 M elements are ~0.5 s).
# Counted as one element each, a scatter-add over every (t, s) pair of a 48-row input took
# 6.4 s of observing across a grade's runs.
POINT_COST = 1_000

def install(evaluator_cls, unobservable) -> None:
    """Attach the region ops to the evaluator class; `unobservable` is its exception."""
    global Unobservable
    Unobservable = unobservable
    for name, fn in list(globals().items()):
        if name.startswith(("region_", "op_", "reduce", "_dn", "_combiner", "_reducer",
                            "_sizes")):
            setattr(evaluator_cls, name, fn)


def _dn(self, op, key: str, cls: str):
    return getattr(self.hlo, cls)(op.attributes[key])


def region_dynamic_gather(self, op, ins):
    """A gather whose slice sizes are a value (a symbolic program's)."""
    return region_gather(self, op, ins[:2], self._sizes(ins[2]))


def region_gather(self, op, ins, sizes=None):
    x, idx = ins
    dn = self._dn(op, "dimension_numbers", "GatherDimensionNumbers")
    offset_dims = list(dn.offset_dims)
    collapsed = list(dn.collapsed_slice_dims)
    index_map = list(dn.start_index_map)
    ivd = int(dn.index_vector_dim)
    obatch = list(getattr(dn, "operand_batching_dims", []) or [])
    ibatch = list(getattr(dn, "start_indices_batching_dims", []) or [])
    sizes = self._i64s(op, "slice_sizes") if sizes is None else sizes
    res = op.results[0]
    shape, _ = self._type(res)  # its rank (a symbolic size is computed below)
    x = np.broadcast_to(x, (self.V, *x.shape[1:]))
    idx = np.broadcast_to(idx, (self.V, *idx.shape[1:]))
    rank_i = idx.ndim - 1
    keep_dims = [d for d in range(rank_i) if d != ivd]
    drop = set(collapsed) | set(obatch)
    outs = []
    for v in range(self.V):
        iv = idx[v]
        vec = np.moveaxis(iv, ivd, -1) if ivd < rank_i else iv[..., None]
        batch_shape = vec.shape[:-1]
        self._spend(max(1, math.prod(batch_shape)) * (POINT_COST + max(1, math.prod(sizes))))
        pieces = []
        for p in np.ndindex(*batch_shape):
            start = [0] * len(sizes)
            for k, d in enumerate(index_map):
                start[d] = int(vec[p][k])
            for ob, ib in zip(obatch, ibatch, strict=True):
                start[ob] = p[keep_dims.index(ib)]
            start = [min(max(s, 0), x.shape[d + 1] - sizes[d]) for d, s in enumerate(start)]
            piece = x[(v, *(slice(s, s + z) for s, z in zip(start, sizes, strict=True)))]
            piece = piece.reshape([z for d, z in enumerate(sizes) if d not in drop])
            pieces.append(piece)
        off_shape = [z for d, z in enumerate(sizes) if d not in drop]
        stacked = np.array(pieces, dtype=x.dtype).reshape(
            (*batch_shape, *off_shape))
        nb = len(batch_shape)
        perm, bi = [], 0
        for r in range(len(shape)):
            if r in offset_dims:
                perm.append(nb + offset_dims.index(r))
            else:
                perm.append(bi)
                bi += 1
        outs.append(np.transpose(stacked, perm))
    return [self._out(np.stack(outs), res)]

def _combiner(self, region):
    body = region.blocks[0]
    inner = [o.operation for o in body.operations]
    args = list(body.arguments)
    if len(inner) == 1 and list(inner[0].operands) == [args[1]]:
        return lambda old, new: new
    if len(inner) == 2:
        kind = inner[0].name.partition(".")[2]
        fn = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
              "minimum": np.minimum, "or": np.logical_or, "and": np.logical_and}.get(kind)
        if fn is not None and list(inner[0].operands) in (args[:2], args[:2][::-1]):
            return fn
    raise Unobservable("a scatter with a computed update")

def region_scatter(self, op, ins):
    if len(ins) != 3:
        raise Unobservable("a scatter of several values")
    x, idx, upd = ins
    dn = self._dn(op, "scatter_dimension_numbers", "ScatterDimensionNumbers")
    window = list(dn.update_window_dims)
    inserted = list(dn.inserted_window_dims)
    to_operand = list(dn.scattered_dims_to_operand_dims)
    ivd = int(dn.index_vector_dim)
    obatch = list(getattr(dn, "input_batching_dims", []) or [])
    ibatch = list(getattr(dn, "scatter_indices_batching_dims", []) or [])
    combine = self._combiner(op.regions[0])
    res = op.results[0]
    out = np.array(np.broadcast_to(x, (self.V, *x.shape[1:])))
    idx = np.broadcast_to(idx, (self.V, *idx.shape[1:]))
    upd = np.broadcast_to(upd, (self.V, *upd.shape[1:]))
    rank_o = out.ndim - 1
    rank_i = idx.ndim - 1
    keep_dims = [d for d in range(rank_i) if d != ivd]
    win_operand = [d for d in range(rank_o) if d not in inserted and d not in obatch]
    scatter_dims = [d for d in range(upd.ndim - 1) if d not in window]
    _scatter_all(self, out, idx, upd, ivd, rank_i, rank_o, scatter_dims, window, to_operand,
                 obatch, ibatch, keep_dims, win_operand, combine)
    return [self._out(out, res)]


def _scatter_all(self, out, idx, upd, ivd, rank_i, rank_o, scatter_dims, window, to_operand,
                 obatch, ibatch, keep_dims, win_operand, combine) -> None:
    """`region_scatter`'s writes, every variant at once: point by point in index order (a
    later point combines with what an earlier one wrote), each point's window in all variants
    by one numpy operation (variants write apart: no two of them meet). The work spent is
    counted per variant, as one variant at a time would."""
    V = self.V
    vec = np.moveaxis(idx, ivd + 1, -1) if ivd < rank_i else idx[..., None]  # (V, *batch, k)
    u = np.transpose(upd, [0, *(d + 1 for d in scatter_dims + window)])
    batch_shape = vec.shape[1:-1]
    wshape = u.shape[1 + len(scatter_dims):]
    self._spend(V * max(1, math.prod(batch_shape)) * (POINT_COST + max(1, math.prod(wshape))))
    ext = [1] * rank_o
    for k, d in enumerate(win_operand):
        ext[d] = wshape[k]
    highest = np.array(out.shape[1:], dtype=np.int64) - np.array(ext, dtype=np.int64)
    for p in np.ndindex(*batch_shape):
        start = np.zeros((V, rank_o), dtype=np.int64)
        point = vec[(slice(None), *p)]  # (V, k)
        for k, d in enumerate(to_operand):
            start[:, d] = point[:, k]
        for ob, ib in zip(obatch, ibatch, strict=True):
            start[:, ob] = p[keep_dims.index(ib)]
        inside = ((start >= 0) & (start <= highest)).all(axis=1)
        if not inside.any():
            continue  # an update out of bounds is skipped whole
        piece = u[(slice(None), *p)].reshape((V, *ext))
        if inside.all() and (start == start[:1]).all():
            where = (slice(None), *(slice(a, a + e) for a, e in zip(start[0], ext, strict=True)))
        else:
            keep = np.flatnonzero(inside)
            piece = piece[keep]
            where = self._windows(start[keep], ext, keep)
        with np.errstate(all="ignore"):
            out[where] = combine(out[where], piece)


def region_convolution(self, op, ins):
    lhs, rhs = ins
    a = op.attributes
    if "dimension_numbers" not in a:
        raise Unobservable("a convolution without dimension numbers")
    dn = self.hlo.ConvDimensionNumbers(a["dimension_numbers"])
    groups = int(self.ir.IntegerAttr(a["feature_group_count"]).value)
    bgroups = int(self.ir.IntegerAttr(a["batch_group_count"]).value)
    if groups != 1 or bgroups != 1:
        raise Unobservable("a grouped convolution")
    nsp = len(list(dn.input_spatial_dimensions))
    strides = self._i64s(op, "window_strides") if "window_strides" in a else [1] * nsp
    lhs_dil = self._i64s(op, "lhs_dilation") if "lhs_dilation" in a else [1] * nsp
    rhs_dil = self._i64s(op, "rhs_dilation") if "rhs_dilation" in a else [1] * nsp
    pad = (np.array(a["padding"]).reshape(nsp, 2).tolist() if "padding" in a
           else [[0, 0]] * nsp)
    if "window_reversal" in a and any(np.array(a["window_reversal"]).reshape(-1)):
        raise Unobservable("a reversed convolution window")
    lhs = np.broadcast_to(lhs, (self.V, *lhs.shape[1:]))
    rhs = np.broadcast_to(rhs, (self.V, *rhs.shape[1:]))
    L = np.transpose(lhs, [0, int(dn.input_batch_dimension) + 1,
                           int(dn.input_feature_dimension) + 1]
                     + [d + 1 for d in dn.input_spatial_dimensions]).astype(np.float64 if
                                                                             lhs.dtype.kind
                                                                             != "c" else
                                                                             np.complex128)
    K = np.transpose(rhs, [0, int(dn.kernel_output_feature_dimension) + 1,
                           int(dn.kernel_input_feature_dimension) + 1]
                     + [d + 1 for d in dn.kernel_spatial_dimensions]).astype(L.dtype)
    # dilate the input, then pad it (negative padding crops)
    sp = L.shape[3:]
    dil_shape = [(n - 1) * d + 1 if n else 0 for n, d in zip(sp, lhs_dil, strict=True)]
    D = np.zeros(L.shape[:3] + tuple(dil_shape), dtype=L.dtype)
    D[(slice(None),) * 3 + tuple(slice(None, None, d) for d in lhs_dil)] = L
    for i, (lo, hi) in enumerate(pad):
        ax = 3 + i
        if lo < 0:
            D = np.take(D, range(-lo, D.shape[ax]), axis=ax)
            lo = 0
        if hi < 0:
            D = np.take(D, range(0, D.shape[ax] + hi), axis=ax)
            hi = 0
        widths = [(0, 0)] * D.ndim
        widths[ax] = (lo, hi)
        D = np.pad(D, widths)
    ksp = K.shape[3:]
    eff = [(k - 1) * d + 1 for k, d in zip(ksp, rhs_dil, strict=True)]
    out_sp = [max(0, (n - e) // s + 1) for n, e, s in zip(D.shape[3:], eff, strides,
                                                         strict=True)]
    acc = np.zeros((self.V, D.shape[1], K.shape[1], *out_sp), dtype=L.dtype)
    self._count(math.prod(acc.shape[1:]) * K.shape[2] * max(1, math.prod(ksp)))
    self._spend(acc.size * K.shape[2] * max(1, math.prod(ksp)))
    for kpos in np.ndindex(*ksp):
        sl = tuple(slice(k * d, k * d + (o - 1) * s + 1, s) for k, d, o, s in
                   zip(kpos, rhs_dil, out_sp, strides, strict=True))
        win = D[(slice(None), slice(None), slice(None), *sl)]
        w = K[(slice(None), slice(None), slice(None), *kpos)]
        acc += np.einsum("vnc...,voc->vno...", win, w)
    res = op.results[0]
    order = [int(dn.output_batch_dimension), int(dn.output_feature_dimension),
             *dn.output_spatial_dimensions]
    out = np.empty((self.V, *(acc.shape[1 + order.index(r)] for r in range(len(order)))),
                   dtype=acc.dtype)
    out[...] = np.transpose(acc, [0] + [1 + order.index(r) for r in range(len(order))])
    return [self._out(out, res)]

def region_fft(self, op, ins):
    x = ins[0]
    kind = str(self.hlo.FftTypeAttr(op.attributes["fft_type"]).value)
    n = self._i64s(op, "fft_length")
    axes = tuple(range(x.ndim - len(n), x.ndim))
    fn = {"FFT": np.fft.fftn, "IFFT": np.fft.ifftn, "RFFT": np.fft.rfftn,
          "IRFFT": np.fft.irfftn}.get(kind)
    if fn is None:
        raise Unobservable(f"an FFT of type {kind}")
    self._count(x[0].size * max(1, int(math.log2(max(2, math.prod(n))))))
    return [self._out(fn(x, s=n, axes=axes), op.results[0])]

def region_tuple(self, op, ins):
    raise Unobservable("a tuple")


def op_pad(self, op, ins, res):
    x, pv = ins
    lo = self._i64s(op, "edge_padding_low")
    inner = self._i64s(op, "interior_padding")
    shape, _ = self._static(res)
    x = np.broadcast_to(x, (self.V, *x.shape[1:]))
    out = np.empty((self.V, *shape), dtype=x.dtype)
    out[...] = pv.reshape((pv.shape[0],) + (1,) * len(shape))
    # place x's elements at lo + i * (inner + 1), then crop the negative padding
    full = [x.shape[i + 1] + max(0, x.shape[i + 1] - 1) * inner[i] for i in range(len(lo))]
    big = np.empty((self.V, *full), dtype=x.dtype)
    big[...] = pv.reshape((pv.shape[0],) + (1,) * len(shape))
    big[(slice(None), *(slice(None, None, inner[i] + 1) for i in range(len(lo))))] = x
    src, dst = [slice(None)], [slice(None)]
    for i in range(len(lo)):
        s0 = max(0, -lo[i])
        d0 = max(0, lo[i])
        n = min(full[i] - s0, shape[i] - d0)
        if n <= 0:
            return out
        src.append(slice(s0, s0 + n))
        dst.append(slice(d0, d0 + n))
    out[tuple(dst)] = big[tuple(src)]
    return out


def _reducer(self, op) -> str:
    body = op.regions[0].blocks[0]
    inner = [o.operation for o in body.operations]
    if len(inner) != 2:
        raise Unobservable("a reduction with a body of several ops")
    kind = inner[0].name.partition(".")[2]
    if kind not in ("add", "multiply", "maximum", "minimum", "and", "or"):
        raise Unobservable(f"a reduction by {kind}")
    args = list(body.arguments)
    if list(inner[0].operands) not in (args[:2], args[:2][::-1]):
        raise Unobservable("a reduction of a computed value")
    return kind

# -- multi-result and region ops ------------------------------------------------------


def reduce(self, op, ins: list[np.ndarray]) -> list[np.ndarray]:
    n = len(ins) // 2
    if n != 1 or len(list(op.regions[0].blocks[0].operations)) != 2:
        return self.reduce_folded(op, ins)
    kind = self._reducer(op)
    dims = tuple(d + 1 for d in self._i64s(op, "dimensions"))
    x, init = ins[0], ins[1]
    x = np.broadcast_to(x, (self.V, *x.shape[1:]))
    self._count(x[0].size)
    fn = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum, "and": np.logical_and, "or": np.logical_or}[kind]
    if x.dtype != np.bool_ and kind in ("and", "or"):
        fn = np.bitwise_and if kind == "and" else np.bitwise_or
    with np.errstate(all="ignore"):
        if kind == "add" and np.issubdtype(x.dtype, np.floating):
            out = np.sum(x, axis=dims, dtype=np.float64)
        else:
            out = fn.reduce(x, axis=dims) if dims else x
        init_b = init.reshape((init.shape[0],) + (1,) * (np.ndim(out) - 1))
        out = fn(out, init_b)
    return [self._out(np.asarray(out), op.results[0])]


MAX_FOLDED = 1 << 22  # elements x body ops of a reduction run element by element
FOLD_OP_COST = 2_000  # evaluator.OP_COST: a body op's fixed cost, paid once per element folded


def reduce_folded(self, op, ins: list[np.ndarray]) -> list[np.ndarray]:
    """A reduction of several values at once (jnp.argmax: a value and its index) or with a
    body of several ops: the body run as a scalar program on every kept position of every
    variant, folding the reduced elements in one at a time from the init values (the order is
    XLA's to choose, so any order gives the program's answer)."""
    n = len(ins) // 2
    body = op.regions[0].blocks[0]
    dims = [d + 1 for d in self._i64s(op, "dimensions")]
    xs = [np.broadcast_to(x, (self.V, *ins[0].shape[1:])) for x in ins[:n]]
    keep = [a for a in range(xs[0].ndim) if a not in dims]
    kept = [xs[0].shape[a] for a in keep]
    m = math.prod(xs[0].shape[a] for a in dims)
    P = math.prod(kept)
    ops = len(list(body.operations))
    if P * m * ops > MAX_FOLDED:
        raise Unobservable("a reduction too large to run element by element")
    self._spend(P * m * ops + m * ops * FOLD_OP_COST)
    flat = [np.transpose(x, keep + dims).reshape(P, m) for x in xs]
    # each variant's init, for each of its kept positions (variant-major, as `flat`)
    acc = [np.repeat(np.broadcast_to(np.asarray(i).reshape(-1), (self.V,)), P // self.V)
           for i in ins[n:]]
    sub = type(self).__new__(type(self))
    sub.__dict__.update(self.__dict__)
    sub.V, sub.active, sub.inject, sub.groups, sub.whole = P, [], {}, 0, None
    sub.skip = {}
    sub.shadow = self.sub_shadow(P)
    captured = _captured(self, body)
    for e in range(m):
        acc = [np.broadcast_to(a, (P,)) for a in
               sub.block(body, acc + [f[:, e] for f in flat], captured)]
    return [self._out(np.asarray(a).reshape(kept), r)
            for a, r in zip(acc, op.results, strict=True)]


def _captured(self, body) -> dict:
    """The values a comparator reads from around it (constants), one copy for every pair: they
    must be the same in every variant."""
    inner = set(body.arguments)
    out = {}
    for o in body.operations:
        o = o.operation
        for v in o.operands:
            if v not in inner and v not in out:
                x = self.env.get(v)
                same = x == x[:1] if x is not None else None
                if same is not None and x.dtype.kind in "fc":
                    same |= np.isnan(x) & np.isnan(x[:1])
                if same is None or not same.all():
                    raise Unobservable("a sort comparator that reads a changing value")
                out[v] = x[:1]
        inner.update(o.results)
    return out


def region_sort(self, op, ins):
    """stablehlo.sort with any comparator: the comparator region runs once on every pair of
    elements of every slice (as variants of a scalar program), and each element's place in a
    stable sort is the count of the elements that must precede it."""
    dim = int(self.ir.IntegerAttr(op.attributes["dimension"]).value) + 1
    vals = [np.moveaxis(np.broadcast_to(x, (self.V, *ins[0].shape[1:])), dim, -1) for x in ins]
    lead, n = vals[0].shape[:-1], vals[0].shape[-1]
    pairs = math.prod(lead) * n * n
    if pairs > MAX_SORT_PAIRS:
        raise Unobservable("a sort too large to observe")
    self._spend(pairs * 8)
    args = []
    for x in vals:
        flat = x.reshape(-1, n)
        args.append(np.repeat(flat[:, :, None], n, axis=2).reshape(-1))  # element i
        args.append(np.repeat(flat[:, None, :], n, axis=1).reshape(-1))  # element j
    sub = type(self).__new__(type(self))
    sub.__dict__.update(self.__dict__)
    sub.V, sub.active, sub.inject, sub.groups, sub.whole = pairs, [], {}, 0, None
    sub.skip = {}
    sub.shadow = self.sub_shadow(pairs)
    body = op.regions[0].blocks[0]
    less = sub.block(body, args, _captured(self, body))[0].reshape(-1, n, n).astype(bool)
    earlier = np.arange(n)[:, None] > np.arange(n)[None, :]  # [i, j]: j comes before i
    tie = ~less & ~np.swapaxes(less, 1, 2)
    rank = (np.swapaxes(less, 1, 2) | (tie & earlier)).sum(axis=2)  # [s, i]: i's place
    order = np.argsort(rank, axis=1, kind="stable")
    outs = []
    for x in vals:
        y = np.take_along_axis(x.reshape(-1, n), order, axis=1).reshape(x.shape)
        outs.append(np.moveaxis(y, -1, dim))
    return [self._out(o, r) for o, r in zip(outs, op.results, strict=True)]


def region_reduce_window(self, op, ins):
    """reduce_window with an add, multiply, max or min body (jnp.cumsum, cumprod, pooling):
    the input dilated and padded with the init value, then every window offset combined."""
    if len(ins) != 2:
        raise Unobservable("a windowed reduction of several values")
    kind = self._reducer(op)
    fn = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
          "minimum": np.minimum, "and": np.logical_and, "or": np.logical_or}[kind]
    a = op.attributes
    x, init = np.broadcast_to(ins[0], (self.V, *ins[0].shape[1:])), ins[1]
    rank = x.ndim - 1
    win = self._i64s(op, "window_dimensions")
    strides = self._i64s(op, "window_strides") if "window_strides" in a else [1] * rank
    bdil = self._i64s(op, "base_dilations") if "base_dilations" in a else [1] * rank
    wdil = self._i64s(op, "window_dilations") if "window_dilations" in a else [1] * rank
    pad = np.array(a["padding"]).reshape(rank, 2).tolist() if "padding" in a else [[0, 0]] * rank
    fill = init.reshape((init.shape[0],) + (1,) * rank)
    shape = [(n - 1) * d + 1 if n else 0 for n, d in zip(x.shape[1:], bdil, strict=True)]
    big = np.empty((self.V, *shape), dtype=x.dtype)
    big[...] = fill
    big[(slice(None), *(slice(None, None, d) for d in bdil))] = x
    for i, (lo, hi) in enumerate(pad):
        if lo < 0 or hi < 0:
            raise Unobservable("a windowed reduction with negative padding")
        full = [(0, 0)] * big.ndim
        full[i + 1] = (lo, hi)
        big = np.pad(big, full, constant_values=0)
        if lo or hi:  # np.pad fills zeros: put the init value there
            edge = [slice(None)] * big.ndim
            edge[i + 1] = slice(0, lo)
            big[tuple(edge)] = np.broadcast_to(fill, big[tuple(edge)].shape)
            edge[i + 1] = slice(big.shape[i + 1] - hi, big.shape[i + 1])
            big[tuple(edge)] = np.broadcast_to(fill, big[tuple(edge)].shape)
    eff = [(w - 1) * d + 1 for w, d in zip(win, wdil, strict=True)]
    out_shape = [max(0, (n - e) // s + 1) for n, e, s in zip(big.shape[1:], eff, strides,
                                                          strict=True)]
    out = np.empty((self.V, *out_shape), dtype=x.dtype)
    out[...] = fill
    self._count(max(1, math.prod(out_shape)) * max(1, math.prod(win)))
    self._spend(out.size * max(1, math.prod(win)))
    with np.errstate(all="ignore"):
        for k in np.ndindex(*win):
            sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in
                       zip(k, wdil, out_shape, strides, strict=True))
            out = fn(out, big[(slice(None), *sl)])
    return [self._out(out, op.results[0])]


# -- the shape-polymorphic ops (a symbolic program runs as verified) ----------------------
def _sizes(self, x: np.ndarray) -> list[int]:
    """A shape operand's values (the same in every variant: a shape, not data)."""
    v = np.broadcast_to(x, (self.V, *x.shape[1:])).reshape(self.V, -1)
    if not (v == v[0]).all():
        raise Unobservable("a shape that differs between variants")
    return [int(n) for n in v[0]]

def op_get_dimension_size(self, op, ins, res):
    dim = int(self.ir.IntegerAttr(op.attributes["dimension"]).value)
    return np.array(ins[0].shape[dim + 1], dtype=np.int32)[None]

def op_dynamic_broadcast_in_dim(self, op, ins, res):
    x, shape = ins[0], self._sizes(ins[1])
    dims = self._i64s(op, "broadcast_dimensions")
    view = [x.shape[0]] + [1] * len(shape)
    for i, d in enumerate(dims):
        view[d + 1] = x.shape[i + 1]
    return np.broadcast_to(x.reshape(view), (x.shape[0], *shape))

def op_dynamic_reshape(self, op, ins, res):
    return ins[0].reshape((ins[0].shape[0], *self._sizes(ins[1])))

def op_dynamic_iota(self, op, ins, res):
    shape = self._sizes(ins[0])
    _, dtype = self._type(res)
    dim = int(self.ir.IntegerAttr(op.attributes["iota_dimension"]).value)
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return np.broadcast_to(np.arange(shape[dim], dtype=dtype).reshape(view), shape)[None]


def op_real_dynamic_slice(self, op, ins, res):
    """x[start:limit:stride] with the bounds given as values (a symbolic program's slice)."""
    x = ins[0]
    lo, hi, st = (self._sizes(v) for v in ins[1:4])
    return x[(slice(None), *(slice(a, b, c) for a, b, c in zip(lo, hi, st, strict=True)))]


def op_dynamic_pad(self, op, ins, res):
    """stablehlo.pad with the paddings given as values (a symbolic program's pad)."""
    x, pv = ins[0], ins[1]
    lo, hi, inner = (self._sizes(v) for v in ins[2:5])
    if min(lo + hi) < 0:
        raise Unobservable("a dynamic pad with negative padding")
    shape = [a + b + n + max(0, n - 1) * c for a, b, n, c in zip(lo, hi, x.shape[1:], inner,
                                                               strict=True)]
    x = np.broadcast_to(x, (self.V, *x.shape[1:]))
    out = np.empty((self.V, *shape), dtype=x.dtype)
    out[...] = pv.reshape((pv.shape[0], *(1,) * len(shape)))
    out[(slice(None), *(slice(a, a + (n - 1) * (c + 1) + 1, c + 1) if n else slice(a, a)
                        for a, n, c in zip(lo, x.shape[1:], inner, strict=True)))] = x
    return out
