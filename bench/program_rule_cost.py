"""How much of the grader's own (trusted, unsandboxed) CPU a submission can make the program
rule spend. Not part of the unit suite.

Grades FILE end to end with grade() and times every call of the program-level rule separately
(the rule runs in the grading process, after the sandboxed stages), so the figure printed is the
trusted side's cost alone. Compare with the reference:

    .venv/bin/python bench/program_rule_cost.py \
        bench/data/cost_inline_fan.py --mode submit
    .venv/bin/python bench/program_rule_cost.py \
        problems/rematerialized-mlp-block/reference.py --mode submit
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

# Run as a script, sys.path[0] is bench/: put this checkout first, or the venv's (editable)
# install of another checkout would be graded instead.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from jaxjudge import grade, load_problem
from jaxjudge.rules import PROGRAM_RULES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--problem", default="rematerialized-mlp-block")
    ap.add_argument("--mode", default="run", choices=["run", "submit"])
    args = ap.parse_args()
    spent: list[tuple[int, float]] = []
    import jaxjudge

    print(f"grader: {jaxjudge.__file__}")
    for name, rule in list(PROGRAM_RULES.items()):

        def timed(programs: Any, _rule: Any = rule, **options: Any) -> Any:
            t = time.perf_counter()
            try:
                return _rule(programs, **options)
            finally:
                spent.append((len(programs), time.perf_counter() - t))

        PROGRAM_RULES[name] = timed
    problem = load_problem(args.problem)
    t = time.perf_counter()
    report = grade(problem, args.file.read_text(encoding="utf-8"), args.mode)
    total = time.perf_counter() - t
    print(f"verdict: {report.verdict}")
    for r in report.requirements:
        print(f"  {r.name}: {'pass' if r.passed else 'FAIL'}: {r.message[:300]}")
    for n, s in spent:
        print(f"program rule: {n} program(s) in {s:.2f} s ({s / max(n, 1):.2f} s each)")
    sandboxed = sum(v for k, v in report.timings.items() if k in ("stage_a", "stage_b"))
    print(f"grade total {total:.1f} s, of which sandboxed stages {sandboxed:.1f} s")


if __name__ == "__main__":
    main()
