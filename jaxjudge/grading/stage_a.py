"""Stage A's protocol (untrusted): the job it gets, and what its result may decide."""

from __future__ import annotations

import json
import logging
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxjudge.grading.report import RequirementResult, Verdict
from jaxjudge.grading.rules_run import rules_request
from jaxjudge.grading.stage_common import (
    MALFORMED_A,
    TOO_DEEP_A,
    TRACE_SCRIPT,
    Decided,
    StageBase,
    read_result,
)
from jaxjudge.grading.stage_results import (
    MalformedResult,
    ResultTooDeep,
    StageAResult,
    parse_stage_a,
)
from jaxjudge.isolation import sandbox
from jaxjudge.problems.package import Problem
from jaxjudge.rules import RULES, RuleOutcome

if TYPE_CHECKING:
    from jaxjudge.grading.plan import Plan
    from jaxjudge.grading.resources import Resources

log = logging.getLogger("grader")


class _NoRetry(Exception):
    """Stage A's retry with a concrete argument did not run or could not say."""

UNTRACEABLE = {
    "ConcretizationTypeError",
    "TracerBoolConversionError",
    "TracerArrayConversionError",
    "TracerIntegerConversionError",
    "NonConcreteBooleanIndexError",
}
# A traced value passed as a static argument of an inner jax.jit (one compile per value): JAX's
# ValueError, which names no argument.
STATIC_TRACER = "Non-hashable static arguments"
# jax.export's refusal of a program that calls back into Python on the host (both JAX ends).
HOST_CALLBACK = "serialization of host_callbacks"
HOST_CALLBACK_MESSAGE = (
    "Host callbacks are not allowed: jax.debug.print, jax.debug.callback, jax.pure_callback and "
    "io_callback run Python on the host, and the judge runs only your exported program. Remove "
    "them from solve (print outside jax.jit while you debug on your own machine)."
)



class StageA(StageBase):
    """Stage A's protocol: write the job, run the untrusted tracing stage, validate its result."""

    grader: Resources
    plan: Plan
    problem: Problem
    source: bytes
    display_name: str
    timings: dict[str, float]
    versions: dict[str, str]
    output: str
    requirements: list[RequirementResult]

    # started ahead (jaxjudge.grading.early), given its job here
    pending_a: sandbox.Pending | None = None

    def _stage_a(self, job: Path) -> StageAResult:
        job.mkdir(exist_ok=True)
        (job / "submission.py").write_bytes(self.source)
        (job / "job.json").write_text(
            json.dumps(
                {
                    "entry_point": self.problem.entry_point,
                    "source": "submission.py",
                    "display_name": self.display_name,
                    "signatures": list(self.plan.signatures.values()),
                    "symbolic": self.plan.symbolic,
                    "probes": self.plan.probes,
                    "rules_run": rules_request(self.problem, self.plan),
                    "traced_arguments": self._traced_arguments(),
                }
            )
        )
        t = time.perf_counter()
        pending, self.pending_a = self.pending_a, None
        if pending is not None:  # it imported jax meanwhile; now it reads the files above
            res = self._launch_once(pending.go)
        else:
            res = self._launch_once(lambda: self.grader.runner(
                TRACE_SCRIPT, job, self._sandbox_limits(), True, {}))
        if res.status == "setup_failed":
            res = self._launched(lambda: self.grader.runner(
                TRACE_SCRIPT, job, self._sandbox_limits(), True, {}), job, self.timings,
                "stage_a")
        self.timings["stage_a"] = round(time.perf_counter() - t, 4)
        self.output = (res.stdout + res.stderr)[-self.limits.output_kb * 1024 :]
        decided = self._stage_failure(res, "Your code (while loading, tracing or exporting)")
        if decided:
            raise decided
        return self._stage_a_result(job / "result.json", res)

    def _traced_requirements(self) -> list[tuple[str, str]]:
        """(requirement name, argument path) of each requirement that an argument be traced
        (a rule with an `untraceable` hook and an `argument` option)."""
        return [(req.name, str(req.options["argument"])) for req in self.problem.requirements
                if req.rule in RULES and RULES[req.rule].untraceable is not None
                and isinstance(req.options.get("argument"), str)]

    def _traced_arguments(self) -> list[dict[str, Any]]:
        """What stage A makes concrete when solve fails to trace or export (its
        `_concrete_retry`): per argument a requirement says must be traced, its place in the
        positional arguments and the value the first visible example gives it (a number only:
        visible, so nothing hidden reaches the untrusted stage; else stage A uses zeros)."""
        out: list[dict[str, Any]] = []
        visible = next((c for c in self.plan.cases if c.visible), None)
        for argument in dict.fromkeys(arg for _, arg in self._traced_requirements()):
            top, *keys = argument.split(".")
            if top not in self.plan.arg_names:
                continue
            value: Any = visible.inputs.get(top) if visible is not None else None
            for key in keys:
                value = value.get(key) if isinstance(value, dict) else None
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            out.append({"argument": argument, "path": [self.plan.arg_names.index(top), *keys],
                        "value": value if number and math.isfinite(value) else None})
        return out

    def _concrete_verdict(self, result: StageAResult, message: str) -> Decided | None:
        """The verdict of a failed trace or export from stage A's retry with each traced
        argument made concrete (`traced_cause`): the requirements whose argument, made
        concrete, lets the same trace and export succeed fail (requirement_failed), whatever
        Python raised; when every retry failed, the argument is not the cause and None is
        returned (the failure is the submission's error). Untrusted: a forged "it worked" only
        turns the submission's own runtime error into a failed requirement, worth no points
        either (nothing ran: jaxjudge.grading.scoring). Raises _NoRetry when no retry could say
        (none asked, or it ran out of time): the exception-name path decides then."""
        asked = dict(self._traced_requirements())
        causes = [c for c in result.traced_cause if c.argument in asked.values()]
        if not causes or any(c.concrete_ok is None for c in causes):
            raise _NoRetry
        cause = {c.argument for c in causes if c.concrete_ok}
        etype = result.error_type or "an error"
        failed = [
            RequirementResult(name=req.name, level=req.level, passed=False, message=(
                f"solve needs the value of {arg} in Python while it is traced: it raised "
                f"{etype} with {arg} traced, and traces and exports once {arg} is a concrete "
                f"value, so the failure comes from {arg} being traced (an int(), float(), "
                f"f-string, `if`, .item(), numpy call or a Python list indexed with it, or a "
                f"static argument of jax.jit). {arg} is a traced array: one exported program "
                f"must serve every value, so compute with jnp/lax operations on it "
                f"(jnp.where, jnp.take, jax.lax.cond, jax.lax.switch)."))
            for req in self.problem.requirements if (arg := asked.get(req.name)) in cause]
        if not failed:
            return None
        self.requirements.extend(failed)
        self._check_requirements("spec", [([], None)])
        return Decided(Verdict.REQUIREMENT_FAILED, "solve cannot be traced: " + " ".join(
            f"[{r.name}] {r.message}" for r in failed) + "\n" + message)

    def _by_exception_name(self, etype: str, message: str) -> Decided | None:
        """Where no retry could say (`_concrete_verdict`): the failed requirements by the
        exception's name (JAX's errors for a traced value used in Python, a traced static
        argument) and the rule's `untraceable` hook on its message."""
        static = etype == "ValueError" and STATIC_TRACER in message
        if etype not in UNTRACEABLE and not static:
            return None
        failed = self._untraceable(message)
        if failed or not static:
            self._check_requirements("spec", [([], None)])
        if not failed:
            return None
        return Decided(Verdict.REQUIREMENT_FAILED, "solve cannot be traced: " + " ".join(
            f"[{r.name}] {r.message}" for r in failed) + "\n" + message)

    def _untraceable(self, message: str) -> list[RequirementResult]:
        """The requirements that name a traced argument the failed trace needed in Python (a
        rule's `untraceable` hook), recorded as failed: the verdict is then theirs."""
        failed = []
        for req in self.problem.requirements:
            hook = RULES[req.rule].untraceable if req.rule in RULES else None
            outcome = (hook(message, entry_point=self.problem.entry_point, **req.options)
                       if hook is not None else None)
            if isinstance(outcome, RuleOutcome) and not outcome.passed:
                failed.append(RequirementResult(name=req.name, level=req.level, passed=False,
                                                message=outcome.message))
        self.requirements.extend(failed)
        return failed

    def _stage_a_result(self, path: Path, res: sandbox.SandboxResult) -> StageAResult:
        """Stage A's result file (written beside user code: anything at all) -> the validated
        result, or a verdict (Decided). Raises nothing else, whatever the file holds."""
        try:
            result: StageAResult | None = read_result(path, parse_stage_a)
        except MalformedResult as exc:
            log.info("stage A result rejected: %s", exc)
            deep = isinstance(exc, ResultTooDeep)
            raise Decided(Verdict.RUNTIME_ERROR, TOO_DEEP_A if deep else MALFORMED_A) from None
        if result is None:
            how = (
                f"exit code {res.exit_code}"
                if res.status == "exited"
                else f"signal {res.signal}"
            )
            raise Decided(
                Verdict.RUNTIME_ERROR,
                f"Your code ended the grading process ({how}) before it could be traced and "
                "exported. Do not call sys.exit/os._exit or kill processes in your file.",
            )
        for k, v in result.timings.items():
            self.timings[f"stage_a.{k}"] = round(v, 4)
        status = result.status
        message = result.message[:4000]
        if status == "compile_error":
            raise Decided(Verdict.COMPILE_ERROR, message or "the file could not be compiled")
        if status == "runtime_error":
            if "MemoryError" in message:
                raise Decided(Verdict.MEMORY_LIMIT_EXCEEDED, message)
            raise Decided(Verdict.RUNTIME_ERROR, message or "importing your file failed")
        if status in ("trace_error", "export_error"):
            etype = result.error_type or ""
            if etype == "MemoryError":
                step = "traced" if status == "trace_error" else "exported"
                raise Decided(Verdict.MEMORY_LIMIT_EXCEEDED, message or
                              f"solve ran out of memory (MemoryError) while it was {step}")
            try:
                decided = self._concrete_verdict(result, message)
            except _NoRetry:
                decided = self._by_exception_name(etype, message)
            if decided is not None:
                raise decided
            if etype in UNTRACEABLE:
                raise Decided(
                    Verdict.RUNTIME_ERROR,
                    "solve cannot be traced by JAX: it uses a traced value where Python needs a "
                    "concrete one (an `if`, `float()`, `int()` or numpy call on an array). Use "
                    "jnp/lax operations (jnp.where, lax.cond) instead.\n" + message,
                )
            if status == "export_error" and HOST_CALLBACK in message:
                raise Decided(Verdict.RUNTIME_ERROR, HOST_CALLBACK_MESSAGE)
            step = "tracing" if status == "trace_error" else "exporting"
            if status == "export_error" and any(
                p["id"] == result.signature for p in self.plan.probes
            ):
                dims = self.plan.sig_dims.get(result.signature or "", {})
                shapes = ", ".join(f"{k}={v}" for k, v in sorted(dims.items()))
                step = (f"exporting it at {shapes}, sizes the judge exports to check that your "
                        "program does not grow with a dimension (every size within the "
                        "constraints must work)")
            raise Decided(Verdict.RUNTIME_ERROR, f"solve raised an error while {step}:\n{message}")
        if result.jax_version:
            self.versions["jax"] = result.jax_version[:40]
        return result

