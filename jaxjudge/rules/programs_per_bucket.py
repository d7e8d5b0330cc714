"""`programs_per_bucket`: one program per bucket of a length, not one per length.

Padding variable-length inputs to the next length from a short list of buckets makes a jitted
function compile once per bucket. The grader exports one program per test shape (static
shapes), so the requirement compares them: programs whose lengths fall in the same bucket
(other dimensions equal) must be the same program once the inputs are padded, and the inputs
are padded to their bucket, not further.

"Not further" is decided by size against the reference, whatever the shapes: at each test
shape, the largest live value the program computes from the padded inputs
(`jaxjudge.analysis.extent`: a pad to 16 folded to 4 x 4, bitcast, sliced into pieces or built
by a loop holds as many elements) over the reference's largest at the same shapes (its program
graded through the same stages, jaxjudge.grading.reference_work) must shrink with the bucket as
the reference's does: at a smaller bucket at most `extent_multiple` times that share at a larger
one. A constant factor cancels (a column of ones beside x, a pairwise table that grows faster
than the reference's); a pad to the largest bucket, whole or per sequence, holds 4 times the
reference's share at a length of 4 that it holds at 16.

"The same program" is decided on a canonical form of each program (value numbering): every
value is named by a digest of its op, the op's attributes and types, and its operands' digests
(regions by what they return, calls inlined), so the order and names of ops do not matter. A
*copy* of an input (the input itself, padded, sliced, concatenated with constants, reshaped,
transposed, converted, broadcast, selected by a constant predicate, or built by a loop that
only moves its values (analysis/moves.py): values moved, no arithmetic) is named by the input and
its type only:
how the input was padded is not compared, what is computed from the padded copy is. So the
programs for lengths 5 and 7 of bucket 8 are the same when both compute on an 8-long copy of x
with a mask made from the data (`lengths`), and differ when a program computes on the 5-long
input, or builds its mask from the static length (a constant that differs), or slices the
padded copy back to the length. Each distinct length-independent computation is compared, so an
idle bucket-shaped computation beside a per-length one does not hide it.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field, field_validator

from jaxjudge.analysis.dataflow import Budget, TooComplex
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.extent import Extent, largest_from
from jaxjudge.analysis.flowpaths import PATH
from jaxjudge.analysis.moves import CONST, OTHER, loop_copies
from jaxjudge.analysis.parsed import MAX_TOTAL_CHARS
from jaxjudge.analysis.region import noted, region_of
from jaxjudge.analysis.stablehlo import Module, Op, ParseError, TensorType, parse_module
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

_DIM = r"^[A-Za-z_][A-Za-z0-9_]*$"
MAX_BUCKETS = 64
MAX_ATTR_CHARS = 1 << 16  # one op's attribute text hashed (a larger one: hashed by its length)
# Ops that repeat an input's values (a broadcast): still a copy, but not a padded one.
_EXPANDS = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.broadcast",
                      "stablehlo.dynamic_broadcast_in_dim"})
# Ops that move an input's values without arithmetic: their result is a copy of the input (a
# select is one when its predicate is a constant: its other operands must be constants).
_COPIES = _EXPANDS | frozenset({
    "stablehlo.pad", "stablehlo.dynamic_pad", "stablehlo.concatenate", "stablehlo.slice",
    "stablehlo.dynamic_slice", "stablehlo.real_dynamic_slice", "stablehlo.reshape",
    "stablehlo.dynamic_reshape", "stablehlo.transpose", "stablehlo.convert",
    "stablehlo.reverse", "stablehlo.gather", "stablehlo.dynamic_gather", "stablehlo.copy",
    "mhlo.copy", "stablehlo.dynamic_update_slice", "stablehlo.scatter", "stablehlo.select",
})
_RETURNS = frozenset({"func.return", "stablehlo.return", "mhlo.return"})
_REDUCTIONS = frozenset({"stablehlo.reduce", "stablehlo.reduce_window"})


class ProgramsPerBucketOptions(RuleOptions):
    dim: str = Field(pattern=_DIM, description="the variable length, a named dimension")
    buckets: tuple[Annotated[int, Field(ge=1)], ...] = Field(
        min_length=1, max_length=MAX_BUCKETS,
        description="the bucket lengths, increasing, e.g. [4, 8, 12, 16]")
    args: tuple[Annotated[str, Field(pattern=PATH)], ...] = Field(
        min_length=1, max_length=16,
        description="input paths padded along dim, e.g. [x]")
    extent_multiple: float = Field(
        default=3.0, gt=1.0, le=64.0,
        description="how many times more of the reference's size (its largest value computed "
                    "from args, at the same shapes) the program's may hold at a smaller "
                    "bucket than at a larger one")

    @field_validator("buckets")
    @classmethod
    def _increasing(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(b <= a for a, b in itertools.pairwise(value)):
            raise ValueError("buckets must be strictly increasing")
        return value


def bucket_of(length: int, buckets: Sequence[int]) -> int | None:
    """The smallest bucket that holds `length` (None: longer than every bucket)."""
    return next((b for b in buckets if b >= length), None)


@dataclass(frozen=True)
class _Val:
    digest: bytes
    source: int | None = None  # a copy of main's argument `source`
    const: bool = False  # computed from no argument
    expanded: bool = False  # a copy that went through a broadcast (values repeated)


@dataclass
class Canon:
    """A program's canonical form: its outputs' digests, each digest's operands, the copies
    of inputs (digest -> argument index, type) and every op's digest in program order with a
    description (for messages)."""

    outputs: tuple[bytes, ...]
    children: dict[bytes, tuple[bytes, ...]] = field(default_factory=dict)
    copies: dict[bytes, tuple[int, TensorType, bool]] = field(default_factory=dict)
    ops: list[tuple[bytes, Op]] = field(default_factory=list)
    arg_types: dict[int, TensorType] = field(default_factory=dict)

    def live_copies(self) -> list[tuple[int, TensorType, bool]]:
        """The copies of inputs the outputs are computed from."""
        seen = set(self.outputs)
        stack = list(seen)
        found = []
        while stack:
            d = stack.pop()
            if d in self.copies:
                found.append(self.copies[d])
            for c in self.children.get(d, ()):
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return found


def _h(*parts: Any) -> bytes:
    return hashlib.blake2b(repr(parts).encode(), digest_size=16).digest()


def _attrs(op: Op, text: str) -> str:
    pieces = []
    for start, end in op.spans:
        if end - start > MAX_ATTR_CHARS:
            digest = hashlib.sha256(text[start:end].encode()).hexdigest()
            pieces.append(f"<{end - start} chars: {digest}>")
        else:
            pieces.append(text[start:end])
    return "|".join(pieces)


def canonical(module: Module, text: str, budget: Budget) -> Canon:
    """The canonical form of main (calls inlined per call site, memoized by their operands).
    Raises ParseError on an unreadable program, TooComplex past the budget."""
    functions = module.functions()
    main = functions.get("main")
    if main is None:
        publics = [f for f in functions.values() if f.attrs.get("sym_visibility") == "public"]
        main = publics[0] if len(publics) == 1 else None
    if main is None or not main.regions or not main.regions[0]:
        raise ParseError("the module has no main function")
    canon = Canon(())
    entry = main.regions[0][0]
    env: dict[str, _Val] = {a: _Val(b"", source=i) for i, a in enumerate(entry.args)}
    # (an argument gets its digest, from its type, where it is first read)
    memo: dict[tuple[Any, ...], list[_Val]] = {}
    # Work items, an explicit stack so that deep nesting cannot exhaust Python's:
    # ("op", op, env, depth), ("regions", op, env, depth) once an op's regions are done, and
    # ("call", op, env, depth, callee env, memo key, callee body) once a callee is done.
    work: list[tuple[Any, ...]] = [("op", op, env, 0) for op in reversed(entry.ops)]
    while work:
        item = work.pop()
        tag, op, env, depth = item[:4]
        budget.spend()
        if tag == "call":
            sub, key, body = item[4:]
            rets = [ret for block in body for ret in block.ops if ret.name in _RETURNS]
            results = [_operand(sub, v, rets[0], k, canon)
                       for k, v in enumerate(rets[0].operands)] if rets else []
            memo[key] = results
            _bind(env, op, results)
        elif tag == "regions":
            operands = [_operand(env, name, op, k, canon) for k, name in enumerate(op.operands)]
            regions = []
            for region in op.regions:
                rets = [tuple(_operand(env, v, ret, k, canon).digest
                              for k, v in enumerate(ret.operands))
                        for block in region for ret in block.ops if ret.name in _RETURNS]
                regions.append(_h("region", tuple(rets)))
            base = _value(op, operands, regions, text, canon)
            if base.source is not None and len(op.results) == 1:
                _bind(env, op, [base])  # a scatter into a constant buffer: a copy
                continue
            moved = _moved(op, operands, env, functions, budget)
            if moved is not None:
                _bind(env, op, [_copy(source, t, canon, False) if source is not None
                                else _Val(_h(base.digest, i), None, True)
                                for i, (source, t) in enumerate(moved)])
                continue
            # A reduction of constants is a constant (its region only combines its operands).
            const = base.const and op.name in _REDUCTIONS
            outs = [_Val(_h(base.digest, i), None, const) for i in range(len(op.results))]
            for v in outs:
                canon.children[v.digest] = (base.digest,)
            _bind(env, op, outs)
        elif op.name in _RETURNS:
            continue
        elif op.name == "func.call":
            operands = [_operand(env, name, op, k, canon) for k, name in enumerate(op.operands)]
            callee = functions.get(op.attrs.get("callee", ""))
            if callee is None or not callee.regions or not callee.regions[0]:
                raise ParseError(f"func.call to an unknown function @{op.attrs.get('callee')}")
            key = (op.attrs.get("callee"), tuple((v.digest, v.source, v.const) for v in operands))
            if key in memo:
                _bind(env, op, memo[key])
                continue
            body = callee.regions[0]
            sub = dict(zip(body[0].args, operands, strict=False))
            work.append(("call", op, env, depth, sub, key, body))
            for block in reversed(body):
                work.extend(("op", o, sub, depth) for o in reversed(block.ops))
        elif op.regions:
            for r, region in enumerate(op.regions):
                for b, block in enumerate(region):
                    for i, a in enumerate(block.args):
                        env[a] = _Val(_h("block argument", depth, r, b, i))
            work.append(("regions", op, env, depth))
            for region in reversed(op.regions):
                for block in reversed(region):
                    work.extend(("op", o, env, depth + 1) for o in reversed(block.ops))
        else:
            operands = [_operand(env, name, op, k, canon) for k, name in enumerate(op.operands)]
            value = _value(op, operands, [], text, canon)
            if len(op.results) > 1:
                _bind(env, op, [_Val(_h(value.digest, i), None, value.const)
                                for i in range(len(op.results))])
            else:
                _bind(env, op, [value])
    rets = [ret for ret in entry.ops if ret.name in _RETURNS]
    if not rets:
        raise ParseError("main returns nothing")
    canon.outputs = tuple(_operand(env, v, rets[0], k, canon).digest
                          for k, v in enumerate(rets[0].operands))
    return canon


def _operand(env: dict[str, _Val], name: str, op: Op, k: int, canon: Canon) -> _Val:
    v = env.get(name)
    if v is None:
        raise ParseError(f"{op.name} reads {name}, which is not defined before it")
    if v.source is not None and not v.digest:  # main's argument: named by its type
        types = op.operand_types()
        t = types[k] if k < len(types) else TensorType((None,), "?")
        canon.arg_types.setdefault(v.source, t)
        v = env[name] = _Val(_h("copy", v.source, t), v.source)
        canon.copies[v.digest] = (v.source, t, False)
    return v


def _moved(op: Op, operands: list[_Val], env: dict[str, _Val], functions: dict[str, Op],
           budget: Budget) -> list[tuple[int | None, TensorType]] | None:
    """A loop that only moves one argument's values (a fori_loop copying x row by row into a
    bucket buffer): per result, the argument it is a copy of (None: computed from constants
    alone) and its type; None for any other op (analysis/moves.py)."""
    if op.name != "stablehlo.while":
        return None

    def kind(v: _Val) -> int:
        return v.source if v.source is not None else CONST if v.const else OTHER

    def around(name: str) -> int | None:
        v = env.get(name)
        return None if v is None else kind(v)

    got = loop_copies(op, [kind(v) for v in operands], functions, _COPIES, budget.spend,
                      around)
    if got is None or all(g is None for g in got):
        return None
    types = op.result_types()
    if len(types) != len(got):
        return None
    return list(zip(got, types, strict=True))


def _copy(source: int, t: TensorType, canon: Canon, expanded: bool) -> _Val:
    """A copy of main's argument `source` of type t: named by both alone."""
    digest = _h("copy", source, t)
    canon.copies[digest] = (source, t, expanded)
    return _Val(digest, source, expanded=expanded)


def _value(op: Op, operands: list[_Val], regions: list[bytes], text: str, canon: Canon) -> _Val:
    """One op's result: a copy of an argument, a constant, or a computed value."""
    sources = {v.source for v in operands if not v.const}
    # (a scatter's region combines an update with the buffer: `.at[].set` returns the update)
    if (op.name in _COPIES and len(sources) == 1 and None not in sources
            and (not regions or op.name == "stablehlo.scatter")):
        (source,) = sources
        types = op.result_types()
        t = types[0] if types else TensorType((None,), "?")
        return _copy(source, t, canon,
                     op.name in _EXPANDS or any(v.expanded for v in operands))
    digest = _h(op.name, _attrs(op, text), op.type, tuple(v.digest for v in operands),
                tuple(regions))
    canon.children[digest] = tuple(v.digest for v in operands) + tuple(regions)
    canon.ops.append((digest, op))
    return _Val(digest, None, all(v.const for v in operands))


def _bind(env: dict[str, _Val], op: Op, values: list[_Val]) -> None:
    for name, v in zip(op.results, values, strict=False):
        env[name] = v


@dataclass
class _Form:
    program: ProgramInfo
    length: int
    bucket: int
    canon: Canon
    module: Module


def reference_extents(programs: Sequence[ProgramInfo], *, args: Sequence[str],
                      **_options: Any) -> dict[str, int]:
    """The reference's figure per signature: its largest live value computed from `args`."""
    budget = Budget()
    out = {}
    for p in programs:
        found = largest_from(p, parse_module(p.text), args, budget)
        if found is not None:
            out[p.signature] = found.elements
    return out


@register("programs_per_bucket", "program", ProgramsPerBucketOptions, static_shapes=True,
          reference=reference_extents)
def check_programs_per_bucket(
    programs: Sequence[ProgramInfo], *, dim: str, buckets: Sequence[int], args: Sequence[str],
    extent_multiple: float = 3.0, reference: dict[str, int] | None = None,
) -> RuleOutcome:
    """Programs for lengths in one bucket are the same program once the inputs are padded.

    Programs whose `dim` falls in the same bucket (other dimensions equal) have the same
    canonical form, copies of the inputs (padded, sliced, reshaped) compared by type only;
    the largest live value computed from `args`, over the reference's at the same shapes
    (`reference`: per signature), is at most `extent_multiple` times larger at a smaller
    bucket than at a larger one."""
    if not isinstance(programs, Sequence) or isinstance(programs, str | bytes) or not programs:
        return RuleOutcome(False, "No exported program was available to check.")
    if not all(isinstance(p, ProgramInfo) and isinstance(p.text, str) for p in programs):
        return RuleOutcome(False, "The exported programs are malformed and could not be checked.")
    if sum(len(p.text) for p in programs) > MAX_TOTAL_CHARS:
        return RuleOutcome(False, "The exported programs are too large to verify: remove dead "
                                  "computations from solve.")
    budget = Budget()
    forms: list[_Form] = []
    for p in programs:
        length = p.dims.get(dim)
        if length is None:
            return RuleOutcome(False, f"The program for input shapes {p.signature} has no "
                                      f"static value for {dim} (a problem package error).")
        bucket = bucket_of(length, buckets)
        if bucket is None:
            return RuleOutcome(False, f"{dim}={length} is longer than every bucket (a problem "
                                      f"package error).")
        try:
            module = parse_module(p.text)
            canon = canonical(module, p.text, budget)
        except (ParseError, TooComplex) as exc:
            return RuleOutcome(False, f"The exported program for input shapes {p.signature} "
                                      f"could not be analyzed ({exc}).")
        forms.append(_Form(p, length, bucket, canon, module))
    sized: list[tuple[_Form, Extent, int]] = []
    for form in forms:
        too_long = _too_long(form, args, dim, buckets)
        if too_long:
            return RuleOutcome(False, too_long, region=noted(
                form.program, f"{dim}={form.length}: a copy of the input longer than its "
                              f"bucket {form.bucket}"))
        try:
            found = _extent(form, args, reference or {}, budget)
        except (ParseError, TooComplex) as exc:
            return RuleOutcome(False, f"The exported program for input shapes "
                                      f"{form.program.signature} could not be analyzed ({exc}).")
        if isinstance(found, RuleOutcome):
            return found
        sized.append((form, *found))
    too_large = _not_shrinking(sized, args, dim, extent_multiple)
    if too_large is not None:
        return too_large
    groups: dict[tuple[Any, ...], dict[int, _Form]] = {}
    for form in forms:
        rest = tuple(sorted((k, v) for k, v in form.program.dims.items() if k != dim))
        groups.setdefault((form.bucket, rest), {}).setdefault(form.length, form)
    compared = 0
    seen: list[str] = []
    for (bucket, _), by_length in sorted(groups.items(), key=lambda g: g[0][0]):
        lengths = sorted(by_length)
        if len(lengths) > 1:
            seen.append(f"{dim}={', '.join(map(str, lengths))} (bucket {bucket})")
        first = by_length[lengths[0]]
        for n in lengths[1:]:
            compared += 1
            other = by_length[n]
            if other.canon.outputs != first.canon.outputs:
                message, op = _differ(first, other, dim, bucket)
                note = f"{dim}={other.length} (bucket {bucket}), compared with {dim}={first.length}"
                region = region_of(other.module, [op], other.program, note=note) if op else None
                return RuleOutcome(False, message, region=region or noted(other.program, note))
    if not compared:
        return RuleOutcome(False, f"The tests have no two lengths {dim} in one bucket with the "
                                  f"other dimensions equal, so nothing could be compared (a "
                                  f"problem package error).")
    return RuleOutcome(True, (
        f"Programs for lengths in the same bucket are identical once the inputs are padded "
        f"({compared} pairs of lengths compared), and the values computed from "
        f"{', '.join(args)} shrink with the bucket as the reference's do: one compiled "
        f"program per bucket, padded to it."), region=noted(
            forms[0].program, "the same program for " + "; ".join(seen)))


def _too_long(form: _Form, args: Sequence[str], dim: str,
              buckets: Sequence[int]) -> str | None:
    """Why a live copy of a padded input (its values moved: padded, joined to constants,
    written into a buffer) is longer than its bucket, or None: the statement read literally,
    at every bucket. Longer: more elements than the input padded to its bucket, with an axis
    as long as the next bucket or more that the input has nowhere else (a column of ones
    beside x widens another axis, by one: not padding). A copy folded, bitcast or computed on
    is sized against the reference by `_not_shrinking`."""
    canon, p = form.canon, form.program
    index = {i for i, path in enumerate(p.args) if path in args}
    for source, t, expanded in canon.live_copies():
        whole = canon.arg_types.get(source)
        n, full = t.elements(), whole.elements() if whole else None
        if expanded or source not in index or n is None or not full or full % form.length:
            continue
        limit = full // form.length * form.bucket
        after = next((b for b in buckets if b > form.bucket), form.bucket + 1)
        others = list(whole.dims) if whole else []
        if form.length in others:
            others.remove(form.length)
        if n > limit and any(d is not None and d >= after and d not in others
                             for d in t.dims):
            shape = "x".join("?" if d is None else str(d) for d in t.dims)
            return (f"For {dim}={form.length} the program computes on a {shape} copy of "
                    f"{p.args[source]} ({n} elements: its values, moved), longer than "
                    f"{p.args[source]} padded to its bucket {form.bucket} ({limit} elements). "
                    f"Pad to the smallest bucket that holds {dim}, not to a larger one.")
    return None


def _extent(form: _Form, args: Sequence[str], reference: dict[str, int],
            budget: Budget) -> tuple[Extent, int] | RuleOutcome:
    """The program's largest live value computed from `args` and the reference's figure at
    the same shapes, or the failure saying which could not be measured."""
    p = form.program
    figure = reference.get(p.signature)
    if figure is None:
        return RuleOutcome(False, (
            f"The reference's largest value computed from {', '.join(args)} at input shapes "
            f"{p.signature} could not be measured, so the padding could not be checked (the "
            f"judge's failure: report it)."), region=noted(p, "no reference figure"))
    mine = largest_from(p, form.module, args, budget)
    if mine is None:
        return RuleOutcome(False, (
            f"The program for input shapes {p.signature} has a value of no static size, so "
            f"its padding could not be measured."), region=noted(p, "a size not static"))
    return mine, max(figure, 1)


def _not_shrinking(sized: list[tuple[_Form, Extent, int]], args: Sequence[str], dim: str,
                   multiple: float) -> RuleOutcome | None:
    """The failure of programs whose sizes do not shrink with the bucket as the reference's
    do: at a smaller bucket the largest value computed from `args` holds more than `multiple`
    times as much of the reference's (at the same shapes) as at a larger bucket. Scale-free:
    a constant factor (a column of ones, a pairwise table that grows faster) cancels; a pad
    past the bucket is as large at the small buckets as at the largest. None: they shrink."""
    worst: tuple[float, _Form, Extent, int, _Form, float] | None = None
    for small, e_small, f_small in sized:
        r_small = max(e_small.elements, 1) / f_small
        for large, e_large, f_large in sized:
            if large.bucket <= small.bucket:
                continue
            r_large = max(e_large.elements, 1) / f_large
            if worst is None or r_small / r_large > worst[0]:
                worst = (r_small / r_large, small, e_small, f_small, large, r_large)
    if worst is None or worst[0] <= multiple:
        return None
    ratio, small, mine, figure, large, r_large = worst
    names = ", ".join(args)
    shape = "x".join(map(str, mine.shape)) or "scalar"
    message = (
        f"For {dim}={small.length} (bucket {small.bucket}) the program computes a {shape} value "
        f"from {names} ({mine.elements} elements), {mine.elements / figure:.1f}x the largest "
        f"the reference computes from {names} at the same shapes ({figure} elements), but at "
        f"{dim}={large.length} (bucket {large.bucket}) {r_large:.1f}x: its sizes do not shrink "
        f"with the bucket as the reference's do ({ratio:.1f}x more at the smaller bucket; the "
        f"judge allows {multiple:g}x). Pad to the smallest bucket that holds {dim}, not "
        f"further: a copy padded past it counts however it is folded, sliced, split or built.")
    note = f"{dim}={small.length}: {mine.elements} elements computed from {names}"
    region = (region_of(small.module, [mine.op], small.program, note=note)
              if mine.op is not None else None)
    return RuleOutcome(False, message, region=region or noted(small.program, note))


def _differ(a: _Form, b: _Form, dim: str, bucket: int) -> tuple[str, Op | None]:
    """Two programs of one bucket differ: say where (the first op of one the other lacks)."""
    mine = {d for d, _ in a.canon.ops}
    extra = next((op for d, op in b.canon.ops if d not in mine), None)
    where = (f" The program for {dim}={b.length} has `{extra.name.removeprefix('stablehlo.')} : "
             f"{extra.type}`, which the program for {dim}={a.length} does not.") if extra else ""
    return (f"The programs for {dim}={a.length} and {dim}={b.length} differ although both "
            f"lengths pad to the bucket {bucket}: the computation depends on the length "
            f"itself, so every length compiles its own program.{where} Pad the inputs to the "
            f"bucket length first, then compute on the padded arrays only, with a mask built "
            f"from the data (the lengths array), not from the static length "
            f"({dim} = x.shape[...])."), extra
