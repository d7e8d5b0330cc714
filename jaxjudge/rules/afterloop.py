"""How much work runs after the loop (`loop_over_dim`'s `after_loop_products`).

A loop that does the work leaves little to do once it is done: a power iteration's loop
returns the vector, and after it come one or two products with the matrix (`sigma = u @ (w @
v)`, `v = normalize(w.T @ u)` then `w @ v`). A token loop that only nudges the vector, with
the real iterations unrolled after it from what it returns, has two products after it per
iteration it skipped (17 for 8 power iterations and sigma). So this module counts, on every
path from the working loops' carried results to the program's outputs, the *successive
products with the named arguments*:

- a matrix product (`dot_general`, `dot`, `convolution`) one of whose operands is computed
  from a named argument (`w`, `w.T`, `w * 2`, `w @ v`) other than through those carried
  results: `u @ u` is not one, `u @ (w @ v)` is;
- a sum over an axis (`reduce`, `reduce_window`: `jnp.sum(w * u, axis=1)`, a cumulative sum)
  of a value that holds a named argument's elements (re-laid-out or combined elementwise, as
  the product `w * u[None, :]` spelled out does): a norm of `w @ v` is not one.

A path's count is the number of such steps along it; the longest is compared with the limit.
The loops' entries are cut (what a working loop starts from is not "after" it, so a loop
nested in another one does not count its own steps), and what constant folding removes
(`jaxjudge.rules.folding`) carries nothing. A later loop of another count that does products
adds its count at every pass, so it reaches the cap: iterations run in a second loop after
the first count as after it.

Not seen: products and norms both spelled element by element (`w[:, 0] * u[0] + w[:, 1] *
u[1] + ...`, `jnp.sqrt(x[0] ** 2 + ...)`), which hold no contraction at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from jaxjudge.rules.dataflow import Graph, Kind, Step, propagate
from jaxjudge.rules.folding import Bits, Value, make_transfer

MAX_COUNTED = 32  # successive products counted along a path (more read as MAX_COUNTED)
PRODUCTS = frozenset({"stablehlo.dot_general", "stablehlo.dot", "stablehlo.convolution"})
SUMS = frozenset({"stablehlo.reduce", "stablehlo.reduce_window"})

_FRESH = 1  # computed from a named argument, other than through the loops' carried results
_ELEMENTS = 2  # holds a named argument's elements (re-laid-out, or combined elementwise)
_DEPTH0 = 4  # bit _DEPTH0 << d: a path from the carried results with d products on it
_DEPTHS = ((1 << (MAX_COUNTED + 1)) - 1) * _DEPTH0
_TOP = _DEPTH0 << MAX_COUNTED


def _deeper(depths: int) -> int:
    """Every depth in the set plus one, the overflow kept at MAX_COUNTED."""
    out = (depths << 1) & _DEPTHS
    return out | _TOP if depths & _TOP else out


def products_after(g: Graph, values: list[Value], named: Iterable[int],
                   starts: Sequence[int], entries: Iterable[int]) -> int:
    """The most successive products with the named arguments (main's argument nodes `named`)
    on a path from `starts` (the working loops' carried results) to the outputs, at most
    MAX_COUNTED; `entries` (the working loops' own heads) start no path."""
    cut = set(starts)
    heads = set(entries)
    base = make_transfer(values)

    def transfer(step: Step, bits: Bits) -> list[int] | None:
        out = base(step, bits)
        if out is None:
            return None
        if step.kind is Kind.TUPLE:
            return [0 if r in cut else (b & ~_DEPTHS if r in heads else b)
                    for r, b in zip(step.results, out, strict=False)]
        union = out[0]
        if step.name in PRODUCTS:
            counted = union & _FRESH
        elif step.name in SUMS:
            counted = union & _ELEMENTS
        elif step.kind in (Kind.CONTRACT, Kind.REDUCE, Kind.STRUCTURAL):
            return [union & ~_ELEMENTS] * len(out)
        else:
            return out
        depths = _deeper(union & _DEPTHS) if counted else union & _DEPTHS
        return [(union & _FRESH) | depths] * len(out)

    seeds = {n: _FRESH | _ELEMENTS for n in named}
    for n in cut:
        seeds[n] = seeds.get(n, 0) | _DEPTH0
    bits = propagate(g, seeds, transfer)
    depths = 0
    for r in g.main_results:
        depths |= bits[r] & _DEPTHS
    return max(depths.bit_length() - _DEPTH0.bit_length(), 0) if depths else 0


def after_loop(found: int, allowed: int, names: str) -> str:
    """Why a loop followed by `found` products (more than `allowed`) does not do the work."""
    many = f"{MAX_COUNTED} or more" if found >= MAX_COUNTED else str(found)
    return (f"after it, your outputs are computed from what it carries through {many} "
            f"successive products with {names} (at most {allowed}, to compute the result from "
            f"what the loop returns): the iterations run after the loop, not in it. Run them "
            f"in the loop")
