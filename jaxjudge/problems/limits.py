"""A problem's `[limits]` table, read on its own.

A one-off `jaxjudge grade -p ID` starts both sandboxed stages before the rest of the CLI is
imported (jaxjudge/cli/launch.py), and all they need to start is these four numbers. Loading the
whole problem (`jaxjudge.problems.package`: pydantic, the rules, numpy, ~0.15 s) would put that
import in front of the stages' own `import jax`. This module reads problem.toml with `tomllib`
only. It is a guess the grade checks: the stages are adopted only if the problem the command
then loads and validates has the same limits; anything else cancels them.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jaxjudge.problems.roots import find_problem_dir

# The defaults of `jaxjudge.problems.package.Limits` (which uses these), for a table that
# leaves a key out.
DEFAULTS: dict[str, float | int] = {
    "wall_seconds": 60.0, "cpu_seconds": 60.0, "memory_mb": 2048, "output_kb": 256,
}


@dataclass(frozen=True)
class PeekedLimits:
    """The four numbers a stage starts with; the same attributes as `package.Limits`, and
    whether stage B's observer watches this problem's programs (`asks_observer`)."""

    wall_seconds: float
    cpu_seconds: float
    memory_mb: int
    output_kb: int
    observed: bool = False
    problem_id: str | None = None  # problem.toml's `id`


# Requirements whose rules read stage B's observed runs (jaxjudge/grading/observing.py).
_OBSERVING = ("rematerialized_activation", "no_loop_over_dim", "independent_of_dim")


def asks_observer(rule: object, level: object, options: Mapping[str, object]) -> bool:
    """Whether a requirement has stage B's observer watch the program run: stage B is then
    given the observer's time on top of the problem's limits (stage_paths.stage_b_limits)."""
    if level != "program":
        return False
    if rule in _OBSERVING:
        return True
    return rule == "loop_over_dim" and bool(options.get("every_step") or options.get("sliced")
                                            or options.get("trajectory"))


def _number(value: object, integral: bool) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) if integral else isinstance(value, (int, float))


def peek_limits(problem_id: str) -> PeekedLimits | None:
    """The limits problem.toml gives for `problem_id` (an id, or a folder's path as
    `load_problem` takes it), defaults for keys it leaves out; None when anything looks off:
    the command then loads the problem and says what is wrong."""
    folder = Path(problem_id) if os.sep in problem_id else find_problem_dir(problem_id)
    if folder is None:
        return None
    try:
        data = tomllib.loads((folder / "problem.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    table = data.get("limits", {})
    if not isinstance(table, dict) or set(table) - set(DEFAULTS):
        return None
    values = {**DEFAULTS, **table}
    if not all(_number(values[k], integral=k.endswith(("_mb", "_kb"))) for k in DEFAULTS):
        return None
    reqs = data.get("requirements", [])
    if not isinstance(reqs, list) or not all(isinstance(r, dict) for r in reqs):
        return None
    observed = any(asks_observer(r.get("rule"), r.get("level"), r) for r in reqs)
    pid = data.get("id")
    return PeekedLimits(float(values["wall_seconds"]), float(values["cpu_seconds"]),
                        int(values["memory_mb"]), int(values["output_kb"]), observed,
                        pid if isinstance(pid, str) else None)
