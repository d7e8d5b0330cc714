"""`grade()`: the one orchestrator. Stage A (untrusted) -> rules -> stage B (trusted) -> compare.

Nothing that comes back from a sandbox is believed without checking: results are size-capped
JSON validated here, exported programs are only ever executed by stage B, and the verdict is
decided in this process from the reference's stored outputs, which no sandbox ever sees.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import signal
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import compare as cmp
from grader import fstree, sandbox
from grader.problem import Limits, Problem, TestCase, load_problem
from grader.report import Mode, Report, RequirementResult, TestDetails, TestResult, Verdict
from grader.rules import PROGRAM_RULES, RULES, SPEC_RULES, ProgramInfo, RuleOutcome
from grader.stage_results import (
    MalformedResult,
    OutputFailed,
    OutputOk,
    ResultTooDeep,
    StageAResult,
    StageBResult,
    parse_stage_a,
    parse_stage_b,
)
from grader.xla import fast_compile_flags

log = logging.getLogger("grader")

STAGES_DIR = Path(__file__).resolve().parent / "stages"
TRACE_SCRIPT = STAGES_DIR / "trace.py"
EXECUTE_SCRIPT = STAGES_DIR / "execute.py"
MAX_SOURCE_BYTES = 1024 * 1024
MAX_RESULT_BYTES = 64 * 1024 * 1024
MAX_PROGRAM_TEXT = 8 * 1024 * 1024
MAX_EXPORT_BYTES = 64 * 1024 * 1024
BASE_VERSION = "0.1.0"  # the package version (pyproject.toml); grader_version() adds a hash
# How stage B runs the verified programs: "interpret" (default) evaluates each shape on the
# StableHLO reference interpreter bundled with jaxlib when the program is small and made of
# supported ops, else compiles it with XLA; "xla" always compiles. See stages/execute.py.
ENGINES = ("interpret", "xla")
PROGRAM_CACHE_SIZE = 256  # stage B results of distinct exported programs kept in memory
# What a learner is told when a stage's result file fails its schema (grader.stage_results);
# the precise reason goes to the log.
MALFORMED_A = "the tracing process returned a malformed result (its output was tampered with)"
TOO_DEEP_A = (
    "the trace of your program is nested too deeply for the grader to read (hundreds of levels "
    "of jit or other function calls inside one another?); flatten your program"
)
MALFORMED_B = (
    "the process that ran your exported program returned a malformed result (the program may "
    "have been crafted to break the grader)"
)
UNTRACEABLE = {
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerArrayConversionError",
    "TracerIntegerConversionError",
    "NonConcreteBooleanIndexError",
}

# A hook so a warm worker pool can replace how sandboxed stages are launched (grader.pool).
StageRunner = Callable[
    [Path, Path, "sandbox.SandboxLimits", bool, dict[str, str]], "sandbox.SandboxResult"
]


def _default_runner(
    script: Path, job_dir: Path, limits: sandbox.SandboxLimits, untrusted: bool,
    env: dict[str, str],
) -> sandbox.SandboxResult:
    return sandbox.run_stage(script, job_dir, limits, env=env, untrusted=untrusted)


_runner: StageRunner = _default_runner


_engine_override: str | None = None


def set_engine(engine: str | None) -> None:
    """Choose stage B's engine for this process (None: JAXJUDGE_ENGINE, default interpret)."""
    global _engine_override
    if engine is not None and engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, not {engine!r}")
    _engine_override = engine


def _engine() -> str:
    """Stage B's engine: set_engine(), else JAXJUDGE_ENGINE (read per grade)."""
    if _engine_override is not None:
        return _engine_override
    value = os.environ.get("JAXJUDGE_ENGINE", "interpret").strip().lower() or "interpret"
    if value not in ENGINES:
        raise ValueError(f"JAXJUDGE_ENGINE must be one of {ENGINES}, not {value!r}")
    return value


def set_stage_runner(runner: StageRunner | None) -> None:
    """Install a different launcher for the sandboxed stages (None restores the default)."""
    global _runner
    _runner = runner or _default_runner


@functools.cache
def grader_version() -> str:
    """BASE_VERSION plus a hash of every grader/**/*.py, e.g. "0.1.0+3f2a9c1d0b7e".

    It keys the report, program and batch resume caches, so any edit to grading code (a stage
    script, a rule, this file) invalidates results graded by the old code without anyone having
    to remember a version bump. Hashed once per process, on first use (~285 KB: about 1 ms);
    paths are relative to the package, so a copy installed elsewhere gets the same version."""
    root = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix()):
        h.update(path.relative_to(root).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{BASE_VERSION}+{h.hexdigest()[:12]}"


class _Decided(Exception):
    """Internal control flow: a stage decided the verdict early."""

    def __init__(self, verdict: Verdict, message: str) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.message = message


def grade(
    problem: Problem | str,
    source: str | bytes,
    mode: Mode = "submit",
    *,
    filename: str = "submission.py",
    limits: Limits | None = None,
) -> Report:
    """Grade one submission. Never raises for anything the submission does; an unknown
    problem raises `ProblemError`, a bad `mode` or JAXJUDGE_ENGINE raises `ValueError`
    (caller errors)."""
    if mode not in ("run", "submit"):
        raise ValueError(f"mode must be 'run' or 'submit', not {mode!r}")
    _engine()  # a misconfigured engine is the caller's error, before any work
    prob = load_problem(problem) if isinstance(problem, str) else problem
    started = time.perf_counter()
    lim = limits or prob.limits
    key = _cache_key(prob, source, mode, lim) if _report_cache.size else ""
    cached = _report_cache.get(key) if key else None
    if cached is not None:
        cached.timings = {"total": round(time.perf_counter() - started, 4), "cached": 1.0}
        return cached
    try:
        report = _Grading(prob, source, mode, lim, _display_name(filename)).run()
    except Exception:
        log.exception("internal error while grading a %s submission", prob.id)
        report = Report(
            verdict=Verdict.INTERNAL_ERROR,
            problem=prob.id,
            mode=mode,
            message="The grader failed on its own (not your fault); the error was logged. "
            "Please resubmit later.",
            max_score=max_score(prob, mode),
        )
    report.timings["total"] = round(time.perf_counter() - started, 4)
    report.versions.setdefault("grader", grader_version())
    if key:
        _report_cache.put(key, report)
    return report


class _LRU:
    """A thread-safe bounded map; subclasses say what a stored value is (`_freeze`/`_thaw`:
    callers get private copies, never the cached object)."""

    def __init__(self, size: int) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[str, Any] = OrderedDict()
        self.size = size

    def _freeze(self, value: Any) -> Any:
        return value

    def _thaw(self, stored: Any) -> Any:
        return stored

    def get(self, key: str) -> Any | None:
        with self._lock:
            stored = self._items.get(key)
            if stored is None:
                return None
            self._items.move_to_end(key)
        return self._thaw(stored)

    def put(self, key: str, value: Any) -> None:
        if self.size <= 0:
            return
        stored = self._freeze(value)
        with self._lock:
            self._items[key] = stored
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def resize(self, size: int) -> None:
        with self._lock:
            self.size = max(0, size)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class _ReportCache(_LRU):
    """Identical source, problem, mode and limits -> the same report, without re-running.

    Off by default (size 0); the service turns it on. Verdicts that depend on the machine's
    load or health (time/memory limits, internal errors) are never cached.
    """

    UNCACHED = (
        Verdict.TIME_LIMIT_EXCEEDED,
        Verdict.MEMORY_LIMIT_EXCEEDED,
        Verdict.INTERNAL_ERROR,
    )

    def __init__(self) -> None:
        super().__init__(0)

    def _freeze(self, value: Report) -> Report:
        return value.model_copy(deep=True)

    def _thaw(self, stored: Report) -> Report:
        return stored.model_copy(deep=True)

    def put(self, key: str, value: Report) -> None:
        if value.verdict not in self.UNCACHED:
            super().put(key, value)


_report_cache = _ReportCache()


class _ProgramCache(_LRU):
    """Stage B's result for exactly these exported bytes and this job, kept in memory.

    Stage B is a function of (exported program bytes, job, engine, XLA flags, grader version),
    so a hit is the result of running exactly those bytes in the trusted stage: as good as a
    fresh run, minus the whole stage. Stage A leaves source locations out of its exports, so
    different sources of one program (names, comments, layout) share an entry."""

    def __init__(self) -> None:
        super().__init__(PROGRAM_CACHE_SIZE)

    @staticmethod
    def key(job_text: str, flags: str, blobs: dict[str, bytes]) -> str:
        h = hashlib.sha256()
        for part in (grader_version(), flags, job_text):
            h.update(part.encode() + b"\0")
        for pid in sorted(blobs):
            h.update(pid.encode() + b"\0" + hashlib.sha256(blobs[pid]).digest())
        return h.hexdigest()

    # The validated result is a frozen model whose output trees are only ever read (decoded),
    # so entries share it; the texts dict is copied.
    def _freeze(self, value: tuple[StageBResult, dict[str, str]]
                ) -> tuple[StageBResult, dict[str, str]]:
        return value[0], dict(value[1])

    def _thaw(self, stored: tuple[StageBResult, dict[str, str]]
              ) -> tuple[StageBResult, dict[str, str]]:
        return stored[0], dict(stored[1])


_program_cache = _ProgramCache()


class _ModelsCache(_LRU):
    """Lists of report models (requirement or test results) derived from a cached program."""

    def _freeze(self, value: list[Any]) -> list[Any]:
        return [r.model_copy(deep=True) for r in value]

    def _thaw(self, stored: list[Any]) -> list[Any]:
        return [r.model_copy(deep=True) for r in stored]


# Program-level requirement results per (problem, verified program texts).
_rules_cache = _ModelsCache(PROGRAM_CACHE_SIZE)
# Test results per (problem, program cache key): the same outputs compare the same way.
_tests_cache = _ModelsCache(PROGRAM_CACHE_SIZE)


def set_program_cache(size: int) -> None:
    """Keep stage B results and program-rule outcomes for up to `size` distinct exported
    programs (0 turns both off and forgets everything)."""
    _program_cache.resize(size)
    _rules_cache.resize(size)
    _tests_cache.resize(size)


def set_report_cache(size: int) -> None:
    """Keep up to `size` reports of already-graded sources in memory (0 turns it off)."""
    _report_cache.resize(size)


def _cache_key(problem: Problem, source: str | bytes, mode: Mode, limits: Limits) -> str:
    raw = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
    h = hashlib.sha256(raw)
    for part in (problem.id, problem.fingerprint(), mode, limits.model_dump_json(),
                 grader_version(), _engine()):
        h.update(b"\0" + part.encode())
    return h.hexdigest()


def _spec_of(value: Any, problem: Problem, argument: str, key: str | None = None) -> Any:
    """Input value tree -> spec tree of {"shape", "dtype"} leaves, with the element types the
    problem declares for that argument (and key)."""
    if isinstance(value, dict):
        return {k: _spec_of(v, problem, argument, k) for k, v in sorted(value.items())}
    shape: list[int] = []
    v = value
    while isinstance(v, list):
        shape.append(len(v))
        v = v[0] if v else None
    return {"shape": shape, "dtype": problem.input_dtype(argument, key)}


def _signature_name(spec: list[Any], arg_names: list[str]) -> str:
    parts = []
    for name, s in zip(arg_names, spec, strict=False):
        if isinstance(s, dict) and "shape" in s:
            parts.append(f"{name}({', '.join(str(d) for d in s['shape'])})")
    return " ".join(parts) or "signature"


def _static_shapes(problem: Problem) -> bool:
    """Some requirement reads sizes or loop bounds, which only per-shape exports carry."""
    return any(RULES[r.rule].static_shapes for r in problem.requirements if r.rule in RULES)


def _dims_of(declared: Any, concrete: Any, into: dict[str, int]) -> dict[str, int]:
    """Named dimension -> value, matching a declared spec tree with a test's concrete one."""
    stack = [(declared, concrete)]
    while stack:
        d, c = stack.pop()
        if isinstance(d, dict) and "shape" in d and isinstance(c, dict) and "shape" in c:
            for name, value in zip(d["shape"], c["shape"], strict=False):
                if isinstance(name, str):
                    into.setdefault(name, int(value))
        elif isinstance(d, dict) and isinstance(c, dict):
            stack.extend((d[k], c[k]) for k in d if k in c)
        elif isinstance(d, list) and isinstance(c, list):
            stack.extend(zip(d, c, strict=False))
    return into


def _symbolic_spec(problem: Problem) -> dict[str, Any] | None:
    """Argument specs with named dimensions, for one shape-polymorphic export (None if the
    problem does not declare every argument's shape)."""
    args: list[Any] = []
    dims: set[str] = set()
    default = problem.constraints.dtype
    for arg in problem.arguments:
        if arg.shapes is not None:
            node: Any = {
                k: {"shape": v, "dtype": arg.leaf_dtype(k, default)}
                for k, v in sorted(arg.shapes.items())
            }
            shapes = list(arg.shapes.values())
        elif arg.shape is not None:
            node = {"shape": arg.shape, "dtype": arg.leaf_dtype(None, default)}
            shapes = [arg.shape]
        else:
            return None
        for shape in shapes:
            dims.update(d for d in shape if isinstance(d, str))
        args.append(node)
    return {"dims": sorted(dims), "args": args}


def _read_regular(path: Path, limit: int) -> bytes | None:
    """A file a sandbox wrote, or None if missing, over `limit` bytes or not a regular file (a
    symlink planted to make us read a host file, a FIFO to make us block)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb") as f:
            fd = -1
            data = f.read(limit + 1)
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    return data if len(data) <= limit else None


def _read_result(path: Path, parse: Callable[[bytes], Any]) -> Any | None:
    """A sandbox's result file, schema-checked by `parse` (grader.stage_results): None when it
    is missing or not a regular file (see `_read_regular`); MalformedResult when it is over
    MAX_RESULT_BYTES or does not fit its schema."""
    data = _read_regular(path, MAX_RESULT_BYTES)
    if data is None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        if stat.S_ISREG(st.st_mode) and st.st_size > MAX_RESULT_BYTES:
            raise MalformedResult(f"{st.st_size} bytes, over {MAX_RESULT_BYTES}")
        return None
    return parse(data)


@dataclass(frozen=True)
class _Plan:
    """What a grade derives from the problem package and the mode alone, built once per package
    version: the tests, grouped by input signature (one export and one compile per distinct
    shape), the symbolic signature, and stage B's test list with the digest of its JSON.
    Shared between grades: read-only."""

    cases: list[TestCase]
    arg_names: list[str]
    signatures: dict[str, dict[str, Any]]  # signature JSON -> {"id", "args"}
    case_sig: dict[str, str]  # test name -> signature id
    symbolic: dict[str, Any] | None  # None: export once per signature (static shapes)
    sig_dims: dict[str, dict[str, int]]  # signature id -> named dimensions' values
    outputs: dict[str, tuple[str, float, float]]  # output path -> (dtype, rtol, atol)
    default_leaf: tuple[str, float, float]  # for a path `returns` does not declare

    def output_leaf(self, path: str) -> tuple[str, float, float]:
        return self.outputs.get(path, self.default_leaf)
    tests: list[dict[str, Any]]
    tests_digest: str


_plans: OrderedDict[tuple[str, ...], _Plan] = OrderedDict()
_plans_lock = threading.Lock()


def _plan(problem: Problem, mode: Mode) -> _Plan:
    # The files on disk (fingerprint) and this in-memory package's arguments (a Problem loaded
    # before problem.toml was edited must not share the new version's plan).
    args = repr([(a.name, a.shape, a.shapes, a.dtype, a.dtypes) for a in problem.arguments])
    key = (str(problem.root), problem.fingerprint(), mode, args)
    with _plans_lock:
        found = _plans.get(key)
        if found is not None:
            _plans.move_to_end(key)
            return found
    cases = problem.cases(mode)
    arg_names = [a.name for a in problem.arguments]
    signatures: dict[str, dict[str, Any]] = {}
    case_sig: dict[str, str] = {}
    for case in cases:
        spec = [_spec_of(case.inputs[name], problem, name) for name in arg_names]
        skey = json.dumps(spec, sort_keys=True)
        if skey not in signatures:
            signatures[skey] = {"id": f"s{len(signatures)}", "args": spec}
        case_sig[case.name] = signatures[skey]["id"]
    tests = [
        {"name": c.name, "signature": case_sig[c.name], "inputs": [c.inputs[n] for n in arg_names]}
        for c in cases
    ]
    digest = hashlib.sha256(json.dumps(tests, sort_keys=True).encode()).hexdigest()
    declared = _symbolic_spec(problem)
    sig_dims = {
        s["id"]: _dims_of(declared["args"], s["args"], {}) if declared else {}
        for s in signatures.values()
    }
    symbolic = None if _static_shapes(problem) else declared
    outputs = {
        path: (dtype, *problem.tolerance.for_output(path))
        for path, dtype in problem.output_dtypes().items()
    }
    default_leaf = (problem.constraints.dtype, problem.tolerance.rtol, problem.tolerance.atol)
    plan = _Plan(cases, arg_names, signatures, case_sig, symbolic, sig_dims, outputs,
                 default_leaf, tests, digest)
    with _plans_lock:
        _plans[key] = plan
        while len(_plans) > 64:
            _plans.popitem(last=False)
    return plan


class _Grading:
    """State of one grade; `run()` walks the stages and builds the report."""

    def __init__(
        self,
        problem: Problem,
        source: str | bytes,
        mode: Mode,
        limits: Limits,
        display_name: str = "submission.py",
    ) -> None:
        self.problem = problem
        self.display_name = display_name
        # surrogatepass: a str with lone surrogates becomes bytes stage A rejects as non-UTF-8
        # (a compile_error), instead of an exception here.
        self.source = (
            source.encode("utf-8", "surrogatepass") if isinstance(source, str) else bytes(source)
        )
        self.mode = mode
        self.limits = limits
        self.plan = _plan(problem, mode)
        self.timings: dict[str, float] = {}
        self.program_key = ""  # stage B's program cache key, once known
        self.versions: dict[str, str] = {}
        self.output = ""
        self.requirements: list[RequirementResult] = []
        self.tests: list[TestResult] = []

    # -- sandbox plumbing ------------------------------------------------------------------
    def _sandbox_limits(self) -> sandbox.SandboxLimits:
        return sandbox.SandboxLimits(
            wall_seconds=self.limits.wall_seconds,
            cpu_seconds=self.limits.cpu_seconds,
            memory_bytes=self.limits.memory_mb * 1024 * 1024,
            output_bytes=max(self.limits.output_kb * 1024, 256 * 1024),
        )

    def _stage_failure(self, res: sandbox.SandboxResult, what: str) -> _Decided | None:
        """Map a sandbox outcome that ended the stage abnormally to a verdict."""
        lim = self.limits
        if res.status in ("wall_timeout", "cpu_timeout"):
            kind = "wall-clock" if res.status == "wall_timeout" else "CPU"
            secs = lim.wall_seconds if res.status == "wall_timeout" else lim.cpu_seconds
            return _Decided(
                Verdict.TIME_LIMIT_EXCEEDED,
                f"{what} exceeded the {kind} time limit of {secs:g} s. Look for infinite loops, "
                "sleeps or huge computations.",
            )
        if res.status == "memory_exceeded":
            return _Decided(
                Verdict.MEMORY_LIMIT_EXCEEDED,
                f"{what} used more than the memory limit of {lim.memory_mb} MB.",
            )
        if res.status == "output_exceeded":
            # The cap is the sandbox's (output_bytes: prints, and every file the stage writes:
            # result.json, the exported program, its StableHLO text), not output_kb alone.
            cap_kb = self._sandbox_limits().output_bytes // 1024
            if res.detail.startswith("stdout/stderr"):
                return _Decided(
                    Verdict.RUNTIME_ERROR,
                    f"{what} printed more than the limit of {cap_kb} KB; remove large prints.",
                )
            return _Decided(
                Verdict.RUNTIME_ERROR,
                f"{what} wrote a file larger than the limit of {cap_kb} KB (or too many files): "
                "the program traced from solve is too large to export or verify (look for "
                "long Python loops unrolled into the program), or your code writes files.",
            )
        if res.status == "setup_failed":
            raise RuntimeError(f"sandbox setup failed: {res.detail}")
        return None

    # -- the pipeline ----------------------------------------------------------------------
    def run(self) -> Report:
        if len(self.source) > MAX_SOURCE_BYTES:
            return self._report(
                Verdict.COMPILE_ERROR, f"the file is larger than {MAX_SOURCE_BYTES} bytes"
            )
        base = os.environ.get("JAXJUDGE_WORK_DIR") or None
        if base:
            Path(base).mkdir(parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="jaxjudge-", dir=base))
        try:
            os.chmod(root, 0o711)
            return self._pipeline(root)
        except _Decided as d:
            return self._report(d.verdict, d.message)
        finally:
            # A submission shapes what it leaves (any depth, any width): iterative removal.
            if not fstree.remove_tree(root):
                log.error("could not remove the grade's work dir %s", root)

    def _pipeline(self, root: Path) -> Report:
        stage_a = self._stage_a(root / "a")
        self._check_requirements("spec", stage_a.jaxpr)
        outputs, programs = self._stage_b(root / "a", root / "b", stage_a)
        self._check_requirements("program", programs)
        self._compare(outputs)
        return self._decide()

    def _corroborate(self, reqs: list[RequirementResult]) -> None:
        """A spec-level pass stands only if the program-level requirements it names passed:
        the jaxpr summary came from the untrusted stage, so on its own it explains but never
        decides or pays. A spec-level failure is kept as is (a lie against oneself gains
        nothing)."""
        passed = {r.name for r in reqs if r.level == "program" and r.passed}
        declared = {r.name: r for r in self.problem.requirements}
        for res in reqs:
            req = declared.get(res.name)
            if res.level != "spec" or not res.passed or req is None:
                continue
            missing = [n for n in self.problem.corroborators(req) if n not in passed]
            if missing:
                res.passed = False
                res.message = (
                    f"Your traced code reports this ({res.message.rstrip('.')}), but the "
                    f"exported program does not confirm it: see {', '.join(missing)}."
                )

    def _stage_a(self, job: Path) -> StageAResult:
        job.mkdir()
        (job / "submission.py").write_bytes(self.source)
        (job / "job.json").write_text(
            json.dumps(
                {
                    "entry_point": self.problem.entry_point,
                    "source": "submission.py",
                    "display_name": self.display_name,
                    "signatures": list(self.plan.signatures.values()),
                    "symbolic": self.plan.symbolic,
                }
            )
        )
        t = time.perf_counter()
        res = _runner(TRACE_SCRIPT, job, self._sandbox_limits(), True, {})
        self.timings["stage_a"] = round(time.perf_counter() - t, 4)
        self.output = (res.stdout + res.stderr)[-self.limits.output_kb * 1024 :]
        decided = self._stage_failure(res, "Your code (while loading, tracing or exporting)")
        if decided:
            raise decided
        return self._stage_a_result(job / "result.json", res)

    def _stage_a_result(self, path: Path, res: sandbox.SandboxResult) -> StageAResult:
        """Stage A's result file (written beside user code: anything at all) -> the validated
        result, or a verdict (_Decided). Raises nothing else, whatever the file holds."""
        try:
            result: StageAResult | None = _read_result(path, parse_stage_a)
        except MalformedResult as exc:
            log.info("stage A result rejected: %s", exc)
            deep = isinstance(exc, ResultTooDeep)
            raise _Decided(Verdict.RUNTIME_ERROR, TOO_DEEP_A if deep else MALFORMED_A) from None
        if result is None:
            how = (
                f"exit code {res.exit_code}"
                if res.status == "exited"
                else f"signal {res.signal}"
            )
            raise _Decided(
                Verdict.RUNTIME_ERROR,
                f"Your code ended the grading process ({how}) before it could be traced and "
                "exported. Do not call sys.exit/os._exit or kill processes in your file.",
            )
        for k, v in result.timings.items():
            self.timings[f"stage_a.{k}"] = round(v, 4)
        status = result.status
        message = result.message[:4000]
        if status == "compile_error":
            raise _Decided(Verdict.COMPILE_ERROR, message or "the file could not be compiled")
        if status == "runtime_error":
            if "MemoryError" in message:
                raise _Decided(Verdict.MEMORY_LIMIT_EXCEEDED, message)
            raise _Decided(Verdict.RUNTIME_ERROR, message or "importing your file failed")
        if status in ("trace_error", "export_error"):
            etype = result.error_type or ""
            if etype == "MemoryError":
                raise _Decided(Verdict.MEMORY_LIMIT_EXCEEDED, message)
            if etype in UNTRACEABLE:
                self._check_requirements("spec", None)
                raise _Decided(
                    Verdict.RUNTIME_ERROR,
                    "solve cannot be traced by JAX: it uses a traced value where Python needs a "
                    "concrete one (an `if`, `float()`, `int()` or numpy call on an array). Use "
                    "jnp/lax operations (jnp.where, lax.cond) instead.\n" + message,
                )
            step = "tracing" if status == "trace_error" else "exporting"
            raise _Decided(Verdict.RUNTIME_ERROR, f"solve raised an error while {step}:\n{message}")
        if result.jax_version:
            self.versions["jax"] = result.jax_version[:40]
        return result

    def _check_requirements(self, level: str, data: Any) -> None:
        """Apply every requirement of one level (spec: jaxpr summary; program: StableHLO)."""
        rules = SPEC_RULES if level == "spec" else PROGRAM_RULES
        self.requirements = [r for r in self.requirements if r.level != level]
        key = self._derived_key("rules") if level == "program" else ""
        if key:
            # A pure function of the verified programs (parsing them alone is ~30 ms).
            known = _rules_cache.get(key)
            if known is not None:
                self.requirements.extend(known)
                return
        before = len(self.requirements)
        for req in self.problem.requirements:
            if req.level != level:
                continue
            outcome = self._apply(rules, req.rule, data, req.options)
            self.requirements.append(
                RequirementResult(
                    name=req.name, level=req.level, passed=outcome.passed, message=outcome.message
                )
            )
        if key:
            _rules_cache.put(key, self.requirements[before:])

    @staticmethod
    def _apply(rules: dict[str, Any], rule: str, data: Any, options: dict[str, Any]) -> RuleOutcome:
        fn = rules.get(rule)
        if fn is None:
            raise RuntimeError(f"unknown rule {rule!r} in problem.toml")
        outcome = fn(data, **options)
        if not isinstance(outcome, RuleOutcome):
            raise RuntimeError(f"rule {rule!r} returned {type(outcome).__name__}")
        return outcome

    def _stage_b(
        self, a_dir: Path, job: Path, stage_a: StageAResult
    ) -> tuple[dict[str, Any], list[ProgramInfo]]:
        job.mkdir()
        exports = stage_a.exports or {}
        all_sigs = [s["id"] for s in self.plan.signatures.values()]
        if "poly" in exports and self.plan.symbolic:
            # One shape-polymorphic program serves every signature.
            progs = [
                {
                    "id": "poly",
                    "args": self.plan.symbolic["args"],
                    "signatures": all_sigs,
                    "allowed_custom_calls": ["shape_assertion"],
                }
            ]
        else:
            progs = [
                {"id": s["id"], "args": s["args"], "signatures": [s["id"]]}
                for s in self.plan.signatures.values()
            ]
        blobs: dict[str, bytes] = {}
        for prog in progs:
            src = a_dir / f"{prog['id']}.jaxexport"
            blob = None
            if exports.get(prog["id"]) == src.name:  # the name we expect, nothing else
                blob = _read_regular(src, MAX_EXPORT_BYTES)
            if blob is None:
                raise _Decided(
                    Verdict.RUNTIME_ERROR,
                    "the tracing process did not produce the exported program (missing, not a "
                    f"regular file, or over {MAX_EXPORT_BYTES >> 20} MiB)",
                )
            blobs[prog["id"]] = blob
            prog["export"] = src.name
        spec = {
            "arg_names": self.plan.arg_names,
            "signatures": list(self.plan.signatures.values()),
            "programs": progs,
            "allowed_custom_calls": [],
            "max_program_bytes": MAX_PROGRAM_TEXT,
            "engine": _engine(),
        }
        flags = fast_compile_flags()
        # The tests' part of the key is hashed once per problem and mode (see _Plan).
        key = _program_cache.key(
            json.dumps(spec, sort_keys=True) + self.plan.tests_digest, flags, blobs
        )
        spec["tests"] = self.plan.tests
        self.program_key = key
        hit = _program_cache.get(key)
        if hit is not None:
            self.timings["stage_b.cached"] = 1.0
            result, texts = hit
        else:
            result, texts = self._run_stage_b(job, spec, blobs, flags)
            if result.status == "ok" and result.outputs is not None and all(
                o.ok for o in result.outputs.values()
            ):
                # Only complete successes: a test that failed may have failed for a reason of
                # the moment (memory pressure), which must not be replayed to later submissions.
                _program_cache.put(key, (result, texts))
        return self._stage_b_outcome(result, texts, progs)

    def _run_stage_b(
        self, job: Path, spec: dict[str, Any], blobs: dict[str, bytes], flags: str
    ) -> tuple[StageBResult, dict[str, str]]:
        """Run stage B in its sandbox; its validated result and each program's verified text.

        A run that dies without a result (killed by a signal, or exited without writing it) is
        a crash in native code: the StableHLO interpreter aborts on what it cannot evaluate, and
        XLA has crashed (stack overflow) compiling deeply nested programs under the fast-compile
        flags that it compiles with its defaults. Each crash moves one step down
        interpreter -> XLA with fast flags -> XLA with default flags, and runs again; a program
        that still kills the process gets a runtime_error."""
        t = time.perf_counter()
        for prog in spec["programs"]:
            (job / prog["export"]).write_bytes(blobs[prog["id"]])
        engine = spec["engine"]
        while True:
            (job / "job.json").write_text(json.dumps({**spec, "engine": engine}))
            env = {"XLA_FLAGS": flags} if flags else {}
            res = _runner(EXECUTE_SCRIPT, job, self._sandbox_limits(), False, env)
            crashed = res.status == "signaled" or (
                res.status == "exited" and not (job / "result.json").is_file()
            )
            if not crashed or (engine == "xla" and not flags):
                break
            step = "interpret_crash" if engine == "interpret" else "xla_fast_flags_crash"
            log.warning("stage B crashed (%s, exit %s, signal %s) with engine %s, XLA_FLAGS %r; "
                        "running it again %s", res.status, res.exit_code, res.signal, engine,
                        flags, "on XLA" if engine == "interpret" else "with default XLA flags")
            self.timings[f"stage_b.{step}"] = 1.0
            if engine == "interpret":
                engine = "xla"
            else:
                flags = ""
            for stale in ("result.json", *(f"{p['id']}.mlir" for p in spec["programs"])):
                (job / stale).unlink(missing_ok=True)  # nothing of the crashed run is read
        self.timings["stage_b"] = round(time.perf_counter() - t, 4)
        decided = self._stage_failure(res, "Your exported program")
        if decided:
            raise decided
        return self._stage_b_result(job, res, [p["id"] for p in spec["programs"]])

    def _stage_b_result(
        self, job: Path, res: sandbox.SandboxResult, program_ids: list[str]
    ) -> tuple[StageBResult, dict[str, str]]:
        """Stage B's result file and program texts -> validated, or a verdict (_Decided).
        Raises RuntimeError only when stage B exited without writing a result (our bug)."""
        try:
            result: StageBResult | None = _read_result(job / "result.json", parse_stage_b)
        except MalformedResult as exc:
            log.warning("stage B result rejected: %s", exc)
            raise _Decided(Verdict.RUNTIME_ERROR, MALFORMED_B) from None
        if result is None and res.status == "signaled":
            known = res.signal in signal.Signals._value2member_map_
            name = signal.Signals(res.signal).name if known else f"signal {res.signal}"
            raise _Decided(
                Verdict.RUNTIME_ERROR,
                f"Your exported program crashed the XLA compiler (the process running it was "
                f"killed by {name}, also with XLA's default settings). Very deep nesting of "
                "jit/function calls is a known cause: flatten your program.",
            )
        if result is None:  # exited without a result: stage B itself failed (our bug)
            raise RuntimeError(
                f"stage B produced no result ({res.status}, exit {res.exit_code}, "
                f"signal {res.signal}): {res.stderr[-2000:]}"
            )
        for k, v in result.timings.items():
            self.timings[f"stage_b.{k}"] = round(v, 4)
        texts: dict[str, str] = {}
        if result.status == "ok":
            for pid in program_ids:
                entry = (result.programs or {}).get(pid)
                raw = _read_regular(job / f"{pid}.mlir", MAX_PROGRAM_TEXT)
                if entry is None or raw is None:
                    log.warning("stage B result lacks program %s (entry %s, text %s)",
                                pid, entry is not None, raw is not None)
                    raise _Decided(Verdict.RUNTIME_ERROR, MALFORMED_B)
                texts[pid] = raw.decode("utf-8", "replace")
        return result, texts

    def _stage_b_outcome(
        self, result: StageBResult, texts: dict[str, str], progs: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], list[ProgramInfo]]:
        """Stage B's (fresh or cached) result -> outputs and verified programs, or a verdict."""
        if result.engines:
            self.versions["engine"] = "+".join(sorted(set(result.engines)))[:40]
        if result.status == "rejected":
            why = result.message[:4000] or "the exported program was refused"
            self.requirements.append(
                RequirementResult(name="pure-jax-program", level="program", passed=False,
                                  message=why)
            )
            raise _Decided(
                Verdict.REQUIREMENT_FAILED,
                "The grader refused to run your exported program: "
                + why
                + ". Use only JAX operations on the inputs.",
            )
        outputs = result.outputs or {}
        missing = [c.name for c in self.plan.cases if c.name not in outputs]
        if missing or any(p["id"] not in texts for p in progs):
            log.warning("stage B result lacks tests %s or programs", missing[:5])
            raise _Decided(Verdict.RUNTIME_ERROR, MALFORMED_B)
        programs: list[ProgramInfo] = []
        for prog in progs:
            entry = (result.programs or {}).get(prog["id"])
            poly = prog["id"] == "poly" and self.plan.symbolic is not None
            programs.append(
                ProgramInfo(
                    signature=_signature_name(prog["args"], self.plan.arg_names),
                    text=texts[prog["id"]],
                    args=list(entry.args) if entry is not None else [],
                    outs=list(entry.outs) if entry is not None else [],
                    dims={} if poly else dict(self.plan.sig_dims.get(prog["id"], {})),
                    symbolic=tuple(self.plan.symbolic["dims"]) if poly else (),
                )
            )
        return outputs, programs

    def _derived_key(self, kind: str) -> str:
        """Key for what follows from stage B's result and the problem package alone (program
        rules, compared tests): the program cache key plus the package's fingerprint, which
        covers requirements, expected outputs and tolerances. '' before stage B has run."""
        if not self.program_key:
            return ""
        parts = (kind, self.program_key, self.problem.fingerprint())
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def _compare(self, outputs: dict[str, Any]) -> None:
        tol = self.problem.tolerance
        key = self._derived_key("tests")
        if key:
            known = _tests_cache.get(key)
            if known is not None:
                self.tests.extend(known)
                return
        before = len(self.tests)
        for case in self.plan.cases:
            out = outputs.get(case.name)
            got_value: Any = None
            if isinstance(out, OutputOk):
                try:
                    got_value = cmp.decode_output(out.value)
                    c = cmp.compare(case.expected, got_value, rtol=tol.rtol, atol=tol.atol,
                                    leaf=self.plan.output_leaf)
                except cmp.TooDeep as exc:  # the program's output, not our decoder's fault
                    got_value, c = None, cmp.Comparison(False, str(exc))
                except cmp.DecodeError as exc:
                    log.warning("stage B output for %s malformed: %s", case.name, exc)
                    raise _Decided(Verdict.RUNTIME_ERROR, MALFORMED_B) from None
                verdict = Verdict.ACCEPTED if c.passed else Verdict.WRONG_ANSWER
                result = TestResult(
                    name=case.name,
                    visible=case.visible,
                    verdict=verdict,
                    message=c.message,
                    max_abs_error=c.max_abs_error,
                )
            elif isinstance(out, OutputFailed):
                result = TestResult(
                    name=case.name,
                    visible=case.visible,
                    verdict=Verdict.RUNTIME_ERROR,
                    message="the program failed on this input: " + out.error[:4000],
                )
            else:  # _stage_b_outcome checked that every test has an output
                raise _Decided(Verdict.RUNTIME_ERROR, MALFORMED_B)
            if case.visible:
                result.details = TestDetails(
                    inputs=dict(case.inputs), expected=case.expected, got=_plain(got_value)
                )
            self.tests.append(result)
        if key and all(t.verdict is not Verdict.RUNTIME_ERROR for t in self.tests[before:]):
            _tests_cache.put(key, self.tests[before:])

    # -- verdict, score, report ----------------------------------------------------------------
    def _decide(self) -> Report:
        self._corroborate(self.requirements)
        failed_tests = [t for t in self.tests if t.verdict is not Verdict.ACCEPTED]
        failed_reqs = [r for r in self.requirements if not r.passed]
        if any(t.verdict is Verdict.RUNTIME_ERROR for t in failed_tests):
            first = next(t for t in failed_tests if t.verdict is Verdict.RUNTIME_ERROR)
            return self._report(Verdict.RUNTIME_ERROR, f"Test {first.name}: {first.message}")
        if failed_tests:
            first = failed_tests[0]
            msg = f"{len(failed_tests)} of {len(self.tests)} tests give wrong results. "
            msg += f"First: {first.name}: {first.message}" if first.visible else (
                f"First failing test {first.name} is hidden: {first.message}"
            )
            if failed_reqs:
                msg += f" Also {len(failed_reqs)} requirement(s) failed; see below."
            return self._report(Verdict.WRONG_ANSWER, msg)
        if failed_reqs:
            msg = "All tests pass, but a requirement failed: " + " ".join(
                f"[{r.name}] {r.message}" for r in failed_reqs
            )
            return self._report(Verdict.REQUIREMENT_FAILED, msg)
        return self._report(
            Verdict.ACCEPTED,
            f"All {len(self.tests)} tests pass and every requirement holds.",
        )

    def _report(self, verdict: Verdict, message: str) -> Report:
        tests = self.tests or [
            TestResult(
                name=c.name,
                visible=c.visible,
                verdict=Verdict.SKIPPED,
                message="not run: " + verdict.value,
            )
            for c in self.plan.cases
        ]
        reqs = list(self.requirements)
        seen = {r.name for r in reqs}
        for req in self.problem.requirements:
            if req.name not in seen:
                reqs.append(
                    RequirementResult(
                        name=req.name,
                        level=req.level,
                        passed=False,
                        message="not checked: grading stopped earlier (" + verdict.value + ")",
                    )
                )
        self._corroborate(reqs)
        score, max_score = _score(self.problem, tests, reqs, verdict)
        return Report(
            verdict=verdict,
            problem=self.problem.id,
            mode=self.mode,
            message=message,
            tests=tests,
            requirements=reqs,
            score=score,
            max_score=max_score,
            timings=dict(self.timings),
            output=self.output,
            versions=dict(self.versions),
        )


def _display_name(filename: str) -> str:
    """The uploaded file's base name, reduced to safe characters, for learner messages."""
    base = os.path.basename(str(filename).replace("\\", "/"))
    safe = "".join(c for c in base if c.isalnum() or c in "._-")[:64]
    return safe if safe.endswith(".py") and len(safe) > 3 else "submission.py"


def max_score(problem: Problem, mode: Mode) -> float:
    """What a graded report of `problem` is out of: requirement points only when some
    requirement earns points, hidden-test points only in submit mode."""
    sc = problem.scoring
    hidden = sc.hidden_tests if mode == "submit" else 0.0
    reqs = sc.requirements if any(problem.earns_points(r) for r in problem.requirements) else 0.0
    return round(sc.visible_tests + hidden + reqs, 4)


def _plain(value: Any) -> Any:
    """Decoded output -> JSON-friendly lists for the report's visible-test details."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if value is None:
        return None
    try:
        return value.tolist()
    except AttributeError:
        return value


# Item points are whole sixteenths of a point: the only numbers that are both exact binary
# fractions (so any sum of them is exact in float arithmetic) and at most 4 decimals long (so the
# 4-decimal JSON of grader/render.py prints them unchanged). Items of a group differ by <= 1/16.
POINT_GRID = 16


def _split_points(points: float, n: int) -> list[float]:
    """`points` over `n` items that add up to exactly `points` in float arithmetic.

    Largest remainder on sixteenths: each item gets floor(units / n), the last `units % n` items
    one more, and the last item whatever of `points` lies below a sixteenth (e.g. of 100/3).
    Every partial sum is then a representable multiple of ulp(points), so sums in any order are
    exact. Less than a sixteenth per item would leave items worth 0: such a group is split
    evenly and its last item takes the float remainder (exact when summed in order; JSON prints
    4 decimals)."""
    if n <= 0:
        return []
    if not math.isfinite(points):
        return [points / n] * n
    units = math.floor(points * POINT_GRID)
    if units < n:
        shares = [points / n] * n
        shares[-1] = points - sum(shares[:-1])  # exact (Sterbenz): the rest is >= points / 2
        return shares
    q, r = divmod(units, n)
    shares = [(q + (i >= n - r)) / POINT_GRID for i in range(n)]
    shares[-1] += points - units / POINT_GRID
    return shares


def _score(
    problem: Problem, tests: list[TestResult], reqs: list[RequirementResult], verdict: Verdict
) -> tuple[float, float]:
    """Partial credit: each group's points split over its items (`_split_points`: they add up
    to the group's points exactly); an item earns its share if it passed. The totals are the
    plain sums of the items, in report order, so they match what a reader of the JSON adds."""
    sc = problem.scoring
    visible = [t for t in tests if t.visible]
    hidden = [t for t in tests if not t.visible]
    for group, points in ((visible, sc.visible_tests), (hidden, sc.hidden_tests)):
        for t, share in zip(group, _split_points(points, len(group)), strict=True):
            t.max_score = share
            t.score = share if t.verdict is Verdict.ACCEPTED else 0.0
    declared = {r.name for r in problem.requirements if problem.earns_points(r)}
    counted = [r for r in reqs if r.name in declared]
    # Structure points only count when the program actually ran to completion.
    ran = verdict in (Verdict.ACCEPTED, Verdict.WRONG_ANSWER, Verdict.REQUIREMENT_FAILED)
    for r, share in zip(counted, _split_points(sc.requirements, len(counted)), strict=True):
        r.max_score = share
        r.score = share if r.passed and ran else 0.0
    items = [*tests, *counted]
    return sum((i.score for i in items), 0.0), sum((i.max_score for i in items), 0.0)
