"""Stage B's protocol (trusted code, untrusted data): the job, the runs, the result."""

from __future__ import annotations

import json
import logging
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jaxjudge.analysis.exported import ProgramInfo
from jaxjudge.analysis.stablehlo import Module
from jaxjudge.grading import reference_work
from jaxjudge.grading.caches import ProgramCache
from jaxjudge.grading.engine_hint import remember
from jaxjudge.grading.observing import observations, observe_specs
from jaxjudge.grading.plan import signature_name
from jaxjudge.grading.prefetch import Prefetch
from jaxjudge.grading.report import RequirementResult, Verdict
from jaxjudge.grading.rules_run import is_rules, rules_programs, rules_run
from jaxjudge.grading.srclines import LINES_SUFFIX, MAX_LINES_BYTES, located, source_line_count
from jaxjudge.grading.stage_common import (
    EXECUTE_SCRIPT,
    MALFORMED_B,
    MAX_EXPORT_BYTES,
    MAX_PROGRAM_TEXT,
    Decided,
    StageBase,
    read_regular,
    read_result,
    stage_b_limits,
)
from jaxjudge.grading.stage_results import (
    MalformedResult,
    StageAResult,
    StageBResult,
    TrajectoryLoop,
    parse_stage_b,
)
from jaxjudge.isolation import sandbox
from jaxjudge.isolation.xla import fast_compile_flags
from jaxjudge.problems.package import Problem

if TYPE_CHECKING:
    from jaxjudge.grading.plan import Plan
    from jaxjudge.grading.resources import Resources

log = logging.getLogger("grader")
PROFILED = ".profile.mlir"  # stage B's specialised copy of a symbolic program (memory only)

class StageB(StageBase):
    """Stage B's protocol: the verified programs' job, running it (with crash retries), and its
    result turned into outputs and programs for the rules."""

    grader: Resources
    plan: Plan
    problem: Problem
    mode: str
    program_key: str
    display_name: str  # the name stage A compiled the submission under (its locations name it)
    source: bytes
    requirements: list[RequirementResult]
    timings: dict[str, float]
    versions: dict[str, str]
    # started ahead (jaxjudge.grading.early), given its job here
    pending_b: sandbox.Pending | None = None
    # The symbolic program specialised to the plan's largest test signature, for the memory
    # profile only (the rules read the programs as exported).
    profiled: ProgramInfo | None = None
    # Stage B's texts parsed while it ran its tests (jaxjudge.grading.prefetch), by text.
    prefetched: dict[str, Module] | None = None
    # This grade measures the reference's observed work (reference_work): every run, no budget
    reference_run: bool = False
    reference_observed: reference_work.Reference | None = None  # its, once stage B ran
    # the reference's answers step by step (trajectory runs), by figure key
    reference_trajectories: dict[str, TrajectoryLoop] | None = None
    # the reference's figures per requirement whose rule compares with it (Rule.reference)
    reference_rules: dict[str, dict[str, int]] | None = None

    def _stage_b(
        self, a_dir: Path, job: Path, stage_a: StageAResult
    ) -> tuple[dict[str, Any], list[ProgramInfo]]:
        job.mkdir(exist_ok=True)
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
                    **({"profile": self.plan.profile_sig} if self.plan.profile_sig else {}),
                }
            ]
        else:
            progs = [
                {"id": s["id"], "args": s["args"], "signatures": [s["id"]]}
                for s in self.plan.signatures.values()
            ]
            # The judge's probe shapes for the growth check: verified, not run on any test.
            progs += [{"id": p["id"], "args": p["args"], "signatures": []}
                      for p in self.plan.probes]
        blobs: dict[str, bytes] = {}
        for prog in progs:
            src = a_dir / f"{prog['id']}.jaxexport"
            blob = None
            if exports.get(prog["id"]) == src.name:  # the name we expect, nothing else
                blob = read_regular(src, MAX_EXPORT_BYTES)
            if blob is None:
                raise Decided(
                    Verdict.RUNTIME_ERROR,
                    "the tracing process did not produce the exported program (missing, not a "
                    f"regular file, or over {MAX_EXPORT_BYTES >> 20} MiB)",
                )
            blobs[prog["id"]] = blob
            prog["export"] = src.name
        # The custom_vjp's rules on their own: run beside, on no signature of their own.
        rules = rules_programs(self.problem, stage_a, self.plan)
        read = {r["id"]: read_regular(a_dir / f"{r['id']}.jaxexport", MAX_EXPORT_BYTES)
                for r in rules}
        if rules and all(blob is not None for blob in read.values()):
            for r in rules:
                blobs[r["id"]], r["export"] = read[r["id"]], f"{r['id']}.jaxexport"
            progs += rules
        program_of = {sid: prog["id"] for prog in progs for sid in prog["signatures"]}
        watch = (observe_specs(self.problem, self.plan, program_of, every=self.reference_run,
                               kick_seed=self.grader.kick_seed) if program_of else [])
        sig_of = {t["name"]: t["signature"] for t in self.plan.tests}
        if (watch or reference_work.needs_reference(self.problem)) and not self.reference_run:
            reference = self._reference()
            self.reference_trajectories = reference.trajectories
            self.reference_rules = reference.rules
            # each run its own budget, from the reference
            watch = reference_work.with_budgets(watch, reference.figures,
                                                self.problem.observer.work_multiple, sig_of)
        spec = {
            "arg_names": self.plan.arg_names,
            "signatures": list(self.plan.signatures.values()),
            "programs": progs,
            "allowed_custom_calls": [],
            "max_program_bytes": MAX_PROGRAM_TEXT,
            "engine": self.grader.engine,
            "observe": watch,
        }
        flags = fast_compile_flags()
        # The tests' part of the key is hashed once per problem and mode (see _Plan).
        key = ProgramCache.key(
            json.dumps(spec, sort_keys=True) + self.plan.tests_digest, flags, blobs
        )
        spec["tests"] = self.plan.tests
        self.program_key = key
        looked = time.perf_counter()
        hit = self.grader.programs.get(key)
        if hit is not None:
            # The split always names stage B: a replayed run costs its lookup.
            self.timings["stage_b"] = round(time.perf_counter() - looked, 4)
            self.timings["stage_b.cached"] = 1.0
            result, texts = hit
        else:
            result, texts = self._run_stage_b(job, spec, blobs, flags)
            if result.status == "ok" and result.engines:
                remember(self.problem.id, result.engines)  # the next one-off grade's guess
            if result.status == "ok" and result.outputs is not None and all(
                o.ok for o in result.outputs.values()
            ):
                # Only complete successes: a test that failed may have failed for a reason of
                # the moment (memory pressure), which must not be replayed to later submissions.
                self.grader.programs.put(key, (result, texts))
        outcome = self._stage_b_outcome(result, texts, progs, watch, stage_a)
        if self.reference_run:
            self.reference_observed = reference_work.Reference(
                reference_work.figures_from(watch, result.observed, sig_of),
                reference_work.trajectories_from(watch, result.observed, sig_of),
                reference_work.rule_figures(self.problem, outcome[1]))
        return outcome

    def _reference(self) -> reference_work.Reference:
        """The reference's observed work per run and its answers step by step
        (jaxjudge.grading.reference_work): this
        Grader's, else the state directory's, else measured now by grading the reference
        (once per problem version, mode, JAX and grader version; its time is this grade's
        `reference_work`). A reference that could not be measured gives no figures (each run
        then gets the ceiling) until this Grader ends."""
        key = reference_work.state_key(self.problem.id, self.problem.fingerprint(), self.mode,
                                       self.grader.kick_seed)
        known = self.grader.figures.get(key)
        if known is not None:
            return known
        figures = reference_work.load(key)
        if figures is None:
            t = time.perf_counter()
            figures = self._measure_reference()
            self.timings["reference_work"] = round(time.perf_counter() - t, 4)
            if figures is not None and (figures.figures or figures.rules):
                reference_work.store(key, figures)
        figures = figures or reference_work.Reference({}, {}, {})
        self.grader.figures.put(key, figures)
        return figures

    def _measure_reference(self) -> reference_work.Reference | None:
        """Grade the reference like a submission (this grade's class, stages and limits), up
        to stage B, with every run a learner's grade may hold and no budget but the ceiling."""
        ref = type(self)(self.grader, self.problem,  # type: ignore[call-arg]
                         self.problem.reference_path.read_bytes(), self.mode, self.limits,
                         "reference.py", compare_memory=False, outputs_only=True)
        ref.reference_run = True
        try:
            ref.run()
        except Exception:  # the learner's grade stands, each run at the ceiling
            log.exception("measuring the reference of %s for its observed work",
                          self.problem.id)
            return None
        return ref.reference_observed

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
        prefetch = None
        if self.grader.live_job_dir:  # else the texts arrive only with the result
            prefetch = Prefetch(job, [f"{p['id']}{ext}" for p in spec["programs"]
                                      if not is_rules(p["id"]) for ext in (".mlir", PROFILED)])
            prefetch.start()
        try:
            res = self._run_until_done(job, spec, flags)
        finally:
            if prefetch is not None:
                self.prefetched = prefetch.stop()
        self.timings["stage_b"] = round(time.perf_counter() - t, 4)
        decided = self._stage_failure(res, "Your exported program",
                                      stage_b_limits(self.limits, self.problem.observed))
        if decided:
            raise decided
        return self._stage_b_result(job, res, [p["id"] for p in spec["programs"]])

    def _run_until_done(self, job: Path, spec: dict[str, Any], flags: str
                        ) -> sandbox.SandboxResult:
        """Stage B's runs, each crash one engine step down (see `_run_stage_b`)."""
        engine = spec["engine"]
        limits = stage_b_limits(self.limits, self.problem.observed)
        while True:
            (job / "job.json").write_text(json.dumps({**spec, "engine": engine}))
            env = {"XLA_FLAGS": flags} if flags else {}
            pending, self.pending_b = self.pending_b, None
            def launch(env: dict[str, str] = env) -> sandbox.SandboxResult:
                return self.grader.runner(EXECUTE_SCRIPT, job, limits, False, env)

            if pending is not None and flags == fast_compile_flags():
                res = self._launch_once(pending.go)  # started with these flags; reads the job
            else:
                if pending is not None:
                    pending.cancel()
                res = self._launch_once(launch)
            if res.status == "setup_failed":
                res = self._launched(launch, job, self.timings, "stage_b")
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
            for stale in ("result.json", *(f"{p['id']}{ext}" for p in spec["programs"]
                                           for ext in (".mlir", PROFILED, LINES_SUFFIX))):
                (job / stale).unlink(missing_ok=True)  # nothing of the crashed run is read
        return res

    def _stage_b_result(
        self, job: Path, res: sandbox.SandboxResult, program_ids: list[str]
    ) -> tuple[StageBResult, dict[str, str]]:
        """Stage B's result file and program texts -> validated, or a verdict (Decided).
        Raises RuntimeError only when stage B exited without writing a result (our bug)."""
        try:
            result: StageBResult | None = read_result(job / "result.json", parse_stage_b)
        except MalformedResult as exc:
            log.warning("stage B result rejected: %s", exc)
            raise Decided(Verdict.RUNTIME_ERROR, MALFORMED_B) from None
        if result is None and res.status == "signaled":
            known = res.signal in signal.Signals._value2member_map_
            name = signal.Signals(res.signal).name if known else f"signal {res.signal}"
            raise Decided(
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
                raw = read_regular(job / f"{pid}.mlir", MAX_PROGRAM_TEXT)
                if entry is None or raw is None:
                    log.warning("stage B result lacks program %s (entry %s, text %s)",
                                pid, entry is not None, raw is not None)
                    raise Decided(Verdict.RUNTIME_ERROR, MALFORMED_B)
                texts[pid] = raw.decode("utf-8", "replace")
                profiled = read_regular(job / f"{pid}{PROFILED}", MAX_PROGRAM_TEXT)
                if entry.profiled and profiled is not None:  # optional: no figures without
                    texts[pid + PROFILED] = profiled.decode("utf-8", "replace")
                table = read_regular(job / f"{pid}{LINES_SUFFIX}", MAX_LINES_BYTES)
                if table is not None:  # optional: no source lines without
                    texts[pid + LINES_SUFFIX] = table.decode("utf-8", "replace")
        return result, texts

    def _stage_b_outcome(
        self, result: StageBResult, texts: dict[str, str], progs: list[dict[str, Any]],
        watch: list[dict[str, Any]] | None = None, stage_a: StageAResult | None = None,
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
            raise Decided(
                Verdict.REQUIREMENT_FAILED,
                "The grader refused to run your exported program: "
                + why
                + ". Use only JAX operations on the inputs.",
            )
        outputs = result.outputs or {}
        missing = [c.name for c in self.plan.cases if c.name not in outputs]
        if missing or any(p["id"] not in texts for p in progs):
            log.warning("stage B result lacks tests %s or programs", missing[:5])
            raise Decided(Verdict.RUNTIME_ERROR, MALFORMED_B)
        programs: list[ProgramInfo] = []
        probes_only = {p["id"] for p in self.plan.probes}  # exported for no test
        n_lines = source_line_count(self.source)
        ran = rules_run(self.problem, self.plan, stage_a, result) if stage_a else None
        for prog in progs:
            if is_rules(prog["id"]):
                continue  # evidence beside the tested programs, not a program of solve
            entry = (result.programs or {}).get(prog["id"])
            poly = prog["id"] == "poly" and self.plan.symbolic is not None
            programs.append(
                ProgramInfo(
                    signature=signature_name(prog["args"], self.plan.arg_names),
                    text=texts[prog["id"]],
                    args=list(entry.args) if entry is not None else [],
                    outs=list(entry.outs) if entry is not None else [],
                    dims={} if poly else dict(self.plan.sig_dims.get(prog["id"], {})),
                    symbolic=tuple(self.plan.symbolic["dims"]) if poly else (),
                    probe=prog["id"] in self.plan.probe_ids,
                    tested=prog["id"] not in probes_only,
                    located=located(texts.get(prog["id"] + LINES_SUFFIX), self.display_name,
                                    n_lines),
                    observed=observations(result.observed, watch or [], prog["id"],
                                          self.reference_trajectories,
                                          self.problem.tolerance.loosest()),
                    rules_run=ran if prog.get("signatures") else None,
                )
            )
            sid = prog.get("profile")
            text = texts.get(prog["id"] + PROFILED)
            if poly and text is not None and sid is not None:
                spec = next(s["args"] for s in self.plan.signatures.values() if s["id"] == sid)
                self.profiled = ProgramInfo(
                    signature=signature_name(spec, self.plan.arg_names), text=text,
                    args=[], outs=[], dims=dict(self.plan.sig_dims.get(sid, {})))
        return outputs, programs

