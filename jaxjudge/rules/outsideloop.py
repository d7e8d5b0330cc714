"""How much work runs outside the loop (`loop_over_dim`'s `outside_loop_products`).

A loop that does the work leaves little to do before or after it: a power iteration's loop
starts from the given vector, returns the iterate, and after it come one or two products with
the matrix (`sigma = u @ (w @ v)`). A token loop that only nudges the vector, with the real
iterations unrolled after it from what it returns (or before it, into what it starts from),
has two products outside it per iteration it skipped (17 for 8 power iterations and sigma).
So this module counts the *successive products with the named arguments*:

- a matrix product (`dot_general`, `dot`, `convolution`) one of whose operands is computed
  from a named argument (`w`, `w.T`, `w * 2`, `w @ v`, or a value a loop computed from it):
  before the loop `u @ u` is not one, `w.T @ u` is; after it, every product of what the loop
  carries is one (a copy of `w` the loop carries along, nudged, is still `w`);
- a sum over an axis (`reduce`, `reduce_window`, an `fft`, a `scatter` that combines:
  `jnp.sum(w * u, axis=1)`, a cumulative sum, `jax.ops.segment_sum`, `jnp.fft.fft(a)[0]`) of
  a value that holds a named argument's
  elements (re-laid-out or combined elementwise, as the product `w * u[None, :]` spelled out
  does): a norm of `w @ v` is not one.

*Before*: the most on a path from the program's arguments to the values the working loops'
carried state starts from; *after*: the most on a path from their carried results to the
outputs. Their sum is compared with the limit. The loops' own heads start no path (a loop
nested in another one does not count its own steps as outside it), and what constant folding
removes (`jaxjudge.rules.folding`) carries nothing. A loop of another count that does products
on such a path adds its products at every pass, so it reaches the cap (MAX_COUNTED):
iterations run in a second loop count as outside the first.

Not seen: products and norms both spelled element by element (`w[:, 0] * u[0] + w[:, 1] *
u[1] + ...`, `jnp.sqrt(x[0] ** 2 + ...)`), which hold no contraction at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxjudge.rules.dataflow import Graph, Kind, Loop, Step, combining_scatters, propagate
from jaxjudge.rules.folding import Bits, Transfer, Value, make_transfer

MAX_COUNTED = 32  # successive products counted along a path (more read as MAX_COUNTED)
PRODUCTS = frozenset({"stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"})
# Ops each of whose results combines many elements of an operand: a sum in all but name (an
# FFT's first entry is the sum of its input).
SUMS = frozenset({"stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.fft",
                  "stablehlo.select_and_scatter"})

_FRESH = 1  # computed from a named argument (through loops too)
_ELEMENTS = 2  # holds a named argument's elements (re-laid-out, or combined elementwise)
_DEPTH0 = 4  # bit _DEPTH0 << d: a path with d products on it
_DEPTHS = ((1 << (MAX_COUNTED + 1)) - 1) * _DEPTH0
_TOP = _DEPTH0 << MAX_COUNTED


@dataclass(frozen=True)
class Outside:
    """The most successive products with the named arguments before the working loops and
    after them."""

    before: int = 0
    after: int = 0

    @property
    def total(self) -> int:
        return self.before + self.after


def _deeper(depths: int) -> int:
    """Every depth in the set plus one, the overflow kept at MAX_COUNTED."""
    out = (depths << 1) & _DEPTHS
    return out | _TOP if depths & _TOP else out


def _longest(bits: list[int], nodes: Iterable[int]) -> int:
    depths = 0
    for n in nodes:
        depths |= bits[n] & _DEPTHS
    return depths.bit_length() - _DEPTH0.bit_length() if depths else 0


def _counting(values: list[Value], cut: set[int], heads: set[int], sums: set[int]
              ) -> Transfer:
    """Dependence (constants folded) carrying the named arguments' bits and the depth sets of
    paths, one deeper at each product with them; `cut` results and `heads` hold no depth but
    their seeds; `sums`: the ids of the combining scatters."""
    base = make_transfer(values)

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        out = base(step, bits)
        if out is None:
            return None
        if step.kind is Kind.TUPLE:
            return [b & ~_DEPTHS if r in cut or r in heads else b
                    for r, b in zip(step.results, out, strict=False)]
        union = out[0]
        if step.name in PRODUCTS:
            counted = union & _FRESH
        elif step.name in SUMS or id(step) in sums:
            counted = union & _ELEMENTS
        elif step.kind in (Kind.CONTRACT, Kind.REDUCE, Kind.STRUCTURAL):
            return [union & ~_ELEMENTS] * len(out)
        else:
            return out
        depths = _deeper(union & _DEPTHS) if counted else union & _DEPTHS
        return [(union & _FRESH) | depths] * len(out)

    return transfer


def products_outside(g: Graph, values: list[Value], named: Iterable[int],
                     working: Sequence[tuple[Loop, Sequence[int]]]) -> Outside:
    """The most successive products with the named arguments (main's argument nodes `named`)
    before and after the working loops (each with the positions of its carried state), each
    at most MAX_COUNTED. Two propagations, spending from the graph's budget."""
    marks = {n: _FRESH | _ELEMENTS for n in named}
    heads = {a for loop, _ in working for a in loop.body_args + loop.cond_args}
    starts = {loop.operands[p] for loop, carried in working for p in carried
              if p < len(loop.operands)}
    results = {loop.results[p] for loop, carried in working for p in carried
               if p < len(loop.results)}
    sums = combining_scatters(g)
    seeds = {n: marks.get(n, 0) | _DEPTH0 for n in g.main_args}
    before = _longest(propagate(g, seeds, _counting(values, set(), heads, sums)), starts)
    seeds = dict(marks)
    for n in results:
        seeds[n] = seeds.get(n, 0) | _DEPTH0
    after = _longest(propagate(g, seeds, _counting(values, results, heads, sums)),
                     g.main_results)
    return Outside(before, after)


def outside_loop(found: Outside, allowed: int, names: str) -> str:
    """Why a loop with more than `allowed` products outside it does not do the work."""
    def many(n: int) -> str:
        return f"{MAX_COUNTED} or more" if n >= MAX_COUNTED else str(n)

    if found.before and found.after:
        where = (f"before it and after it, your outputs are computed through {many(found.before)}"
                 f" and {many(found.after)} successive products with {names}")
    elif found.before:
        where = (f"before it, what it starts from is computed through {many(found.before)} "
                 f"successive products with {names}")
    else:
        where = (f"after it, your outputs are computed from what it carries through "
                 f"{many(found.after)} successive products with {names}")
    return (f"{where} (at most {allowed} in all, to compute the result from what the loop "
            f"returns): the iterations run outside the loop, not in it. Run them in the loop")
