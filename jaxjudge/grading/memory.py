"""What a program keeps in memory, read by the trusted side from the verified exported program.

A learner who rematerializes, streams over blocks or avoids a dense matrix wants to see what it
saved. The profile walks the inlined program (jaxjudge.analysis.dataflow) in program order, which
for a `value_and_grad` program is the forward pass, then the backward pass: each intermediate
array (the inputs, the outputs and constants aside) lives from the op that makes it to the last
op that reads it (through calls and loops), and the profile reports the moment the most bytes
are held at once (the residuals the backward pass keeps are live then) and the largest single
intermediate. It is an estimate of the program as written, not of what XLA's scheduler and
fusions allocate; its worth is the comparison with the reference's program, measured the same
way at the same input shapes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from jaxjudge.analysis.dataflow import Budget, Kind, TooComplex, build_graph
from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.stablehlo import Op, ParseError, TensorType, parse_module
from jaxjudge.grading.report import HeldArray, MemoryReport, ProgramMemory
from jaxjudge.isolation import statefile

MAX_LISTED = 6  # arrays listed at the peak
# Ops whose result says what an array is; a generic op's array is named by the nearest of
# these it is computed from, at most _SOURCE_DEPTH ops back.
_TELLING = frozenset(f"stablehlo.{n}" for n in (
    "tanh", "logistic", "exponential", "exponential_minus_one", "log", "log_plus_one", "sqrt",
    "rsqrt", "sine", "cosine", "dot_general", "dot", "convolution", "reduce", "power"))
_SOURCE_DEPTH = 3
_NOT_ARRAYS = frozenset({"stablehlo.constant", "stablehlo.iota"})
_BYTES = {"i1": 1, "i8": 1, "ui8": 1, "i16": 2, "ui16": 2, "f16": 2, "bf16": 2, "i32": 4,
          "ui32": 4, "f32": 4, "i64": 8, "ui64": 8, "f64": 8, "complex<f32>": 8,
          "complex<f64>": 16}


def _size(t: TensorType) -> int | None:
    n = t.elements()
    per = _BYTES.get(t.element)
    return None if n is None or per is None else n * per


def _bookkeeping(t: TensorType) -> bool:
    """A symbolic program's shape arithmetic: integer scalars and short integer vectors."""
    return t.element.startswith(("i", "ui")) and len(t.dims) <= 1


MAX_SHAPE_CHARS = 48


def _shape(t: TensorType) -> str:
    """"4x5xf32"; a rank or element type built to flood the report is cut ("1x1x…(600 dims)")."""
    text = "x".join(["?" if d is None else str(d) for d in t.dims] + [t.element])
    if len(text) <= MAX_SHAPE_CHARS:
        return text
    return text[: MAX_SHAPE_CHARS - 16].rstrip("x") + f"x…({len(t.dims)} dims)"


def _same_type_convert(op: Op) -> bool:
    return op.name == "stablehlo.convert" and op.operand_types() == op.result_types()


def profile(program: ProgramInfo, budget: Budget | None = None) -> ProgramMemory | None:
    """The profile of one program, or None when it cannot be read (the rules say why)."""
    try:
        g = build_graph(parse_module(program.text))
        (budget or Budget()).spend(len(g.steps))
    except (ParseError, TooComplex):
        return None
    root = list(range(g.n_nodes))
    symbolic = bool(program.symbolic)

    def find(n: int) -> int:
        while root[n] != n:
            root[n] = root[root[n]]
            n = root[n]
        return n

    born: dict[int, tuple[int, TensorType, str]] = {}
    last: dict[int, int] = {}
    made_by: dict[int, int] = {}  # node -> the step computing it
    for i, (step, op) in enumerate(zip(g.steps, g.ops, strict=True)):
        for o in step.operands:
            last[find(o)] = i
        for r in step.results:
            made_by.setdefault(r, i)
        if op is None or step.kind is Kind.TUPLE:  # a link, an optimization barrier: aliases
            for src, dst in step.pass_sources():
                if find(dst) != find(src):
                    root[find(dst)] = find(src)
            continue
        if op.name in _NOT_ARRAYS:
            continue
        if _same_type_convert(op) and step.operands and step.results:
            # no new array: the static-typed wrapper of a specialised program converts each
            # input to the type it already has
            if find(step.results[0]) != find(step.operands[0]):
                root[find(step.results[0])] = find(step.operands[0])
            continue
        for r, t in zip(step.results, op.result_types(), strict=False):
            if symbolic and _bookkeeping(t):
                continue
            born.setdefault(find(r), (i, t, op.name))
    outside = {find(n) for n in (*g.main_args, *g.main_results)}
    events: list[tuple[int, int, int]] = []  # (step, +1 born / -1 freed after, node)
    for n, (i, _, _) in born.items():
        if n in outside:
            continue
        events.append((i, 1, n))
        events.append((max(i, last.get(n, i)) + 1, -1, n))
    events.sort(key=lambda e: (e[0], e[1]))  # frees before births at the same step
    live: set[int] = set()
    best: tuple[int, int, frozenset[int]] = (-1, -1, frozenset())
    for k, (_, delta, n) in enumerate(events):
        if delta > 0:
            live.add(n)
        else:
            live.discard(n)
        if k + 1 < len(events) and events[k + 1][0] == events[k][0]:
            continue  # settle every event of this step first
        known = 0 if symbolic else sum(_size(born[m][1]) or 0 for m in live)
        if (known, len(live)) > best[:2]:
            best = (known, len(live), frozenset(live))
    held = sorted(best[2], key=lambda m: (-(_size(born[m][1]) or 0), born[m][0]))
    def source(m: int) -> str | None:
        """What a generic op's array is computed from, a few ops back (breadth first)."""
        if born[m][2] in _TELLING:
            return None
        seen, frontier = {m}, [m]
        for _ in range(_SOURCE_DEPTH):
            nxt = []
            for n in frontier:
                step = g.steps[made_by[n]] if n in made_by else None
                for o in step.operands if step is not None else ():
                    if o in seen:
                        continue
                    seen.add(o)
                    if o in made_by and g.steps[made_by[o]].name in _TELLING:
                        return g.steps[made_by[o]].name
                    nxt.append(o)
            frontier = nxt
        return None

    arrays = [HeldArray(shape=_shape(born[m][1]), bytes=_size(born[m][1]), op=born[m][2],
                        source=source(m)) for m in held]
    inner = [m for m in born if m not in outside]
    top = max(inner, key=lambda m: (_size(born[m][1]) or 0, -born[m][0]), default=None)
    unknown = any(a.bytes is None for a in arrays)
    return ProgramMemory(
        program=program.signature, peak_arrays=len(arrays),
        peak_bytes=None if unknown else sum(a.bytes or 0 for a in arrays),
        held=arrays[:MAX_LISTED],
        largest=None if top is None else HeldArray(
            shape=_shape(born[top][1]), bytes=_size(born[top][1]), op=born[top][2]),
    )


def _elements(p: ProgramInfo) -> int:
    total = 1
    for v in p.dims.values():
        total *= max(1, v)
    return total


def largest_program(programs: Sequence[ProgramInfo]) -> ProgramInfo | None:
    """The program for the largest input shapes (the symbolic one when there is one)."""
    if not programs:
        return None
    return max(programs, key=lambda p: (bool(p.symbolic), _elements(p), len(p.text)))


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return "? bytes"
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MB"


def _kept(m: ProgramMemory) -> str:
    size = "" if m.peak_bytes is None else f", {fmt_bytes(m.peak_bytes)}"
    return f"{m.peak_arrays} array{'s' if m.peak_arrays != 1 else ''}{size}"


def _name(op: str) -> str:
    return op.removeprefix("stablehlo.").replace("_", " ")


def _what(a: HeldArray) -> str:
    """"a 4x5xf32 tanh result" / "a 4x5xf32 array (a subtract computed from a tanh)"."""
    if a.source is None:
        return f"a {a.shape} {_name(a.op)} result"
    return f"a {a.shape} array (a {_name(a.op)} computed from a {_name(a.source)})"


def extra_arrays(yours: ProgramMemory, reference: ProgramMemory) -> list[HeldArray]:
    """Arrays held at your peak with no counterpart (same shape, same op) at the reference's,
    telling ones (a tanh, a dot) first."""
    theirs = Counter((b.shape, b.op) for b in reference.held)
    more = []
    for a in yours.held:
        if theirs[(a.shape, a.op)] > 0:
            theirs[(a.shape, a.op)] -= 1
        else:
            more.append(a)
    return sorted(more, key=lambda a: (a.op not in _TELLING and a.source is None,))


def compare(yours: ProgramMemory, reference: ProgramMemory | None) -> MemoryReport:
    """The two profiles and one sentence: "at most 3 arrays, 2.1 KB held at once; the
    reference: 2, 1.4 KB; you also keep a 4x5xf32 tanh result, which the reference does
    not"."""
    text = f"At most {_kept(yours)} held at once (inputs and outputs aside)"
    if reference is not None:
        text += f"; the reference: {_kept(reference)}"
        more = extra_arrays(yours, reference)
        if yours.peak_arrays > reference.peak_arrays and more:
            text += f"; you also keep {_what(more[0])}, which the reference does not"
    if yours.largest is not None:
        text += (f". Largest intermediate: {yours.largest.shape} "
                 f"({fmt_bytes(yours.largest.bytes)})")
        if reference is not None and reference.largest is not None:
            text += f", the reference's {reference.largest.shape}"
    return MemoryReport(yours=yours, reference=reference, summary=text + ".")


def _stored_path(key: str) -> Path:
    return statefile.state_dir() / "reference-memory" / f"{key}.json"


def load_reference(key: str) -> ProgramMemory | None:
    """The reference's profile kept by an earlier process for `key`, or None.

    Profiling the reference means grading it (both stages, ~1.7 s): without this, every
    one-off `jaxjudge grade` of a per-shape problem paid it again. The file lives in the
    parent's private state directory, which no sandbox is shown; only the trusted parent
    ever wrote it, and a malformed one is ignored (found again)."""
    data = statefile.read(_stored_path(key))
    if data is None:
        return None
    try:
        return ProgramMemory.model_validate(data)
    except ValidationError:
        return None


def store_reference(key: str, memory: ProgramMemory) -> None:
    """Keep the reference's profile for later processes (best effort)."""
    statefile.write(_stored_path(key), memory.model_dump(mode="json"))
