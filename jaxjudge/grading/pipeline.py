"""One grade's pipeline: stage A -> spec rules -> stage B -> program rules -> compare ->
verdict and report. The stage protocols, the plan, the caches and the scoring live in their
own modules; the `Grader` passed in supplies the runner, the engine and the caches."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.stablehlo import parsed_once
from jaxjudge.grading import compare as cmp
from jaxjudge.grading.early import Started
from jaxjudge.grading.early import start as start_stages
from jaxjudge.grading.engine_hint import needs_xla
from jaxjudge.grading.evidence import census, excerpt, lend_evidence
from jaxjudge.grading.memory import (
    compare,
    largest_program,
    load_reference,
    profile,
    store_reference,
)
from jaxjudge.grading.plan import plan_for, signature_name
from jaxjudge.grading.report import (
    Evidence,
    MemoryReport,
    Mode,
    ProgramMemory,
    Report,
    RequirementResult,
    TestDetails,
    TestResult,
    Verdict,
)
from jaxjudge.grading.scoring import corroborate, score
from jaxjudge.grading.stage_a import StageA
from jaxjudge.grading.stage_b import StageB
from jaxjudge.grading.stage_common import MALFORMED_B, MAX_SOURCE_BYTES, Decided, sandbox_limits
from jaxjudge.grading.stage_results import (
    OutputFailed,
    OutputOk,
    StageAResult,
)
from jaxjudge.grading.summary import summarize
from jaxjudge.isolation import fstree
from jaxjudge.isolation.workdir import work_root
from jaxjudge.problems.package import Limits, Problem, TestCase
from jaxjudge.rules import PROGRAM_RULES, RULES, SPEC_RULES, RuleOutcome
from jaxjudge.rules.jaxpr import at_every_signature
from jaxjudge.version import grader_version

if TYPE_CHECKING:
    from jaxjudge.grading.resources import Resources

log = logging.getLogger("grader")

class Grading(StageA, StageB):
    """State of one grade; `run()` walks the stages and builds the report."""

    def __init__(
        self,
        grader: Resources,
        problem: Problem,
        source: str | bytes,
        mode: Mode,
        limits: Limits,
        display_name: str = "submission.py",
        early: Started | None = None,
        compare_memory: bool = True,
        custom: list[TestCase] | None = None,
        outputs_only: bool = False,
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
        self.grader = grader
        self.custom = list(custom or [])  # the learner's own inputs (run mode)
        self.not_compared: dict[str, str] = {}  # custom input -> why it is not compared
        self.outputs_only = outputs_only  # the reference computing their expected outputs
        self.outputs: dict[str, Any] = {}
        self.plan = plan_for(problem, mode, extra=self.custom)
        self.timings: dict[str, float] = {}
        self.program_key = ""  # stage B's program cache key, once known
        self.versions: dict[str, str] = {}
        self.output = ""
        self.requirements: list[RequirementResult] = []
        self.tests: list[TestResult] = []
        self.early = early
        self.compare_memory = compare_memory  # False for the reference's own grade
        self.memory: MemoryReport | None = None
        self.programs: list[ProgramInfo] = []

    # -- sandbox plumbing ------------------------------------------------------------------
    def run(self) -> Report:
        if len(self.source) > MAX_SOURCE_BYTES:
            if self.early is not None:
                self.early.close()
            return self._report(
                Verdict.COMPILE_ERROR, f"the file is larger than {MAX_SOURCE_BYTES} bytes"
            )
        started = self._started()
        root = started.root if started is not None else work_root()
        try:
            if started is not None:
                self.pending_a, self.pending_b = started.take_a(), started.take_b()
            return self._pipeline(root)
        except Decided as d:
            return self._report(d.verdict, d.message)
        finally:
            # Stage A failed, timed out or was decided, or the program cache answered: a stage
            # started ahead that never got its job is killed; nothing of it outlives the grade.
            for pending in (self.pending_a, self.pending_b):
                if pending is not None:
                    pending.cancel()
            self.pending_a = self.pending_b = None
            # A submission shapes what it leaves (any depth, any width): iterative removal.
            if not fstree.remove_tree(root):
                log.error("could not remove the grade's work dir %s", root)

    def _started(self) -> Started | None:
        """The stage processes this grade runs in, started ahead: the caller's (`early`, if
        started for these limits), else new ones when the grader runs stages cold (both
        imports of jax then overlap, stage B's with stage A's), else none."""
        early, self.early = self.early, None
        if early is not None:
            if (early.limits == sandbox_limits(self.limits) and early.a is not None
                    and early.observed == self.problem.observed):
                early.adopted = True
                if early.b is not None and not self.grader.overlap:
                    early.take_b().cancel()  # type: ignore[union-attr]
                return early
            early.close()
        if not self.grader.overlap:
            return None
        root = work_root()
        try:
            started = start_stages(self.limits, self.problem.observed, root=root,
                                   jax=needs_xla(self.problem.id))
        except BaseException:
            fstree.remove_tree(root)
            raise
        started.adopted = True
        return started

    def _timed(self, name: str, t: float) -> None:
        """One parent-side part of the grade's time split (docs/performance.md#a-grades-time)."""
        self.timings[name] = round(self.timings.get(name, 0.0) + time.perf_counter() - t, 4)

    def _pipeline(self, root: Path) -> Report:
        stage_a = self._stage_a(root / "a")
        t = time.perf_counter()
        self._check_requirements("spec", self._spec_summaries(stage_a))
        self._timed("rules.spec", t)
        outputs, programs = self._stage_b(root / "a", root / "b", stage_a)
        if self.outputs_only:
            self.outputs = outputs
            return self._report(Verdict.ACCEPTED, "outputs only")
        if self.custom:
            self._expected_by_reference()
        # Requirements are checked on the problem's own test shapes: a learner's input of
        # another shape must not change what the requirements see.
        self.programs = self._without_custom_shapes(list(programs))
        # The rules and the memory profile read the same programs; some parsed already.
        with parsed_once(self.prefetched):
            t = time.perf_counter()
            self._check_requirements("program", self.programs)
            self._timed("rules.program", t)
            t = time.perf_counter()
            self.memory = self._memory()
            self._timed("memory_profile", t)
        t = time.perf_counter()
        self._compare(outputs)
        self._timed("compare", t)
        return self._decide()

    def _spec_summaries(self, stage_a: StageAResult) -> list[tuple[list[str], Any]]:
        """Stage A's summaries, each with where its program runs (the named dimensions, e.g.
        "B=3, D=4, H=5"; [] for the one shape-polymorphic program): the problem's own test
        signatures only, as for the program-level rules (a learner's input of another shape
        must not change what the requirements see)."""
        custom = {c.name for c in self.custom}
        own = {self.plan.case_sig[c.name] for c in self.plan.cases if c.name not in custom}
        names = {s["id"]: s["args"] for s in self.plan.signatures.values()}
        out = []
        for sigs, summary in stage_a.summaries():
            if not sigs:
                out.append(([], summary))
                continue
            where = [", ".join(f"{k}={v}" for k, v in self.plan.sig_dims[s].items())
                     or f"input shapes {signature_name(names[s], self.plan.arg_names)}"
                     for s in sigs if s in own and s in names]
            if where:
                out.append((where, summary))
        missing = [s for s in own if s not in stage_a.jaxpr_at]
        if stage_a.jaxpr_at and missing:  # never written by stage A itself: not traced
            out.append(([f"input shapes {signature_name(names[s], self.plan.arg_names)}"
                         for s in sorted(missing)], None))
        return out

    def _check_requirements(self, level: str, data: Any) -> None:
        """Apply every requirement of one level (spec: every test signature's jaxpr summary,
        `_spec_summaries`; program: StableHLO)."""
        rules = SPEC_RULES if level == "spec" else PROGRAM_RULES
        self.requirements = [r for r in self.requirements if r.level != level]
        key = self._derived_key("rules") if level == "program" else ""
        if key:
            # A pure function of the verified programs (parsing them alone is ~30 ms).
            known = self.grader.rules.get(key)
            if known is not None:
                self.requirements.extend(known)
                return
        before = len(self.requirements)
        for req in self.problem.requirements:
            if req.level != level:
                continue
            given = data
            if level == "program" and req.rule in RULES and RULES[req.rule].probe is None:
                # Programs exported only for the growth check's probes are not the tests'.
                given = [p for p in data if p.tested]
            if level == "spec":
                outcome = at_every_signature([
                    (where, self._apply(rules, req.rule, summary, req.options))
                    for where, summary in data])
            elif req.rule in RULES and RULES[req.rule].reference is not None:
                # the reference's own figures, measured through the same stages (none: the
                # rule fails closed)
                figures = (self.reference_rules or {}).get(req.name, {})
                outcome = self._apply(rules, req.rule, given,
                                      {**req.options, "reference": figures})
            else:
                outcome = self._apply(rules, req.rule, given, req.options)
            self.requirements.append(
                RequirementResult(
                    name=req.name, level=req.level, passed=outcome.passed, message=outcome.message,
                    evidence=self._evidence(level, outcome, data, self.display_name),
                )
            )
        if key:
            self.grader.rules.put(key, self.requirements[before:])

    @staticmethod
    def _evidence(level: str, outcome: RuleOutcome, data: Any, filename: str
                  ) -> Evidence | None:
        """Only the program level's regions are shown: they come from the verified program. A
        rule that names no operation gets what the (first) program is made of."""
        if level != "program":
            return None
        if outcome.region is not None:
            return excerpt(outcome.region, filename)
        first = data[0] if isinstance(data, list) and data else None
        return census(first) if isinstance(first, ProgramInfo) else None

    @staticmethod
    def _apply(rules: dict[str, Any], rule: str, data: Any, options: dict[str, Any]) -> RuleOutcome:
        fn = rules.get(rule)
        if fn is None:
            raise RuntimeError(f"unknown rule {rule!r} in problem.toml")
        outcome = fn(data, **options)
        if not isinstance(outcome, RuleOutcome):
            raise RuntimeError(f"rule {rule!r} returned {type(outcome).__name__}")
        return outcome

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
            known = self.grader.tests.get(key)
            if known is not None:
                self.tests.extend(known)
                return
        before = len(self.tests)
        own = {c.name for c in self.custom}
        for case in self.plan.cases:
            out = outputs.get(case.name)
            got_value: Any = None
            if case.name in own and case.expected is None:
                self.tests.append(TestResult(
                    name=case.name, visible=True, verdict=Verdict.SKIPPED, custom=True,
                    message=self.not_compared.get(
                        case.name, "the reference could not compute this input, so it was not "
                        "compared"),
                    details=TestDetails(inputs=dict(case.inputs), expected=None)))
                continue
            if isinstance(out, OutputOk):
                try:
                    got_value = cmp.decode_output(out.value)
                    c = cmp.compare(case.expected, got_value, rtol=tol.rtol, atol=tol.atol,
                                    leaf=self.plan.output_leaf, reveal=case.visible)
                except cmp.TooDeep as exc:  # the program's output, not our decoder's fault
                    got_value, c = None, cmp.Comparison(False, str(exc))
                except cmp.DecodeError as exc:
                    log.warning("stage B output for %s malformed: %s", case.name, exc)
                    raise Decided(Verdict.RUNTIME_ERROR, MALFORMED_B) from None
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
                raise Decided(Verdict.RUNTIME_ERROR, MALFORMED_B)
            result.custom = case.name in own
            result.seconds = getattr(out, "seconds", None)
            if case.visible:
                result.details = TestDetails(
                    inputs=dict(case.inputs), expected=case.expected, got=_plain(got_value)
                )
            self.tests.append(result)
        if key and all(t.verdict is not Verdict.RUNTIME_ERROR for t in self.tests[before:]):
            self.grader.tests.put(key, self.tests[before:])

    def _without_custom_shapes(self, programs: list[ProgramInfo]) -> list[ProgramInfo]:
        if not self.custom:
            return programs
        own = {c.name for c in self.custom}
        theirs = {self.plan.case_sig[c.name] for c in self.plan.cases if c.name not in own}
        only = {self.plan.case_sig[n] for n in own} - theirs  # shapes only custom inputs have
        names = {signature_name(s["args"], self.plan.arg_names)
                 for s in self.plan.signatures.values() if s["id"] in only}
        # A learner's input at one of the judge's probe shapes: that program stays for the
        # growth check, as the probe it would have been without the input (no test's).
        return [replace(p, tested=False) if p.signature in names else p for p in programs
                if p.symbolic or p.signature not in names or p.probe]

    # -- the learner's own inputs ---------------------------------------------------------------
    def _expected_by_reference(self) -> None:
        """The reference, graded like a submission on the same inputs, computes the expected
        outputs of the learner's own inputs (None where it fails: that test is skipped)."""
        copies = [case.model_copy(deep=True) for case in self.custom]
        ref = Grading(self.grader, self.problem, self.problem.reference_path.read_bytes(),
                      self.mode, self.limits, "reference.py", compare_memory=False,
                      custom=copies, outputs_only=True)
        try:
            ref.run()
        except Exception:
            log.exception("the reference of %s on a custom input", self.problem.id)
        for case in self.custom:
            out = ref.outputs.get(case.name)
            if isinstance(out, OutputOk):
                try:
                    expected = _plain(cmp.decode_output(out.value))
                except (cmp.DecodeError, cmp.TooDeep):
                    continue
                # An input that overflows the reference (or divides by zero in it) says
                # nothing about the learner's answer: compared, a correct one would fail.
                bad = cmp.non_finite_output(expected)
                if bad is None:
                    case.expected = expected
                else:
                    self.not_compared[case.name] = (
                        f"the reference's {bad} is not finite (NaN or infinity) on this input, "
                        "so it was not compared")

    # -- memory, next to the reference's ------------------------------------------------------
    def _memory(self) -> MemoryReport | None:
        """The profile of the program for the largest input shapes, beside the reference's at
        the same shapes. A symbolic program is sized as stage B specialised it to the largest
        test signature (`profiled`); without that copy it is not profiled."""
        program = self.profiled or largest_program([p for p in self.programs if not p.symbolic])
        mine = profile(program) if program is not None else None
        if program is None or mine is None:
            return None
        if not self.compare_memory:
            return compare(mine, None)
        key = self._reference_key(program.signature)
        known = self.grader.memory.get(key)
        if known is None:
            stored = load_reference(key)
            if stored is None:
                stored = self._reference_profile(program.signature)
                if stored is not None:  # a failed reference grade is tried again next time
                    store_reference(key, stored)
            known = [stored] if stored is not None else []
            self.grader.memory.put(key, known)
        return compare(mine, known[0] if known else None)

    def _reference_key(self, signature: str) -> str:
        parts = ("memory", grader_version(), self.problem.id, self.problem.fingerprint(),
                 self.mode, signature)
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def _reference_profile(self, signature: str) -> ProgramMemory | None:
        """The reference graded like a submission (same stages, same limits), once per package,
        mode and shapes per grader: its verified program, profiled the same way."""
        ref = Grading(self.grader, self.problem, self.problem.reference_path.read_bytes(),
                      self.mode, self.limits, "reference.py", compare_memory=False)
        try:
            ref.run()
        except Exception:  # the learner's grade stands without the comparison
            log.exception("grading the reference of %s for its memory profile", self.problem.id)
            return None
        same = [p for p in (ref.profiled, *ref.programs)
                if p is not None and not p.symbolic and p.signature == signature]
        return profile(same[0]) if same else None

    # -- verdict, score, report ----------------------------------------------------------------
    def _decide(self) -> Report:
        corroborate(self.problem, self.requirements)
        failed_tests = [t for t in self.tests
                        if t.verdict not in (Verdict.ACCEPTED, Verdict.SKIPPED)]
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
        corroborate(self.problem, reqs)
        lend_evidence(self.problem, reqs)
        score_, max_score_ = score(self.problem, tests, reqs, verdict)
        report = Report(
            verdict=verdict,
            problem=self.problem.id,
            mode=self.mode,
            message=message,
            tests=tests,
            requirements=reqs,
            score=score_,
            max_score=max_score_,
            timings=dict(self.timings),
            output=self.output,
            versions=dict(self.versions),
            memory=self.memory,
        )
        report.summary = summarize(report)
        return report


def display_name(filename: str) -> str:
    """The uploaded file's base name, reduced to safe characters, for learner messages."""
    base = os.path.basename(str(filename).replace("\\", "/"))
    safe = "".join(c for c in base if c.isalnum() or c in "._-")[:64]
    return safe if safe.endswith(".py") and len(safe) > 3 else "submission.py"


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
# 4-decimal JSON of jaxjudge/grading/render.py prints them unchanged). Items of a group differ by <=
# 1/16.
