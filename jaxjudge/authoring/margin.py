"""`measure_margins(problem)`: how much room a problem's tolerances leave honest float32 code.

A tolerance is only right if every honest program passes it on every legal input, whatever the
order of its float32 operations. So for each output this measures the worst error of several
honest float32 orders against a float64 truth, on the problem's own tests and on the
adversarial-but-legal inputs the problem declares (sums that cancel near zero, near-tied large
scores, extreme parameters), and reports the margin

    margin = (atol + rtol * |truth|) / |got - truth|      (element-wise, the worst element)

with exactly the rule jaxjudge.grading.compare applies (`allowance`). check-problem fails when
a margin is below MIN_MARGIN: a submission is compared with the reference's float32 output, not
with the truth, so the two errors add up, and jax releases round differently.

- **the truth**: the problem's reference, run with `jax_enable_x64` on the same inputs widened to
  float64 (integer inputs keep their declared type), in a subprocess so that this process's jax
  configuration stays as it is. Its floating outputs must come out float64: a reference that
  casts to float32 (`.astype(jnp.float32)`) would round the truth.
- **the honest orders**: `reference.py` and every `submissions/accepted_*.py` (the authors' own
  honest code, run as it is, outside the sandbox), each under `jax.jit` on the float32 inputs
  with the XLA flags stage B compiles with.

Both run in WORKERS fresh subprocesses at once, each taking a share of the input shapes (one
compile per program and shape; a program whose StableHLO text matches one already run is not
compiled again), within one timeout.
- **the inputs**: every test in tests/cases.json, plus the cases `adversarial(rs)` in
  tests/generate.py yields (`Case`s, like `hidden`; `rs` is `RandomState(ADVERSARIAL_SEED)`).
  They are never graded: they are where rounding is worst, and must stay within the problem's
  constraints.

`python -m jaxjudge.authoring.margin DIR` prints the margins of one package.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from jaxjudge.grading.compare import allowance
from jaxjudge.isolation.xla import fast_compile_flags
from jaxjudge.problems.package import Problem, load_problem

MIN_MARGIN = 3.0
TIMEOUT = 300.0
ADVERSARIAL_SEED = 0
REFERENCE = "reference.py"
# Subprocesses sharing the runs, one per core up to 4 (each imports jax once: ~1 s of CPU).
WORKERS = min(4, max(2, os.cpu_count() or 2))


@dataclass(frozen=True)
class Worst:
    """The element of one output with the smallest margin, and where it was seen."""

    output: str
    margin: float
    sample: str
    case: str
    index: tuple[int, ...]
    got: float
    truth: float
    rtol: float
    atol: float

    @property
    def error(self) -> float:
        return abs(self.got - self.truth)

    @property
    def allowed(self) -> float:
        return float(allowance(np.float64(self.truth), self.rtol, self.atol))

    def describe(self) -> str:
        where = f"[{', '.join(map(str, self.index))}]" if self.index else ""
        if self.error == 0:
            return f"{self.output}: every honest order is exact"
        return (f"{self.sample} on {self.case!r}: {self.output}{where} is {self.got:.7g}, the "
                f"float64 truth {self.truth:.7g} (error {self.error:.3g}, allowed "
                f"{self.allowed:.3g} = atol {self.atol:g} + rtol {self.rtol:g}·|truth|)")


@dataclass
class Margins:
    """What `measure_margins` found: the worst element per output, and what went wrong."""

    problem: str
    worst: dict[str, Worst] = field(default_factory=dict)
    by_sample: dict[str, float] = field(default_factory=dict)  # each order's smallest margin
    samples: list[str] = field(default_factory=list)
    tests: int = 0
    adversarial: int = 0
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return (f"{len(self.samples)} honest orders on {self.tests} tests + {self.adversarial} "
                f"adversarial cases, {self.seconds:.1f} s")


def measure_margins(problem: Problem, *, timeout: float = TIMEOUT) -> Margins:
    """Run the truth and the honest orders (split over WORKERS subprocesses) and compare."""
    start = time.monotonic()
    accepted = sorted(p.name for p in problem.submissions_dir.glob("accepted_*.py")
                      if p.is_file())
    samples = [REFERENCE, *accepted]
    found = Margins(problem.id, samples=samples)
    tasks = [f"x64:{REFERENCE}", *(f"float32:{name}" for name in samples)]
    with tempfile.TemporaryDirectory(prefix="jaxjudge-margin-") as tmp:
        jobs = [_start(problem, i, tasks, Path(tmp) / f"{i}.json") for i in range(WORKERS)]
        try:
            results = [_finish(proc, out, start, timeout, found.errors) for proc, out in jobs]
        finally:
            for proc, _ in jobs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    if any(r is None for r in results):
        found.seconds = time.monotonic() - start
        return found
    outputs = [o for r in results if r is not None for o in r["outputs"]]
    found.errors += [e for r in results if r is not None for e in r["errors"]]
    found.tests, found.adversarial = results[0]["tests"], results[0]["adversarial"]
    truth = [o for o in outputs if o["mode"] == "x64"]
    want = {(o["case"], o["path"]): o for o in truth}
    narrow = sorted({o["path"] for o in truth if o["dtype"] in _NARROW})
    if narrow:
        found.errors.append(f"{REFERENCE} returns {', '.join(narrow)} as "
                            f"{truth[0]['dtype']} under jax_enable_x64: compute in the inputs' "
                            "dtype so that the truth is float64")
    for o in outputs:
        if o["mode"] == "x64":
            continue
        ref = want.get((o["case"], o["path"]))
        if ref is None:
            found.errors.append(f"{o['sample']} on {o['case']!r}: the float64 reference has no "
                                f"output {o['path']!r}")
            continue
        _compare(problem, found, o, ref)
    found.seconds = time.monotonic() - start
    return found


_NARROW = frozenset({"float32", "float16", "bfloat16"})


def _compare(problem: Problem, found: Margins, o: dict[str, Any], ref: dict[str, Any]) -> None:
    got, want = _array(o), _array(ref)
    where = f"{o['sample']} on {o['case']!r}: {o['path']}"
    if got.shape != want.shape:
        found.errors.append(f"{where} has shape {got.shape}, the truth {want.shape}")
        return
    if not np.all(np.isfinite(want)):
        found.errors.append(f"{REFERENCE} under float64 on {o['case']!r}: {o['path']} is not "
                            "finite (an illegal adversarial case?)")
        return
    if not np.all(np.isfinite(got)):
        found.errors.append(f"{where} is not finite: an honest order fails this input")
        return
    if got.size == 0:
        return
    rtol, atol = problem.tolerance.for_output(o["path"])
    err = np.abs(got - want)
    allowed = allowance(want, rtol, atol)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(err > 0, allowed / np.where(err > 0, err, 1.0), np.inf)
    flat = int(np.argmin(ratio))
    idx = tuple(int(i) for i in np.unravel_index(flat, ratio.shape)) if ratio.ndim else ()
    margin = float(ratio.reshape(-1)[flat])
    found.by_sample[o["sample"]] = min(margin, found.by_sample.get(o["sample"], np.inf))
    old = found.worst.get(o["path"])
    if old is None or margin < old.margin:
        found.worst[o["path"]] = Worst(
            o["path"], margin, o["sample"], o["case"], idx, float(got.reshape(-1)[flat]),
            float(want.reshape(-1)[flat]), rtol, atol)


def _array(o: dict[str, Any]) -> np.ndarray:
    return np.asarray(o["data"], dtype=np.float64).reshape(o["shape"])


def _start(problem: Problem, share: int, tasks: list[str], out: Path
           ) -> tuple[subprocess.Popen[str], Path]:
    """Worker `share` of WORKERS: every task on its share of the input shapes."""
    flags = " ".join(f for f in (os.environ.get("XLA_FLAGS", ""), fast_compile_flags()) if f)
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "0", "XLA_FLAGS": flags}
    # -P: the problem folder (the worker's cwd) is not put first on sys.path.
    cmd = [sys.executable, "-P", "-m", "jaxjudge.authoring.margin", "--worker",
           str(problem.root.resolve()), str(out), f"{share}/{WORKERS}", *tasks]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=problem.root)
    return proc, out


def _finish(job: subprocess.Popen[str], out: Path, start: float, timeout: float,
            errors: list[str]) -> dict[str, Any] | None:
    try:
        _, stderr = job.communicate(timeout=max(0.1, start + timeout - time.monotonic()))
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        errors.append(f"the margin run took longer than {timeout:g} s")
        return None
    if job.returncode != 0 or not out.is_file():
        tail = " / ".join(stderr.strip().splitlines()[-3:])
        errors.append(f"the margin run failed (exit {job.returncode}): {tail}")
        return None
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return result


# -- the subprocess ------------------------------------------------------------------------------

def _inputs(problem: Problem) -> tuple[list[tuple[str, dict[str, Any]]], int]:
    """(case name, inputs cast to their declared dtypes) for every test and adversarial case,
    and how many of them are tests."""
    from jaxjudge.authoring.testgen import _cast, _load_module, check_dims

    names = [a.name for a in problem.arguments]
    cases = [(c.name, c.inputs) for c in problem.cases("submit")]
    tests = len(cases)
    gen = problem.root / "tests" / "generate.py"
    make = None
    if gen.is_file():
        module = _load_module(gen, f"{problem.id.replace('-', '_')}_generate_margin")
        make = getattr(module, "adversarial", None)
    if make is not None:
        cases += [(c.name, c.inputs) for c in make(np.random.RandomState(ADVERSARIAL_SEED))]
    seen: set[str] = set()
    for name, _ in cases:
        if name in seen:
            raise SystemExit(f"two cases are named {name!r} (tests and adversarial cases)")
        seen.add(name)
    out = []
    for name, inputs in cases:
        missing = sorted(set(names) - set(inputs))
        if missing:
            raise SystemExit(f"{name}: no value for argument(s) {missing}")
        cast = {n: _cast(inputs[n], problem, n) for n in names}
        check_dims(problem, name, cast)
        out.append((name, cast))
    return out, tests


def _widen(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _widen(v) for k, v in value.items()}
    import jax.numpy as jnp

    arr = np.asarray(value)
    return arr.astype(np.float64) if jnp.issubdtype(arr.dtype, jnp.floating) else arr


def _leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from _leaves(tree[k], f"{path}.{k}" if path else str(k))
    else:
        yield path, tree


def _x64(enabled: bool) -> Any:
    """jax_enable_x64 for a block (jax.enable_x64 since 0.7, jax.experimental's before)."""
    import jax

    ctx = getattr(jax, "enable_x64", None)
    if ctx is None:
        from jax.experimental import enable_x64 as ctx
    return ctx(enabled)


def _signature(inputs: dict[str, Any]) -> str:
    return repr([(k, [(p, np.shape(v), np.asarray(v).dtype.str) for p, v in _leaves(inputs[k])])
                 for k in sorted(inputs)])


def _worker(root: Path, out: Path, share: str, tasks: Iterable[str]) -> int:
    """Run each task ("x64:reference.py", "float32:accepted_scan.py") on this worker's share
    ("i/n") of the input shapes. Programs are compiled once per shape; a program whose
    StableHLO is the same text as one already run (two styles that trace alike) is not
    compiled or run again: it would give the same numbers."""
    import jax

    from jaxjudge.authoring.testgen import _load_module

    problem = load_problem(root)
    cases, tests = _inputs(problem)
    index, count = (int(n) for n in share.split("/"))
    groups: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for case in cases:
        groups.setdefault(_signature(case[1]), []).append(case)
    mine = list(groups.values())[index::count]
    names = [a.name for a in problem.arguments]
    outputs: list[dict[str, Any]] = []
    errors: list[str] = []
    done: dict[str, list[tuple[str, str, np.ndarray]]] = {}  # program text -> (case, path, out)
    for task in tasks:
        mode, file = task.split(":", 1)
        path = root / file if file == REFERENCE else problem.submissions_dir / file
        try:
            module = _load_module(path, f"margin_{mode}_{path.stem}")
            solve = jax.jit(getattr(module, problem.entry_point))
        except Exception as exc:
            errors.append(f"{file} does not load: {exc!r}"[:500])
            continue
        for group in mine:
            try:
                results = _run_group(solve, group, names, mode == "x64", done)
            except Exception as exc:
                errors.append(f"{file} ({mode}) on {group[0][0]!r} raised {exc!r}"[:500])
                continue
            outputs += [{"mode": mode, "sample": file, "case": case, "path": leaf,
                         "dtype": str(arr.dtype), "shape": list(arr.shape),
                         "data": arr.astype(np.float64).reshape(-1).tolist()}
                        for case, leaf, arr in results]
    out.write_text(json.dumps({"outputs": outputs, "errors": errors, "tests": tests,
                               "adversarial": len(cases) - tests}), encoding="utf-8")
    return 0


def _run_group(solve: Any, group: list[tuple[str, dict[str, Any]]], names: list[str],
               x64: bool, done: dict[str, list[tuple[str, str, np.ndarray]]]
               ) -> list[tuple[str, str, np.ndarray]]:
    """`solve` on every case of one input shape: (case, output path, value) for each."""
    import jax

    with _x64(x64):
        first = [_widen(group[0][1][n]) if x64 else group[0][1][n] for n in names]
        lowered = solve.lower(*first)
        text = f"{x64}\n" + re.sub(r"loc\([^)]*\)|#loc\d*", "", lowered.as_text())
        if text in done:
            return done[text]
        compiled = lowered.compile()
        results = []
        for case, inputs in group:
            args = [_widen(inputs[n]) if x64 else inputs[n] for n in names]
            got = jax.device_get(compiled(*args))
            results += [(case, leaf, np.asarray(v)) for leaf, v in _leaves(got)]
    done[text] = results
    return results


def format_margin(margin: float) -> str:
    """'4.66x', or 'exact' when no honest order was off at all."""
    return "exact" if margin == float("inf") else f"{margin:.3g}x"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--worker"]:
        root, out, share, *tasks = args[1:]
        return _worker(Path(root), Path(out), share, tasks)
    for folder in args:
        found = measure_margins(load_problem(Path(folder)))
        print(f"{found.problem}: {found.summary()}")
        for w in found.worst.values():
            print(f"  {w.output}: margin {format_margin(w.margin)}  {w.describe()}")
        for sample, margin in sorted(found.by_sample.items()):
            print(f"    {sample}: {format_margin(margin)}")
        for e in found.errors:
            print(f"  error: {e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
