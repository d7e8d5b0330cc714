"""Stage B's evaluator, control flow: loops (with the observer's inject variants, and the
trajectory runs' stops) and cases.

Installed onto evaluator.Evaluator by `install` (both files are run by path, never imported),
like evaluator_regions.py: each method takes the evaluator first and values with a leading
variant axis.
"""

from __future__ import annotations

import numpy as np

# evaluator.py's names, set by install()
MAX_STEPS = MAX_RECORDS = MAX_RECORDED_STEPS = 0
OverBudget: type[Exception] = Exception
RecordsFull: type[Exception] = Exception
_moved = _changed = None  # type: ignore[assignment]


def install(evaluator_cls, names: dict) -> None:
    """Attach the loop and case methods to the evaluator class; `names` is evaluator.py's
    namespace (its limits, exceptions and helpers)."""
    g = globals()
    for name in ("MAX_STEPS", "MAX_RECORDS", "MAX_RECORDED_STEPS", "OverBudget", "RecordsFull",
                 "_moved", "_changed"):
        g[name] = names[name]
    for name in ("while_", "_cond", "_perturbed", "_kicked", "case"):
        setattr(evaluator_cls, name, g[name])
    evaluator_cls._passes_along = staticmethod(_passes_along)


def while_(self, op, ins: list[np.ndarray]) -> list[np.ndarray]:
    cond_b, body_b = op.regions[0].blocks[0], op.regions[1].blocks[0]
    outer = self.env
    carry = [np.broadcast_to(x, (self.V, *x.shape[1:])) for x in ins]
    passing = self._passes_along(body_b)
    # outermost loops share one set of inject variants (level 0), nested ones another (1)
    op_index = self.index.get(op, -1)
    outermost = self.depth == 0
    level = 0 if outermost else 1
    record = None
    kicks = self.kicks.get(op_index) if op_index not in self.kicked else None
    if kicks is not None:  # the op's first run only
        self.kicked.add(op_index)
    if self.recorder is not None and len(self.loops) >= MAX_RECORDS:
        raise RecordsFull(f"more than {MAX_RECORDS} loop runs, the most the grader records")
    if self.recorder is not None:
        record = self.recorder(self, op_index, carry, passing)
        self.loops.append(record)
        self.active.append(record)
    self.depth += 1
    try:
        active = self._cond(cond_b, carry, outer)
        stop = self.stops.get(op_index)
        if stop is not None:  # variant k leaves the loop after stop[k] steps
            active = active & (stop > 0)
        step = 0
        while active.any():
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise OverBudget(f"more than {MAX_STEPS:,} loop steps")
            if kicks is not None and step in kicks:
                carry = self._kicked(carry, kicks[step])
            reads = carry
            v = self.inject.get((level, step))
            clean = v is not None and not any(_moved(c[v], c[0]).any() for c in carry)
            if v is not None:
                reads = [self._perturbed(c, v) if i in passing else c
                         for i, c in enumerate(carry)]
                # A step whose reads the variant could not change (the input is carried in
                # the state, an output buffer updated in place) tells nothing: unknown, not
                # idle and not unreached.
                perturbed = any(r is not c for r, c in zip(reads, carry, strict=True))
                clean = clean and perturbed
            if record is not None and len(record.work) < MAX_RECORDED_STEPS:
                record.work.append(0)
            new = self.block(body_b, reads, outer)
            new = [carry[i] if i in passing else np.broadcast_to(x, (self.V, *x.shape[1:]))
                   for i, x in enumerate(new)]
            mask = active
            old, carry = carry, [np.where(mask.reshape((self.V,) + (1,) * (x.ndim - 1)), x, c)
                                 for x, c in zip(new, carry, strict=True)]
            if record is not None and step < MAX_RECORDED_STEPS:
                record.step(step, old, carry, v if clean else None, v is not None)
            active = active & self._cond(cond_b, carry, outer)
            if stop is not None:
                active = active & (stop > step + 1)
            step += 1
        if kicks is not None and step in kicks:  # after the last step: the code after it
            carry = self._kicked(carry, kicks[step])
    finally:
        self.depth -= 1
        if record is not None:
            self.active.pop()
    if record is not None:
        carry = record.finish(carry)
    return [self._out(c, r) for c, r in zip(carry, op.results, strict=True)]

def _cond(self, block, carry, outer) -> np.ndarray:
    out = self.block(block, carry, outer)[0]
    return np.broadcast_to(out, (self.V, *out.shape[1:])).reshape(self.V).astype(bool)

def _passes_along(body) -> list[int]:
    """The carried slots the body returns unchanged (a scan's xs, closed-over inputs)."""
    ops = [o.operation for o in body.operations]
    ret = ops[-1] if ops else None
    if ret is None:
        return []
    args = list(body.arguments)
    return [i for i, v in enumerate(ret.operands) if i < len(args) and v == args[i]]

def _perturbed(self, x: np.ndarray, v: int) -> np.ndarray:
    """Variant v of x changed where x moves with the watched inputs (the `whole` variant):
    the inputs' values a step reads, not a gate or constant computed beside them."""
    if not (np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype,
                                                                   np.complexfloating)):
        return x
    if self.whole is None:
        return x
    mask = _moved(x[self.whole], x[0])
    if not mask.any():
        return x
    out = np.array(x)
    out[v] = np.where(mask, _changed(out[v], self.rng), out[v])
    return out

KICK = 0.5  # a kick's size, as a share of the value's norm


def kick(x: np.ndarray, seed: int) -> np.ndarray:
    """x moved by KICK times its norm along a direction fixed by its size and `seed` (the
    installation's secret, grading/observer_seed.py: no submission knows it): a value
    that is another's times a factor a is moved by a times the other's kick (or by -a times
    it: the caller kicks both ways), so a learner's carried value and the reference's get the
    same change, whatever scale and sign each keeps. Large enough to show through the steps
    after it (power iteration shrinks a change by the ratio of the top singular values)."""
    flat = np.asarray(x, dtype=np.float64).ravel()
    g = np.random.default_rng([int(seed), flat.size]).standard_normal(flat.size)
    g /= max(float(np.linalg.norm(g)), 1e-300)
    return (flat + KICK * float(np.linalg.norm(flat)) * g).reshape(np.shape(x))


def _kicked(self, carry: list[np.ndarray], kicks: list[tuple[int, int, int]]):
    """The carry with each (variant, slot, sign) kicked (`kick`, or its mirror for sign -1):
    a complex value as one vector of its real and imaginary parts, an integer one as the
    floats its bits hold (observe_trajectory._floating)."""
    out = list(carry)
    for v, slot, sign in kicks:
        x = np.array(out[slot])
        old = _as_floats(x[v])
        x[v] = _from_floats(old + sign * (kick(old, self.kick_seed) - old), x[v])
        out[slot] = x
    return out


def _as_floats(x: np.ndarray) -> np.ndarray:
    """A carried value as float64 numbers: itself, a complex one's real then imaginary parts,
    an integer one's bits read as the float of their width."""
    if x.dtype.kind == "c":
        return np.concatenate([x.real.ravel(), x.imag.ravel()]).astype(np.float64)
    if x.dtype.kind in "iu":
        return np.ascontiguousarray(x).view(_FLOAT_OF[x.dtype.itemsize]).astype(np.float64)
    return np.asarray(x, dtype=np.float64)


def _from_floats(new: np.ndarray, like: np.ndarray) -> np.ndarray:
    """`_as_floats` undone: numbers back in `like`'s type and shape."""
    if like.dtype.kind == "c":
        half = new.size // 2
        return (new[:half] + 1j * new[half:]).reshape(like.shape).astype(like.dtype)
    if like.dtype.kind in "iu":
        return new.astype(_FLOAT_OF[like.dtype.itemsize]).view(like.dtype).reshape(like.shape)
    return new.astype(like.dtype)


_FLOAT_OF = {4: np.float32, 8: np.float64}  # the float an integer's bits are read as


def case(self, op, short: str, ins):
    index = ins[0]
    branches = op.regions
    idx = np.broadcast_to(index.reshape(-1), (self.V,)) if index.size else np.zeros(
        self.V, int)
    if short == "if":
        idx = np.where(idx.astype(bool), 0, 1)
    n = len(branches)
    idx = np.where((idx < 0) | (idx >= n), n - 1, idx).astype(int)
    outs = None
    outer = self.env
    for k in sorted(set(idx.tolist())):
        got = self.block(branches[k].blocks[0], [], outer)
        got = [np.broadcast_to(g, (self.V, *g.shape[1:])) for g in got]
        if outs is None:
            outs = [np.array(g) for g in got]
        sel = idx == k
        for o, g in zip(outs, got, strict=True):
            o[sel] = g[sel]
    return [self._out(o, r) for o, r in zip(outs or [], op.results, strict=True)]
