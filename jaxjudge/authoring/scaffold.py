"""`new_problem(id, into)`: a package that already passes `check_problem`, to edit from.

The template (jaxjudge/authoring/template/) is a complete small problem: signature with dtypes,
a program-level requirement, a statement with every section, a reference, a generator on the
shared helper (`jaxjudge.authoring.testgen`) and samples for each verdict. `{id}` and `{title}`
are filled in; the generator is run once so that tests/cases.json exists.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from jaxjudge.problems.package import ProblemError

TEMPLATE = Path(__file__).resolve().parent / "template"
_FILLED = ("problem.toml", "statement.md", "reference.py", "tests/generate.py")
_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


def new_problem(problem_id: str, into: Path, title: str | None = None) -> Path:
    """Create `into/problem_id` from the template; ProblemError if the id is bad or taken."""
    if not _ID_RE.match(problem_id):
        raise ProblemError(f"problem id {problem_id!r} must be lowercase letters, digits and "
                           "dashes (at most 64)")
    dest = Path(into) / problem_id
    if dest.exists():
        raise ProblemError(f"{dest} already exists")
    title = title or problem_id.replace("-", " ").capitalize()
    shutil.copytree(TEMPLATE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in _FILLED:
        path = dest / rel
        path.write_text(path.read_text(encoding="utf-8").format(id=problem_id, title=title),
                        encoding="utf-8")
    proc = subprocess.run([sys.executable, str(dest / "tests" / "generate.py")],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise ProblemError(f"the template's generator failed: {proc.stderr[-2000:]}")
    return dest
